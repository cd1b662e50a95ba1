"""rs.precompile: kernels compiled ahead, shared between this process and worker processes,
give the same results, and the launches load what the workers compiled."""
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import relsim as rs
from relsim.runtime import execute
from tests import heat_graph

ROOT = Path(__file__).resolve().parents[2]


def _pending(pairs, cfg) -> list:
    """The compilations the launches of `pairs` need that Numba's disk cache cannot give."""
    jobs = {}
    for k, R in pairs:
        for job in execute.executable(k, R, cfg).compile_jobs(R, None):
            if job.cached is None or not job.cached():
                jobs[job.path, job.function, job.signature] = job
    return list(jobs.values())


def _own_kernels(scale=0.5, rate=0.0625):
    """(conduct, update) no other test compiles (a kernel compiled earlier in the same process
    needs no compilation, so precompile would have one function to share, hence nothing):
    the captured `scale` and `rate` are constants of their code."""
    @rs.kernel
    def conduct(e):
        d = scale * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux -= d

    return conduct, heat_graph.update_kernel(rate)


def _run(cfg, precompile, kernels=heat_graph.kernels):
    V, E = heat_graph.chain(200, T=np.sin(np.arange(200.0)))
    conduct, update = kernels()
    pairs = [(conduct, E), (update, V)]
    pending = _pending(pairs, cfg) if precompile else None
    shared = rs.precompile(pairs, cfg, workers=1) if precompile else None
    if precompile:
        shared = (shared, pending)
    heat_graph.step(V, E, conduct, update, cfg, times=3)
    exes = [execute.executable(k, R, cfg) for k, R in ((conduct, E), (update, V))]
    fns = [exe.bindings[None].fn for exe in exes if hasattr(exe, "bindings")]
    return V.T.numpy(copy=True), shared, fns


def test_precompiled_kernels_give_the_same_bits_and_load_from_the_cache(tmp_path):
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "a"))
    T, (shared, pending), fns = _run(cfg, precompile=True, kernels=_own_kernels)
    # the two kernels' functions, and relsim's own compiled helpers they call unless this
    # process or another test worker compiled those before (cached once per installation)
    assert shared == len(pending)
    assert len([job for job in pending if job.path.endswith(".py")]) == 2
    # each compiled once: here, or by the worker and loaded from Numba's cache at its launch
    # (who takes which depends on who is free first: `test_sharing_...` below)
    assert all(_loaded(fn) in (0, 1) for fn in fns)
    want, _, _ = _run(rs.Config(target="interp"), precompile=False, kernels=_own_kernels)
    assert T.tobytes() == want.tobytes()


def _loaded(fn) -> int:
    return fn.loaded if hasattr(fn, "loaded") else sum(fn.stats.cache_hits.values())


def test_sharing_compiles_each_job_once_whoever_is_free_first(tmp_path):
    """`compile_jobs.Sharing`: the jobs offered go to a worker as they come; once it has
    claimed one, `finish` compiles the others here and waits for it; the launches then load
    the worker's from the disk cache, and compile nothing more."""
    import os

    from relsim.runtime.host import compile_jobs
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "s"))
    V, E = heat_graph.chain(200, T=np.sin(np.arange(200.0)))
    # (kernels of its own: test_tiers, run before it in one process, compiles the shared
    # conduct kernel's parallel variant, and then only one job was left to share)
    conduct, update = _own_kernels(0.4375, 0.4375)
    pairs = [(conduct, E), (update, V)]
    jobs = _pending(pairs, cfg)
    assert len(jobs) >= 2
    sharing = compile_jobs.Sharing(1)
    sharing.offer(jobs[:1])
    sharing.offer(jobs)  # (offered twice: sent once)
    deadline = time.monotonic() + 300
    while not os.listdir(sharing.claims):  # the worker claims the dearest one first
        assert time.monotonic() < deadline, "the worker claimed nothing"
        time.sleep(0.05)
    sharing.finish()
    assert not os.path.exists(sharing.claims) and sharing.procs[0].returncode == 0
    heat_graph.step(V, E, conduct, update, cfg, times=3)
    exes = [execute.executable(k, R, cfg) for k, R in pairs]
    fns = [exe.bindings[None].fn for exe in exes]
    assert sorted(_loaded(fn) for fn in fns) in ([0, 1], [1, 1])  # one at least the worker's
    want, _, _ = _run(rs.Config(target="interp"), precompile=False, kernels=lambda: (conduct,
                                                                                     update))
    assert V.T.numpy().tobytes() == want.tobytes()


