"""`rs.capture()`: a recorded step replays with the bits of the launches it recorded, on every
target; on the cpu consecutive launches become one compiled segment; what a replay could not
repeat is refused while recording; what changed since is re-planned or named."""
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import relsim as rs
from tests import heat_graph
from tests.conftest import held_in_tier_0

pytestmark = pytest.mark.filterwarnings("ignore::relsim.RelsimWarning")

total = rs.Global(rs.f64, 0.0)


@rs.kernel
def relax(v):
    v.Tn = v.T + 0.5 * v.flux
    v.flux = 0.0


@rs.kernel
def damp(v):
    v.T = 0.875 * v.T


@rs.kernel
def add_heat(v):
    total += v.T


@rs.kernel
def read_far(v):
    v.T = v.T + rs.at(V_FAR, v.j).T  # a row out of range: flagged, not read


V_FAR = rs.Relation("far", 3)
V_FAR.new_field("T", rs.f64)


def _graph(n=40):
    V, E = heat_graph.random_graph(n, 3 * n, seed=3)
    V.new_field("Tn", rs.f64)
    edges = np.arange(0, 3 * n, 2)
    return V, E, E.subset("even", edges)


def _program(V, E, even, cfg, conduct):
    """One step: a launch over a subset, a key reduction, a double buffer, a copy."""
    even.foreach(conduct, cfg)
    V.foreach(relax, cfg)
    V.T.swap(V.Tn)
    V.foreach(damp, cfg)
    V.flux.copy_from(V.Tn)


def _bits(field):
    return field.numpy(copy=True).view(np.int64)


@pytest.mark.device_sized
def test_replays_have_the_launches_bits(target):
    conduct = heat_graph.conduct_kernel()
    V, E, even = _graph()
    _program(V, E, even, target, conduct)
    with rs.capture() as step:
        _program(V, E, even, target, conduct)
    for _ in range(5):
        step()
    captured = _bits(V.T), _bits(V.flux)

    W, F, evens = _graph()
    for _ in range(7):
        _program(W, F, evens, target, conduct)
    assert np.array_equal(captured[0], _bits(W.T))
    assert np.array_equal(captured[1], _bits(W.flux))
    assert step.replays == 5


@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_runs_consecutive_launches_as_one_compiled_call(threads):
    cfg = rs.Config(target="cpu", parallel_threshold=1, threads=threads)
    conduct = heat_graph.conduct_kernel()
    V, E, _ = _graph()

    def program(V, E):
        E.foreach(conduct, cfg)
        V.foreach(relax, cfg)
        V.T.swap(V.Tn)
        V.foreach(damp, cfg)

    with rs.capture() as step:
        program(V, E)
    step.compile()  # (else compiled in the background while the launches run)
    for _ in range(4):
        step()
    assert all(s.ready for p in step.plans.values() for s in p.segments)
    # launches, swap, launch: two segments (the swap runs between them); a double buffer
    # gives two plans, each made once
    assert step.segments == 1 and len(step.plans) == 2
    W, F, _ = _graph()
    for _ in range(5):
        program(W, F)
    assert np.array_equal(_bits(V.T), _bits(W.T))


def test_a_launch_with_host_work_replays_as_a_launch():
    """A Global sum folds on the host: the launch replays as itself, between segments."""
    cfg = rs.Config(target="cpu")
    V, _, _ = _graph()
    sums = []
    with rs.capture() as step:
        V.foreach(damp, cfg)
        V.foreach(add_heat, cfg)
        V.foreach(damp, cfg)
    for _ in range(3):
        total.value = 0.0
        step()
        sums.append(total.value)
    W, _, _ = _graph()
    W.foreach(damp, cfg)
    W.foreach(damp, cfg)
    expected = []
    for _ in range(3):
        total.value = 0.0
        W.foreach(damp, cfg)
        W.foreach(add_heat, cfg)
        W.foreach(damp, cfg)
        expected.append(total.value)
    assert sums == expected


