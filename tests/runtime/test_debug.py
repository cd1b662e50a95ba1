"""Debug mode (`rs.Config(debug=True)`): each check on every target (message, row, the source line
with its caret), the lowest failing row and its first failed check whatever the thread count,
today's results with debug off, and no check in the code generated with debug off."""
import math
import os
from dataclasses import replace

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relsim as rs
from relsim import config as rs_config
from relsim.runtime import execute
from tests.conftest import chain_mesh
from tests.fails.helpers import HERE, check_site
from tests.runtime import test_differential as diff

pytestmark = pytest.mark.device_sized  # tiny relations: also on cuda (in the simulator)

THREADS = sorted({1, 2, numba.config.NUMBA_NUM_THREADS} & set(
    range(1, numba.config.NUMBA_NUM_THREADS + 1)))


def debug(cfg, **changes):
    return replace(cfg, debug=True, **changes)


def expect_check(rel, kernel, cfg, check, row, *words, under=None, marker=HERE):
    """Run `kernel` in debug mode: it must fail `check` at `row` of `rel`, its message holding
    `words`, the caret under `under` on the line marked `marker`."""
    with pytest.raises(rs.KernelCheckError) as info:
        rel.foreach(kernel, debug(cfg))
    exc = info.value
    assert isinstance(exc, rs.KernelRuntimeError) and isinstance(exc, RuntimeError)
    assert (exc.kernel, exc.check, exc.relation, exc.row) == (kernel.name, check, rel.name, row)
    text = str(exc)
    assert text.startswith(f"in kernel '{kernel.name}', row {row} of {rel.name}: "), text
    for w in words:
        assert w in exc.message, f"{w!r} not in {exc.message!r}"
    check_site(text, exc.loc, kernel, marker, under)
    return exc


def corrupt(key_field, row, value):
    """Write a bad key in place, as a stray write into the array would (load refuses it)."""
    arr = key_field.numpy()
    arr.flags.writeable = True
    arr[row] = value
    arr.flags.writeable = False
    key_field._host_written()  # a device copy (cuda) cannot see a stray host write otherwise


def test_float_division_giving_inf_or_nan(target):
    V, E = chain_mesh(7)
    V.new_field("T", rs.f64).load(np.array([1.0, 2.0, 0.0, 4.0, 0.0, -3.0, 1e-310]))
    V.new_field("z", rs.f64).load(np.array([1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]))
    E.new_field("d", rs.f64)

    @rs.kernel
    def recip(e):
        e.d = e.tail.z / e.head.T  # <- here

    # rows 1 (1/0) and 3 (1/0) give inf, row 5 (1/1e-310) overflows, 2 is 0/4
    expect_check(E, recip, target, "division", 1, "float '/' gave inf from finite operands",
                 under="e.tail.z / e.head.T")
    V.z.load(np.array([1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]))
    V.T.load(np.array([1.0, 2.0, 4.0, 0.0, -1.0, -0.0, 1.0]))
    expect_check(E, recip, target, "division", 2, "gave NaN", under="e.tail.z / e.head.T")
    V.z.load(np.array([1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0]))
    V.T.load(np.array([1.0, 2.0, 4.0, 1.0, 1.0, 0.0, 1.0]))
    expect_check(E, recip, target, "division", 4, "gave -inf")
    # debug off: today's values
    E.foreach(recip, target)
    assert E.d.numpy()[4] == -math.inf


def test_division_of_a_nan_is_not_a_division_error(target):
    R = rs.Relation("R", 4)
    R.new_field("x", rs.f64).load(np.array([1.0, np.nan, np.inf, 2.0]))
    R.new_field("y", rs.f64)

    @rs.kernel
    def halve(r):
        r.y = r.x / 2.0  # <- here

    # the NaN and the inf pass through the division: reported where they are written
    exc = expect_check(R, halve, target, "non-finite", 1, "NaN stored into field R.y",
                       under="r.y = r.x / 2.0")
    assert "division" not in str(exc)


