"""The kernel a tape launches for the reverse of one recorded launch: its body is the adjoint
IR of the forward kernel over the same relation (`generate.Adjoint`), given to the pipeline in
place of parsed source (`given_ir`); everything after the frontend (types, phase rules,
lowering, every backend, MPI) treats it as any kernel."""
from __future__ import annotations

from ...kernel import Kernel
from .generate import Adjoint


class AdjointKernel(Kernel):
    """The adjoint of `forward` (analysed over one relation as `analysed`); `adjoint_global`
    maps a Global to its adjoint Global. Raises GradientError at the forward kernel's line
    for what cannot be differentiated."""

    def __init__(self, forward, analysed, adjoint_global):
        super().__init__(forward.fn, forward.scope)
        self.name = f"{forward.name}_adjoint"
        self.forward = forward
        gen = Adjoint(analysed, adjoint_global)
        self.param = analysed.param
        self.body = gen.body()

    def given_ir(self):
        """(parameter, untyped body) for the pipeline."""
        return self.param, self.body

    def __repr__(self) -> str:
        return f"<relsim adjoint of kernel {self.forward.name}>"
