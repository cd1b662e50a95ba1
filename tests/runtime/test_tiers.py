"""Tiered start-up by default (`Config.startup`, `backends/cpu/tiers.py`): a launch whose
parallel variant is neither compiled nor cached runs its serial one while the background worker
compiles it, then binds it from the disk cache; the bits never change."""
import math
import time

import numpy as np
import pytest

import relsim as rs
from relsim.runtime import execute
from relsim.runtime.backends.cpu import parts
from tests import heat_graph


def _heat(cfg, times=1, rate=0.0875):
    """A heat chain of 200 vertices run `times` steps under `cfg`: (V, E, conduct, update),
    with kernels whose rate no other test file uses (modules of their own, in a cold cache; a
    test that needs them not compiled yet in this process either takes a rate of its own:
    tests run in any order, one process running several)."""
    V, E = heat_graph.chain(200, T=np.sin(np.arange(200.0)))
    conduct, update = heat_graph.kernels(rate)
    heat_graph.step(V, E, conduct, update, cfg, times=times)
    return V, E, conduct, update


def _interp(times, rate=0.0875):
    return _heat(rs.Config(target="interp"), times, rate)[0].T.numpy().tobytes()


def _cpu(tmp_path, startup):
    return rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path),
                     startup=startup)


def test_a_launch_runs_serial_code_until_its_parallel_variant_is_compiled(tmp_path):
    cfg = _cpu(tmp_path, "tiered")
    rate = 0.0925  # (compiled by no other test: `test_wait_...` compiles 0.0875's parts)
    V, E, conduct, update = _heat(cfg, rate=rate)
    exe = execute.executable(update, V, cfg)
    # the part function as a plain serial function (`parts.Tier0`), meanwhile
    assert exe.tier0 and not exe.bindings[None].parallel
    assert isinstance(exe.bindings[None].fn, parts.Tier0)
    assert V.T.numpy().tobytes() == _interp(1, rate)
    deadline = time.monotonic() + 300
    while not exe.tier_done():
        assert time.monotonic() < deadline, "the background worker did not finish"
        time.sleep(0.2)
    heat_graph.step(V, E, conduct, update, cfg, times=2)
    b = exe.bindings[None]
    assert not exe.tier0 and b.parallel  # loaded from the disk cache the worker wrote
    assert b.fn.loaded == 1  # (its wrapper; the part function it calls loads too)
    assert V.T.numpy().tobytes() == _interp(3, rate)
    # kernels with the same code, later (the next run): the cache has both variants, no tiers
    V2, _, _, update2 = _heat(cfg, times=3, rate=rate)
    exe2 = execute.executable(update2, V2, cfg)
    assert exe2.tier_done is None and exe2.bindings[None].parallel
    assert V2.T.numpy().tobytes() == _interp(3, rate)


def test_a_fast_math_kernel_starts_tiered_too(tmp_path):
    """A `fast_math` kernel's jobs (its ``fastmath`` flags a set) start tiered and end with
    the parallel variant, its bits those of the same kernel compiled at its launch."""
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "t"),
                    startup="tiered", fast_math=True)
    V, E, conduct, update = _heat(cfg)
    exe = execute.executable(update, V, cfg)
    assert exe.tier0
    deadline = time.monotonic() + 300
    while not exe.tier_done():
        assert time.monotonic() < deadline, "the background worker did not finish"
        time.sleep(0.2)
    heat_graph.step(V, E, conduct, update, cfg, times=2)
    assert not exe.tier0 and exe.bindings[None].parallel
    waited = _heat(rs.Config(target="cpu", parallel_threshold=1, startup="wait",
                             cache_dir=str(tmp_path / "w"), fast_math=True), times=3)[0]
    assert V.T.numpy().tobytes() == waited.T.numpy().tobytes()


def test_wait_compiles_the_parallel_variant_at_the_first_launch(tmp_path):
    cfg = _cpu(tmp_path, "wait")
    V, _, _, update = _heat(cfg)
    exe = execute.executable(update, V, cfg)
    assert exe.tier_done is None and not exe.tier0 and exe.bindings[None].parallel
    assert V.T.numpy().tobytes() == _interp(1)