def test_nan_stored_into_a_field(target):
    """A NaN that came in with the data is reported where it is written."""
    R = rs.Relation("R", 5)
    R.new_field("x", rs.f64).load(np.array([4.0, 1.0, 0.0, np.nan, 9.0]))
    R.new_field("y", rs.vec(2, rs.f32))

    @rs.kernel
    def roots(r):
        s = math.sqrt(r.x)
        r.y = (1.0, s)  # <- here

    expect_check(R, roots, target, "non-finite", 3, "NaN stored into field R.y",
                 under="r.y = (1.0, s)")
    R.foreach(roots, target)  # debug off: NaN, as today
    assert np.isnan(R.y.numpy()[3, 1]) and R.y.numpy()[0, 1] == 2.0


def test_a_nan_is_reported_where_it_is_created(target):
    """sqrt of a negative number: reported at the call, with its argument, not at the store."""
    R = rs.Relation("R", 5)
    R.new_field("x", rs.f64).load(np.array([4.0, 1.0, 0.0, -1.0, -2.0]))
    R.new_field("y", rs.vec(2, rs.f32))

    @rs.kernel
    def roots(r):
        s = math.sqrt(r.x)  # <- here
        r.y = (1.0, s)

    expect_check(R, roots, target, "function", 3,
                 "sqrt() gave NaN from the finite argument -1.0", under="math.sqrt(r.x)")


def test_an_overflow_and_a_narrowing_are_reported_with_their_operands(target):
    R = rs.Relation("R", 3)
    R.new_field("x", rs.f64).load(np.array([1.0, 1e200, 1e300]))
    R.new_field("y", rs.f64)
    R.new_field("z", rs.f32)

    @rs.kernel
    def square(r):
        r.y = r.x * r.x  # <- here

    expect_check(R, square, target, "operation", 1,
                 "float '*' gave inf from finite operands 1e+200 and 1e+200 (an overflow)",
                 under="r.x * r.x")

    @rs.kernel
    def narrow(r):
        r.z = r.x  # <- here

    expect_check(R, narrow, target, "conversion", 1,
                 "conversion to f32 gave inf from the finite value 1e+200", under="r.x")


@pytest.mark.parametrize("scatter", ["slots", "split", "direct"])
def test_non_finite_contribution_to_a_field_through_a_key(target, scatter):
    V, E = chain_mesh(8)
    # (an infinity in the data: reported where it is contributed, not where it was made)
    V.new_field("x", rs.f64).load(np.array([1.0, 2.0, 3.0, -np.inf, 5.0, -np.inf, 7.0, 8.0]))
    V.new_field("acc", rs.f64)

    @rs.kernel
    def spread(e):
        e.tail.acc += 1.0
        e.head.acc += 0.5 * e.head.x  # <- here

    cfg = replace(target, scatter=scatter)
    expect_check(E, spread, cfg, "non-finite", 2, "-inf contributed with '+' to field V.acc",
                 under="e.head.acc += 0.5 * e.head.x")
    V.x.load(np.full(8, 2.0))  # fixed: the next launch runs in full
    V.acc.load(0.0)  # the failed launch may have left partial sums
    E.foreach(spread, debug(cfg))
    want = np.ones(8)
    want[-1] = 0.0
    want[1:] += 1.0
    assert V.acc.numpy().tolist() == want.tolist()


def test_non_finite_contribution_to_a_global(target):
    R = rs.Relation("R", 6)
    # an infinity in the data is reported where it is contributed
    R.new_field("x", rs.f64).load(np.array([1.0, 2.0, np.inf, 3.0, np.inf, 1.0]))
    total = rs.Global(rs.f64, 0.0)
    low = rs.Global(rs.f32, 1e30)

    @rs.kernel
    def sums(r):
        total += r.x * 10.0  # <- here
        low = min(low, r.x)  # <- also

    expect_check(R, sums, target, "non-finite", 2, "inf contributed with '+' to Global 'total'",
                 under="total += r.x * 10.0")
    # one it makes, where it makes it: -1e300 is -inf in f32, from row 3
    R.x.load(np.array([1.0, 2.0, 1.0, -1e300, 3.0, 1.0]))
    expect_check(R, sums, target, "conversion", 3,
                 "conversion to f32 gave -inf from the finite value -1e+300", under="r.x",
                 marker="# <- also")


