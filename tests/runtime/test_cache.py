"""The compile cache's files: a generated module is written once, named by its source's hash,
its bytecode cached beside it; a damaged cache file is rebuilt, never trusted."""
import sys

import pytest

import relsim as rs
from relsim.runtime.caches import modules as cache

SRC = "def f(x):\n    return x + 1\n"


def _fresh(name):
    for k in [k for k in sys.modules if name in k]:
        del sys.modules[k]


def test_module_and_bytecode_are_cached_and_reused(tmp_path):
    mod = cache.module_for(SRC, tmp_path, "t1")
    assert mod.f(1) == 2 and mod.__file__.endswith(".py")
    codes = list(tmp_path.glob("*.code"))
    assert len(codes) == 1 and len(list(tmp_path.glob("*.py"))) == 1
    stamp = codes[0].stat().st_mtime_ns
    _fresh("relsim_gen_t1")
    mod = cache.module_for(SRC, tmp_path, "t1")  # a new process would do this: loads the code
    assert mod.f(2) == 3 and codes[0].stat().st_mtime_ns == stamp


def test_damaged_files_are_rebuilt(tmp_path):
    cache.module_for(SRC, tmp_path, "t2")
    (code,) = tmp_path.glob("*.code")
    code.write_bytes(b"\x00garbage")  # the bytecode alone
    _fresh("relsim_gen_t2")
    with pytest.warns(rs.RelsimWarning, match=f"cache entry .*{code.name} is damaged"):
        mod = cache.module_for(SRC, tmp_path, "t2")
    assert mod.f(1) == 2 and code.read_bytes() != b"\x00garbage"
    (py,) = tmp_path.glob("*.py")
    py.write_text("def f(x):\n    return x - 1\n")  # not the source its name says
    _fresh("relsim_gen_t2")
    with pytest.warns(rs.RelsimWarning, match=f"cache entry .*{py.name} is damaged \\(its text"):
        mod = cache.module_for(SRC, tmp_path, "t2")  # (its bytecode goes with it)
    assert mod.f(1) == 2 and py.read_text() == SRC
    assert not list(tmp_path.glob("*.tmp"))


PROGRAM = """\
import sys
import warnings
import numpy as np
import relsim as rs

V, E = rs.Relation("V", 50), rs.Relation("E", 49)
E.new_key_field("tail", V, values=np.arange(49))
E.new_key_field("head", V, values=np.arange(1, 50))
V.new_field("T", rs.f64).load(np.sin(np.arange(50.0)))
V.new_field("flux", rs.f64)
heat = rs.Global(rs.f64, 0.0)

@rs.kernel
def conduct(e):
    d = e.head.T - e.tail.T
    e.tail.flux += d
    e.head.flux -= d

@rs.kernel
def update(v):
    v.T += 0.1 * v.flux
    v.flux = 0.0
    heat += v.T

cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=sys.argv[1])
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    for _ in range(5):
        E.foreach(conduct, cfg)
        V.foreach(update, cfg)
print(V.T.numpy().tobytes().hex(), heat.value.hex())
for w in seen:
    print("WARNING", w.message)
"""


def _run(tmp_path, cache_dir, numba_dir):
    import os
    import subprocess
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(numba_dir))
    out = subprocess.run([sys.executable, str(script), str(cache_dir)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    return lines[0], [line[8:] for line in lines[1:]]


def test_a_truncated_warm_cache_is_dropped_and_rebuilt(tmp_path):
    """What a full disk or a crash leaves: every file of a warm cache cut short (generated
    modules, their bytecode, analysed and lowered entries, Numba's index and data files). The
    next run computes the same bits, warning once per damaged file, and leaves a warm cache."""
    cache, numba_dir = tmp_path / "cache", tmp_path / "numba"
    want, warned = _run(tmp_path, cache, numba_dir)
    assert not warned
    damaged = [p for p in list(cache.rglob("*")) + list(numba_dir.rglob("*"))
               if p.is_file() and p.suffix in (".py", ".code", ".pickle", ".marshal", ".nbi",
                                                ".nbc")]
    kinds = {p.suffix for p in damaged}
    assert kinds >= {".py", ".code", ".pickle", ".marshal", ".nbi", ".nbc"}, kinds
    for p in damaged:
        p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 3)])
    got, warned = _run(tmp_path, cache, numba_dir)
    assert got == want
    assert warned and all(" is damaged (" in w for w in warned), warned
    named = " ".join(warned)
    for suffix in (".py", ".pickle", ".marshal"):  # (a module's bytecode goes with its text)
        assert suffix + " is damaged" in named, (suffix, warned)
    assert "Numba's disk cache of" in named
    again, warned = _run(tmp_path, cache, numba_dir)  # rebuilt: warm and quiet again
    assert again == want and not warned


