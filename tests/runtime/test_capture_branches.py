"""`rs.cond`: a branch on Globals, run as it is outside a capture; captured, both sides are
recorded (the one not taken traced: its operations recorded, not performed), and each replay
tests the condition again and runs the side it picks, on the cpu inside the step's compiled
call, with the bits of the same program run launch by launch."""
import numpy as np
import pytest

import relsim as rs

pytestmark = pytest.mark.filterwarnings("ignore::relsim.RelsimWarning")

total = rs.Global(rs.f64, 0.0, name="total")
flag = rs.Global(rs.f64, 0.0, name="flag")
count = rs.Global(rs.f64, 0.0, name="count")
turns = rs.Global(rs.f64, 0.0, name="turns")


@rs.kernel
def grow(v):
    v.T = v.T * 1.25 + 0.5
    total += v.T


@rs.kernel
def shrink(v):
    v.T = v.T * 0.5
    total += v.T


@rs.kernel
def offset(v):
    v.T = v.T - 0.001 * total


@rs.kernel
def add_up(v):
    total += v.T


def _relation(n=40, seed=5):
    V = rs.Relation("V", n)
    V.new_field("T", rs.f64).load(np.random.default_rng(seed).uniform(0.0, 1.0, n))
    return V


def _program(V, cfg, limit=12):
    """Grow T until its sum passes 4 n, halving it whenever the sum passes 2 n (counted in
    `turns`), and shift it by a thousandth of the sum on the other iterations."""
    n = float(V.size)

    def iteration():
        rs.assign(total, 0.0)
        V.foreach(grow, cfg)
        rs.cond(total > 2.0 * n, lambda: (rs.assign(total, 0.0), V.foreach(shrink, cfg),
                                          rs.assign(turns, turns + 1.0)),
                lambda: V.foreach(offset, cfg))
        rs.cond(total < 0.0, lambda: rs.assign(turns, turns - 100.0))  # (never: no side)

    rs.assign(turns, 0.0)
    rs.assign(total, 0.0)
    return rs.while_loop(total < 4.0 * n, iteration, limit, count=count)


def _bits(field):
    return field.numpy(copy=True).view(np.int64)


@pytest.mark.device_sized
def test_a_branch_on_globals_replays_the_side_it_picks(target):
    V, W = _relation(8), _relation(8)
    with rs.capture() as step:
        _program(V, target)
    expected = [_program(W, target)]
    got = [int(count.value)]
    for k in range(3):
        for R in (V, W):
            R.T.load(np.linspace(0.0, 1.0 + k, R.size))
        step()
        got.append((count.value, turns.value, total.value))
        _program(W, target)
        expected.append((count.value, turns.value, total.value))
        assert np.array_equal(_bits(V.T), _bits(W.T))
    assert got == expected and got[-1][1] > 0  # (both sides taken)


def test_cond_runs_the_side_its_condition_picks_outside_a_capture():
    rs.assign(flag, 3.0)
    seen = []
    assert rs.cond(flag > 2.0, lambda: seen.append("then"), lambda: seen.append("else"))
    assert not rs.cond((flag > 2.0) & (flag < 3.0), lambda: seen.append("then"),
                       lambda: seen.append("else"))
    assert not rs.cond(flag < 0.0, lambda: seen.append("no else"))
    assert seen == ["then", "else"]


def test_cond_arguments_are_checked():
    with pytest.raises(rs.DataError, match="rs.cond: the condition must compare Globals"):
        rs.cond(True, lambda: None)
    with pytest.raises(rs.DataError, match="then must be a function of no arguments"):
        rs.cond(flag > 1.0, None)
    with pytest.raises(rs.DataError, match="otherwise must be a function of no arguments"):
        rs.cond(flag > 1.0, lambda: None, 3)
    with pytest.raises(rs.DataError, match="rs.while_loop or rs.cond"):
        bool(flag > 1.0)