def test_integer_division_and_modulo_by_zero(target):
    R = rs.Relation("R", 6)
    R.new_field("a", rs.i64).load(np.array([7, 8, 9, 10, 11, 12]))
    R.new_field("b", rs.i32).load(np.array([2, 3, 1, 0, 5, 0]))
    R.new_field("q", rs.i64)
    R.new_field("m", rs.i32)

    @rs.kernel
    def divide(r):
        r.q = r.a // 2 + r.a // r.b  # <- here
        r.m = r.b % r.b  # <- also

    expect_check(R, divide, target, "int-division", 3, "integer division by zero ('//')",
                 under="r.a // r.b")
    R.foreach(divide, target)  # debug off: 0, as today
    assert R.q.numpy().tolist() == [6, 6, 13, 5, 7, 6]
    assert R.m.numpy().tolist() == [0, 0, 0, 0, 0, 0]
    R.b.load(np.array([2, 3, 1, 4, 5, 6]))
    R.a.load(np.array([7, 8, 9, 10, 11, 12]))

    @rs.kernel
    def modulo(r):
        r.m = r.b % (r.b - 3)  # <- here

    expect_check(R, modulo, target, "int-division", 1, "integer modulo by zero ('%')",
                 under="r.b % (r.b - 3)")


@pytest.mark.parametrize("scatter", ["slots", "split", "direct"])
def test_key_out_of_range(target, scatter):
    V, E = chain_mesh(9)
    V.new_field("x", rs.f64).load(np.arange(9.0))
    V.new_field("acc", rs.f64)
    E.new_field("d", rs.f64)

    @rs.kernel
    def gather(e):
        e.d = e.tail.x  # <- here

    @rs.kernel
    def scatter_(e):
        e.tail.acc += 1.0  # <- here

    corrupt(E.tail, 6, 9)
    corrupt(E.tail, 4, -1)
    cfg = replace(target, scatter=scatter)
    expect_check(E, gather, cfg, "key-range", 4,
                 "key -1 read from key field E.tail is outside V (size 9)", under="e.tail")
    expect_check(E, scatter_, cfg, "key-range", 4, "key -1 read from key field E.tail",
                 under="e.tail")
    corrupt(E.tail, 4, 3)
    expect_check(E, scatter_, cfg, "key-range", 6, "key 9 read from key field E.tail is "
                 "outside V (size 9)", under="e.tail")


def test_key_vector_and_vector_indices_out_of_range(target):
    V = rs.Relation("V", 5)
    V.new_field("x", rs.f64).load(np.arange(5.0))
    T = rs.Relation("T", 4)
    T.new_key_field("v", V, arity=3).load(np.array([[0, 1, 2], [1, 2, 3], [2, 3, 4], [0, 2, 4]]))
    T.new_field("i", rs.i64).load(np.array([0, 2, -3, 0]))
    T.new_field("y", rs.f64)
    T.new_field("m", rs.mat(2, 2, rs.f64)).load(np.ones((4, 2, 2)))

    @rs.kernel
    def pick(t):
        t.y = t.v[t.i].x  # <- here

    corrupt(T.v, 3, [0, 7, 4])
    T.i.load(np.array([0, 2, -3, 0]))
    T.foreach(pick, debug(target))  # row 3 reads only t.v[0]: the bad key is never read
    assert T.y.numpy().tolist() == [0.0, 3.0, 2.0, 0.0]
    T.i.load(np.array([0, 2, -3, 3]))
    expect_check(T, pick, target, "index-range", 3, "index 3 out of range for length 3",
                 under="t.i")
    T.i.load(np.array([0, 2, -4, 0]))
    expect_check(T, pick, target, "index-range", 2, "index -4 out of range for length 3")
    T.i.load(np.array([0, 2, -3, 1]))
    expect_check(T, pick, target, "key-range", 3, "key 7 read from key field T.v is outside V",
                 under="t.v[t.i]")

    @rs.kernel
    def rowsum(t):
        row = t.m[t.i - 1]  # <- here
        t.y = row[0] + row[1]

    T.i.load(np.array([1, 2, 3, 1]))
    expect_check(T, rowsum, target, "index-range", 2, "index 2 out of range for length 2",
                 under="t.i - 1")


