"""One smoother as cg's preconditioner (``cg(A, b, x, M=SSOR(A))``): symmetric Gauss-Seidel /
SSOR over the colours of A's graph, and a Chebyshev polynomial of the Jacobi-scaled A. Each
is `smoothers.py`'s, on A's own rows:

* `SSOR`: z = M r is `sweeps` forward SOR sweeps from z = 0 over the colours (colour 0 first),
  then as many backwards (the last colour first): ``M = (D/w + L) (w / (2 - w)) D^-1 (D/w +
  U)`` up to a scale, symmetric positive definite for 0 < w < 2 (w = 1: symmetric
  Gauss-Seidel).
* `Chebyshev`: z = p(D^-1 A) D^-1 r, p the polynomial of degree `degree` of Chebyshev's
  iteration on [rho / 30, rho] (rho Gershgorin's bound of D^-1 A's spectral radius): positive
  on (0, rho], so M is symmetric positive definite; its steps are residual and update kernels
  only (no colours): degree - 1 matrix products.
"""
from __future__ import annotations

import relsim as rs

from . import aggregation, smoothers
from . import kernels as _kernels


class _Relaxation:
    """The part `SSOR` and `Chebyshev` share: the work fields, the kernels and ``apply``."""

    kind = ""

    def __init__(self, A, sweeps: int, omega: float, name: str, who: str):
        if getattr(A, "entries", None) is None or not hasattr(A, "to_scipy"):
            raise TypeError(f"{who} needs a linalg.SparseMatrix, got {A!r}")
        smoothers.check(self.kind, sweeps, omega, who)
        if not isinstance(name, str) or not name.isidentifier():
            raise rs.DataError(f"a {who} name must be an identifier, got {name!r}")
        if rs.ranks().size > 1:
            raise rs.ConfigError(f"{who} runs in one process, not on the {rs.ranks().size} MPI "
                                 f"ranks here: precondition with M=the diagonal (Jacobi) under "
                                 f"MPI")
        self.A, self.name, self.who = A, name, who
        self.version = A.entries.a.version
        M = A.to_scipy()
        R = A.vertices
        prefix = f"_{name}_"
        smoothers.make_fields(R, prefix, M, 1.0)  # (D = 1 / diagonal: no Jacobi weight)
        names = smoothers.names(prefix, A.rows)
        text = _kernels.module_text(smoothers.KERNELS, names, list(smoothers.GLOBALS))
        self._globals = {g: rs.Global(rs.f64, 0.0, name=f"{name}_{g}")
                         for g in smoothers.GLOBALS}
        kernels = _kernels.load(text, rs.config.current().cache_path()).make(**self._globals)
        self.smoother = smoothers.Smoother(
            self.kind, sweeps, R, M, aggregation.spectral_radius(M, M.diagonal()), 1.0, omega,
            kernels, self._globals, prefix)
        self.b, self.x = R.field(prefix + "b"), R.field(prefix + "x")

    def apply(self, r, z, config=None) -> None:
        """z = M r (scalar f64 fields of A's relation)."""
        if self.A.entries.a.version != self.version:
            raise rs.DataError(f"{self.who} {self.name}: the entries of {self.A.name} changed "
                               f"since it was built; build a {self.who} again")
        self.b.copy_from(r)
        self._apply(config)
        z.copy_from(self.x)


class SSOR(_Relaxation):
    """Symmetric SOR as a preconditioner for ``linalg.cg(..., M=ssor)``: `sweeps` forward sweeps
    of weight `omega` (1: symmetric Gauss-Seidel) over the colours of the `SparseMatrix` A's
    graph, then as many backwards. Each colour is a launch over a subset of A's rows
    (``_<name>_colour<c>``, made by `rs.colour`; ``ssor.colours``); A's entries as they are now
    (build it again after they change)."""

    kind = "gauss-seidel"

    def __init__(self, A, omega: float = 1.0, sweeps: int = 1, name: str = "ssor"):
        super().__init__(A, sweeps, omega, name, "SSOR")
        self.colours = self.smoother.colours

    def _apply(self, config) -> None:
        self.smoother.pre(config)
        self.smoother.post(config)


class Chebyshev(_Relaxation):
    """A Chebyshev polynomial preconditioner for ``linalg.cg(..., M=cheb)``: z = p(D^-1 A) D^-1
    r with p of degree `degree` (degree - 1 products with the `SparseMatrix` A, whose entries
    as they are now it uses: build it again after they change)."""

    kind = "chebyshev"

    def __init__(self, A, degree: int = 3, name: str = "chebyshev"):
        super().__init__(A, degree, 1.0, name, "Chebyshev")

    def _apply(self, config) -> None:
        self.smoother.pre(config)