def test_a_plan_is_made_again_when_the_relations_change():
    cfg = rs.Config(target="cpu", parallel_threshold=1)
    conduct = heat_graph.conduct_kernel()
    V, E, even = _graph()
    W, F, evens = _graph()
    with rs.capture() as step:
        _program(V, E, even, cfg, conduct)
    _program(W, F, evens, cfg, conduct)
    step()
    _program(W, F, evens, cfg, conduct)
    for R in (V, W):  # new keys from the host, and a new field
        R.new_field("extra", rs.i32)
    for R, rng in ((E, np.random.default_rng(5)), (F, np.random.default_rng(5))):
        R.head.load(rng.integers(0, V.size, E.size))
    V.T.load(np.linspace(0.0, 1.0, V.size))
    W.T.load(np.linspace(0.0, 1.0, W.size))
    for _ in range(3):
        step()
        _program(W, F, evens, cfg, conduct)
    assert np.array_equal(_bits(V.T), _bits(W.T))
    assert len(step.plans) >= 3


def test_a_plan_made_in_tier_0_is_made_again_with_segments_once_it_ends():
    """Launches recorded (or first planned) while in tier 0 replay as launches, and a step
    asked whether it is compiled says it has no segment; once their parallel variants are at
    hand (the launch leaves tier 0), the next replay makes the plan again: a compiled
    segment, the same bits (smoke's cold run solved every step launch by launch)."""
    from relsim.runtime import execute
    cfg = rs.Config(target="cpu", segments="now")
    V, _, _ = _graph()
    exes = [execute.executable(k, V, cfg) for k in (relax, damp)]
    ready = held_in_tier_0(exes)
    with rs.capture() as step:
        V.foreach(relax, cfg)
        V.foreach(damp, cfg)
    step()
    assert step.compiled() is None and step.segments == 0
    assert all(exe.capture_later() for exe in exes)
    ready.append(True)
    step()  # (launch by launch still: each launch leaves tier 0 as it runs)
    assert not any(exe.capture_later() for exe in exes)
    assert step.compiled() is True and step.segments == 1 and len(step.plans) == 1
    step()
    W, _, _ = _graph()
    for _ in range(4):
        W.foreach(relax, cfg)
        W.foreach(damp, cfg)
    assert np.array_equal(_bits(V.T), _bits(W.T)) and np.array_equal(_bits(V.Tn), _bits(W.Tn))


def test_what_a_replay_would_not_repeat_is_refused():
    V, _, _ = _graph()
    with pytest.raises(rs.CaptureError, match=r"Global 'total'\.value read inside rs.capture"):
        with rs.capture():
            V.foreach(add_heat)
            print(total.value)
    with pytest.raises(rs.CaptureError, match="Global 'total' assigned from the host"):
        with rs.capture():
            total.value = 0.0
    with pytest.raises(rs.CaptureError, match=r"field V\.T assigned from the host"):
        with rs.capture():
            V.T.load(np.zeros(V.size))
    with rs.capture() as outer:
        with pytest.raises(rs.CaptureError, match="do not nest"):
            with rs.capture():
                pass
        with pytest.raises(rs.GradientError, match="cannot start while an rs.capture"):
            with rs.Tape():
                pass
        with pytest.raises(rs.CaptureError, match="inside its own"):
            outer()


def test_a_step_captured_under_the_default_refuses_another_default():
    V, _, _ = _graph()
    with rs.capture() as step:
        V.foreach(damp)
    step()
    rs.configure(target="cpu-serial" if rs.config.current().target != "cpu-serial" else "cpu")
    with pytest.raises(rs.CaptureError, match=r"V\.foreach\(damp\) was captured under"):
        step()


def test_a_default_configured_again_to_the_same_values_replays():
    V, _, _ = _graph()
    with rs.capture() as step:
        V.foreach(damp)
    before = V.T.numpy().copy()
    threads = rs.config.current().threads
    rs.configure(threads=1 if threads != 1 else 2)
    rs.configure(threads=threads)  # a new Config, equal to the one the step was captured under
    step()
    assert np.array_equal(V.T.numpy(), 0.875 * before)


def test_a_failure_inside_a_compiled_segment_names_the_kernel_and_line():
    cfg = rs.Config(target="cpu")
    V, _, _ = _graph()
    V.new_field("j", rs.i64)
    with rs.capture() as step:
        V.foreach(damp, cfg)
        V.foreach(read_far, cfg)
    step.compile()
    step()
    assert step.segments == 1
    V.j.load(np.full(V.size, 7))  # past V_FAR's 3 rows
    with pytest.raises(rs.KernelRuntimeError,
                       match=r"in kernel 'read_far': index out of range at line \d+"):
        step()
    V.j.load(np.zeros(V.size, dtype=np.int64))
    step()  # (the error word was reset)


