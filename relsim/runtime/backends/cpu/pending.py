"""Reductions a compiled launch left pending: the runtime's side of where current values live.

A launch that reduces into a field through keys, or into a Global, parks the contributions in
slots and may leave their fold pending (the cpu backend does, see `backends/cpu/backend.py`):

* a field's folds stay pending until the next launch that touches the field (which absorbs them
  when it reads the field only at its own key over the whole relation, and folds them first
  otherwise), or until the host or relsim internals read the field's array;
* a Global's fold stays pending until its value is next needed (a host read, a launch reading
  or reducing it); assigning the value drops it, since the assignment overwrites its result.

Pending folds are attached to the field or Global as its `residency` (the data model's hook,
`backends/base.Residency`): the data model calls it before the host array is read, and after
the host wrote it, and knows nothing else of this module.
"""
from __future__ import annotations

# fields holding pending folds: a launch checks this first, and settles the fields it touches
# only when it is not empty
fields: set = set()


class FieldFolds:
    """The residency of a field with pending key-reduction folds: objects with ``run()``, in
    launch order."""

    __slots__ = ("folds",)

    def __init__(self):
        self.folds = []

    def before_host_read(self, field) -> None:
        flush(field)

    def after_host_write(self, field) -> None:  # a host write reads (and so folds) first
        flush(field)


class GlobalFold:
    """The residency of a Global whose last reduction's fold (a callable) is pending."""

    __slots__ = ("fold",)

    def __init__(self, fold):
        self.fold = fold

    def before_host_read(self, g) -> None:
        flush_global(g)

    def after_host_write(self, g) -> None:
        g.residency = None  # the value was assigned: the pending fold cannot change it


def defer(field, fold) -> None:
    """Leave `fold` (one launch's reduction slots into `field`) pending."""
    r = field.residency
    if r is None:
        r = field.residency = FieldFolds()
        fields.add(field)
    r.folds.append(fold)


def folds_of(field) -> list:
    """The folds pending on `field`, in launch order (empty if none)."""
    r = field.residency
    return r.folds if isinstance(r, FieldFolds) else []


def take(field) -> list:
    """The pending folds of `field`, which the caller now runs (in order); none are left."""
    r = field.residency
    if not isinstance(r, FieldFolds):
        return []
    field.residency = None
    fields.discard(field)
    return r.folds


def flush(field) -> None:
    """Fold every reduction pending on `field`, in launch order."""
    for fold in take(field):
        fold.run()


def defer_global(g, fold) -> None:
    """Run `fold` (one launch's slots into Global `g`) when the value is next needed; a fold
    still pending runs first (folds keep launch order)."""
    if g.residency is not None:
        flush_global(g)
    g.residency = GlobalFold(fold)


def flush_global(g) -> None:
    """Run `g`'s pending fold, if any."""
    r = g.residency
    if isinstance(r, GlobalFold):
        g.residency = None
        r.fold()


def pending_global(g) -> bool:
    """Whether a fold into `g` is pending."""
    return isinstance(g.residency, GlobalFold)
