"""Importing `numba.cuda` (the numba-cuda package, ``pip install "relsim[cuda]"``) without ever
breaking ``import relsim``: `import_error()` says why the cuda target is not available (None
when it is), `cuda()` is the module.

numba-cuda provides ``numba.cuda`` through a path hook installed by a ``.pth`` file; where its
directory is on ``PYTHONPATH`` rather than a site directory that file is not processed, so the
hook module (``_numba_cuda_redirector``) is imported first when it is there.
"""
from __future__ import annotations

import importlib

_state: dict = {}


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


def simulated() -> bool:
    """Whether kernels run in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config
    return bool(config.ENABLE_CUDASIM)
