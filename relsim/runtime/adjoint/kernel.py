"""The kernel a tape launches for the reverse of one recorded launch: its body is the adjoint
IR of the forward kernel over the same relation (`generate.Adjoint`), given to the pipeline in
place of parsed source (`given_ir`); everything after the frontend (types, phase rules,
lowering, every backend, MPI) treats it as any kernel."""
from __future__ import annotations

from ...kernel import Kernel
from ...relations.globals import Global
from ...types import f64
from . import transpose
from .generate import Adjoint


class GivenKernel(Kernel):
    """A kernel whose untyped IR is given (not parsed from source), made from `forward`."""

    def __init__(self, forward, name, param, body):
        super().__init__(forward.fn, forward.scope)
        self.name = name
        self.forward = forward
        self.param = param
        self.body = body

    def given_ir(self):
        """(parameter, untyped body) for the pipeline."""
        return self.param, self.body

    def __repr__(self) -> str:
        return f"<relsim kernel {self.name} made from kernel {self.forward.name}>"


class AdjointKernel(GivenKernel):
    """The adjoint of `forward` (analysed over one relation as `analysed`); `adjoint_global`
    maps a Global to its adjoint Global, `pick_global` to the Globals finding the row a
    min/max/arg reduction into it chose. `finder` (or None): the kernel to run first that finds
    those rows (the forward row replayed, an arg reduction per such Global, and the best
    contribution per target row of a min/max reduction into a field); `picks`: Global -> its
    reduction's operator; `finder2` and `field_picks` (field -> operator): the fields' second
    finding kernel (`field_picks.py`). Raises GradientError at the forward kernel's line for what
    cannot be differentiated."""

    def __init__(self, forward, analysed, adjoint_global, pick_global=None):
        gen = Adjoint(analysed, adjoint_global, pick_global)
        super().__init__(forward, f"{forward.name}_adjoint", analysed.param, gen.body())
        self.picks = dict(gen.picks)
        self.finder = None if gen.finder is None else GivenKernel(
            forward, f"{forward.name}_finder", analysed.param, gen.finder)
        # min/max reductions into float fields: field -> operator; their second finding kernel
        self.field_picks = {f: ops[0] for f, ops in gen.field_sites.items()}
        self.finder2 = None if gen.finder2 is None else GivenKernel(
            forward, f"{forward.name}_finder2", analysed.param, gen.finder2)
        # grouping loops reading their rows' fields (`transpose.py`): the fields keeping their
        # accumulators' adjoints, (name, type), which must exist before `transposed()`
        self.transpositions = tuple(gen.transposed)
        self.kept = tuple((field, typ) for t in self.transpositions for _, typ, field in t.kept) \
            + tuple((field, typ) for t in self.transpositions for _, typ, field, _ in t.values)
        self._analysed = analysed
        self._adjoint_global = adjoint_global
        self._transposed = None

    def transposed(self) -> tuple:
        """(kernel, relation) of each transposed loop: to launch after this one (made once,
        when first asked for: the kept fields exist by then)."""
        if self._transposed is None:
            self._transposed = tuple(self._transposed_kernel(i, t)
                                     for i, t in enumerate(self.transpositions))
        return self._transposed

    def _transposed_kernel(self, i, t):
        from ..pipeline import analyse  # (the pipeline imports the kernels' modules)

        a, fwd = self._analysed, self.forward
        seed = Global(f64, 0.0, name=f"{fwd.name}__transposed{i}")
        one = Global(f64, 1.0, name=f"{fwd.name}__transposed{i}__grad")
        body = transpose.forward_body(a, t, seed)
        forward = GivenKernel(fwd, f"{fwd.name}_transposed{i}", a.param, body)
        gen = Adjoint(analyse(forward, t.over), lambda g: one if g is seed else
                      self._adjoint_global(g), only_centred=True)
        return GivenKernel(fwd, f"{fwd.name}_adjoint_transposed{i}", a.param, gen.body()), \
            t.over

    def __repr__(self) -> str:
        return f"<relsim adjoint of kernel {self.forward.name}>"
