"""The one door from relations to the runtime: `relsim/__init__` installs the runtime's hooks.

Relations never import the runtime (data flows one way): a launch (`R.foreach`) and a change of
storage (a field's array replaced, keys loaded, a resize) are passed on to what is installed
here, and launches and host writes to the recorders (a tape, a capture). This module holds the
hooks, the recorders and whether operations take effect now (`tracing`: not in the side of an
`rs.cond` a capture traces), no state of how kernels run.
"""
from __future__ import annotations

import contextlib

from ..errors import DataError

_launcher = None
_storage_listener = None
# recorders told of each launch and host write before it happens (`rs.Tape` while recording,
# `rs.capture` while capturing)
recorders: list = []


class Recorder:
    """What a recorder hears (each a no-op here): a launch, a host write or read of a Global's
    or field's values, two fields exchanging their arrays, a field copied into another."""

    label = "a recorder"  # how error messages name it ("while an rs.Tape records")

    def before_launch(self, kernel, relation, subset, config) -> None:
        pass

    def kernel_to_run(self, kernel, relation, subset, config):
        """The kernel to launch in place of `kernel` (itself, but for `rs.Tangents`, which runs
        each launch's tangent kernel instead)."""
        return kernel

    def after_launch(self, kernel, relation, subset, config) -> None:
        """The launch of `kernel` (as `kernel_to_run` gave it) has run."""

    def before_host_write(self, target, value) -> None:
        pass

    def before_host_read(self, target) -> None:
        pass

    def before_assign(self, target, expr, value) -> None:
        """`rs.assign(target, expr)` is about to set `value` (a host write, to a tape)."""
        self.before_host_write(target, value)

    def before_swap(self, field, other) -> None:
        pass

    def before_loop(self, loop) -> None:
        """`rs.while_loop` starts (`global_loop.Loop`); then `loop_iteration` before each
        iteration's body (`it` from 0), `after_loop` when it ends."""

    def loop_iteration(self, loop, it: int) -> None:
        pass

    def after_loop(self, loop) -> None:
        pass

    # whether `rs.cond` also traces the side its condition does not pick (`tracing`)
    traces_branches = False

    def before_branch(self, branch) -> None:
        """`rs.cond` starts (`global_branch.Branch`); then `branch_side` before the side that
        runs (`taken`: the condition held) and, when a recorder traces branches, before the
        other side, traced; `after_branch` when it ends."""

    def branch_side(self, branch, taken: bool) -> None:
        pass

    def after_branch(self, branch) -> None:
        pass

    def before_copy(self, field, source) -> None:
        pass


_tracing = 0  # how many traced sides of `rs.cond` are running (`tracing`)


def effects() -> bool:
    """Whether operations take effect now: not while a capture traces the side of an `rs.cond`
    its condition did not pick (launches, assignments, swaps and copies are recorded, not
    performed)."""
    return _tracing == 0


@contextlib.contextmanager
def tracing():
    """Operations inside record without taking effect (`effects`)."""
    global _tracing
    _tracing += 1
    try:
        yield
    finally:
        _tracing -= 1


def install(launcher, storage_listener) -> None:
    """`launcher(kernel, relation, subset, config)` runs launches; `storage_listener()` hears
    of every storage change."""
    global _launcher, _storage_listener
    _launcher = launcher
    _storage_listener = storage_listener


def run(kernel, relation, subset, config) -> None:
    if _launcher is None:  # pragma: no cover - relsim/__init__ always installs one
        raise RuntimeError("no relsim runtime installed; import relsim")
    for r in recorders:  # (first: a tape recording under rs.Tangents records the tangent)
        kernel = r.kernel_to_run(kernel, relation, subset, config)
    for r in recorders:
        r.before_launch(kernel, relation, subset, config)
    if _tracing:  # (recorded only)
        return
    _launcher(kernel, relation, subset, config)
    for r in recorders:
        r.after_launch(kernel, relation, subset, config)


def refuse_while_recording(what: str) -> None:
    """Host changes a tape cannot replay (keys, rows, rank-local loads) are refused while one
    records: its gradients would silently use the wrong keys or rows."""
    for r in recorders:
        raise DataError(f"{what} while {r.label}: it cannot replay it; do it before it starts "
                        f"or after it ends")


def host_write(target, value) -> None:
    """A field or Global is about to be assigned `value` from the host (`Field.load`,
    `Global.value`)."""
    for r in recorders:
        r.before_host_write(target, value)


def storage_changed() -> None:
    if _storage_listener is not None:
        _storage_listener()


def host_read(target) -> None:
    """The host is about to read a Global's value (`Global.value`) while a recorder listens."""
    for r in recorders:
        r.before_host_read(target)


def swapped(field, other) -> None:
    """Two fields are about to exchange their arrays (`Field.swap`)."""
    for r in recorders:
        r.before_swap(field, other)


def copied(field, source) -> None:
    """`source`'s values are about to be copied into `field` (`Field.copy_from`)."""
    for r in recorders:
        r.before_copy(field, source)