def test_neighbour_of_a_key_outside_the_grid(target):
    C = rs.Relation("C", 4)
    C.set_grid((4,), periodic=(False,))
    C.new_field("u", rs.f64).load(np.arange(4.0))
    P = rs.Relation("P", 3)
    P.new_key_field("cell", C).load(np.array([0, 3, 2]))
    P.new_field("du", rs.f64)

    @rs.kernel
    def slope(p):
        p.du = p.cell(1).u - p.cell.u  # <- here

    expect_check(P, slope, target, "neighbour", 1, "grid neighbour (1,) of row 3 of C is "
                 "outside the grid", under="p.cell(1)")


def test_non_finite_inserted_value(target):
    R = rs.Relation("R", 4)
    R.new_field("x", rs.f64).load(np.array([1.0, 0.0, 2.0, 0.0]))
    P = rs.Relation("P", 0, elastic=True)
    P.new_field("w", rs.f64)

    @rs.kernel
    def spawn(r):
        rs.insert(P, w=1.0 / r.x)  # <- here

    expect_check(R, spawn, target, "division", 1, "gave inf", under="1.0 / r.x")
    assert P.size == 0  # the launch stopped before its row changes

    @rs.kernel
    def spawn_big(r):
        rs.insert(P, w=r.x * 2.0)  # <- here

    R.x.load(np.array([1.0, 1.0, np.inf, 1.0]))  # (an infinity in the data)
    expect_check(R, spawn_big, target, "non-finite", 2, "inf inserted into field P.w",
                 under="rs.insert(P, w=r.x * 2.0)")
    assert P.size == 0


def test_kernels_absorbing_pending_folds(target):
    """A debug kernel folding another launch's pending reductions as it goes (cpu: a variant
    lowered with the same sites) computes what the plain one does, and reports alike."""
    def run(cfg, w):
        V, E = chain_mesh(9)
        E.new_field("w", rs.f64).load(w)
        V.new_field("acc", rs.f64, init=0.5)
        V.new_field("out", rs.f64)

        @rs.kernel
        def scatter(e):
            e.head.acc += e.w
            e.tail.acc -= 1.0

        @rs.kernel
        def consume(v):
            v.out = 1.0 / v.acc
            v.acc = 0.0

        E.foreach(scatter, cfg)
        V.foreach(consume, cfg)
        return V, consume

    cfg = replace(target, scatter="slots")
    w = np.arange(2.0, 10.0)
    V, consume = run(debug(cfg), w)
    assert V.out.numpy().tolist() == run(cfg, w)[0].out.numpy().tolist()
    if target.target == "cpu":
        assert len(consume._last[3].absorbing_fns) == 1
    w[3] = 0.5  # acc[4] = 0.5 + 0.5 - 1.0
    with pytest.raises(rs.KernelCheckError) as info:
        run(debug(cfg), w)
    assert (info.value.row, info.value.check) == (4, "division")
    assert "v.out = 1.0 / v.acc" in str(info.value)


