"""Assembled sparse matrices on relations.

A `SparseMatrix` over a relation V is itself a relation, ``<name>_entries``: one row per
nonzero, in CSR order (by row, then column), with key fields ``row`` and ``col`` into V and the
value field ``a``. Elements assemble into it through a key vector of their own
(`SparseMatrix.from_elements` makes it: element e's entry (i, j), row vertex i and column vertex
j of its connectivity, is ``e.<name>[k * i + j]``), so assembly is an ordinary kernel reducing
into ``a`` through keys: race-free, folded in the serial order, the same bits everywhere. The
product ``y = A x`` is a row-wise gather over V (``for e in v.<name>_row:``, ascending columns).
"""
from __future__ import annotations

import numpy as np

import relsim as rs

from . import dirichlet as _dirichlet
from . import kernels as _kernels
from . import pattern
from .common import Operator

MATVEC_T = """
    @rs.kernel
    def matvec_t(v):
        s = 0.0
        for e in v.{COLS}:
            s += e.a * e.row.{X}
        v.{Y} = s
"""

MATVEC = """
    @rs.kernel
    def matvec(v):
        s = 0.0
        for e in v.{ROWS}:
            s += e.a * e.col.{X}
        v.{Y} = s
"""


def _check_name(name) -> None:
    if not name.isidentifier():
        raise rs.DataError(f"a SparseMatrix name must be an identifier, got {name!r}")


def _distinct(codes: np.ndarray) -> np.ndarray:
    """The distinct values of `codes`, ascending (changed in place). np.unique's hash table
    took 59 s for 66M pair codes; a sort and a mask take ~3-6 s (`from_elements` needs
    neither: `pattern`)."""
    codes.sort()
    keep = np.ones(len(codes), dtype=bool)
    np.not_equal(codes[1:], codes[:-1], out=keep[1:])
    return codes[keep]


