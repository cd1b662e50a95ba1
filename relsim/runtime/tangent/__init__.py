"""Forward-mode derivatives of kernels, for `rs.Tangents`: `generate.Tangent` makes the tangent
of a kernel's typed IR (untyped IR of a kernel computing the kernel's values and their
directional derivative in one pass; checked and lowered like any kernel), `expressions` the
tangent of each expression (the reverse mode's partial derivatives, `adjoint/derivatives.py`)."""
from .expressions import TANGENT, tangent_name
from .generate import Tangent

__all__ = ["TANGENT", "Tangent", "tangent_name"]
