"""BiCGSTAB's captured loop (`linalg/bicgstab.py`): one compiled call on the cpu, with the
launch-by-launch loop's residual history and x bit for bit, its early exit at a half step and
its breakdowns raised at the iteration the launch-by-launch loop raises them."""
import math

import numpy as np
import pytest

import relsim as rs
from relsim import linalg
from tests.linalg import systems


def _system(nv=60, ne=150, w=0.7):
    V, E = systems.graph(nv, ne)
    V.b.load(np.random.default_rng(3).standard_normal(V.size))
    return V, systems.operator(V, E, c=0.5, w=w)


def _run(solver_kw, V, A, cfg, **kw):
    V.x.fill(0.0)
    info = linalg.bicgstab(A, V.b, V.x, config=cfg, **solver_kw, **kw)
    return info.iterations, [r.hex() for r in info.residuals], info.converged, \
        V.x.numpy().tobytes()


@pytest.mark.parametrize("threads", [1, 2])
def test_the_captured_loop_gives_the_launch_by_launch_iterates(threads):
    cfg = rs.Config(target="cpu", parallel_threshold=1, threads=threads, segments="now")
    V, A = _system()
    seen = []
    by_launch = _run({"callback": lambda it, norm: seen.append(norm)}, V, A, cfg, rtol=1e-12)
    captured = [_run({}, V, A, cfg, rtol=1e-12) for _ in range(3)]  # (recorded, replayed)
    assert by_launch[0] > 10 and by_launch[2]
    assert all(c == by_launch for c in captured)
    from relsim.linalg import krylov
    (ws,) = [w for key, w in krylov._workspaces[V].items() if key[0] == "bicgstab"]
    (kept,) = ws.steps.values()
    step = kept[1].step
    assert step.replays == 2 and step.segments == 1
    names = [item.__name__ for item in next(iter(step.plans.values())).items]
    assert names == ["item"], names  # (the whole solve one compiled call)
    # fewer iterations allowed: the same prefix of the history, not converged
    short = _run({}, V, A, cfg, rtol=1e-12, maxiter=4)
    assert short[:3] == (4, by_launch[1][:5], False)


@pytest.mark.device_sized
def test_a_half_step_within_the_tolerance_ends_the_solve(target):
    """A = 2 I: the first half step lands on the solution (s = 0)."""
    V = rs.Relation("V", 5)
    for name in ("u", "Au", "b", "x"):
        V.new_field(name, rs.f64)
    V.b.load(np.arange(1.0, 6.0))

    @rs.kernel
    def twice(v):
        v.Au = 2.0 * v.u

    A = linalg.Operator(twice, x=V.u, y=V.Au)
    runs = [_run(kw, V, A, target) for kw in ({"callback": lambda it, n: None}, {}, {})]
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][0] == 1 and runs[0][2] and V.x.numpy().tolist() == [0.5, 1.0, 1.5, 2.0, 2.5]


@pytest.mark.parametrize("callback", [None, lambda it, norm: None])
def test_breakdowns_are_raised_at_the_same_iteration_captured_or_not(callback):
    V, _ = _system(10, 9)
    V.b.fill(1.0)

    @rs.kernel
    def zero(v):
        v.Au = 0.0

    @rs.kernel
    def infinite(v):  # (0 at x = 0: the start is fine)
        v.Au = v.u + (math.inf if v.u > 0.0 else 0.0)

    cfg = rs.Config(target="cpu", segments="now")
    for apply, what in ((zero, r"r\^\.v \(v = A p\) = 0\.0"),
                        (infinite, r"r\^\.v \(v = A p\) = inf")):
        for _ in range(2):  # (recorded, replayed)
            V.x.fill(0.0)
            with pytest.raises(linalg.SolverError, match=r"bicgstab: breakdown at iteration 1: "
                                                         + what):
                linalg.bicgstab(linalg.Operator(apply, x=V.u, y=V.Au), V.b, V.x, config=cfg,
                                callback=callback)

