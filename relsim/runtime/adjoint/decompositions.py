"""`rs.eigh`, `rs.svd` and `rs.polar` in the adjoint pass (`generate.Adjoint`), by the
derivatives of the exact decompositions, not of the iterations that compute them.

The replay calls the decomposition (the forward's own function, so the same values) and reads
its parts into f64 locals; its record (`Decomp`) sends the parts' adjoints back to the matrix's
entries. With ``P = U^T dF V`` (``Q^T dA Q`` for eigh) and the rotations' derivatives ``dU = U
Omega_U``, ``dV = V Omega_V`` (antisymmetric), differentiating ``F = U diag(S) V^T`` gives
``dS_i = P_ii`` and ``P_ij = (Omega_U)_ij s_j - s_i (Omega_V)_ij``; transposing that linear map:

* svd: ``F_bar = U B V^T``, ``B_ii = S_bar_i``, ``B_ij = (s_j (M_ij - M_ji) + s_i (N_ij -
  N_ji)) / (s_j^2 - s_i^2)`` with ``M = U^T U_bar``, ``N = V^T V_bar`` (valid for the signed
  convention too: only distinct ``s_i^2`` are needed);
* eigh: ``A_bar = Q B Q^T``, ``B_ii = w_bar_i``, ``B_ij = M_ij / (w_j - w_i)``, ``M = Q^T
  Q_bar``; the input's lower triangle gets ``A_bar_ij + A_bar_ji`` (it gives both entries);
* polar (``R = U V^T``, ``P = V diag(S) V^T``): with ``X = U^T R_bar V`` and ``Y = V^T P_bar
  V``, the svd rule reduces to ``B_ij = (X_ij - X_ji + s_i (Y_ij + Y_ji)) / (s_i + s_j)``,
  ``B_ii = Y_ii``: no division by a difference, so repeated singular values are fine (the
  replay also calls `svd` for U, S, V).

Where the quotient's numerator is zero the entry is zero (a loss of the eigenvalues alone is
differentiable at repeated eigenvalues); a nonzero numerator over a zero denominator is where
the decomposition has no derivative (eigenvectors of repeated eigenvalues, singular vectors of
repeated singular values), and the gradient is then infinite or NaN, as the mathematics says.
"""
from __future__ import annotations

from ...types import f64
from .. import ir
from ..builtin_table import DECOMPOSITIONS
from .derivatives import Build
from .records import Decomp, adj_name, is_mat

# the parts of each decomposition's result: "vec" (n) or "mat" (n x n)
PARTS = {"eigh": ("vec", "mat"), "svd": ("mat", "vec", "mat"), "polar": ("mat", "mat")}