def test_lowest_row_and_first_check_in_it(target):
    """Rows fail at random places; the lowest failing row is reported, with the first check
    it failed in program order, on every target and thread count (cpu: parallel)."""
    n = 20000
    R = rs.Relation("R", n)
    a = np.ones(n)
    b = np.ones(n)
    R.new_field("a", rs.f64).load(a)
    R.new_field("b", rs.f64).load(b)
    R.new_field("k", rs.i64).load(np.ones(n, dtype=np.int64))
    R.new_field("out", rs.f64)

    @rs.kernel
    def steps(r):
        x = 1.0 / r.a  # <- also
        m = r.k // r.k  # <- here
        r.out = x + m / r.b

    rng = np.random.default_rng(7)
    bad_a = rng.choice(np.arange(12000, n), 40, replace=False)
    bad_k = rng.choice(np.arange(9000, n), 40, replace=False)
    a[bad_a] = 0.0
    k = np.ones(n, dtype=np.int64)
    k[bad_k] = 0
    k[int(bad_a.min())] = 0  # fails both: the division by r.a comes first
    R.a.load(a)
    R.k.load(k)
    low = int(min(bad_a.min(), bad_k.min()))
    marker = "# <- also" if low == int(bad_a.min()) else HERE
    for threads in THREADS if target.target == "cpu" else [None]:
        cfg = replace(target, threads=threads) if threads else target
        exc = expect_check(R, steps, cfg, "division" if marker != HERE else "int-division", low,
                           marker=marker)
        assert exc.row == low
    k[bad_k] = 1
    R.k.load(k)
    low = int(bad_a.min())
    for threads in THREADS if target.target == "cpu" else [None]:
        cfg = replace(target, threads=threads) if threads else target
        expect_check(R, steps, cfg, "division", low, "gave inf", under="1.0 / r.a",
                     marker="# <- also")


def test_reported_row_is_the_relations_row_in_a_subset(target):
    R = rs.Relation("R", 10)
    R.new_field("x", rs.f64).load(np.array([1.0, 1, 0, 1, 1, 0, 1, 0, 1, 1]))
    R.new_field("y", rs.f64)
    R.subset("some", np.array([1, 3, 5, 7, 9]))

    @rs.kernel
    def inv(r):
        r.y = 1.0 / r.x  # <- here

    with pytest.raises(rs.KernelCheckError) as info:
        R.some.foreach(inv, debug(target))
    assert info.value.row == 5 and info.value.relation == "R"


def test_debug_off_runs_as_before_and_the_flag_keys_the_compile_cache(target):
    R = rs.Relation("R", 4)
    R.new_field("x", rs.f64).load(np.array([1.0, 0.0, 2.0, -0.0]))
    R.new_field("n", rs.i64).load(np.array([1, 0, 2, 0]))
    R.new_field("y", rs.f64)
    R.new_field("q", rs.i64)

    @rs.kernel
    def k(r):
        r.y = 1.0 / r.x
        r.q = 5 // r.n + 5 % r.n

    for _ in range(2):  # off, on, off again: each configuration its own compiled kernel
        R.foreach(k, target)
        assert R.y.numpy().tolist() == [1.0, math.inf, 0.5, -math.inf]
        assert R.q.numpy().tolist() == [5, 0, 3, 0]
        with pytest.raises(rs.KernelCheckError):
            R.foreach(k, debug(target))


def test_generated_code_without_debug_has_no_checks():
    V, E = chain_mesh(6)
    V.new_field("x", rs.f64)
    V.new_field("acc", rs.f64)
    E.new_field("i", rs.i64)
    E.new_field("d", rs.vec(3, rs.f64))
    g = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def k(e):
        v = (e.head.x, e.tail.x, 2.0)
        j = e.i // 3
        e.d = (v[e.i] / e.tail.x, v[j], 1.0)
        e.head.acc += 1.0 / e.tail.x
        g += e.tail.x

    plain = execute.executable(k, E, rs.Config(target="cpu"))
    checked = execute.executable(k, E, rs.Config(target="cpu", debug=True))
    for word in ("_dbg", "isfinite", "_size"):
        assert word not in plain.source
        assert word in checked.source
    assert "with debug checks" in checked.source.splitlines()[0]
    assert plain.path != checked.path
    assert plain.source == execute.executable(k, E, rs.Config(target="cpu", debug=False)).source
    text = rs.explain(k, E, rs.Config(target="cpu", debug=True))
    assert "(target cpu, debug)" in text and "-- debug checks" in text
    assert "  1: key-range, line " in text and "division" in text
    assert "-- debug checks" not in rs.explain(k, E, rs.Config(target="cpu"))


