"""Shared fixtures: every backend runs the same tests (the `target` fixture)."""
import contextlib
import os
import tempfile

import pytest

os.environ.setdefault("RELSIM_CACHE_DIR", os.path.join(tempfile.gettempdir(), "relsim-test-cache"))
# the cuda target runs in numba's CUDA simulator unless NUMBA_ENABLE_CUDASIM=0 (a GPU machine)
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# a parallel variant compiles at the first launch that needs it ("tiered" start-up would run
# the serial one meanwhile: a test of 2 threads would not run parallel code on a fresh clone);
# tests of tiers set `Config(startup="tiered")`
os.environ.setdefault("RELSIM_STARTUP", "wait")

import relsim as rs  # noqa: E402
from tests import heat_graph, proxy_backend  # noqa: E402

# a third backend written against backends/base.py alone runs the shared suite too (in this
# process only: tests that start subprocesses take SHIPPED_TARGETS)
proxy_backend.register()
# targets whose launches are too slow for every backend test (the CUDA simulator runs each
# thread as a Python thread): they run only the tests marked `device_sized` (tiny relations)
SLOW_TARGETS = ("cuda",)
ALL_TARGETS = rs.targets()
TARGETS = [t for t in ALL_TARGETS if t not in SLOW_TARGETS]  # every other target, every test
CPU_TARGETS = ("cpu", "cpu-serial")  # for tests of what only the cpu backend does
SHIPPED_TARGETS = [t for t in ALL_TARGETS if t != proxy_backend.NAME]  # relsim's own
# the configurations a simulation's same-bits tests compare (`configured(**...)`): the cpu on 1
# and 2 threads with every launch parallel, cpu-serial and interp
SIM_CONFIGS = {"cpu-1": dict(target="cpu", threads=1, parallel_threshold=1),
               "cpu-2": dict(target="cpu", threads=2, parallel_threshold=1),
               "cpu-serial": dict(target="cpu-serial"), "interp": dict(target="interp")}


def pytest_configure(config):
    config.addinivalue_line("markers", "device_sized: tiny enough for the slow targets too "
                                       "(SLOW_TARGETS: cuda in the simulator)")
    config.addinivalue_line("markers", "mpi: starts `mpiexec -n N` subprocesses (the `mpi` "
                                       "extra; deselect with -m 'not mpi')")


def pytest_generate_tests(metafunc):
    """The `target` fixture's targets: every registered one for tests marked device_sized,
    else all but SLOW_TARGETS."""
    explicit = any("target" in _names(m.args[0])
                   for m in metafunc.definition.iter_markers("parametrize"))
    if "target" in metafunc.fixturenames and not explicit:
        sized = metafunc.definition.get_closest_marker("device_sized") is not None
        metafunc.parametrize("target", ALL_TARGETS if sized else TARGETS, indirect=True)


def _names(argnames):
    return [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else argnames


@pytest.fixture
def target(request):
    """A Config for each backend; tests pass it to foreach or install it with rs.configure."""
    return rs.Config(target=request.param, parallel_threshold=1 if request.param == "cpu" else 2048)


@pytest.fixture
def use_target(target):
    old = rs.config.current()
    rs.configure(target=target.target, parallel_threshold=target.parallel_threshold)
    yield target
    rs.configure(target=old.target, parallel_threshold=old.parallel_threshold)


@pytest.fixture(autouse=True)
def _restore_configuration():
    """Each test starts from the configuration the one before started from: a test that sets
    the process-wide one (a simulation's main() with --target, rs.configure) must not change
    what later tests run on."""
    before = rs.config.current()
    yield
    if rs.config.current() is not before:
        rs.configure(**{name: getattr(before, name) for name in before.__dataclass_fields__})


@contextlib.contextmanager
def configured(**changes):
    """rs.configure(**changes) inside the block, the previous values of those options after."""
    before = rs.configure()
    rs.configure(**changes)
    try:
        yield
    finally:
        rs.configure(**{k: getattr(before, k) for k in changes})


def chain_mesh(n_vertices=6):
    """A 1-D chain: vertices 0..n-1, edges (i, i+1) with head = i+1, tail = i."""
    return heat_graph.chain_topology(n_vertices)


def held_in_tier_0(exes) -> list:
    """Put the cpu launches `exes` in tier 0 until the returned list is made non-empty (their
    parallel variants then count as compiled: each leaves tier 0 at its next launch)."""
    ready = []
    for exe in exes:
        exe.set_tier0(True)
        exe.tier_done = lambda: bool(ready)
    return ready


def run_all_targets(build, kernel_runs):
    """Build fresh data per target, run, and return {target: result arrays}."""
    out = {}
    for t in TARGETS:
        cfg = rs.Config(target=t, parallel_threshold=1 if t == "cpu" else 2048)
        out[t] = kernel_runs(build(), cfg)
    return out
