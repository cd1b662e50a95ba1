"""`rs.eigh`, `rs.svd` and `rs.polar` of 2x2 and 3x3 matrices, written once over the scalar
algebra of `semantics` (so every target runs the same floating-point operations, bit for bit).

No data-dependent loop or branch: a fixed number of cyclic Jacobi sweeps (for a 3x3, one sweep's
code in a loop of the algebra, `repeat`: the same operations as the sweeps written out, a fifth
of the code to compile), each rotation computed scale-free so that it never divides by zero,
and selects for the sorts. The
SVD squares the entries (column dot products): full accuracy for entries of magnitude within
1e-150..1e150 (f32: 1e-18..1e18), beyond which the squares leave the float range. Nothing in
it creates a NaN or an infinity from a finite matrix in that range (so debug mode's NaN-origin
checks stay quiet).

* `eigh(A)`: the symmetric matrix given by A's lower triangle (as `numpy.linalg.eigh`);
  eigenvalues ascending, eigenvectors the columns of Q, a rotation (det Q = +1).
* `svd(F) -> (U, S, V)`, F = U diag(S) V^T with U, V rotations: the convention of physics
  codes (Irving et al. 2004; Warp's `svd3`, Taichi's `ti.svd`), not NumPy's. S[0] >= S[1] >=
  |S[-1]|, and S[-1] < 0 exactly when det F < 0 (an inverted element). NumPy's singular
  values are |S|. V comes from one-sided Jacobi rotations orthogonalising the columns of F V
  (sorted by decreasing length), U and S from a Givens QR of F V, whose R is diagonal up to
  rounding.
* `polar(F) -> (R, P)`, F = R P with R = U V^T a rotation and P = V diag(S) V^T symmetric
  (positive semidefinite unless F is inverted).

Values are component lists, row-major (`semantics`); `n` is 2 or 3, `et` the float type. Which
decompositions kernels may call is `builtin_table.DECOMPOSITIONS`; each is the function of that
name here.
"""
from __future__ import annotations

SWEEPS = 5  # 3x3 cyclic Jacobi sweeps; see tests/runtime/test_decompositions.py for accuracy
PAIRS3 = ((0, 1), (0, 2), (1, 2))  # a 3x3 sweep's rotations, in order


class _Ops:
    """Shorthands over an algebra for one element type."""

    def __init__(self, alg, et):
        self.alg, self.et = alg, et

    def c(self, v):
        return self.alg.const(v, self.et)

    def add(self, a, b):
        return self.alg.binop("+", a, b, self.et)

    def sub(self, a, b):
        return self.alg.binop("-", a, b, self.et)

    def mul(self, a, b):
        return self.alg.binop("*", a, b, self.et)

    def div(self, a, b):
        return self.alg.binop("/", a, b, self.et)

    def sqrt(self, a):
        return self.alg.math("sqrt", [a], self.et)

    def abs(self, a):
        return self.alg.math("fabs", [a], self.et)

    def lt(self, a, b):
        return self.alg.compare("<", a, b, self.et)

    def eq(self, a, b):
        return self.alg.compare("==", a, b, self.et)

    def pick(self, cond, a, b):
        return self.alg.select(cond, a, b, self.et)

    def neg(self, a):
        return self.alg.neg(a, self.et)


def _rotation(o, app, aqq, apq):
    """The Jacobi rotation (t, s, tau) zeroing the off-diagonal entry of [[app, apq], [apq,
    aqq]]: t = tan(phi) = sgn(d) y / (|x| + sqrt(x^2 + y^2)) with x = d / m, y = 2 apq / m,
    d = aqq - app, m = max(|d|, |2 apq|) (scale-free: no overflow or underflow in the squares;
    t = 0 when apq is 0, never a division by zero), s = sin(phi), tau = s / (1 + cos(phi))."""
    d = o.sub(aqq, app)
    off = o.add(apq, apq)
    ad, aoff = o.abs(d), o.abs(off)
    m = o.pick(o.lt(ad, aoff), aoff, ad)
    zero, one = o.c(0.0), o.c(1.0)
    m = o.pick(o.eq(m, zero), one, m)
    x, y = o.div(d, m), o.div(off, m)
    den = o.add(o.abs(x), o.sqrt(o.add(o.mul(x, x), o.mul(y, y))))
    den = o.pick(o.eq(den, zero), one, den)
    t = o.div(o.pick(o.lt(d, zero), o.neg(y), y), den)
    c = o.div(one, o.sqrt(o.add(one, o.mul(t, t))))
    s = o.mul(t, c)
    return t, s, o.div(s, o.add(one, c))


