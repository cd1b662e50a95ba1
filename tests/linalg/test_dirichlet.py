"""SparseMatrix.dirichlet called again and again: a time loop recomputes b and imposes new
boundary values each step; every call must move the eliminated columns into its b (the first
call used to zero them, so later calls moved nothing: a silently wrong solve). Values from a
field, entries assembled again, entries changed in place, and bad input."""
import numpy as np
import pytest

import relsim as rs
from relsim import linalg
from tests.linalg import fem


def _f(P):
    return np.cos(P[:, 0]) + P[:, 1] * P[:, 2]


def _imposed(b, values, sides, calls=1):
    """(the entries, b) after `calls` calls of dirichlet with `values` on a fresh matrix whose
    right-hand side is `b` before each call."""
    mesh, K, V, _ = fem.poisson(2, _f)
    for _ in range(calls):
        V.b.load(b)
        K.dirichlet(sides, b=V.b, values=values)
    return K.entries.a.numpy(copy=True), V.b.numpy(copy=True)


def test_every_call_moves_the_columns_into_its_b_as_the_first_call_does():
    mesh, K, V, sides = fem.poisson(2, _f)
    b0 = V.b.numpy(copy=True)
    rng = np.random.default_rng(4)
    for step in range(3):  # new b and new values each step, the same bits as a fresh matrix
        b = b0 * (1.0 + step) + rng.standard_normal(V.size)
        vals = rng.uniform(-1.0, 1.0, len(sides))
        V.b.load(b)
        K.dirichlet(sides, b=V.b, values=vals)
        want_a, want_b = _imposed(b, vals, sides)
        assert K.entries.a.numpy().tobytes() == want_a.tobytes(), step
        assert V.b.numpy().tobytes() == want_b.tobytes(), step
    assert np.array_equal(V.b.numpy()[sides], vals)


def test_the_new_users_time_loop_solves_right_every_step():
    """The issue's reproduction: u = x is harmonic, so each solve is exact to round-off."""
    mesh, K, V, sides = fem.poisson(2, lambda P: 0.0 * P[:, 0])
    x = V.pos.numpy()[:, 0]
    for scale in (1.0, 2.0, -0.5):
        V.b.fill(0.0)
        K.dirichlet(sides, b=V.b, values=scale * x[sides])
        linalg.cg(K, V.b, V.x, rtol=1e-13)
        assert np.abs(V.x.numpy() - scale * x).max() < 1e-12, scale


def test_values_from_a_field_are_the_fields_values_at_the_rows():
    mesh, K, V, sides = fem.poisson(2, _f)
    b0 = V.b.numpy(copy=True)
    g = V.new_field("g", rs.f64).load(np.sin(V.pos.numpy()[:, 1]))
    K.dirichlet(V.subset("sides", sides), b=V.b, values=g)
    want_a, want_b = _imposed(b0, g.numpy()[sides], sides)
    assert V.b.numpy().tobytes() == want_b.tobytes()
    assert K.entries.a.numpy().tobytes() == want_a.tobytes()


