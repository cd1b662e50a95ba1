"""Bitwise reproducibility: 1 vs 2 threads, serial vs parallel, compiled vs interp; the compile
cache lets a second process start without recompiling."""
import hashlib
import os
import subprocess
import sys
import textwrap

import numpy as np

import relsim as rs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(rs.__file__)))

SCRIPT = textwrap.dedent("""\
    import hashlib, sys
    import numpy as np
    import relsim as rs
    from tests import heat_graph

    V, E = heat_graph.random_graph(5000, 40000, seed=7, k=(0.1, 1.0))
    heat = rs.Global(rs.f64, 0.0)
    dt = rs.Global(rs.f64, 1e-3)
    conduct, update = heat_graph.kernels(dt, heat, weighted=True)

    rs.configure(target=sys.argv[1], parallel_threshold=1)
    heat_graph.step(V, E, conduct, update, heat=heat, times=int(sys.argv[2]))
    h = hashlib.sha256(V.T.numpy().tobytes() + np.float64(heat.value).tobytes()).hexdigest()
    print(h, repr(heat.value))
""")


def _run(tmp_path, target, threads, steps=5, cache=None, numba_cache=None):
    path = tmp_path / "det_script.py"
    path.write_text(SCRIPT)
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    if cache:
        env["RELSIM_CACHE_DIR"] = str(cache)
    if numba_cache:
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
    out = subprocess.run([sys.executable, str(path), target, str(steps)], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_one_and_two_threads_and_serial_and_interp_agree_bitwise(tmp_path):
    h1 = _run(tmp_path, "cpu", 1)
    h2 = _run(tmp_path, "cpu", 2)
    hs = _run(tmp_path, "cpu-serial", 2)
    hi = _run(tmp_path, "interp", 1, steps=1)
    hc = _run(tmp_path, "cpu", 2, steps=1)
    assert h1 == h2 == hs
    assert hi == hc


def test_in_process_thread_counts_agree(tmp_path):
    import numba
    results = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        rs.configure(threads=threads)
        rng = np.random.default_rng(3)
        V, E = rs.Relation("V", 3000), rs.Relation("E", 20000)
        E.new_key_field("a", V).load(rng.integers(0, 3000, 20000))
        E.new_field("w", rs.f64).load(rng.normal(size=20000))
        V.new_field("s", rs.f64)
        tot = rs.Global(rs.f64, 0.0)

        @rs.kernel
        def k(e):
            e.a.s += e.w * 1.1
            tot += e.w

        E.foreach(k, rs.Config(target="cpu", parallel_threshold=1))
        results.append(hashlib.sha256(V.s.numpy().tobytes()).hexdigest() + repr(tot.value))
    rs.configure(threads=None)
    assert results[0] == results[1]


def test_second_process_uses_the_disk_cache(tmp_path):
    cache = tmp_path / "cache"
    # Numba caches beside the generated module, or under NUMBA_CACHE_DIR when that is set: a
    # folder of this test's own then (a shared one gets other test processes' files meanwhile)
    numba_cache = tmp_path / "numba" if os.environ.get("NUMBA_CACHE_DIR") else None
    _run(tmp_path, "cpu", 2, steps=1, cache=cache, numba_cache=numba_cache)
    generated = list(cache.glob("relsim_gen_*.py"))
    assert generated, "no generated module written"
    places = [cache] + ([numba_cache] if numba_cache else [])
    index_files = [p for d in places for p in d.rglob("*.nbi")]
    assert index_files, "numba wrote no cache index"
    stamp = {p: p.stat().st_mtime_ns for d in places for p in d.rglob("*.nbc")}
    _run(tmp_path, "cpu", 2, steps=1, cache=cache, numba_cache=numba_cache)
    after = {p: p.stat().st_mtime_ns for d in places for p in d.rglob("*.nbc")}
    assert after == stamp, "the second process recompiled (cache files were rewritten)"


def test_config_threads_apply_to_one_launch_only():
    import numba
    before = numba.get_num_threads()
    seen = []
    R = rs.Relation("R", 4)
    R.new_field("x", rs.f64)

    @rs.kernel
    def k(r):
        r.x += 1.0

    R.foreach(k, rs.Config(target="cpu", threads=1))
    seen.append(numba.get_num_threads())
    assert seen == [before] and R.x.numpy().tolist() == [1.0] * 4
    try:
        rs.Config(target="cpu", threads=10_000)
        R.foreach(k, rs.Config(target="cpu", threads=10_000))
    except rs.ConfigError as exc:
        assert "NUMBA_NUM_THREADS" in str(exc)
    else:
        raise AssertionError("no error for an impossible thread count")