class SparseMatrix:
    """A square sparse matrix over relation `vertices` with the nonzero pattern (`rows`,
    `cols`) (duplicates merged; the diagonal is always in the pattern). Its values are
    ``entries.a`` (0 until assembled or loaded)."""

    def __init__(self, vertices, rows, cols, name: str = "A"):
        if not isinstance(vertices, rs.Relation):
            raise TypeError(f"SparseMatrix needs the relation of its rows, got {vertices!r}")
        _check_name(name)
        n = vertices.size
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        if rows.shape != cols.shape or rows.ndim != 1:
            raise rs.DataError(f"SparseMatrix {name}: rows and cols must be 1-D of one length, "
                               f"got shapes {rows.shape} and {cols.shape}")
        bad = (rows < 0) | (rows >= n) | (cols < 0) | (cols >= n)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise rs.DataError(f"SparseMatrix {name}: entry ({rows[i]}, {cols[i]}) is outside "
                               f"the {n} rows of {vertices.name}")
        every = np.arange(n, dtype=np.int64)
        code = _distinct(np.concatenate([rows * n + cols, every * n + every]))
        self._build(vertices, code // n, code % n, name)

    def _build(self, vertices, rows, cols, name) -> None:
        """The entries relation of the pattern: entry i is (rows[i], cols[i]), in CSR order,
        distinct, the diagonal among them."""
        self.name, self.vertices, self.n = name, vertices, vertices.size
        self.entries = E = rs.Relation(f"{name}_entries", len(rows))
        E.new_key_field("row", vertices, values=rows, copy=False)  # (no copy when of the
        E.new_key_field("col", vertices, values=cols, copy=False)  # keys' type: set-up's own)
        E.new_field("a", rs.f64)
        self.rows = f"{name}_row"
        E.group_by(E.row, self.rows)
        self._operator = self._transposed = None
        self._elimination = None  # the Dirichlet rows and their kept columns

    @classmethod
    def from_elements(cls, connectivity, name: str = "A") -> SparseMatrix:
        """The matrix of a finite-element assembly over elements whose vertices are the key
        vector `connectivity` (arity k): every pair of an element's vertices is a nonzero. The
        elements get a key vector `name` (arity k * k) into the entries: element e's local
        entry (i, j) is ``e.<name>[k * i + j]``, for a kernel assembling into ``.a``."""
        if not isinstance(connectivity, rs.KeyField) or connectivity.type.shape == ():
            raise rs.DataError(f"from_elements needs an element relation's key vector (such as "
                               f"tets.v), got {getattr(connectivity, 'qualname', connectivity)}")
        conn = connectivity.numpy()  # (in range: key fields check their loads)
        k, n = conn.shape[1], connectivity.target.size
        _check_name(name)
        # the pattern in the keys' own types (int32 below 2^31 rows), each array then the
        # storage of its key field: no int64 temporaries, no copies (miniFE 80^3: 14M entries)
        _offsets, rows, cols, index = pattern.element_pattern(
            conn, n, rs.KeyField.storage_dtype)
        m = cls.__new__(cls)
        m._build(connectivity.target, rows, cols, name)
        connectivity.relation.new_key_field(name, m.entries, k * k, values=index, copy=False)
        return m

    @classmethod
    def from_scipy(cls, vertices, matrix, name: str = "A") -> SparseMatrix:
        """The SciPy sparse `matrix` (square, one row per row of relation `vertices`) as a
        SparseMatrix: its stored entries' pattern (duplicates summed, the diagonal added) and
        values."""
        import scipy.sparse as sp
        if not sp.issparse(matrix):
            raise rs.DataError(f"from_scipy needs a SciPy sparse matrix, got "
                               f"{type(matrix).__name__}")
        n = getattr(vertices, "size", None)
        if matrix.shape != (n, n):
            raise rs.DataError(f"SparseMatrix {name}: a {matrix.shape[0]} x {matrix.shape[1]} "
                               f"matrix for the {n} rows of "
                               f"{getattr(vertices, 'name', vertices)} (it must be {n} x {n})")
        if matrix.dtype.kind not in "biuf":
            raise rs.DataError(f"SparseMatrix {name}: {matrix.dtype} entries; relsim's are f64")
        coo = sp.csr_matrix(matrix, dtype=np.float64)
        coo.sum_duplicates()
        coo = coo.tocoo()
        m = cls(vertices, coo.row, coo.col, name)
        E = m.entries
        a = np.zeros(E.size)
        at = np.searchsorted(E.row.numpy().astype(np.int64) * n + E.col.numpy(),
                             coo.row.astype(np.int64) * n + coo.col)
        a[at] = coo.data
        E.a.load(a)
        return m

    def compacted(self, name: str | None = None) -> SparseMatrix:
        """A copy without the entries that are exactly 0 (the diagonal kept): the matrix to
        solve with once assembly is done. A P1 stiffness matrix of a structured tet mesh is
        ~60% zeros (edges whose cotangent weight is 0), and Dirichlet elimination zeroes the
        boundary rows and columns; every product with the copy skips them. Its Dirichlet rows
        and kept columns come with it: ``copy.dirichlet(rows, b=..., values=...)`` lifts new
        boundary values into each new b as this matrix would. It has no element keys
        (assemble into this one and compact again); named `name` (default ``<name>_nz``, its
        rows' grouping ``<name>_row``)."""
        name = f"{self.name}_nz" if name is None else name
        E = self.entries
        r, c, a = E.row.numpy(), E.col.numpy(), E.a.numpy()
        keep = (a != 0.0) | (r == c)
        m = SparseMatrix.__new__(SparseMatrix)
        _check_name(name)
        m._build(self.vertices, r[keep].astype(np.int64), c[keep].astype(np.int64), name)
        m.entries.a.load(a[keep])
        elim = self._elimination
        if elim is not None and elim.current(E):
            m._elimination = elim.carried(m.entries)
        return m

    # -- values ---------------------------------------------------------------------------
    def to_scipy(self):
        """The matrix as a SciPy CSR matrix (a copy of the values; needs scipy)."""
        import scipy.sparse as sp
        E = self.entries
        return sp.csr_matrix((E.a.numpy(copy=True), (E.row.numpy(), E.col.numpy())),
                             shape=(self.n, self.n))

    def diagonal(self, out) -> None:
        """Write the diagonal into `out`, a scalar f64 field of the rows' relation (for
        Jacobi preconditioning: ``cg(A, b, x, M=out)``)."""
        E = self.entries
        on = E.row.numpy() == E.col.numpy()
        d = np.zeros(self.n)
        d[E.row.numpy()[on]] = E.a.numpy()[on]
        out.load(d)

    def dirichlet(self, rows, b=None, values=0.0) -> None:
        """Impose ``x[rows] = values`` on ``A x = b``, keeping A symmetric: each such row
        becomes the identity row and ``b`` there the value; in every other row the columns of
        `rows` move to the right-hand side: ``b -= s``, s the sum of ``a * value`` over those
        columns, added in column order from 0 (as miniFE's impose_dirichlet, so its right-hand
        side bit for bit). `rows`: row numbers or a Subset of the rows' relation; `values`:
        one number, one per row, or an f64 field of the rows' relation (read at `rows`).

        Call it again each time ``b`` is computed anew (a time loop, new boundary values): A's
        rows are eliminated once and the moved columns kept (`linalg/dirichlet.py`), so every
        call lifts them into its ``b``. After A's entries are assembled again, the next call
        eliminates afresh from the new entries."""
        rows, vals = _dirichlet.rows_and_values(self, rows, values)
        E, elim = self.entries, self._elimination
        if elim is None or not elim.current(E):
            if elim is not None and elim.compacted:
                raise rs.DataError(
                    f"{self.name}.dirichlet: the entries of {self.name} changed since it was "
                    f"compacted with its Dirichlet rows eliminated; its pattern no longer holds "
                    f"the columns that elimination moved, so they cannot be moved again: "
                    f"assemble the full matrix, impose the rows there and compact it again")
            if elim is not None and elim.columns_gone(E):
                raise rs.DataError(
                    f"{self.name}.dirichlet: the entries of {self.name} changed since it "
                    f"eliminated its Dirichlet rows, but every column entry that elimination "
                    f"moved to the right-hand side is still 0: the entries were changed in place "
                    f"(not assembled again), so the columns are lost; assemble {self.name} again "
                    f"(its full entries) before imposing Dirichlet rows on it")
            elim = self._elimination = _dirichlet.Elimination(self.n)
        new = np.unique(rows[~elim.fixed[rows]])
        if new.size:
            elim.eliminate(new, E)
        if b is not None:
            elim.lift(rows, vals, E, b)

    # -- the product ----------------------------------------------------------------------
    def operator(self) -> Operator:
        """y = A x as a solver's operator, on two scratch fields of the rows' relation."""
        if self._operator is None:
            V = self.vertices
            x, y = (V.field(f) if V.has_field(f) else V.new_field(f, rs.f64)
                    for f in (f"_linalg_{self.name}_x", f"_linalg_{self.name}_y"))
            self._operator = Operator(self.matvec(x, y), x, y)
        return self._operator

    def transposed(self) -> Operator:
        """y = A^T x as a solver's operator (a gather over each column's entries, in ascending
        row order), on two scratch fields of the rows' relation; the column grouping
        ``<name>_col`` is made on first use."""
        if self._transposed is None:
            V, E = self.vertices, self.entries
            cols = f"{self.name}_col"
            if cols not in V.groupings:
                E.group_by(E.col, cols)
            x, y = (V.field(f) if V.has_field(f) else V.new_field(f, rs.f64)
                    for f in (f"_linalg_{self.name}_tx", f"_linalg_{self.name}_ty"))
            text = _kernels.module_text({"matvec_t": MATVEC_T},
                                        {"COLS": cols, "X": x.name, "Y": y.name}, [])
            k = _kernels.load(text, rs.config.current().cache_path()).make()["matvec_t"]
            self._transposed = Operator(k, x, y)
        return self._transposed

    def matvec(self, x, y):
        """The kernel over the rows' relation computing ``y = A x`` (fields x, y of it)."""
        text = _kernels.module_text({"matvec": MATVEC},
                                    {"ROWS": self.rows, "X": x.name, "Y": y.name}, [])
        return _kernels.load(text, rs.config.current().cache_path()).make()["matvec"]