def test_rows_imposed_over_several_calls_lift_again_call_by_call():
    """miniFE's way: one call for the 0-valued faces, one for the others; repeated."""
    mesh, K, V, sides = fem.poisson(2, _f)
    b0 = V.b.numpy(copy=True)
    low, high = sides[: len(sides) // 2], sides[len(sides) // 2:]
    results = []
    for _ in range(2):
        V.b.load(b0)
        K.dirichlet(low, b=V.b, values=0.5)
        K.dirichlet(high, b=V.b, values=np.linspace(1.0, 2.0, len(high)))
        results.append((K.entries.a.numpy().tobytes(), V.b.numpy().tobytes()))
    assert results[0] == results[1]
    # and the same as imposing both at once (the columns of each call move in its call)
    both = np.concatenate([np.full(len(low), 0.5), np.linspace(1.0, 2.0, len(high))])
    want_a, want_b = _imposed(b0, both, np.concatenate([low, high]))
    assert results[0][0] == want_a.tobytes()
    assert np.allclose(np.frombuffer(results[0][1]), want_b, rtol=1e-15, atol=1e-15)


def test_entries_assembled_again_are_eliminated_afresh():
    mesh, K, V, sides = fem.poisson(2, _f)
    a0, b0 = K.entries.a.numpy(copy=True), V.b.numpy(copy=True)
    K.dirichlet(sides, b=V.b, values=1.0)
    K.entries.a.load(2.0 * a0)  # assembled again, with another coefficient
    V.b.load(b0)
    K.dirichlet(sides, b=V.b, values=1.0)
    mesh2, K2, V2, _ = fem.poisson(2, _f)
    K2.entries.a.load(2.0 * a0)
    K2.dirichlet(sides, b=V2.b, values=1.0)
    assert K.entries.a.numpy().tobytes() == K2.entries.a.numpy().tobytes()
    assert V.b.numpy().tobytes() == V2.b.numpy().tobytes()


def test_entries_changed_in_place_after_elimination_are_an_error_not_a_silent_b():
    mesh, K, V, sides = fem.poisson(2, _f)
    K.dirichlet(sides, b=V.b, values=1.0)
    K.entries.a.load(3.0 * K.entries.a.numpy())  # scaled in place: the moved columns stay 0
    with pytest.raises(rs.DataError, match=r"K.dirichlet: the entries of K changed since it "
                                           r"eliminated .* assemble K again"):
        K.dirichlet(sides, b=V.b, values=1.0)


def test_bad_rows_and_values_are_refused_with_names():
    mesh, K, V, sides = fem.poisson(2, _f)
    W = rs.Relation("W", 3)
    with pytest.raises(rs.DataError, match=r"K.dirichlet: subset 'all' is of relation W, not "
                                           r"of vertices"):
        K.dirichlet(W.subset("all", [0, 1]), b=V.b)
    with pytest.raises(rs.DataError, match=rf"row {V.size} is outside the {V.size} rows"):
        K.dirichlet([0, V.size], b=V.b)
    with pytest.raises(rs.DataError, match=r"row 3 is given twice with different values"):
        K.dirichlet([3, 1, 3], b=V.b, values=[1.0, 2.0, 3.0])
    with pytest.raises(rs.DataError, match=r"values from a field must be an f64 scalar field of "
                                           r"vertices, got W.w"):
        K.dirichlet([1], b=V.b, values=W.new_field("w", rs.f64))
    with pytest.raises(rs.DataError, match=r"values must be one number, one per row \(2\)"):
        K.dirichlet([1, 2], b=V.b, values=[1.0, 2.0, 3.0])
    with pytest.raises(rs.DataError, match=r"rows must be a 1-D array of row numbers"):
        K.dirichlet([0.5], b=V.b)
    K.dirichlet([3, 1, 3], b=V.b, values=[1.0, 2.0, 1.0])  # the same value twice: fine
    assert V.b.numpy()[[1, 3]].tolist() == [2.0, 1.0]


def _impose_like_minife(r, c, a, b, rows, values):
    """miniFE's impose_dirichlet on (a, b), in place: each row's moved a * value summed in
    column order from 0, subtracted once; the rows made identity rows, the columns zeroed."""
    fixed = np.zeros(len(b), dtype=bool)
    fixed[rows] = True
    value = np.zeros(len(b))
    value[rows] = values
    s = np.zeros(len(b))
    moved = ~fixed[r] & fixed[c]
    np.add.at(s, r[moved], a[moved] * value[c[moved]])
    b -= s
    b[rows] = values
    a[fixed[r] | fixed[c]] = 0.0
    a[fixed[r] & (r == c)] = 1.0


def test_overlapping_calls_on_one_b_are_minifes_and_a_new_b_repeats_them():
    """miniFE imposes 0 on some faces, then 1 on another whose edge rows are in both: on one
    right-hand side each column moves once (with the first value) and the last value stays in
    b, bit for bit as its impose_dirichlet; on a new b the same calls give the same again."""
    mesh, K, V, sides = fem.poisson(2, _f)
    P = V.pos.numpy()
    zero = np.flatnonzero((P[:, 0] == 0.0) | (P[:, 1] == 0.0))
    one = np.flatnonzero(P[:, 0] == 1.0)
    assert np.intersect1d(zero, one).size  # rows in both
    r, c = K.entries.row.numpy().astype(np.int64), K.entries.col.numpy().astype(np.int64)
    a, b = K.entries.a.numpy(copy=True), V.b.numpy(copy=True)
    b0 = b.copy()
    _impose_like_minife(r, c, a, b, zero, np.zeros(len(zero)))
    _impose_like_minife(r, c, a, b, one, np.ones(len(one)))
    for _ in range(2):
        V.b.load(b0)
        K.dirichlet(zero, b=V.b, values=0.0)
        K.dirichlet(one, b=V.b, values=1.0)
        assert K.entries.a.numpy().tobytes() == a.tobytes()
        assert V.b.numpy().tobytes() == b.tobytes()


def test_a_compacted_copy_drops_the_zeros_and_lifts_new_values_as_the_full_matrix():
    """`compacted()` stores only the nonzero entries (the issue's matrix kept 295,789 entries,
    zeros included, against SciPy's 221,907) and carries the elimination: each step's b
    and solution are the full matrix's, bit for bit."""
    mesh, K, V, sides = fem.poisson(4, _f)
    K.dirichlet(sides)  # eliminate once
    S = K.compacted()
    a = K.entries.a.numpy()
    nonzero = int((a != 0.0).sum())
    assert S.entries.size == nonzero < K.entries.size
    assert S.name == "K_nz" and (S.to_scipy() != K.to_scipy()).nnz == 0
    b0 = V.b.numpy(copy=True)
    V.new_field("b2", rs.f64)
    V.new_field("x2", rs.f64)
    rng = np.random.default_rng(7)
    for step in range(3):
        vals = rng.uniform(-1.0, 1.0, len(sides))
        V.b.load(b0 * (1.0 + step))
        V.b2.load(b0 * (1.0 + step))
        K.dirichlet(sides, b=V.b, values=vals)
        S.dirichlet(sides, b=V.b2, values=vals)
        assert V.b2.numpy().tobytes() == V.b.numpy().tobytes(), step
        V.x.fill(0.0)
        V.x2.fill(0.0)
        full = linalg.cg(K, V.b, V.x, rtol=1e-12)
        compact = linalg.cg(S, V.b2, V.x2, rtol=1e-12)
        assert full.residuals == compact.residuals
        assert V.x2.numpy().tobytes() == V.x.numpy().tobytes(), step
        assert np.allclose(V.x2.numpy()[sides], vals, rtol=0.0, atol=1e-10)
    more = np.setdiff1d(np.arange(V.size), sides)[:3]  # rows eliminated later: still right
    S.dirichlet(more, b=V.b2, values=1.0)
    K.dirichlet(more, b=V.b, values=1.0)
    assert V.b2.numpy().tobytes() == V.b.numpy().tobytes()
    S.entries.a.load(2.0 * S.entries.a.numpy())
    with pytest.raises(rs.DataError, match=r"K_nz.dirichlet: the entries of K_nz changed since "
                                           r"it was compacted"):
        S.dirichlet(sides, b=V.b2, values=0.0)


def test_eliminating_a_few_rows_writes_their_entries_in_place():
    """The entries of the imposed rows and columns are written where they are: a copy of
    every entry (112 MB at miniFE 80^3) is not made."""
    from tests.relations.test_memory import _traced_peak
    n = 3000
    V = rs.Relation("V", n)
    rows = np.repeat(np.arange(n), 41)
    cols = (rows + np.tile(np.arange(-20, 21), n)) % n
    A = linalg.SparseMatrix(V, rows, cols, name="band")
    A.entries.a.load(np.where(A.entries.row.numpy() == A.entries.col.numpy(), 4.0, -0.05))
    V.new_field("b", rs.f64, init=1.0)
    before = A.entries.a.numpy(copy=True)
    r, c = A.entries.row.numpy(), A.entries.col.numpy()
    peak = _traced_peak(lambda: A.dirichlet([5, 17], b=V.b, values=2.0))
    a = A.entries.a.numpy()
    touched = np.isin(r, [5, 17]) | np.isin(c, [5, 17])
    assert np.array_equal(a[~touched], before[~touched])
    assert np.array_equal(a[touched], np.where(r[touched] == c[touched], 1.0, 0.0))
    assert peak < 4 * A.entries.size  # (the entries' own array: 8 bytes each)