def test_a_job_is_claimed_once():
    import tempfile

    from relsim.runtime.host import compile_jobs
    job = compile_jobs.CompileJob("m", "f", (), ("int64",), 1)
    other = compile_jobs.CompileJob("m", "f", (), ("float64",), 1)
    with tempfile.TemporaryDirectory() as claims:
        assert compile_jobs.claim(claims, job)
        assert not compile_jobs.claim(claims, job)
        assert compile_jobs.claim(claims, other)  # another signature: another job
    assert not compile_jobs.claim(claims, other)  # the folder is gone: nothing to take


def test_a_warm_cache_starts_no_worker(tmp_path):
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "b"))
    _run(cfg, precompile=True)
    _, (shared, _), _ = _run(cfg, precompile=True)  # modules found in the cache: none shared
    assert shared == 0


def test_other_targets_and_bad_pairs(tmp_path):
    _, (shared, _), _ = _run(rs.Config(target="interp"), precompile=True)
    assert shared == 0  # interp compiles nothing
    conduct = heat_graph.conduct_kernel()
    with pytest.raises(TypeError, match="relation or subset"):
        rs.precompile([(conduct, "E")])


def test_a_bad_pair_after_offered_jobs_stops_the_workers(tmp_path, monkeypatch):
    """A pair that fails after others were offered to a worker: the error as it is, the
    workers stopped and the claims folder gone (nothing left running or on disk)."""
    from relsim.runtime.host import compile_jobs
    made = []
    real = compile_jobs.Sharing

    class Watched(real):
        def __init__(self, workers):
            super().__init__(workers)
            made.append(self)

    monkeypatch.setattr(compile_jobs, "Sharing", Watched)
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "bad"))
    V, E = heat_graph.chain(50)
    conduct, update = heat_graph.kernels(0.3125)  # (a rate no other test compiles)
    with pytest.raises(TypeError, match="relation or subset"):
        rs.precompile([(conduct, E), (update, V), (update, "V")], cfg, workers=1)
    (sharing,) = made
    assert sharing.procs and all(p.poll() is not None for p in sharing.procs)
    assert not any(p in compile_jobs.running for p in sharing.procs)
    assert not Path(sharing.claims).exists()


def test_background_runs_serial_variants_until_the_parallel_ones_are_compiled(tmp_path):
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "c"))
    V, E = heat_graph.chain(200, T=np.sin(np.arange(200.0)))
    # kernels of their own (the others' machine code is in this process already): the rate is
    # compiled in, another value makes other modules (a cold cache)
    conduct, update = heat_graph.kernels(0.125)
    launches = [(conduct, E), (update, V)]
    ahead = rs.precompile(launches, cfg, workers=1, background=True)
    exes = [execute.executable(k, R, cfg) for k, R in launches]
    tiered = [exe for exe in exes if exe.tier0]  # (conduct's scheme may be serial anyway)
    assert ahead >= 1 and exes[1] in tiered
    E.foreach(conduct, cfg)
    V.foreach(update, cfg)
    # tier 0: the serial variants (and a serial scheme for a scatter)
    assert not any(exe.bindings[None].parallel for exe in tiered)
    deadline = time.monotonic() + 300
    while not all(exe.tier_done() for exe in tiered):
        assert time.monotonic() < deadline, "the background worker did not finish"
        time.sleep(0.2)
    heat_graph.step(V, E, conduct, update, cfg, times=2)
    # the parallel variants, loaded from the disk cache the worker wrote
    assert not any(exe.tier0 for exe in exes)
    assert exes[1].bindings[None].parallel
    assert exes[1].bindings[None].fn.loaded == 1
    V2, E2 = heat_graph.chain(200, T=np.sin(np.arange(200.0)))
    heat_graph.step(V2, E2, conduct, update, rs.Config(target="interp"), times=3)
    assert V.T.numpy().tobytes() == V2.T.numpy().tobytes()


