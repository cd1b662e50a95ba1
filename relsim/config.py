"""Configuration as an object: which backend runs kernels, with how many threads, where the
compile cache lives. `rs.configure(...)` sets the process default; `foreach(k, config=...)`
overrides it for one launch. The environment variable RELSIM_TARGET picks the default target."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import ConfigError

TARGETS = ("interp", "cpu", "cpu-serial")


@dataclass(frozen=True)
class Config:
    target: str = "cpu"
    threads: int | None = None  # None: all Numba threads
    parallel_threshold: int = 2048  # smaller iteration spaces run serially (same results)
    cache_dir: str | None = None  # None: $RELSIM_CACHE_DIR or ~/.cache/relsim

    def __post_init__(self):
        if self.target not in TARGETS:
            raise ConfigError(f"unknown target {self.target!r}; choose one of "
                              f"{', '.join(TARGETS)}")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ConfigError(f"threads must be a positive int, got {self.threads!r}")

    @property
    def backend_name(self) -> str:
        return "cpu" if self.target.startswith("cpu") else self.target

    def cache_path(self) -> Path:
        d = self.cache_dir or os.environ.get("RELSIM_CACHE_DIR") or \
            Path.home() / ".cache" / "relsim"
        return Path(d)


_current = Config(target=os.environ.get("RELSIM_TARGET", "cpu"))


def current() -> Config:
    return _current


def configure(**changes) -> Config:
    """Change the process-wide defaults, e.g. ``rs.configure(target="interp")``; returns them."""
    global _current
    unknown = set(changes) - set(Config.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"unknown configuration option(s): {', '.join(sorted(unknown))}")
    _current = replace(_current, **changes)
    if _current.threads is not None and _current.backend_name == "cpu":
        import numba
        if _current.threads > numba.config.NUMBA_NUM_THREADS:
            raise ConfigError(f"threads={_current.threads} exceeds the Numba thread pool "
                              f"({numba.config.NUMBA_NUM_THREADS}); set NUMBA_NUM_THREADS")
        numba.set_num_threads(_current.threads)
    return _current