class Decompositions:
    """A mixin of `Adjoint`: the replay of a decomposition (`decomposition`, its tuple atom
    ``("tuple", [part, ...])``, each part a vector's or matrix's names; `tuple_of` for a tuple
    local or call) and its reverse (`decomposition_adjoint`)."""

    def decomposition(self, e, env, out) -> tuple:
        rows = self.flatten(e.args[0], env, out)[1]
        n = len(rows)
        arg = self.mat_node(rows, e.loc)
        parts = self.read_parts(e.func, arg, n, e.loc, out)
        svd = self.read_parts("svd", arg, n, e.loc, out) if e.func == "polar" else None
        out.records.append(Decomp(e.func, rows, tuple(parts), svd, e.loc))
        return ("tuple", parts)

    def tuple_of(self, e, env, out) -> tuple:
        """The replay of a tuple value (a decomposition's): ``("tuple", [part names, ...])``."""
        if isinstance(e, ir.Local):
            return env.version[e.name]
        if isinstance(e, ir.Call) and e.func in DECOMPOSITIONS and is_mat(e.args[0].type):
            return self.decomposition(e, env, out)
        raise self.refuse(f"this tuple value ({type(e).__name__}; not differentiated yet)",
                          e.loc)

    def read_parts(self, func, arg, n, loc, out) -> list:
        """`func(arg)` into a tuple local, its parts' entries into f64 locals (their names)."""
        self.count += 1
        tup = f"_r{self.count}_{func}"  # (a tuple: read right away, never after a branch)
        out.stmts.append(ir.Assign(loc, tup, ir.Call(loc, func, (arg,))))
        parts = []
        for k, shape in enumerate(PARTS[func]):
            part = ir.Index(loc, ir.Local(loc, tup), (ir.Const(loc, k),))
            if shape == "vec":
                parts.append(tuple(self.entry(part, (i,), f"{func}{k}", loc, out)
                                   for i in range(n)))
            else:
                parts.append(tuple(tuple(self.entry(part, (i, j), f"{func}{k}", loc, out)
                                         for j in range(n)) for i in range(n)))
        return parts

    def entry(self, part, index, hint, loc, out) -> str:
        name = self.fresh(hint + "".join(map(str, index)), f64, loc)
        out.stmts.append(ir.Assign(loc, name, ir.Index(
            loc, part, tuple(ir.Const(loc, i) for i in index))))
        return name

    @staticmethod
    def part_atom(names) -> tuple:
        if isinstance(names[0], tuple):
            return ("mat", [[("local", c) for c in row] for row in names])
        return ("vec", [("local", c) for c in names])

    # -- the reverse ------------------------------------------------------------------------
    def decomposition_adjoint(self, r) -> list:
        """The statements sending `r`'s parts' adjoints to its matrix's entries."""
        loc, n = r.loc, len(r.rows)
        b = _Exprs(self, loc)

        def val(names):
            return [[ir.Local(loc, c) for c in row] for row in names]

        def bar(names):
            return [[ir.Local(loc, adj_name(c)) for c in row] for row in names]

        if r.func == "eigh":
            w, q = r.parts
            wv = [ir.Local(loc, c) for c in w]
            qm = val(q)
            m = b.product(b.transpose(qm), bar(q))
            core = [[ir.Local(loc, adj_name(w[i])) if i == j else
                     b.quotient(m[i][j], b.sub(wv[j], wv[i])) for j in range(n)]
                    for i in range(n)]
            a = b.product(b.product(qm, core), b.transpose(qm))
            grads = [[b.add(a[i][j], a[j][i]) if j < i else a[i][i] if i == j else None
                      for j in range(n)] for i in range(n)]
        else:
            u, s, v = r.parts if r.func == "svd" else r.svd
            um, vm = val(u), val(v)
            sv = [ir.Local(loc, c) for c in s]
            if r.func == "svd":
                m = b.product(b.transpose(um), bar(u))
                nn = b.product(b.transpose(vm), bar(v))
                diag = [ir.Local(loc, adj_name(c)) for c in s]

                def off(i, j):
                    num = b.add(b.mul(sv[j], b.sub(m[i][j], m[j][i])),
                                b.mul(sv[i], b.sub(nn[i][j], nn[j][i])))
                    return b.quotient(num, b.sub(b.mul(sv[j], sv[j]), b.mul(sv[i], sv[i])))
            else:  # polar
                rp, pp = r.parts
                x = b.product(b.product(b.transpose(um), bar(rp)), vm)
                y = b.product(b.product(b.transpose(vm), bar(pp)), vm)
                diag = [y[i][i] for i in range(n)]

                def off(i, j):
                    num = b.add(b.sub(x[i][j], x[j][i]), b.mul(sv[i], b.add(y[i][j], y[j][i])))
                    return b.quotient(num, b.add(sv[i], sv[j]))
            core = [[diag[i] if i == j else off(i, j) for j in range(n)] for i in range(n)]
            grads = b.product(b.product(um, core), b.transpose(vm))
        out = b.stmts
        for i in range(n):
            for j in range(n):
                if grads[i][j] is not None:
                    out += self.accumulate(r.rows[i][j], grads[i][j], loc)
        return out


class _Exprs(Build):
    """Untyped IR for the reverse rules, each matrix entry held in a new local (so the
    expressions stay small); `stmts` collects the assignments."""

    def __init__(self, adjoint, loc):
        super().__init__(loc)
        self.adjoint, self.stmts = adjoint, []

    def held(self, e):
        self.adjoint.count += 1
        name = f"_a{self.adjoint.count}"
        self.stmts.append(ir.Assign(self.loc, name, e))
        return ir.Local(self.loc, name)

    def quotient(self, num, den):
        """num / den, or 0 where num is 0 (see the module docstring)."""
        num = self.held(num)
        zero = ir.Const(self.loc, 0.0)
        return self.held(ir.IfExp(self.loc, ir.Compare(self.loc, "==", num, zero), zero,
                                  ir.BinOp(self.loc, "/", num, den)))

    @staticmethod
    def transpose(m):
        return [list(col) for col in zip(*m)]

    def product(self, a, b):
        out = []
        for row in a:
            line = []
            for j in range(len(b[0])):
                total = self.mul(row[0], b[0][j])
                for k in range(1, len(b)):
                    total = self.add(total, self.mul(row[k], b[k][j]))
                line.append(self.held(total))
            out.append(line)
        return out
