"""relsim picks a Numba threading layer that degrades gracefully on a busy machine (tbb when
installed, else OpenMP with a passive wait policy), unless the user chose one."""
import os
import subprocess
import sys

PROBE = """
import os, numpy as np, numba, relsim as rs
from relsim.runtime.backends.cpu import threading_layer
R = rs.Relation("R", 5000)
R.new_field("x", rs.f64, init=1.0)
@rs.kernel
def twice(r):
    r.x = 2.0 * r.x
R.foreach(twice, rs.Config(parallel_threshold=1))
print(numba.threading_layer(), os.environ.get("OMP_WAIT_POLICY"), "|", threading_layer.report())
"""


def _probe(tmp_path, **env):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    e = {k: v for k, v in os.environ.items()
         if k not in ("NUMBA_THREADING_LAYER", "OMP_WAIT_POLICY")}
    e.update(env)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def _has_tbb():
    try:
        from importlib.metadata import version
        version("tbb")
        return True
    except Exception:
        return False


def test_default_layer_degrades_gracefully(tmp_path):
    line = _probe(tmp_path)
    if _has_tbb() and sys.platform == "linux":
        assert line.startswith("tbb ") and "relsim's default" in line
    else:
        assert " PASSIVE |" in line


def test_the_users_choice_is_kept(tmp_path):
    line = _probe(tmp_path, NUMBA_THREADING_LAYER="workqueue")
    assert line.startswith("workqueue ") and "the user's choice" in line
