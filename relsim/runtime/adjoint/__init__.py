"""Reverse-mode derivatives of kernels, for `rs.Tape`: `generate.Adjoint` makes the adjoint of
a kernel's typed IR (untyped IR, checked and lowered like any kernel: it runs on every target;
with `untype`, `sweep` and `records`), `derivatives` holds the rule of each operation,
`AdjointKernel` is the kernel the tape launches."""
from .derivatives import partials
from .generate import Adjoint, grad_name
from .kernel import AdjointKernel, GivenKernel
from .records import ROW_FIELD

__all__ = ["Adjoint", "AdjointKernel", "GivenKernel", "ROW_FIELD", "grad_name", "partials"]