def test_the_side_not_taken_is_traced_not_run():
    V = _relation(4)
    V.new_field("U", rs.f64)
    V.T.load([1.0, 2.0, 3.0, 4.0])
    V.U.load([5.0, 6.0, 7.0, 8.0])
    cfg = rs.Config(target="cpu")
    rs.assign(flag, 0.0)
    rs.assign(turns, 0.0)

    def other():
        V.foreach(grow, cfg)
        rs.assign(turns, turns + 1.0)
        V.T.swap(V.U)
        V.U.copy_from(V.T)
        rs.while_loop(None, lambda: V.foreach(shrink, cfg), 5, count=count)
        rs.cond(flag < 1.0, lambda: V.foreach(shrink, cfg), lambda: V.foreach(grow, cfg))

    rs.assign(count, 7.0)
    with rs.capture() as step:
        assert rs.cond(flag < 0.5, lambda: rs.assign(flag, 2.0), other) is True
    assert (V.T.numpy().tolist(), V.U.numpy().tolist()) == ([1.0, 2.0, 3.0, 4.0],
                                                            [5.0, 6.0, 7.0, 8.0])
    assert (flag.value, turns.value, count.value) == (2.0, 0.0, 7.0)
    assert repr(step) == (
        "<relsim captured step: rs.cond(Global 'flag' < 0.5: rs.assign(Global 'flag', 2.0) "
        "else V.foreach(grow); rs.assign(Global 'turns', (Global 'turns' + 1.0)); "
        "V.T.swap(V.U); V.U.copy_from(V.T); rs.while_loop(None, max 5: V.foreach(shrink)); "
        "rs.cond(Global 'flag' < 1.0: V.foreach(shrink) else V.foreach(grow)))>")
    step()  # (flag 2: the side traced while recording runs now)
    W = _relation(4)
    W.new_field("U", rs.f64)
    W.T.load([1.0, 2.0, 3.0, 4.0])
    W.U.load([5.0, 6.0, 7.0, 8.0])
    V, saved = W, V
    rs.assign(turns, 0.0)
    other()
    assert (saved.T.numpy().tolist(), saved.U.numpy().tolist()) == \
        (W.T.numpy().tolist(), W.U.numpy().tolist())
    assert (turns.value, count.value) == (1.0, 5.0)


@pytest.mark.parametrize("threads", [1, 2])
def test_branches_compile_into_the_segment_from_the_first_replay(threads):
    cfg = rs.Config(target="cpu", parallel_threshold=1, threads=threads, segments="now")
    V, W = _relation(), _relation()
    V.T.load(np.zeros(V.size))
    with rs.capture() as step:
        _program(V, cfg, limit=1)  # (the sum does not pass 2 n: one side runs, one is traced)
    assert turns.value == 0
    for k in range(4):
        for R in (V, W):
            R.T.load(np.linspace(0.0, 2.0 + k, R.size))
        step()
        got = (count.value, turns.value, total.value)
        _program(W, cfg, limit=1)
        assert got == (count.value, turns.value, total.value)
        assert np.array_equal(_bits(V.T), _bits(W.T))
    assert turns.value > 0
    (plan,) = step.plans.values()
    # (one compiled call: the assignments before the first launch are computed in it too)
    assert [item.__name__ for item in plan.items] == ["item"]
    assert step.segments == 1


def test_an_undecided_sum_inside_a_side_resumes_in_that_side():
    """The `then` side clears the flag its condition tests, then sums an exact tie (2^52 +
    2^52 + 1: the exact path on the host): the segment resumes inside `then`, not in the side
    the cleared flag would pick."""
    from relsim.runtime.backends.cpu import lanes
    cfg = rs.Config(target="cpu", segments="now")

    def program(V):
        def iteration():
            rs.assign(flag, 1.0)
            rs.cond(flag > 0.5, lambda: (rs.assign(flag, 0.0), rs.assign(total, 0.0),
                                         V.foreach(add_up, cfg),
                                         rs.assign(turns, turns + 1.0)),
                    lambda: rs.assign(turns, turns - 1000.0))
        rs.assign(turns, 0.0)
        return rs.while_loop(None, iteration, 3, count=count)

    V = rs.Relation("V", 8)
    V.new_field("T", rs.f64).load([2.0 ** 52, 2.0 ** 52, 1.0] + [0.0] * 5)
    with rs.capture() as step:
        program(V)
    before = lanes.EXACT_PATH["count"]
    for _ in range(2):
        V.T.load([2.0 ** 52, 2.0 ** 52, 1.0] + [0.0] * 5)  # (an exact tie: 2^53 + 1)
        step()
        assert (turns.value, total.value) == (3.0, 2.0 ** 53)
    assert step.segments == 1 and lanes.EXACT_PATH["count"] >= before + 6


def test_a_step_replayed_inside_a_capture_keeps_its_loops_and_branches():
    """The outer capture records the inner step's loop and branch as such: replayed on other
    data, it runs as many iterations as that data needs (not as many as ran while recording)."""
    cfg = rs.Config(target="cpu", segments="now")
    V, W = _relation(), _relation()
    with rs.capture() as inner:
        _program(V, cfg)
    V.T.load(np.zeros(V.size))
    with rs.capture() as outer:
        inner()
    recorded = count.value
    for k in range(3):
        for R in (V, W):
            R.T.load(np.linspace(0.0, 20.0 + k, R.size))  # (one iteration: 12 recorded)
        outer()
        got = (count.value, turns.value, total.value)
        _program(W, cfg)
        assert got == (count.value, turns.value, total.value)
        assert np.array_equal(_bits(V.T), _bits(W.T))
    assert count.value != recorded
    assert "rs.while_loop" in repr(outer) and "rs.cond" in repr(outer)
