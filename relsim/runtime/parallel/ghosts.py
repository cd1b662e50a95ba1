"""Which rows of a field's host array are current on this rank.

A field written by a distributed launch has current values only at the rows this rank owns (its
halo rows ran too, but their reductions into rows of other ranks are partial): it gets a
`StaleGhosts` residency. Before a launch reads the field at ghost rows, those rows are received
from their owners, once per plan until the field is written again (`refresh`). When the host
reads the field (``numpy()``, ``data``), every rank's owned rows are gathered to every rank
first: host reads are collective, every rank must make them (docs/guide/mpi.md).

The residency moves with the array when fields are swapped (``follows_storage``): what is
current belongs to the storage, not to the name."""
from __future__ import annotations

from . import exchange


class StaleGhosts:
    follows_storage = True

    __slots__ = ("world", "fresh", "version")

    def __init__(self, world):
        self.world = world
        self.fresh = set()  # RelationGhosts ids whose rows were received since the last write
        self.version = 0  # moved by every change of `fresh` (`captured_mpi.GhostState` reads it)

    def before_host_read(self, field) -> None:
        field.residency = None
        # (the partition the rows went stale under: rows never move while they are stale, see
        # `elastic.RowChanges.apply`)
        exchange.gather_all(self.world, field._stored(), field.relation.partition)

    def after_host_write(self, field) -> None:
        field.residency = None  # the host wrote every row (the same values on every rank)


def refresh(world, field, ghosts) -> int:
    """Receive `field`'s rows of `ghosts` (a plan's RelationGhosts) if they may be stale;
    returns the bytes received."""
    r = field.residency
    if not isinstance(r, StaleGhosts) or ghosts.id in r.fresh:
        return 0
    r.fresh.add(ghosts.id)
    r.version += 1
    return exchange.exchange(world, field._stored(), ghosts.recv, ghosts.send, ghosts.routes)


def detach(fields) -> dict:
    """Take this layer's residencies off `fields` (the wrapped launch must not see them)."""
    saved = {}
    for f in fields:
        if isinstance(f.residency, StaleGhosts):
            saved[f] = f.residency
            f.residency = None
    return saved


def after_launch(world, saved: dict, written) -> None:
    """Put the residencies back; written fields are stale at every row this rank does not own
    (fields whose array the host holds are gathered at once: it may read them any time)."""
    for f, r in saved.items():
        if f not in written:
            f.residency = r
    for f in written:
        f.data  # noqa: B018 - folds the wrapped backend left pending land in the host array
        r = saved.get(f)
        if r is None:
            r = StaleGhosts(world)
        else:  # (its residency kept: the rows it had received are stale now)
            r.fresh.clear()
            r.version += 1
        f.residency = r
        if f.exposed:
            f.data  # noqa: B018 - gathered now
