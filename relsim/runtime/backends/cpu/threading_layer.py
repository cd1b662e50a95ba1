"""Which Numba threading layer the cpu backend's parallel regions use, chosen so that they
degrade gracefully when other processes hold the cores.

Measured on a 2-core machine (`bench/threading_layers.py`): with two busy processes beside it,
an edge-scatter launch took 15-280x its serial time under Numba's default layer here (GNU
OpenMP, whose threads spin and then wait for a descheduled peer), while TBB stayed within
0.8-1.2x (the calling thread runs the chunks a busy worker cannot), and idle TBB matches OpenMP.
OpenMP with ``OMP_WAIT_POLICY=PASSIVE`` also degrades gracefully but wakes its threads slowly
(~200 us per parallel region here, idle).

So, unless the user chose (``NUMBA_THREADING_LAYER``, or a layer already running):
TBB when the ``tbb`` package is installed (a dependency on Linux x86-64: its library is
loaded from the environment's ``lib`` folder, where pip puts it but the loader does not look),
else OpenMP with ``OMP_WAIT_POLICY=PASSIVE`` unless the user set a policy. This must happen
before Numba starts its threading layer (the first parallel launch, or the first
``numba.set_num_threads`` / ``get_num_threads``): `prepare` runs when the backend is created,
at ``import relsim``. `report()` says what was chosen.
"""
from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

_choice = "not prepared"


def prepare() -> str:
    """Choose the layer (once); returns a line describing the choice."""
    global _choice
    if _choice != "not prepared":
        return _choice
    from numba import config
    from numba.np.ufunc import parallel
    if parallel._is_initialized:
        _choice = "Numba's threading layer was already running (relsim chose nothing)"
    elif os.environ.get("NUMBA_THREADING_LAYER") or config.THREADING_LAYER != "default":
        _choice = f"NUMBA_THREADING_LAYER={config.THREADING_LAYER} (the user's choice)"
    elif _load_tbb():  # Numba's default order tries tbb first
        _choice = "tbb (relsim's default: degrades gracefully on a busy machine)"
    else:
        policy = os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        _choice = f"Numba's default layer, OMP_WAIT_POLICY={policy} (no tbb installed)"
    return _choice


def report() -> str:
    return _choice


def _load_tbb() -> bool:
    """Load libtbb globally, so that Numba's tbb layer finds it; False if it is not there."""
    names = {"linux": "libtbb.so.12", "darwin": "libtbb.12.dylib"}
    lib = names.get(sys.platform)
    if lib is None:
        return False
    for folder in (Path(sys.prefix) / "lib", Path(sys.base_prefix) / "lib"):
        path = folder / lib
        if path.exists():
            try:
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                return True
            except OSError:
                return False
    try:  # installed where the loader looks (a system package)
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        return True
    except OSError:
        return False
