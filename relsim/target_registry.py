"""The registry of targets: the names `rs.Config(target=...)`, `rs.configure(target=...)` and
the environment variable ``RELSIM_TARGET`` accept, each bound to a backend object (see
`relsim/runtime/backends/base.py` for what a backend offers).

relsim's runtime registers its own targets (``interp``, ``cpu``, ``cpu-serial``) when it is
imported; `register_backend` adds one from anywhere, and installed packages add theirs through the
entry-point group ``relsim.backends`` (the same mechanism as domains): the entry point's name is
the target's name, its value (``module:attribute``) a backend object, or a class or function
returning one. Plugins are looked up only when a name is not already registered, or when the
list of targets is asked for; a plugin that fails to load gives a warning and is left out.

This module knows no backend: the runtime depends on it, never the other way round.
"""
from __future__ import annotations

import warnings
from importlib import metadata

from .errors import ConfigError

ENTRY_POINT_GROUP = "relsim.backends"

_registry: dict = {}  # target name -> backend object
_broken: dict = {}  # plugin target name -> why it failed to load
_unavailable: dict = {}  # built-in target name -> why it cannot run here (a missing package)
_plugins_loaded = False


def register_backend(name: str, backend, *, replace: bool = False) -> None:
    """Make `backend` selectable as target `name`. A backend has ``compile(analysed, config)``
    (see `relsim.runtime.backends.base.Backend`). Registering a name that is taken is an error
    unless ``replace=True``."""
    if not isinstance(name, str) or not name or name != name.strip():
        raise ConfigError(f"a target name must be a non-empty string, got {name!r}")
    if not callable(getattr(backend, "compile", None)):
        raise ConfigError(f"backend for target {name!r} has no compile(analysed, config) "
                          f"method: {backend!r}")
    if name in _registry and not replace and _registry[name] is not backend:
        raise ConfigError(f"target {name!r} is already registered "
                          f"({_registry[name]!r}); pass replace=True to replace it")
    _registry[name] = backend
    _broken.pop(name, None)


def mark_unavailable(name: str, reason: str) -> None:
    """Target `name` exists but cannot run here (e.g. its package is not installed): it is not
    listed, and selecting it is a ConfigError giving `reason`."""
    _unavailable[name] = reason


def unregister_backend(name: str) -> None:
    """Remove target `name` (a plugin's entry point is not looked up again)."""
    if _registry.pop(name, None) is None:
        raise ConfigError(f"no target {name!r} is registered")


def targets() -> list:
    """The names of the selectable targets, sorted (plugins included)."""
    _load_plugins()
    return sorted(_registry)


def get(name: str):
    """The backend registered as target `name`; a ConfigError lists the targets if none is."""
    backend = _registry.get(name)
    if backend is None:
        _load_plugins()
        backend = _registry.get(name)
    if backend is None:
        if name in _unavailable:
            raise ConfigError(f"target {name!r} is not available: {_unavailable[name]}")
        if name in _broken:
            raise ConfigError(f"target {name!r} is installed but failed to load: "
                              f"{_broken[name]}")
        raise ConfigError(f"unknown target {name!r}; choose one of {', '.join(targets())}")
    return backend


def check_name(name: str) -> None:
    """A ConfigError unless `name` is a registered target or an installed plugin's (by its
    entry point's name: nothing is imported, the plugin loads when the target is first used)."""
    if name in _registry:
        return
    if name in _unavailable:
        raise ConfigError(f"target {name!r} is not available: {_unavailable[name]}")
    if name in _broken:
        raise ConfigError(f"target {name!r} is installed but failed to load: {_broken[name]}")
    plugins = set() if _plugins_loaded else \
        {ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    if name not in plugins:
        raise ConfigError(f"unknown target {name!r}; choose one of "
                          f"{', '.join(sorted(set(_registry) | plugins))}")


def registered() -> tuple:
    """The backend objects registered now (plugins not loaded yet are not among them)."""
    return tuple(_registry.values())


def check_options(config) -> None:
    """Every registered backend validates the options of `config` it owns (a ConfigError for a
    bad value); plugins not loaded yet validate theirs when first used."""
    for backend in tuple(_registry.values()):
        check = getattr(backend, "check_options", None)  # (a plugin need not subclass Backend)
        if check is not None:
            check(config)


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _registry:
            continue
        try:
            obj = ep.load()
            backend = obj if callable(getattr(obj, "compile", None)) and \
                not isinstance(obj, type) else obj()
            register_backend(ep.name, backend)
        except Exception as exc:  # a broken plugin must not break relsim: warn, leave it out
            _broken[ep.name] = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"relsim backend plugin {ep.name!r} ({ep.value}) failed to load: "
                          f"{exc}", RuntimeWarning, stacklevel=3)


__all__ = ["register_backend", "unregister_backend", "mark_unavailable", "targets", "get",
           "check_name", "check_options", "registered", "ENTRY_POINT_GROUP"]