def test_a_tape_records_replays():
    cfg = rs.Config(target="cpu")
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def square(v):
        loss += v.T * v.T

    def run(V, capture):
        if capture:
            with rs.capture() as step:
                V.foreach(damp, cfg)
                V.foreach(damp, cfg)
        tape = rs.Tape()
        with tape:
            for _ in range(2):
                step() if capture else (V.foreach(damp, cfg), V.foreach(damp, cfg))
            loss.value = 0.0
            V.foreach(square, cfg)
        tape.backward(loss)
        return V.T.grad.numpy(copy=True)

    V, _, _ = _graph()
    W, _, _ = _graph()
    W.foreach(damp, cfg)
    W.foreach(damp, cfg)
    assert np.array_equal(run(V, True), run(W, False))


def test_a_captured_function_records_its_first_call_and_replays_the_rest():
    cfg = rs.Config(target="cpu")
    V, _, _ = _graph()
    W, _, _ = _graph()
    step = rs.capture(lambda: (V.foreach(damp, cfg), V.foreach(relax, cfg)))
    for _ in range(3):
        step()
        W.foreach(damp, cfg)
        W.foreach(relax, cfg)
    assert step.step is not None and step.step.replays == 2
    assert np.array_equal(_bits(V.Tn), _bits(W.Tn))
    with pytest.raises(TypeError, match="function of no arguments"):
        rs.capture(3)


rr = rs.Global(rs.f64, 0.0, name="rr")
alpha = rs.Global(rs.f64, 0.0, name="alpha")


@rs.kernel
def dot_rr(v):
    rr += v.T * v.T


@rs.kernel
def axpy(v):
    v.Tn = v.T - alpha * v.T


@pytest.mark.parametrize("threads", [1, 2])
def test_global_sums_and_assignments_run_inside_a_compiled_segment(threads):
    """Float64 sums (rounded from their lanes) and rs.assign arithmetic between launches: one
    compiled call, the launches' and the host arithmetic's bits."""
    cfg = rs.Config(target="cpu", parallel_threshold=1, threads=threads)

    def program(V):
        rs.assign(rr, 0.0)  # (before the first launch: on the host)
        V.foreach(dot_rr, cfg)
        rs.assign(alpha, 0.25 / (rr + 1.0) - -abs(rr) * 1e-3)
        V.foreach(axpy, cfg)
        V.T.swap(V.Tn)

    V, _, _ = _graph(5000)
    W, _, _ = _graph(5000)
    with rs.capture() as step:
        program(V)
    step.compile()
    history = []
    for _ in range(6):
        step()
        history.append((rr.value, alpha.value))
    program(W)
    expected = []
    for _ in range(6):
        program(W)
        expected.append((rr.value, alpha.value))
    assert step.segments == 1
    assert history == expected
    assert np.array_equal(_bits(V.T), _bits(W.T))


lowest = rs.Global(rs.f64, 0.0, name="lowest")


@rs.kernel
def find_lowest(v):
    rs.reduce_argmin(lowest, v.T)


def test_an_assignment_inside_a_segment_leaves_an_arg_global_without_a_row():
    """rs.assign of an arg-min Global leaves it with no row (-1), as on the host, also inside
    a compiled segment: a later arg-min that finds no lower value keeps row -1 (the compiled
    assignment left the old row; found by the soak's captured branches)."""
    cfg = rs.Config(target="cpu", segments="now")
    V = rs.Relation("V", 6)
    V.new_field("T", rs.f64)

    def program():
        V.foreach(damp, cfg)
        rs.assign(lowest, lowest - 100.0)  # (below every T: no row holds it)
        V.foreach(damp, cfg)
        V.foreach(find_lowest, cfg)  # (host work: after the segment)

    with rs.capture() as step:
        program()
    for _ in range(3):
        V.T.load([3.0, 1.0, 2.0, 5.0, 4.0, 6.0])
        lowest.value = 10.0
        V.foreach(find_lowest, cfg)
        assert lowest.row == 1
        step()
        assert step.segments == 1 and (lowest.value, lowest.row) == (-99.0, -1)