def _rotate_columns(o, m, n, p, q, s, tau):
    """Columns p, q of `m` (a dict) times the rotation [[c, s], [-s, c]] (Rutishauser's form)."""
    for r in range(n):
        mp, mq = m[r, p], m[r, q]
        m[r, p] = o.sub(mp, o.mul(s, o.add(mq, o.mul(tau, mp))))
        m[r, q] = o.add(mq, o.mul(s, o.sub(mp, o.mul(tau, mq))))


def _jacobi(o, a, v, n, p, q):
    """One Jacobi rotation zeroing a[p][q] of the symmetric n x n `a` (a dict (i, j) -> value,
    both triangles), accumulated into the columns of `v` (a dict too)."""
    apq = a[p, q]
    t, s, tau = _rotation(o, a[p, p], a[q, q], apq)
    ta = o.mul(t, apq)
    a[p, p] = o.sub(a[p, p], ta)
    a[q, q] = o.add(a[q, q], ta)
    a[p, q] = a[q, p] = o.c(0.0)
    for r in range(n):
        if r in (p, q):
            continue
        arp, arq = a[r, p], a[r, q]
        a[r, p] = a[p, r] = o.sub(arp, o.mul(s, o.add(arq, o.mul(tau, arp))))
        a[r, q] = a[q, r] = o.add(arq, o.mul(s, o.sub(arp, o.mul(tau, arq))))
    _rotate_columns(o, v, n, p, q, s, tau)


def _column_dot(o, m, n, p, q):
    acc = o.mul(m[0, p], m[0, q])
    for k in range(1, n):
        acc = o.add(acc, o.mul(m[k, p], m[k, q]))
    return acc


def _eigen(o, a, n):
    """Diagonalise the symmetric `a` (dict, both triangles) in place; the rotation V."""
    v = {(i, j): o.c(1.0 if i == j else 0.0) for i in range(n) for j in range(n)}
    lower = [(i, j) for i in range(n) for j in range(i + 1)]

    def rotate(p, q):
        _jacobi(o, a, v, n, p, q)

    def load(values):  # a's lower triangle (mirrored), then v
        for (i, j), x in zip(lower, values):
            a[i, j] = a[j, i] = x
        v.update(zip(list(v), values[len(lower):]))

    _sweeps(o, n, rotate, load, lambda: [a[k] for k in lower] + list(v.values()))
    return [a[i, i] for i in range(n)], v


def _sweeps(o, n, rotate, load, values):
    """The cyclic Jacobi sweeps: `rotate(p, q)` for each pair of each sweep, on matrices whose
    entries `values()` lists and `load(list)` sets. A 2x2 has one rotation; a 3x3's `SWEEPS`
    sweeps are a loop of the algebra (`repeat`) over one sweep's code."""
    if n == 2:
        rotate(0, 1)
        return

    def sweep(state):
        load(state)
        for p, q in PAIRS3:
            rotate(p, q)
        return values()

    load(o.alg.repeat(SWEEPS, values(), sweep))


def _sort(o, w, ms, n, descending):
    """Sort the values `w` and, with them, the columns of each matrix of `ms` by a compare-swap
    network; a swap negates one of the two columns, so a determinant is kept."""
    net = [(0, 1)] if n == 2 else [(0, 1), (1, 2), (0, 1)]
    for i, j in net:
        swap = o.lt(w[i], w[j]) if descending else o.lt(w[j], w[i])
        w[i], w[j] = o.pick(swap, w[j], w[i]), o.pick(swap, w[i], w[j])
        for v in ms:
            for r in range(n):
                vi, vj = v[r, i], v[r, j]
                v[r, i], v[r, j] = o.pick(swap, vj, vi), o.pick(swap, o.neg(vi), vj)


