"""relsim's `njit` (`relsim/compiled.py`): processes sharing a disk cache take turns compiling a
function (the ranks of an MPI run launch the same kernels at once): one compiles, the others
load what it saved."""
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from relsim.compiled import njit

pytest.importorskip("fcntl")

ROOT = Path(__file__).resolve().parents[1]

WORKER = """
import importlib.util, sys, time
from pathlib import Path
from relsim.compiled import njit
spec = importlib.util.spec_from_file_location("slow_to_compile", sys.argv[1])
mod = sys.modules["slow_to_compile"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
fn = njit(cache=True)(mod.f)
Path(sys.argv[2] + ".ready" + sys.argv[3]).touch()
while not Path(sys.argv[2]).exists():
    time.sleep(0.005)
value = fn(0.5)
print(sum(fn.stats.cache_misses.values()), sum(fn.stats.cache_hits.values()), value)
"""


def _slow_to_compile() -> str:
    """A function Numba takes a few seconds to compile (many branches)."""
    lines = ["def f(x):", "    y = x"]
    for k in range(400):
        lines += [f"    if y > {k % 7}.5:", f"        y = y * 0.5 + {k}.0",
                  "    else:", f"        y = y + 0.25 * {k % 5}.0"]
    return "\n".join(lines + ["    return y", ""])


def test_processes_sharing_a_cache_compile_a_function_once(tmp_path):
    module = tmp_path / "slow_to_compile.py"
    module.write_text(_slow_to_compile())
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, str(worker), str(module), str(go), str(k)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for k in range(2)]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"go.ready{k}").exists() for k in range(2)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            [p.communicate() for p in procs]
        time.sleep(0.01)
    go.touch()  # both compile at the same moment from here
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        results.append(out.split())
    misses, hits, values = zip(*results)
    assert sorted(misses) == ["0", "1"] and sorted(hits) == ["0", "1"], results
    assert values[0] == values[1]


def test_a_no_alias_dispatcher_keeps_its_machine_code_apart_in_the_cache(tmp_path,
                                                                          monkeypatch):
    """One function cached with and without `no_alias` (a part function and tier 0's plain
    dispatcher of it): each loads its own machine code, never the other's."""
    path = tmp_path / "both_ways.py"
    path.write_text("def f(a, b):\n    for i in range(a.shape[0]):\n        b[i] = a[i] * 2.0\n")
    spec = importlib.util.spec_from_file_location("both_ways", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "both_ways", mod)  # (as an imported module: Numba's
    spec.loader.exec_module(mod)                        # cached data names it)
    a, b = np.arange(4.0), np.zeros(4)

    def made(no_alias):
        fn = njit(cache=True, no_alias=no_alias)(mod.f)
        fn(a, b)
        return sum(fn.stats.cache_hits.values()), sum(fn.stats.cache_misses.values())

    assert made(False) == (0, 1)
    assert made(True) == (0, 1)   # compiled: the plain one's machine code is not its own
    assert made(True) == (1, 0)   # its own, from the cache
    assert made(False) == (1, 0)
    assert b.tolist() == [0.0, 2.0, 4.0, 6.0]
