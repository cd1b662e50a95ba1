"""Smoothed-aggregation algebraic multigrid as a preconditioner: ``cg(A, b, x, M=Multigrid(A))``.

The hierarchy is built on the host (`aggregation.py`); each coarse level is a relation of its
own (``<name>_level<l>``) with the level's matrix as a `SparseMatrix` named as A (so the
level's kernels are the same text as the finest level's, compiled once), and each prolongator
is a relation of entries with key fields ``fine`` and ``coarse``, grouped on both sides. One
application of the preconditioner, z = M r, is a V-cycle of kernels:

    x from b by the smoother, starting at x = 0            (pre-smoothing)
    r = b - A x;  b_coarse = P^T r                           (restriction: a gather per coarse row)
    the same on the coarser level, with x_coarse = 0; the coarsest solved by LU on the host
    x += P x_coarse                                         (prolongation: a gather per fine row)
    x improved by the smoother's adjoint                    (post-smoothing)

The smoothers (damped Jacobi, Chebyshev, symmetric Gauss-Seidel over colours) are
`smoothers.py`'s. Post-smoothing the adjoint of pre-smoothing and the exact coarsest solve make
M symmetric positive definite, as cg needs. Every sum is a gather in ascending entry order and
the host parts are deterministic, so z is the same bits on every target and thread count.
(One process: the coarse relations are not partitioned over MPI ranks.)
"""
from __future__ import annotations

import relsim as rs

from . import aggregation, smoothers
from . import kernels as _kernels

CYCLE = {
    **{k: smoothers.KERNELS[k] for k in ("first", "sweep", "residual", "chebyshev_first",
                                           "chebyshev_step", "gauss_seidel")},
    "restrict": """
    @rs.kernel
    def restrict(c):
        s = 0.0
        for e in c.{PCOL}:
            s += e.p * e.fine.{R}
        c.{B} = s
""",
    "prolong": """
    @rs.kernel
    def prolong(v):
        s = 0.0
        for e in v.{PROW}:
            s += e.p * e.coarse.{X}
        v.{X} += s
""",
}


class Multigrid:
    """A smoothed-aggregation multigrid V-cycle for the symmetric positive definite
    `SparseMatrix` A (with its entries as they are now: build it again after they change), for
    ``linalg.cg(..., M=mg)``. `smoother`: ``"jacobi"`` (damped), ``"chebyshev"`` or
    ``"gauss-seidel"`` (symmetric, over the colours of each level's graph, SOR weight `omega`);
    `sweeps`: its sweeps before and after each coarse correction (Chebyshev: its polynomial's
    degree); the hierarchy coarsens until a level has at most `max_coarse` rows (solved by LU)
    or has `max_levels` levels. ``mg.levels``: the rows of each level."""

    def __init__(self, A, sweeps: int = 1, max_coarse: int = 300, max_levels: int = 10,
                 name: str = "mg", smoother: str = "jacobi", omega: float = 1.0):
        if getattr(A, "entries", None) is None or not hasattr(A, "to_scipy"):
            raise TypeError(f"Multigrid needs a linalg.SparseMatrix, got {A!r}")
        smoothers.check(smoother, sweeps, omega, "Multigrid")
        if not name.isidentifier():
            raise rs.DataError(f"a Multigrid name must be an identifier, got {name!r}")
        if rs.ranks().size > 1:
            raise rs.ConfigError(f"Multigrid runs in one process (its coarse levels are not "
                                 f"partitioned), not on the {rs.ranks().size} MPI ranks here: "
                                 f"precondition with M=the diagonal (Jacobi) under MPI")
        from .sparse import SparseMatrix
        self.A, self.sweeps, self.name, self.smoother = A, sweeps, name, smoother
        self.version = A.entries.a.version
        hier = aggregation.hierarchy(A.to_scipy(), max_coarse, max_levels)
        prefix = f"_{name}_"
        self.names = smoothers.names(prefix, A.rows)
        self.names.update(PROW=prefix + "prow", PCOL=prefix + "pcol")
        rels = [A.vertices]
        for lev in range(1, len(hier)):
            C = rs.Relation(f"{name}_level{lev}", hier[lev].A.shape[0])
            SparseMatrix.from_scipy(C, hier[lev].A, name=A.name)
            rels.append(C)
        for lev, R in enumerate(rels):
            smoothers.make_fields(R, prefix, hier[lev].A, hier[lev].omega)
        if self.names["PROW"] in A.vertices.groupings:  # an earlier Multigrid's, replaced
            A.vertices.drop_grouping(self.names["PROW"])
        self._prolongators = []
        for lev in range(len(hier) - 1):
            P = hier[lev].P.tocoo()
            E = rs.Relation(f"{name}_P{lev + 1}", P.nnz)
            E.new_key_field("fine", rels[lev], values=P.row)
            E.new_key_field("coarse", rels[lev + 1], values=P.col)
            E.new_field("p", rs.f64).load(P.data)
            E.group_by(E.fine, self.names["PROW"])
            E.group_by(E.coarse, self.names["PCOL"])
            self._prolongators.append(E)
        self.relations = rels
        self.levels = [R.size for R in rels]
        import scipy.sparse.linalg as spla
        self._coarsest = spla.splu(hier[-1].A.tocsc())
        text = _kernels.module_text(CYCLE, self.names, list(smoothers.GLOBALS))
        self._globals = {g: rs.Global(rs.f64, 0.0, name=f"{name}_{g}")
                         for g in smoothers.GLOBALS}
        self.kernels = _kernels.load(text, rs.config.current().cache_path()).make(
            **self._globals)
        self._smoothers = [
            smoothers.Smoother(smoother, sweeps, R, hier[lev].A, hier[lev].rho,
                               hier[lev].omega, omega, self.kernels, self._globals, prefix)
            for lev, R in enumerate(rels[:-1])]

    def field(self, level: int, what: str):
        """The cycle's work field `what` ("b", "x", "xn", "r", "d" or "di") on level `level`
        (0: the finest, A's rows): to inspect the hierarchy."""
        return self.relations[level].field(self.names[what.upper()])

    def apply(self, r, z, config=None) -> None:
        """z = M r (scalar f64 fields of A's relation)."""
        if self.A.entries.a.version != self.version:
            raise rs.DataError(f"Multigrid {self.name}: the entries of {self.A.name} changed "
                               f"since its hierarchy was built; build a Multigrid again")
        if self._prolongators and self.relations[0].grouping(self.names["PROW"]).source \
                is not self._prolongators[0]:
            raise rs.DataError(f"Multigrid {self.name}: a newer Multigrid of the same name on "
                               f"{self.relations[0].name} replaced this one; use that one")
        self.field(0, "b").copy_from(r)
        self._cycle(0, config)
        z.copy_from(self.field(0, "x"))

    def _cycle(self, lev: int, config) -> None:
        R, k = self.relations[lev], self.kernels
        if lev == len(self.relations) - 1:
            self.field(lev, "x").load(self._coarsest.solve(self.field(lev, "b").numpy()))
            return
        self._smoothers[lev].pre(config)
        R.foreach(k["residual"], config)
        self.relations[lev + 1].foreach(k["restrict"], config)
        self._cycle(lev + 1, config)
        R.foreach(k["prolong"], config)
        self._smoothers[lev].post(config)
