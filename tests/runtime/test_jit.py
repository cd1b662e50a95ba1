"""relsim's njit: a process that only loads compiled kernels from the disk cache (parallel ones,
with key reductions folded and an exact Global sum) skips Numba's compiler set-up and computes
the bits the compiling process did."""
import json
import os
import subprocess
import sys
import textwrap

import relsim as rs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import json, sys
    from numba.core import base
    refreshes = []
    _refresh = base.BaseContext.refresh
    def counting(self):
        refreshes.append(1)
        return _refresh(self)
    base.BaseContext.refresh = counting

    import relsim as rs
    from relsim.runtime import execute
    from tests import heat_graph

    V, E = heat_graph.random_graph(3000, 6000, seed=7)
    total = rs.Global(rs.f64, 0.0)
    conduct, update = heat_graph.kernels(0.1, total)

    cfg = rs.Config(target="cpu", parallel_threshold=1, threads=2, cache_dir=sys.argv[1])
    heat_graph.step(V, E, conduct, update, cfg, times=3)
    fns = [execute.executable(k, R, cfg).bindings[None].fn for k, R in ((conduct, E), (update, V))]
    # (a parts wrapper's loads: its part function linked in; a dispatcher's cache hits)
    hits = sum(f.loaded if hasattr(f, "loaded") else sum(f.stats.cache_hits.values())
               for f in fns)
    print(json.dumps({"T": V.T.numpy().tobytes().hex(), "total": total.value.hex(),
                      "hits": hits,
                      "refreshes": len(refreshes)}))
""")


def _run(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), NUMBA_NUM_THREADS="2",
               PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    script = tmp_path / "script.py"  # (its kernels are tests/heat_graph.py's)
    script.write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "kernels")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_process_that_only_loads_skips_the_compiler_set_up(tmp_path):
    first = _run(tmp_path)  # compiles (and sets the compiler up)
    assert first["hits"] == 0 and first["refreshes"] > 0
    second = _run(tmp_path)  # loads every function: the kernels, folds and exact sums
    assert second["hits"] == 2
    assert second["refreshes"] == 0
    assert (second["T"], second["total"]) == (first["T"], first["total"])


def test_a_callee_made_from_its_description_loads_what_this_process_saved(tmp_path):
    """A captured segment's worker makes its callees (the kernels' compiled loops) from their
    descriptions (`describe_callee`, `callee`): they load the machine code the launches saved
    instead of compiling it again for every segment (`cache` is not a Numba target option, so
    a description of the options alone lost it)."""
    from relsim.runtime import execute
    from relsim.runtime.host.jit import callee, describe_callee
    from tests import heat_graph

    V, E = heat_graph.random_graph(50, 100, seed=3)
    conduct, update = heat_graph.kernels(0.1, rs.Global(rs.f64, 0.0))
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path))
    E.foreach(conduct, cfg)
    fn = execute.executable(conduct, E, cfg).bindings[None].fn
    (sig,) = fn.overloads
    again = callee(*describe_callee(fn)[:3])
    assert again is not fn
    again.compile(sig)
    assert dict(again.stats.cache_hits) == {sig: 1}
    assert not again.stats.cache_misses