def test_a_split_scatters_plan_compiles_behind_the_serial_variants(tmp_path, monkeypatch):
    """Tiered `rs.precompile` of a key reduction whose split scatter's plan needs code not
    compiled yet: this process compiles none of it (its slot targets go to the background
    worker); the launch runs its serial variant until then, its parallel variant is bound
    at the next launch of any kernel after (`tiers.bind_awaiting`), tiered in turn, then
    run: the one-process bits throughout."""
    from relsim.runtime.backends.cpu import tiers
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "c"),
                    startup="tiered", scatter="split", threads=2)
    V, E = heat_graph.chain(300, T=np.sin(np.arange(300.0)), k=0.375)

    @rs.kernel
    def conduct(e):  # (a kernel of its own: no other test compiled its slot targets)
        d = 0.4375 * e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux -= d
    update = heat_graph.update_kernel(0.1875)
    assert rs.precompile([(conduct, E), (update, V)], cfg, workers=1, background=True) >= 1
    exe = execute.executable(conduct, E, cfg)
    assert exe.tier0 and any(a[0] is exe for a in tiers.awaiting)
    assert not any(t.overloads for t in exe.targets.values())  # (nothing planned here)
    ops = ["c", "u"]
    heat_graph.step(V, E, conduct, update, cfg)
    assert exe.bindings[None].scheme == "direct"  # (tier 0: serial)
    deadline = time.monotonic() + 300
    while exe.tier0 or exe.tier_done is not None:  # planned, tiered again, then compiled
        assert time.monotonic() < deadline, "the background worker did not finish"
        V.foreach(update, cfg)  # (any launch binds the awaiting ones)
        E.foreach(conduct, cfg)
        ops += ["u", "c"]
        time.sleep(0.1)
    assert not any(a[0] is exe for a in tiers.awaiting)
    E.foreach(conduct, cfg)
    ops.append("c")
    assert exe.bindings[None].scheme == "split" and exe.bindings[None].parallel
    V2, E2 = heat_graph.chain(300, T=np.sin(np.arange(300.0)), k=0.375)
    one = rs.Config(target="interp")
    for op in ops:
        E2.foreach(conduct, one) if op == "c" else V2.foreach(update, one)
    assert V.T.numpy().tobytes() == V2.T.numpy().tobytes()
    assert V.flux.numpy().tobytes() == V2.flux.numpy().tobytes()