def test_a_full_or_read_only_cache_directory_compiles_in_memory(tmp_path, monkeypatch):
    """Writing to the cache fails (ENOSPC): the kernels still run, from memory, with one
    warning naming the directory; their source is still found (rs.explain, tracebacks)."""
    import errno

    import numpy as np

    from relsim.runtime.caches import damaged, modules

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(modules, "write_atomic", full)
    monkeypatch.setattr(damaged, "_unwritable", set())
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path / "full"))
    R = rs.Relation("R", 7)
    R.new_field("x", rs.f64).load(np.arange(7.0))

    @rs.kernel
    def triple_in_memory(r):
        r.x = 3.0 * r.x + 0.25

    with pytest.warns(rs.RelsimWarning, match=r"cannot write to the cache directory .*full.* "
                                              r"No space left on device.*compiling in memory"):
        R.foreach(triple_in_memory, cfg)
    assert R.x.numpy().tolist() == [3.0 * i + 0.25 for i in range(7)]
    text = rs.explain(triple_in_memory, R, cfg, full=True)
    assert "def kernel_parallel" in text  # the generated module's source, from memory
    assert not list((tmp_path / "full").glob("*.py"))


@pytest.mark.parametrize("numba_dir", [False, True])
def test_relsims_own_helpers_are_cached_in_its_cache_folder(tmp_path, numba_dir):
    """relsim's compiled helpers (the runtime's, and the set-up of relations and linalg) are
    cached under $RELSIM_CACHE_DIR/numba, not beside their source (an installed package may be
    read-only); NUMBA_CACHE_DIR, where set, comes first."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["RELSIM_CACHE_DIR"] = str(tmp_path / "relsim")
    if numba_dir:
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    code = ("from relsim.runtime.folds import exact_sum, lane_sums\n"
            "from relsim.relations import colouring\n"
            "from relsim.linalg import aggregation, pattern\n"
            "print(lane_sums.finish._cache.cache_path)\n"
            "print(exact_sum.fold_serial_f64._cache.cache_path)\n"
            "print(colouring._greedy._cache.cache_path)\n"
            "print(aggregation.aggregates._cache.cache_path)\n"
            "print(pattern._fill_rows._cache.cache_path)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    root = tmp_path / "numba" if numba_dir else tmp_path / "relsim" / "numba"
    assert len(out.stdout.split()) == 5, out.stdout
    for line in out.stdout.split():
        assert os.path.commonpath([str(root), line]) == str(root), line


def test_kernels_alike_but_for_their_names_share_one_generated_module(tmp_path):
    """Two kernels with other names, over other relations and fields, the same code: one
    module file (compiled once per machine), and rs.explain names each one's own fields."""
    import numpy as np

    from relsim.runtime.execute import executable

    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path))
    A, B = rs.Relation("A", 5), rs.Relation("B", 9)
    A.new_field("u", rs.f64).load(np.arange(5.0))
    A.new_field("w", rs.f64)
    B.new_field("p", rs.f64).load(np.arange(9.0))
    B.new_field("q", rs.f64)

    @rs.kernel
    def double_u(a):
        a.w = 2.0 * a.u

    @rs.kernel
    def double_p(b):
        b.q = 2.0 * b.p

    A.foreach(double_u, cfg)
    B.foreach(double_p, cfg)
    assert B.q.numpy().tolist() == [2.0 * i for i in range(9)]
    one, two = executable(double_u, A, cfg), executable(double_p, B, cfg)
    # (the module may be another test's already: this process imports each one once)
    assert one.path == two.path and one.path.rsplit("/", 1)[1].startswith("relsim_gen_kernel_")
    assert "_field0: FieldStorage of A.u" in rs.explain(double_u, A, cfg, full=True)
    assert "_field0: FieldStorage of B.p" in rs.explain(double_p, B, cfg, full=True)
