"""Importing `numba.cuda` (the numba-cuda package, ``pip install "relsim[cuda]"``) without ever
breaking ``import relsim``, and only when a cuda kernel is compiled (importing it costs ~0.3 s):
`missing()` says, without importing it, why the cuda target cannot be offered (None when
`numba.cuda` can be found), `import_error()` why importing it failed, `cuda()` is the module.

numba-cuda provides ``numba.cuda`` through a path hook installed by a ``.pth`` file; where its
directory is on ``PYTHONPATH`` rather than a site directory that file is not processed, so the
hook module (``_numba_cuda_redirector``) is imported first when it is there.
"""
from __future__ import annotations

import importlib
import importlib.util

_state: dict = {}


def missing() -> str | None:
    """Why `numba.cuda` cannot be found (None when it can), without importing it."""
    try:
        if importlib.util.find_spec("_numba_cuda_redirector") is not None:
            importlib.import_module("_numba_cuda_redirector")  # small: installs the path hook
        if importlib.util.find_spec("numba.cuda") is None:
            return "ModuleNotFoundError: No module named 'numba.cuda'"
    except Exception as exc:  # noqa: BLE001 (any failure only means: no cuda target)
        return f"{type(exc).__name__}: {exc}"
    return None


def _load():
    if "module" in _state or "error" in _state:
        return
    try:
        importlib.import_module("_numba_cuda_redirector")
    except ImportError:
        pass
    try:
        _state["module"] = importlib.import_module("numba.cuda")
    except Exception as exc:  # noqa: BLE001 (any failure only means: no cuda target)
        _state["error"] = f"{type(exc).__name__}: {exc}"


def import_error() -> str | None:
    """Why `numba.cuda` cannot be imported, or None."""
    _load()
    return _state.get("error")


def cuda():
    """The `numba.cuda` module (import_error() must be None)."""
    _load()
    return _state["module"]


# blocks of a grid-stride launch in the simulator, which starts a Python thread per thread of
# each block, costing far more than a row's work: a few blocks whose threads stride over every
# row (a 2,000-row launch 593 ms at one row a thread, 130 ms at 4 blocks), and the grid-stride
# loops are exercised
SIM_BLOCKS = 4


def simulated() -> bool:
    """Whether kernels run in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config
    return bool(config.ENABLE_CUDASIM)