def test_a_sum_its_lanes_cannot_round_takes_the_exact_path_and_the_segment_resumes():
    from relsim.runtime.backends.cpu import lanes
    cfg = rs.Config(target="cpu")

    def chain():
        V = rs.Relation("V", 8)  # squares 2^52 + 2^52 + 1: an exact tie for the lanes
        V.new_field("T", rs.f64).load([2.0 ** 26, 2.0 ** 26, 1.0] + [0.0] * 5)
        V.new_field("Tn", rs.f64)
        return V

    def program(V):
        rs.assign(rr, 0.0)
        V.foreach(dot_rr, cfg)
        rs.assign(alpha, rr * 2.0 ** -54)
        V.foreach(axpy, cfg)

    V, W = chain(), chain()
    with rs.capture() as step:
        program(V)
    step.compile()
    before = lanes.EXACT_PATH["count"]
    got, expected = [], []
    for _ in range(3):
        step()
        got.append((rr.value, alpha.value, V.Tn.numpy().tolist(), V.T.numpy().tolist()))
    program(W)
    for _ in range(3):
        program(W)
        expected.append((rr.value, alpha.value, W.Tn.numpy().tolist(), W.T.numpy().tolist()))
    assert got == expected
    assert got[0][0] == 2.0 ** 53  # (the tie, to even)
    assert step.segments == 1
    assert lanes.EXACT_PATH["count"] >= before + 3  # (each replay)


def test_global_arithmetic_is_checked():
    g32 = rs.Global(rs.f32, 1.0, name="g32")
    with pytest.raises(rs.DataError, match="only scalar f64 Globals"):
        rs.assign(alpha, g32 * 2.0)
    with pytest.raises(rs.DataError, match="not exactly a float64"):
        rs.assign(alpha, rr + (2 ** 60 + 1))
    with pytest.raises(rs.DataError, match="no truth value"):
        bool(rr + 1.0)
    rs.assign(rr, 0.0)
    rs.assign(alpha, 1.0 / rr)
    assert alpha.value == float("inf")


@pytest.mark.parametrize("segments", ["now", "off"])
def test_config_segments_compiles_at_the_first_replay_or_never(segments):
    cfg = rs.Config(target="cpu", segments=segments)
    V, _, _ = _graph()
    with rs.capture() as step:
        V.foreach(damp, cfg)
        V.foreach(relax, cfg)
    step()
    assert step.segments == (1 if segments == "now" else 0)
    assert all(s.ready for p in step.plans.values() for s in p.segments)


def background_switch() -> None:
    """`segments="background"` (the default): replays run the launches until the worker
    process has compiled the segment, then the segment, the bits unchanged across the switch.
    (Segments are shared by every capture of the same shape: run in a process of its own, with
    empty caches, by the test below.)"""
    cfg = rs.Config(target="cpu", segments="background")
    V, _, _ = _graph()
    with rs.capture() as step:
        V.foreach(damp, cfg)
        V.foreach(relax, cfg)
    step()  # planned at the first replay: the segment handed to the worker, the launches run
    segments = [s for p in step.plans.values() for s in p.segments]
    assert len(segments) == 1 and not segments[0].ready and segments[0].background
    replays, deadline = 1, time.monotonic() + 240.0  # (a niced worker on a busy machine)
    while not segments[0].ready:
        assert time.monotonic() < deadline, "the background worker never finished the segment"
        step()
        replays += 1
        time.sleep(0.01)
    for _ in range(3):
        step()
    W, _, _ = _graph()
    for _ in range(replays + 4):  # (the recording ran the launches once)
        W.foreach(damp, cfg)
        W.foreach(relax, cfg)
    assert np.array_equal(_bits(V.T), _bits(W.T)) and np.array_equal(_bits(V.Tn), _bits(W.Tn))
    print("switched after", replays, "replays")


