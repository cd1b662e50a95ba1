"""Configuration as an object: which target runs kernels, with how many threads, where the
compile cache lives, whether kernels run with debug checks. `rs.configure(...)` sets the process
default; `foreach(k, config=...)` overrides it for one launch. The environment variables
RELSIM_TARGET and RELSIM_DEBUG (``1``/``0``) pick the default target and debug mode; they are
read, and checked, when the default is first needed (a bad value is a ConfigError then, never a
failed ``import relsim``). Targets come from the registry (`relsim.target_registry`).

Building a Config imports nothing: the target's name is checked against the registered targets
and the names of installed plugins (their entry points, not loaded until the target is first
used); options a backend owns (the cpu's `threads`, `parallel_threshold`, `scatter`,
`segments`, `startup`) are validated by that backend (`Backend.check_options`), and only its own
launches are keyed by them (`Backend.key`)."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from . import target_registry as _targets
from .errors import ConfigError


@dataclass(frozen=True)
class Config:
    target: str = "cpu"  # a registered target: rs.targets()
    # owned by the cpu targets (`backends/cpu/backend.py`): threads (None: all Numba threads);
    # smaller iteration spaces than parallel_threshold run serially (same results); rows that
    # loop over groupings count as their expected iterations (`backends/cpu/row_work.py`)
    threads: int | None = None
    parallel_threshold: int = 4096
    cache_dir: str | None = None  # None: $RELSIM_CACHE_DIR or ~/.cache/relsim
    # owned by the cpu targets: how they apply reductions into fields through keys (same bits):
    # "auto" chooses; "direct" (serial, straight into the field), "split" (parallel blocks,
    # direct to the targets a block owns), "slots" (every contribution parked, then folded)
    scatter: str = "auto"
    # owned by the cpu targets: a captured step's consecutive launches (`rs.capture`) run as one
    # compiled call, compiled by a background process while the first replays run them one by
    # one ("background"), at the first replay ("now"), or never ("off": launch by launch);
    # None: $RELSIM_SEGMENTS, else "background" (`backends/cpu/segment.py`)
    segments: str | None = None
    # owned by the cpu targets: a launch whose parallel variant is not compiled yet runs the
    # serial one (same bits) while a background process compiles it ("tiered"), or waits for
    # it ("wait"); None: $RELSIM_STARTUP, else "tiered" (`backends/cpu/tiers.py`)
    startup: str | None = None
    # run-time checks in kernels (NaN/inf produced, integer division by zero, keys and indices
    # out of range), each a KernelCheckError naming the row and the source line; a separately
    # compiled variant: with False the generated code has none of them
    debug: bool = False
    # on several MPI ranks (a script started by mpiexec -n N): None or True partitions the
    # relations over the ranks (each computes its share, the same bits as one process); False
    # runs the whole problem on every rank
    distributed: bool | None = None
    # let the compiler fuse a product and a sum into one fused multiply-add (one rounding
    # instead of two): faster, and no longer the bits of interp and of other targets (a GPU
    # fuses them unless told not to; relsim tells it not to by default). Division, square
    # root, subnormals and the order of every operation stay as they are.
    fast_math: bool = False

    def __post_init__(self):
        _targets.check_name(self.target)  # a ConfigError naming the targets if unknown
        if self.distributed not in (None, True, False):
            raise ConfigError(f"distributed must be None, True or False, got "
                              f"{self.distributed!r}")
        if not isinstance(self.debug, bool):
            raise ConfigError(f"debug must be True or False, got {self.debug!r}")
        if not isinstance(self.fast_math, bool):
            raise ConfigError(f"fast_math must be True or False, got {self.fast_math!r}")
        _targets.check_options(self)  # each backend validates the options it owns

    @property
    def backend(self):
        """The backend object of this configuration's target."""
        return _targets.get(self.target)

    def thread_count(self) -> int:
        """How many threads a launch under this configuration uses (for reports)."""
        return self.backend.threads(self)

    def cache_path(self) -> Path:
        """The cache folder this configuration uses: `cache_dir`, else $RELSIM_CACHE_DIR, else
        ``~/.cache/relsim``."""
        return Path(self.cache_dir) if self.cache_dir else default_cache_path()


def default_cache_path() -> Path:
    """relsim's cache folder when a Config names none: $RELSIM_CACHE_DIR, else
    ~/.cache/relsim."""
    return Path(os.environ.get("RELSIM_CACHE_DIR") or Path.home() / ".cache" / "relsim")


_current: Config | None = None  # built from RELSIM_TARGET and RELSIM_DEBUG on first use

_DEBUG_VALUES = {"1": True, "true": True, "yes": True, "on": True,
                 "0": False, "false": False, "no": False, "off": False, "": False}


def env_debug() -> bool:
    """RELSIM_DEBUG as a bool (unset: False)."""
    text = os.environ.get("RELSIM_DEBUG", "")
    value = _DEBUG_VALUES.get(text.strip().lower())
    if value is None:
        raise ConfigError(f"RELSIM_DEBUG must be 1 or 0 (or true/false), got {text!r}")
    return value


def check_choice(config, option: str, modes, variable: str, default: str) -> None:
    """A ConfigError when `config`'s `option` is neither None nor one of `modes` (None, which
    stands for $`variable`, else `default`, is checked where it is read: `choice`)."""
    value = getattr(config, option)
    if value is not None and value not in modes:
        raise ConfigError(f"{option} must be one of {', '.join(modes)} (or None: ${variable}, "
                          f"else {default}), got {value!r}")


def choice(config, option: str, modes, variable: str, default: str) -> str:
    """`config`'s `option`, else environment variable `variable` (case and spaces ignored),
    else `default`; a ConfigError naming the variable for a value not in `modes`."""
    value = getattr(config, option)
    if value is not None:
        return value
    text = os.environ.get(variable, "").strip().lower() or default
    if text not in modes:
        raise ConfigError(f"{variable} must be one of {', '.join(modes)}, got "
                          f"{os.environ[variable]!r}")
    return text


def _from_environment(given) -> Config:
    """The default configuration: RELSIM_TARGET and RELSIM_DEBUG, except what `given` sets (so a
    bad variable never stands in the way of the value that replaces it)."""
    target = given["target"] if "target" in given else os.environ.get("RELSIM_TARGET", "cpu")
    debug = given["debug"] if "debug" in given else env_debug()
    return Config(target=target, debug=debug)


def current() -> Config:
    """The process-wide default configuration."""
    global _current
    if _current is None:
        _current = _from_environment({})
    return _current


def configure(**changes) -> Config:
    """Change the process-wide defaults, e.g. ``rs.configure(target="interp")``; returns them.
    The target's backend applies its process-wide settings (the cpu backend sets Numba's
    thread count); nothing changes if the new configuration is refused."""
    global _current
    unknown = set(changes) - set(Config.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"unknown configuration option(s): {', '.join(sorted(unknown))}")
    # choosing a target first never needs RELSIM_TARGET's (possibly bad) default
    base = _current if _current is not None else _from_environment(changes)
    new = replace(base, **changes)
    new.backend.configure(new)
    _current = new
    return new
