"""The one door from relations to the runtime: `relsim/__init__` installs the runtime's hooks.

Relations never import the runtime (data flows one way): a launch (`R.foreach`) and a change of
storage (a field's array replaced, keys loaded, a resize) are passed on to what is installed
here, and launches and host writes to the recorders (a tape). This module holds the hooks only,
no state of how kernels run.
"""
from __future__ import annotations

from ..errors import DataError

_launcher = None
_storage_listener = None
# recorders told of each launch and host write before it happens (`rs.Tape` while recording)
recorders: list = []


def install(launcher, storage_listener) -> None:
    """`launcher(kernel, relation, subset, config)` runs launches; `storage_listener()` hears
    of every storage change."""
    global _launcher, _storage_listener
    _launcher = launcher
    _storage_listener = storage_listener


def run(kernel, relation, subset, config) -> None:
    if _launcher is None:  # pragma: no cover - relsim/__init__ always installs one
        raise RuntimeError("no relsim runtime installed; import relsim")
    for r in recorders:
        r.before_launch(kernel, relation, subset, config)
    _launcher(kernel, relation, subset, config)


def refuse_while_recording(what: str) -> None:
    """Host changes a tape cannot replay (keys, rows, rank-local loads) are refused while one
    records: its gradients would silently use the wrong keys or rows."""
    if recorders:
        raise DataError(f"{what} while an rs.Tape records: the tape cannot replay it; do it "
                        f"before the tape starts or after it ends")


def host_write(target, value) -> None:
    """A field or Global is about to be assigned `value` from the host (`Field.load`,
    `Global.value`)."""
    for r in recorders:
        r.before_host_write(target, value)


def storage_changed() -> None:
    if _storage_listener is not None:
        _storage_listener()