def test_a_background_segment_takes_over_once_compiled_with_the_same_bits(tmp_path):
    """(The suite's other tests call `step.compile()` or ask for "now": they would meet the
    switch only by timing.)"""
    env = dict(os.environ, RELSIM_CACHE_DIR=str(tmp_path / "relsim"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"), RELSIM_STARTUP="wait")
    env.pop("RELSIM_SEGMENTS", None)
    out = subprocess.run([sys.executable, "-c", "from tests.runtime.test_capture import "
                          "background_switch; background_switch()"],
                         env=env, cwd=Path(__file__).parents[2], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "switched after" in out.stdout, out.stdout


iterations = rs.Global(rs.f64, 0.0, name="iterations")
shrink = rs.Global(rs.f64, 0.0, name="shrink")


def _loop_program(V, cfg, limit=50):
    """Damp T until its sum of squares falls below a tenth of where it started."""
    rs.assign(rr, 0.0)
    V.foreach(dot_rr, cfg)
    rs.assign(shrink, rr * 0.1)

    def iteration():
        V.foreach(damp, cfg)
        rs.assign(rr, 0.0)
        V.foreach(dot_rr, cfg)

    return rs.while_loop(rr > shrink, iteration, max_iterations=limit, count=iterations)


@pytest.mark.device_sized
def test_a_while_loop_on_globals_replays_with_its_iterations(target):
    V, _, _ = _graph()
    W, _, _ = _graph()
    with rs.capture() as step:
        first = _loop_program(V, target)
    got = [(first, iterations.value, rr.value)]
    expected = [(_loop_program(W, target),)]
    expected[0] += (iterations.value, rr.value)
    for k in range(3):
        V.T.load(np.linspace(1.0, 2.0 + k, V.size))
        W.T.load(np.linspace(1.0, 2.0 + k, W.size))
        step()
        got.append((int(iterations.value), iterations.value, rr.value))
        expected.append((_loop_program(W, target), iterations.value, rr.value))
    assert got == expected and got[0][0] > 3
    assert np.array_equal(_bits(V.T), _bits(W.T))


def test_a_loop_that_did_not_run_while_recording_records_its_body_later():
    cfg = rs.Config(target="cpu")
    V, _, _ = _graph()
    with rs.capture() as step:
        n = _loop_program(V, cfg, limit=0)
    assert n == 0 and "not recorded yet" in repr(step)
    V.T.load(np.linspace(1.0, 2.0, V.size))
    W, _, _ = _graph()
    W.T.load(np.linspace(1.0, 2.0, W.size))
    step.ops[-1].loop.max_iterations = 40  # (as a loop whose condition was false at first)
    step()
    assert "not recorded yet" not in repr(step)
    assert int(iterations.value) == _loop_program(W, cfg, limit=40) > 3
    assert np.array_equal(_bits(V.T), _bits(W.T))


def test_while_loop_arguments_are_checked():
    with pytest.raises(rs.DataError, match="must compare Globals"):
        rs.while_loop(True, lambda: None, 3)
    with pytest.raises(rs.DataError, match="max_iterations must be an int >= 0"):
        rs.while_loop(rr > 1.0, lambda: None, -1)
    with pytest.raises(rs.DataError, match="count must be a scalar f64 or i64 Global"):
        rs.while_loop(None, lambda: None, 2, count=rs.Global(rs.f32, 0.0))
    with pytest.raises(rs.DataError, match="no truth value"):
        bool(rr > 1.0)
    with pytest.raises(rs.DataError, match="at least max_iterations = 4"):
        rs.while_loop(None, lambda: None, 4, record=(rr, np.zeros(3)))
    with pytest.raises(rs.DataError, match="`&` joins comparisons"):
        (rr > 1.0) & True
    assert rs.while_loop(None, lambda: None, 4) == 4
    values = np.zeros(5)
    rs.assign(rr, 2.0)
    n = rs.while_loop((rr > 1.0) & (rr < 100.0), lambda: rs.assign(rr, (rr * rr).sqrt() * 3.0),
                      5, record=(rr, values))
    assert n == 4 and values[:4].tolist() == [6.0, 18.0, 54.0, 162.0]  # (162: the last test)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_while_loop_compiles_into_the_segment(threads):
    cfg = rs.Config(target="cpu", parallel_threshold=1, threads=threads, segments="now")
    V, _, _ = _graph(3000)
    W, _, _ = _graph(3000)
    with rs.capture() as step:
        _loop_program(V, cfg)
    step()
    names = [item.__name__ for item in next(iter(step.plans.values())).items]
    # (the assignment before the first launch is computed inside the segment too)
    assert names == ["item"], names
    for k in range(3):
        V.T.load(np.linspace(1.0, 2.0 + k, V.size))
        step()
    _loop_program(W, cfg)
    _loop_program(W, cfg)
    for k in range(3):
        W.T.load(np.linspace(1.0, 2.0 + k, W.size))
        n = _loop_program(W, cfg)
    assert iterations.value == n > 3
    assert np.array_equal(_bits(V.T), _bits(W.T))


def test_an_undecided_sum_inside_a_compiled_loop_resumes_inside_it():
    """Each iteration's sum is an exact tie (2^52 + 2^52 + 1): the exact path on the host,
    then the segment resumes in the same iteration."""
    from relsim.runtime.backends.cpu import lanes
    cfg = rs.Config(target="cpu", segments="now")

    def program(V):
        def iteration():
            rs.assign(rr, 0.0)
            V.foreach(dot_rr, cfg)
            rs.assign(alpha, alpha + rr * 2.0 ** -60)
            V.foreach(axpy, cfg)
        rs.assign(alpha, 0.0)
        return rs.while_loop(None, iteration, 5, count=iterations)

    V = rs.Relation("V", 8)
    V.new_field("T", rs.f64).load([2.0 ** 26, 2.0 ** 26, 1.0] + [0.0] * 5)
    V.new_field("Tn", rs.f64)
    with rs.capture() as step:
        program(V)
    before = lanes.EXACT_PATH["count"]
    step()
    step()
    assert step.segments == 1 and lanes.EXACT_PATH["count"] >= before + 10
    got = (alpha.value, rr.value, iterations.value, V.Tn.numpy().tolist())
    program(V)
    assert got == (alpha.value, rr.value, iterations.value, V.Tn.numpy().tolist())
    assert got[2] == 5.0 and got[0] == 5 * (2.0 ** 53 * 2.0 ** -60)


def _splitting(cfg):
    """A 4-row elastic relation and a program whose first launch inserts rows."""
    P = rs.Relation("P", 4, elastic=True)
    P.new_field("x", rs.f64).load([1.0, 2.0, 3.0, 4.0])

    @rs.kernel
    def split_big(p):
        if p.x > 2.5:
            rs.insert(P, x=p.x * 0.5)
            p.x = p.x * 0.5

    @rs.kernel
    def nudge(p):
        p.x = p.x + 0.75

    @rs.kernel
    def add_x(p):
        total += p.x

    def program():
        P.foreach(split_big, cfg)
        P.foreach(nudge, cfg)
        P.foreach(nudge, cfg)
        rs.assign(total, 0.0)
        P.foreach(add_x, cfg)
    return P, program


def test_launches_after_rows_were_inserted_run_on_the_new_arrays():
    """A launch that inserts rows reallocates the relation's arrays: the launches after it in
    the same replay must run on those, not on arrays bound before it."""
    cfg = rs.Config(target="cpu", segments="now")
    runs = []
    for captured in (True, False):
        P, program = _splitting(cfg)
        if captured:
            with rs.capture() as step:
                program()
        else:
            step = program
            step()
        out = [(P.size, total.value)]
        for _ in range(3):
            step()
            out.append((P.size, total.value))
        runs.append((out, P.x.numpy().tolist()))
    assert runs[0] == runs[1] and runs[0][0][-1][0] > 8


@pytest.mark.parametrize("value, segments", [("off", 0), (" Now", 1)])
def test_relsim_segments_is_the_default_of_config_segments(monkeypatch, value, segments):
    monkeypatch.setenv("RELSIM_SEGMENTS", value)  # (as RELSIM_STARTUP: case and spaces)
    cfg = rs.Config(target="cpu")
    V, _, _ = _graph()
    with rs.capture() as step:
        V.foreach(damp, cfg)
        V.foreach(relax, cfg)
    step()
    assert step.segments == segments
    assert all(s.ready for p in step.plans.values() for s in p.segments)


def test_a_bad_relsim_segments_is_a_config_error_naming_it(monkeypatch):
    monkeypatch.setenv("RELSIM_SEGMENTS", "later")
    V, _, _ = _graph()
    with pytest.raises(rs.ConfigError, match="RELSIM_SEGMENTS must be one of background, now, "
                                             "off, got 'later'"):
        with rs.capture() as step:
            V.foreach(damp, rs.Config(target="cpu"))
            V.foreach(relax, rs.Config(target="cpu"))
        step()
