"""Executing kernels: find (or build) the compiled launch for (kernel, relation, config), run it.

This is the launcher `relsim/__init__` installs into the relations package."""
from __future__ import annotations

from .. import config as _config
from ..errors import ConfigError, entry_point
from ..relations.field import Field
from ..target_registry import registered
from . import parallel
from .analysis import phase
from .analysis.captures import Watch
from .backends.base import Backend, Launch
from .colouring import Colouring
from .gc_pause import collector_paused
from .pipeline import analyse


def executable(kernel, relation, cfg):
    """The compiled form of `kernel` over `relation` for configuration `cfg` (cached per what
    of `cfg` the target's backend depends on: `Backend.key`)."""
    backend = cfg.backend
    # (a backend registered without subclassing base.Backend: keyed by the whole Config)
    key = (id(relation), relation.schema_version,
           backend.key(cfg) if isinstance(backend, Backend) else cfg)
    exe = kernel._plans.get(key)
    if exe is None:
        if not hasattr(kernel, "_plans"):
            raise TypeError(f"foreach needs an @rs.kernel, got {kernel!r}")
        with collector_paused():
            analysed = analyse(kernel, relation, cfg.cache_path())
            launch = backend.compile(analysed, cfg)
            if not isinstance(launch, Launch):
                raise ConfigError(f"target {cfg.target!r}: compile() returned a "
                                  f"{type(launch).__name__}, not a Launch; subclass "
                                  f"relsim.runtime.backends.base.Launch (it gives the optional "
                                  f"hooks their defaults)")
            exe = parallel.wrap(launch, cfg)
        kernel._plans[key] = exe
        # the captured values compiled into exe, checked before each of its launches
        kernel._watches[id(exe)] = Watch.of(kernel, analysed.captures)
        # fields it may read through keys and write only over a subset those reads never
        # reach: proven per launch space (`colouring`)
        conflicts = phase.coloured(analysed.summary)
        kernel._colours[id(exe)] = Colouring(analysed, conflicts) if conflicts else None
        # the value fields its launches change (told after each: `Field._values_changed`)
        kernel._writes[id(exe)] = tuple({id(a.target): a.target for a in analysed.summary.accesses
                                         if a.mode != "read" and isinstance(a.target, Field)
                                         and not a.target.is_key}.values())
    return exe


def run(kernel, relation, subset, config) -> None:
    cfg = config if config is not None else (_config._current or _config.current())
    try:
        last = kernel._last
    except AttributeError:
        raise TypeError(f"foreach needs an @rs.kernel, got {kernel!r}") from None
    # fast path: the same relation (unchanged schema) and the same Config object as last time
    if last[0] is relation and last[1] is cfg and last[2] == relation.schema_version:
        exe, watch, writes, colours = last[3], last[4], last[5], last[6]
    else:
        exe = executable(kernel, relation, cfg)
        watch, writes = kernel._watches[id(exe)], kernel._writes[id(exe)]
        colours = kernel._colours[id(exe)]
        kernel._last = (relation, cfg, relation.schema_version, exe, watch, writes, colours)
    if watch is not None:  # captured Python values changed since compiled? RelsimWarning
        watch.check()
    if colours is not None:  # reads through keys of fields it writes: a colour?
        colours.check(relation, subset)
    exe.launch(relation, subset)
    for f in writes:
        f._values_changed()


@entry_point
def synchronize() -> None:
    """`rs.synchronize()`: wait for every queued launch of every target (the cuda target queues
    its launches) and raise the first failed one's error, as the next host read would."""
    for backend in registered():
        sync = getattr(backend, "synchronize", None)  # (a plugin need not subclass Backend)
        if sync is not None:
            sync()
