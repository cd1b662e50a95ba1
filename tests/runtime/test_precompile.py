"""rs.precompile: kernels compiled ahead, shared between this process and worker processes,
give the same results, and the launches load what the workers compiled."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime import execute
from tests.conftest import chain_mesh


def _kernels():
    @rs.kernel
    def conduct(e):
        d = e.head.T - e.tail.T
        e.tail.flux += d
        e.head.flux -= d

    @rs.kernel
    def update(v):
        v.T += 0.1 * v.flux
        v.flux = 0.0

    return conduct, update


def _run(cfg, precompile):
    V, E = chain_mesh(200)
    V.new_field("T", rs.f64, init=np.sin(np.arange(200.0)))
    V.new_field("flux", rs.f64)
    conduct, update = _kernels()
    shared = rs.precompile([(conduct, E), (update, V)], cfg, workers=1) if precompile else None
    for _ in range(3):
        E.foreach(conduct, cfg)
        V.foreach(update, cfg)
    exes = [execute.executable(k, R, cfg) for k, R in ((conduct, E), (update, V))]
    fns = [exe.bindings[None].fn for exe in exes if hasattr(exe, "bindings")]
    return V.T.numpy(copy=True), shared, fns


def test_precompiled_kernels_give_the_same_bits_and_load_from_the_cache(tmp_path):
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "a"))
    T, shared, fns = _run(cfg, precompile=True)
    assert shared == 2
    # one compiled here, the other by the worker and loaded from Numba's cache at its launch
    assert sorted(sum(fn.stats.cache_hits.values()) for fn in fns) == [0, 1]
    want, _, _ = _run(rs.Config(target="interp"), precompile=False)
    assert T.tobytes() == want.tobytes()


def test_a_warm_cache_starts_no_worker(tmp_path):
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / "b"))
    _run(cfg, precompile=True)
    _, shared, _ = _run(cfg, precompile=True)  # modules found in the cache: nothing shared
    assert shared == 0


def test_other_targets_and_bad_pairs(tmp_path):
    _, shared, _ = _run(rs.Config(target="interp"), precompile=True)
    assert shared == 0  # interp compiles nothing
    conduct, _ = _kernels()
    with pytest.raises(TypeError, match="relation or subset"):
        rs.precompile([(conduct, "E")])