def _flat(m, n):
    return [m[i, j] for i in range(n) for j in range(n)]


def _mat(x, n):
    return {(i, j): x[i * n + j] for i in range(n) for j in range(n)}


def eigh(alg, m, n, et):
    """Eigenvalues (ascending) and eigenvectors (columns of a rotation) of the symmetric matrix
    given by the lower triangle of `m`: components w (n) then Q (n x n)."""
    o = _Ops(alg, et)
    a = {}
    for i in range(n):
        for j in range(i + 1):
            a[i, j] = a[j, i] = m[i * n + j]
    w, v = _eigen(o, a, n)
    _sort(o, w, [v], n, descending=False)
    return w + _flat(v, n)


def _svd(o, m, n):
    """(U, S, V) as dicts and a list: see the module's docstring. One-sided (Hestenes) Jacobi
    orthogonalises the columns of B = F V, each rotation computed from the current columns
    (accurate for small singular values too); the columns are sorted by decreasing length and
    a Givens QR of B gives U and S."""
    b = _mat(m, n)
    v = {(i, j): o.c(1.0 if i == j else 0.0) for i in range(n) for j in range(n)}

    def rotate(p, q):
        _, s, tau = _rotation(o, _column_dot(o, b, n, p, p), _column_dot(o, b, n, q, q),
                              _column_dot(o, b, n, p, q))
        _rotate_columns(o, b, n, p, q, s, tau)
        _rotate_columns(o, v, n, p, q, s, tau)

    def load(values):
        b.update(zip(list(b), values))
        v.update(zip(list(v), values[len(b):]))

    _sweeps(o, n, rotate, load, lambda: list(b.values()) + list(v.values()))
    w = [_column_dot(o, b, n, j, j) for j in range(n)]
    _sort(o, w, [b, v], n, descending=True)
    u = {(i, j): o.c(1.0 if i == j else 0.0) for i in range(n) for j in range(n)}
    for col, row in ([(0, 1)] if n == 2 else PAIRS3):
        _givens(o, b, u, n, col, row)
    return u, [b[i, i] for i in range(n)], v


def _givens(o, b, u, n, col, row):
    """Zero b[row][col] by rotating rows `col` and `row` of b (r = hypot >= 0 on the diagonal;
    no rotation when both are 0), accumulating the transposed rotation into the columns of u."""
    x, y = b[col, col], b[row, col]
    r = o.sqrt(o.add(o.mul(x, x), o.mul(y, y)))
    zero = o.c(0.0)
    none = o.eq(r, zero)
    safe = o.pick(none, o.c(1.0), r)
    c = o.pick(none, o.c(1.0), o.div(x, safe))
    s = o.pick(none, zero, o.div(y, safe))
    for j in range(n):
        bc, br = b[col, j], b[row, j]
        b[col, j] = o.add(o.mul(c, bc), o.mul(s, br))
        b[row, j] = o.sub(o.mul(c, br), o.mul(s, bc))
    b[row, col] = zero
    for i in range(n):
        uc, ur = u[i, col], u[i, row]
        u[i, col] = o.add(o.mul(c, uc), o.mul(s, ur))
        u[i, row] = o.sub(o.mul(c, ur), o.mul(s, uc))


def svd(alg, m, n, et):
    """Components U (n x n), S (n), V (n x n)."""
    o = _Ops(alg, et)
    u, s, v = _svd(o, m, n)
    return _flat(u, n) + s + _flat(v, n)


def polar(alg, m, n, et):
    """Components R (n x n), P (n x n): F = R P, R = U V^T, P = V diag(S) V^T."""
    o = _Ops(alg, et)
    u, s, v = _svd(o, m, n)

    def dot_rows(x, y, i, j, scale=None):
        acc = None
        for k in range(n):
            term = o.mul(x[i, k], y[j, k])
            if scale is not None:
                term = o.mul(term, scale[k])
            acc = term if acc is None else o.add(acc, term)
        return acc

    r = [dot_rows(u, v, i, j) for i in range(n) for j in range(n)]
    p = {}
    for i in range(n):
        for j in range(i + 1):
            p[i, j] = p[j, i] = dot_rows(v, v, i, j, s)
    return r + _flat(p, n)

