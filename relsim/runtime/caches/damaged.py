"""What the caches do with an entry they cannot use, and with a directory they cannot write.

A damaged entry (truncated by a full disk or a crash, or with bad bytes) is dropped and built
again, with one `RelsimWarning` naming the file; a cache directory that cannot be written to
(read-only, full) makes relsim compile in memory, with one warning per directory: the program
runs, only more slowly (nothing is kept for the next run)."""
from __future__ import annotations

import warnings
from pathlib import Path

from ...errors import RelsimWarning

_unwritable: set = set()  # directories already warned about


def drop(path, why: str) -> None:
    """`path` is a damaged cache entry: warn, and remove it (it is built again)."""
    warnings.warn(f"relsim: the cache entry {path} is damaged ({why}); it is dropped and "
                  f"built again", RelsimWarning, stacklevel=3)
    try:
        Path(path).unlink()
    except OSError:  # (gone already, or the directory is read-only: it is rewritten or skipped)
        pass


def unwritable(directory, exc: OSError) -> None:
    """Writing to the cache `directory` failed: warn once for it."""
    key = str(directory)
    if key not in _unwritable:
        _unwritable.add(key)
        warnings.warn(f"relsim: cannot write to the cache directory {directory} "
                      f"({type(exc).__name__}: {exc}); compiling in memory (nothing is kept for "
                      f"the next run)", RelsimWarning, stacklevel=3)
