"""A kernel launched over a whole relation and over a subset runs one compiled function (the
row found by a test of `_has_rows`): an `mpiexec` run, whose ranks launch over subsets,
compiles nothing a one-process run compiled already, and each gives interp's bits."""
import numpy as np
import pytest
from numba.core import event

import relsim as rs


def _graph(n=64, seed=1):
    rng = np.random.default_rng(seed)
    V = rs.Relation("V", n)
    V.new_field("u", rs.f64).load(rng.standard_normal(n))
    V.new_field("acc", rs.f64, init=0.0)
    E = rs.Relation("E", 3 * n)
    E.new_key_field("a", V).load(rng.integers(0, n, 3 * n))
    E.new_key_field("b", V).load(rng.integers(0, n, 3 * n))
    E.new_field("w", rs.f64).load(rng.random(3 * n))
    return V, E


total = rs.Global(rs.f64, 0.0)


@rs.kernel
def spread(e):
    e.a.acc += e.w * (e.b.u - e.a.u)  # a reduction into a field through a key


@rs.kernel
def energy(v):
    total += v.u * v.u + 0.5 * v.acc  # a float64 Global sum (lanes on the cpu)


@rs.kernel
def scale(v):
    v.u = 0.5 * v.u + 0.25 * v.acc


def _run(target, scatter="auto"):
    """(results, the functions compiled after the first, whole, launches) of launches over
    whole relations, then over subsets and mixed."""
    V, E = _graph()
    cfg = rs.Config(target=target, parallel_threshold=1, scatter=scatter)
    some_e = E.subset("some_e", np.arange(0, E.size, 3))
    some_v = V.subset("some_v", np.arange(1, V.size, 2))
    sums = []

    def step(where_e, where_v):
        where_e.foreach(spread, cfg)
        total.value = 0.0
        where_v.foreach(energy, cfg)
        sums.append(total.value)
        where_v.foreach(scale, cfg)

    step(E, V)
    with event.install_recorder("numba:compile") as compiled:
        for where_e, where_v in ((some_e, some_v), (E, some_v), (some_e, V)):
            step(where_e, where_v)
    names = [ev.data["dispatcher"].py_func.__name__ for _, ev in compiled.buffer
             if ev.is_start]
    return (V.u.numpy().tobytes(), V.acc.numpy().tobytes(), sums), names


@pytest.mark.parametrize("target, scatter", [("cpu", "auto"), ("cpu", "direct"),
                                             ("cpu", "split"), ("cpu-serial", "auto")])
def test_subset_launches_compile_nothing_the_whole_ones_did_not(target, scatter):
    want, _ = _run("interp")
    got, compiled = _run(target, scatter)
    assert got == want
    assert compiled == [], compiled
