"""Geometric domain libraries: they build relations (and key fields, subsets, groupings) using
only the public relsim API. Domains are registered by name; third-party ones are discovered
through the entry-point group ``relsim.domains`` (value: an importable module)."""
from __future__ import annotations

import importlib
import warnings
from importlib import metadata

from relsim import DomainError

from .sides import unique_sides

# bundled domains: name -> module (imported on first use)
_BUILTIN = {"op2mesh": "relsim.domains.op2mesh", "trimesh": "relsim.domains.trimesh",
            "tetmesh": "relsim.domains.tetmesh", "hexmesh": "relsim.domains.hexmesh",
            "grid": "relsim.domains.grid", "particles": "relsim.domains.particles"}
_loaded: dict = {}
_failed: dict = {}  # name -> why its import failed


def _registry() -> dict:
    names = dict(_BUILTIN)
    for ep in metadata.entry_points(group="relsim.domains"):
        names.setdefault(ep.name, ep.value.split(":")[0])
    return names


def available() -> list:
    """Names of the registered domains (bundled and installed plugins), whether or not they
    import: `failures()` says which do not."""
    return sorted(_registry())


def failures() -> dict:
    """{name: why} for the registered domains that fail to import (each is tried once per
    process; `relsim list` marks them)."""
    out = {}
    for name in available():
        if name not in _loaded and name not in _failed:
            try:
                _loaded[name] = importlib.import_module(_registry()[name])
            except Exception as exc:
                _failed[name] = f"{type(exc).__name__}: {exc}"
        if name in _failed:
            out[name] = _failed[name]
    return out


def get(name: str):
    """The domain module registered as `name`."""
    if name in _loaded:
        return _loaded[name]
    reg = _registry()
    if name not in reg:
        raise DomainError(f"no domain {name!r}; registered: {', '.join(sorted(reg)) or 'none'}")
    try:
        mod = importlib.import_module(reg[name])
    except Exception as exc:  # a broken plugin must not break relsim: warn, then refuse
        _failed[name] = f"{type(exc).__name__}: {exc}"
        warnings.warn(f"relsim domain plugin {name!r} ({reg[name]}) failed to import: {exc}",
                      RuntimeWarning, stacklevel=2)
        raise DomainError(f"domain {name!r} is installed but broken: {exc}") from exc
    _loaded[name] = mod
    return mod


__all__ = ["available", "failures", "get", "unique_sides"]