def test_config_and_environment(monkeypatch):
    with pytest.raises(rs.ConfigError, match="debug must be True or False"):
        rs.Config(debug=1)
    saved = rs_config._current
    try:
        for text, want in (("1", True), ("0", False), ("true", True), ("", False)):
            monkeypatch.setenv("RELSIM_DEBUG", text)
            rs_config._current = None
            assert rs_config.current().debug is want
        monkeypatch.setenv("RELSIM_DEBUG", "maybe")
        rs_config._current = None
        with pytest.raises(rs.ConfigError, match="RELSIM_DEBUG"):
            rs_config.current()
        assert rs.configure(debug=True).debug is True  # the value given wins over a bad one
        assert rs.configure(debug=False).debug is False
    finally:
        rs_config._current = saved


def test_grid_loops_report_the_row(target):
    C = rs.Relation("C", 12)
    C.set_grid((4, 3), periodic=True)
    u = np.arange(1.0, 13.0)
    u[[6, 9]] = 0.0
    C.new_field("u", rs.f64).load(u)
    C.new_field("r", rs.f64)

    @rs.kernel
    def ratio(c):
        c.r = c.u / c(0, 1).u  # <- here

    # c(0, 1) of row 2 is row 6: the nested grid loops (cpu) report the row, not a position
    expect_check(C, ratio, target, "division", 2, "gave inf", under="c.u / c(0, 1).u")
    C.subset("top", np.arange(4, 12))
    with pytest.raises(rs.KernelCheckError) as info:
        C.top.foreach(ratio, debug(target))
    assert info.value.row == 5  # c(0, 1) of row 5 is row 9


@settings(max_examples=int(os.environ.get("RELSIM_DIFF_EXAMPLES", "6")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=diff.kernel_source(), seed=st.integers(0, 2**16))
def test_random_kernels_fail_alike_or_compute_as_without_debug(tmp_path, body, seed):
    """The differential test's random kernels, on data with zeros: in debug mode every target
    raises the same error (row, check, line, caret), or none does and the results are those of
    the kernel without debug, bit for bit."""
    make = diff._load_kernel(tmp_path, body)
    outcomes = {}
    for target, dbg in (("interp", False), ("interp", True), ("cpu-serial", True),
                        ("cpu", True)):
        V, E = diff._data(seed)
        rng = np.random.default_rng(seed)
        for f in (V.a, V.b, E.w, E.n, V.i):
            vals = f.numpy().copy()
            vals[rng.random(len(vals)) < 0.3] = 0
            f.load(vals)
        total, lo, g_in = rs.Global(rs.f64, 0.125), rs.Global(rs.f64, 1e300), \
            rs.Global(rs.f64, 0.75)
        k = make(total, lo, g_in)
        try:
            E.foreach(k, rs.Config(target=target, parallel_threshold=1, debug=dbg))
            outcomes[target, dbg] = [f.numpy().copy() for f in list(V.fields.values()) +
                                     list(E.fields.values())] + [np.array([total.value,
                                                                           lo.value])]
        except rs.KernelCheckError as exc:
            assert dbg
            outcomes[target, dbg] = str(exc)
    want = outcomes["interp", True]
    for target in ("cpu-serial", "cpu"):
        got = outcomes[target, True]
        if isinstance(want, str):
            assert got == want, f"{target} reports differently for kernel:\n{body}"
        else:
            assert not isinstance(got, str), f"{target} raised {got}, interp did not:\n{body}"
            assert all(diff._same(a, b) for a, b in zip(want, got)), body
    if not isinstance(want, str):
        assert all(diff._same(a, b) for a, b in zip(want, outcomes["interp", False])), body