@pytest.mark.parametrize("startup", ["tiered", "wait"])
def test_background_none_follows_the_start_up_mode(startup, tmp_path, monkeypatch):
    """`background=None`: tiered (the serial variants now, the parallel ones behind) where the
    launch's start-up mode is "tiered", nothing ahead where it is "wait" (what `relsim run
    smoke` and `md` pass: the test suite pins "wait")."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "c"),
                    startup=startup)
    V, E = heat_graph.chain(200, T=np.sin(np.arange(200.0)))
    update = heat_graph.update_kernel(0.21875)  # (a module of its own: a cold cache)
    ahead = rs.precompile([(update, V)], cfg, workers=1, background=None)
    exe = execute.executable(update, V, cfg)
    assert exe.tier0 == (startup == "tiered") and (ahead >= 1) == (startup == "tiered")
    if startup == "wait":  # (compiled at its first launch: the parallel variant at once)
        V.foreach(update, cfg)
        assert exe.bindings[None].parallel


def test_background_with_a_warm_cache_starts_nothing(tmp_path):
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "d"))
    _run(cfg, precompile=True)
    V, E = heat_graph.chain(200)
    conduct, update = heat_graph.kernels()
    assert rs.precompile([(conduct, E), (update, V)], cfg, background=True) == 0
    assert not execute.executable(update, V, cfg).tier0


def test_a_worker_compiles_relsim_folds_into_the_disk_cache(tmp_path, monkeypatch):
    """A parallel binding's folds (a scatter's shared slots, parked slots) are jobs too: the
    worker finds them by module name, so the first launch with the parallel variants (maybe
    in the next run) loads them instead of compiling."""
    from numba import types

    from relsim.runtime.folds import host_folds
    from relsim.runtime.host import compile_jobs

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    fn = host_folds.gather_num_rows_serial
    # float32 values folded into float32 rows: a signature no other test compiles
    f32_2d, i64_1d = types.float32[:, :], types.int64[:]
    signature = (f32_2d, i64_1d, i64_1d, types.none, f32_2d, types.int64)
    job = compile_jobs.CompileJob(fn.py_func.__module__, fn.py_func.__name__,
                                  tuple(sorted(fn.targetoptions.items())), signature, 1)
    proc = compile_jobs.start([job])
    proc.wait(timeout=300)
    compile_jobs.running[:] = [p for p in compile_jobs.running if p is not proc]
    done = compile_jobs.background([job, job])  # the background worker: the second loads it
    _wait(done({0, 1}))
    _another_process_loads_the_rows_fold("types.float32[:, :], types.int64[:]")


def test_a_helper_is_compiled_in_the_background_once(tmp_path, monkeypatch):
    """`helper_in_background`: not cached, one background worker compiles it into the disk
    cache (a second request in the process waits on the same worker); the next process loads
    it."""
    from numba import types

    from relsim.runtime.folds import host_folds
    from relsim.runtime.host import compile_jobs

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    # C-contiguous float32 values folded into C-contiguous float32 rows: no other test's
    f32_2d, i64_1d = types.float32[:, ::1], types.int64[::1]
    signature = (f32_2d, i64_1d, i64_1d, types.none, f32_2d, types.int64)
    fn = host_folds.gather_num_rows_serial
    here, done = compile_jobs.helper_in_background(fn, signature)
    assert not here and compile_jobs.helper_in_background(fn, signature) == (False, done)
    _wait(done)
    _another_process_loads_the_rows_fold("types.float32[:, ::1], types.int64[::1]")


def _wait(done) -> None:
    """Wait (at most 300 s) until `done()` says the background worker did its jobs."""
    deadline = time.monotonic() + 300
    while not done():
        assert time.monotonic() < deadline, "the background worker did not finish"
        time.sleep(0.2)


def _another_process_loads_the_rows_fold(types_2d_1d: str) -> None:
    """A new process (this one's environment: its NUMBA_CACHE_DIR) finds
    host_folds.gather_num_rows_serial for float32 values into float32 rows, with the 2-D and
    1-D array types `types_2d_1d` (Python source), in Numba's disk cache."""
    import os
    import subprocess
    import sys
    check = ("import sys\nfrom numba import types\n"
             "from relsim.runtime.folds import host_folds\n"
             "from relsim.runtime.host.compile_jobs import load_cached\n"
             f"f32_2d, i64_1d = {types_2d_1d}\n"
             "sig = (f32_2d, i64_1d, i64_1d, types.none, f32_2d, types.int64)\n"
             "sys.exit(0 if load_cached(host_folds.gather_num_rows_serial, sig) else 3)\n")
    out = subprocess.run([sys.executable, "-c", check], env=dict(os.environ),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


def test_a_worker_takes_the_cheapest_job_given_so_far_first():
    """The background worker reads every list of jobs written so far and compiles the
    cheapest first (a helper or a captured segment before a parallel kernel), reporting each
    by its position in the order given."""
    import os

    from relsim.runtime.host import compile_jobs
    read, write = os.pipe()
    jobs = [compile_jobs.CompileJob("m", f"f{cost}", (), (), cost) for cost in (5, 1, 3)]
    os.write(write, compile_jobs._frame(jobs[:2]) + compile_jobs._frame(jobs[2:]))
    os.close(write)
    try:
        order = [(i, job.function) for i, job in compile_jobs._jobs(read)]
    finally:
        os.close(read)
    assert order == [(1, "f1"), (2, "f3"), (0, "f5")]
    read, write = os.pipe()  # a shared precompile's worker: the dearest first
    os.write(write, compile_jobs._frame(jobs))
    os.close(write)
    try:
        order = [(i, job.function) for i, job in compile_jobs._jobs(read, largest_first=True)]
    finally:
        os.close(read)
    assert order == [(0, "f5"), (2, "f3"), (1, "f1")]


_WORKER_THEN_NEW_PROCESS = """
import sys
import relsim as rs
from relsim.runtime import execute
from relsim.runtime.host import compile_jobs
from tests import heat_graph
cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=sys.argv[2])
V, E = heat_graph.chain(200)
conduct, update = heat_graph.kernels(0.375)
pairs = [(conduct, E), (update, V)]
ahead = rs.precompile(pairs, cfg, workers=1, background=True)
exe = execute.executable(update, V, cfg)
tier0 = exe.tier0
if sys.argv[1] == "compile":  # the worker told to stop once its jobs are done, and waited for
    for worker in compile_jobs._background.values():
        worker.close()
        worker.proc.wait(timeout=300)
print(ahead, tier0)
"""


def test_what_a_worker_compiled_a_new_process_loads_without_compiling(tmp_path):
    """The parallel variants a background worker compiled (parts wrappers and the part
    functions they call) are in the disk cache: a new process finds nothing to compile and
    runs them at once (a part function the worker compiled but did not cache made every
    later LULESH run start cold, its threads idle)."""
    import os
    # (a cache of its own: the runners a parallel and a serial launch call,
    # `parallel_for.run_parts` and `run_serial`, are compiled behind tier 0 too, which the
    # program never launched in parallel, nor serially after it)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def run(mode):
        out = subprocess.run([sys.executable, "-c", _WORKER_THEN_NEW_PROCESS, mode,
                              str(tmp_path / "c")], capture_output=True, text=True,
                             cwd=ROOT, timeout=600, env=env)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    first = run("compile")
    assert int(first[0]) >= 1 and first[1] == "True"
    runner = ("import sys\nfrom numba import types\n"
              "from relsim.runtime.backends.cpu import parallel_for\n"
              "from relsim.runtime.host.compile_jobs import load_cached\n"
              "sys.exit(0 if all(load_cached(runner, (types.int64, types.int64)) for runner in "
              "(parallel_for.run_parts, parallel_for.run_serial)) else 3)\n")
    out = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True,
                         cwd=ROOT, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert run("load") == ["0", "False"]