def test_bad_startup_values_name_the_option_or_the_variable(tmp_path, monkeypatch):
    with pytest.raises(rs.ConfigError, match="startup must be one of tiered, wait"):
        rs.Config(target="cpu", startup="soon")
    monkeypatch.setenv("RELSIM_STARTUP", "soon")
    V, E = heat_graph.chain(20)
    conduct, update = heat_graph.kernels(0.0875)
    with pytest.raises(rs.ConfigError, match="RELSIM_STARTUP must be one of tiered, wait, "
                                             "got 'soon'"):
        V.foreach(update, rs.Config(target="cpu", cache_dir=str(tmp_path)))
    monkeypatch.setenv("RELSIM_STARTUP", "Tiered ")  # (as RELSIM_DEBUG: case and spaces)
    V.foreach(update, rs.Config(target="cpu", cache_dir=str(tmp_path), parallel_threshold=7))


def test_a_small_launch_has_its_split_scatter_planned_ahead(tmp_path, monkeypatch):
    """Below the threshold a key reduction scatters directly; the background worker compiles
    meanwhile what a parallel launch plans its split with, so that the first launch past the
    threshold loads its slot targets from the disk cache instead of compiling them."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path), startup="tiered",
                    parallel_threshold=1000, scatter="auto", threads=2)
    small = heat_graph.chain(100, T=np.sin(np.arange(100.0)))[1]
    @rs.kernel
    def conduct(e):  # (its slot targets, three a row, made by no other test: a process that
        d = e.head.T - e.tail.T  # compiled them for another cache folder would reuse them)
        e.tail.flux += d
        e.head.flux -= d
        e.tail.flux += 0.5 * d
    small.foreach(conduct, cfg)
    exe = execute.executable(conduct, small, cfg)
    assert exe.bindings[None].scheme == "direct" and exe.planned_ahead is not None
    deadline = time.monotonic() + 300
    while not exe.planned_ahead():
        assert time.monotonic() < deadline, "the background worker did not finish"
        time.sleep(0.2)
    before = sum(exe.targets[0].stats.cache_misses.values())
    V, E = heat_graph.chain(20000, T=np.sin(np.arange(20000.0)))
    E.foreach(conduct, cfg)  # past the threshold: plans its split (in tier 0 or not)
    exe = execute.executable(conduct, E, cfg)
    assert sum(exe.targets[0].stats.cache_misses.values()) == before
    assert sum(exe.targets[0].stats.cache_hits.values()) >= 1


def test_a_new_binding_gives_the_globals_folds_it_calls_to_the_worker_first(tmp_path,
                                                                            monkeypatch):
    """A tiered binding hands relsim's folds of its Globals' lanes (here a float sum's
    rounding, `lane_sums.finish`) to the background worker (`tiers.helpers_ahead`), for the
    argument types the launch then calls it with, while this process compiles the kernel."""
    from relsim.runtime.backends.cpu import parallel_for, tiers
    from relsim.runtime.folds import lane_sums
    given = []
    monkeypatch.setattr(tiers.compile_jobs, "helper_in_background",
                        lambda fn, sig: given.append((fn, sig)) or (True, None))
    cfg = _cpu(tmp_path, "tiered")
    R = rs.Relation("helpers_ahead_R", 300)
    R.new_field("x", rs.f64).load(np.linspace(0.0, 1.0, 300))
    total = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def add_up(r):
        total += r.x * 0.5

    R.foreach(add_up, cfg)
    assert total.value == math.fsum(0.5 * np.linspace(0.0, 1.0, 300))  # (an exact sum)
    given = [(fn, sig) for fn, sig in given if fn not in (parallel_for.run_parts,
                                                          parallel_for.run_serial)]
    assert [fn for fn, _ in given] == [lane_sums.finish]  # (the runners: `runner_behind`)
    exe = execute.executable(add_up, R, cfg)
    _, args = exe.calls_of(exe.bindings[None])[-1]
    assert given[0][1] == tuple(lane_sums.finish.typeof_pyval(a) for a in args)
    assert given[0][1] in lane_sums.finish.overloads  # (what the launch called)
