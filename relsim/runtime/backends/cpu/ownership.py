"""Owned and shared targets of a reduction through keys, for a partition of the source rows.

A kernel's key reductions send each contribution (a *slot*: one per source row and reduction
site) to a target row. Partition the source rows into blocks; a target row whose slots all come
from one block is *owned* by that block, one reached from several blocks is *shared*. A block
that runs its rows in order can add its contributions to the targets it owns directly, in
order: the serial meaning, whatever runs the other blocks. Only the shared targets' slots need
to be parked and folded afterwards, in slot order.

The blocks are contiguous ranges of the iteration space on the CPU (one per thread); the same
split over ranks' row sets says which rows a rank owns and which it shares with other ranks.
Nothing here depends on how blocks run: the answer is a property of the key values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...host.jit import njit

UNTOUCHED = -2  # `owners`: a target row no slot reaches
SHARED = -1  # `owners`: a target row reached from more than one block


def block_bounds(n: int, nblocks: int) -> np.ndarray:
    """Bounds of `nblocks` contiguous blocks of n positions, as equal as possible: block b is
    positions bounds[b]:bounds[b + 1]."""
    nblocks = max(1, min(nblocks, n)) if n else 1
    return (np.arange(nblocks + 1, dtype=np.int64) * n) // nblocks


@njit(cache=True)
def owners(tgt, per_row, bounds, ntarget):
    """Per target row: the block all its slots come from, SHARED, or UNTOUCHED. Slot s belongs
    to source position s // per_row; `tgt[s]` is its target row (negative: none)."""
    own = np.full(ntarget, -2, dtype=np.int64)
    for b in range(bounds.shape[0] - 1):
        for s in range(bounds[b] * per_row, bounds[b + 1] * per_row):
            t = tgt[s]
            if t < 0:
                continue
            o = own[t]
            if o == -2:
                own[t] = b
            elif o != b:
                own[t] = -1
    return own


@njit(cache=True)
def _shared_places(tgt, own):
    """For each slot, its position among the shared targets' slots in fold order (target row
    ascending, then slot ascending), or -1 when its target is owned; the CSR offsets of those
    positions per target row (an empty range for owned rows)."""
    ntarget = own.shape[0]
    off = np.zeros(ntarget + 1, dtype=np.int64)
    for s in range(tgt.shape[0]):
        t = tgt[s]
        if t >= 0 and own[t] == -1:
            off[t + 1] += 1
    for t in range(ntarget):
        off[t + 1] += off[t]
    fill = off[:-1].copy()
    place = np.full(tgt.shape[0], -1, dtype=np.int64)
    for s in range(tgt.shape[0]):
        t = tgt[s]
        if t >= 0 and own[t] == -1:
            place[s] = fill[t]
            fill[t] += 1
    return place, off


@dataclass(frozen=True)
class Split:
    """The split of one key reduction for one partition (see the module's docstring)."""
    bounds: np.ndarray  # block b: source positions bounds[b]:bounds[b + 1]
    place: np.ndarray  # per slot: its position among the shared slots, or -1 (owned)
    off: np.ndarray  # per target row t: its shared slots are positions off[t]:off[t + 1]
    shared_rows: np.ndarray  # the shared target rows, ascending
    nslots: int  # all slots
    mixed: np.ndarray  # per source position: whether some slot of it goes to a shared target

    @property
    def nshared(self) -> int:
        """How many slots go to shared targets."""
        return int(self.off[-1])

    @property
    def shared_fraction(self) -> float:
        return self.nshared / self.nslots if self.nslots else 0.0


def split(tgt: np.ndarray, per_row: int, bounds: np.ndarray, ntarget: int) -> Split:
    """The owned/shared split of the slots `tgt` (target row per slot, `per_row` slots per
    source position) for the blocks `bounds`."""
    own = owners(tgt, per_row, bounds, ntarget)
    place, off = _shared_places(tgt, own)
    small = len(tgt) < 2 ** 31
    mixed = (place.reshape(-1, per_row) >= 0).any(axis=1)
    return Split(bounds, place.astype(np.int32) if small else place,
                 off.astype(np.int32) if small else off,
                 np.flatnonzero(own == SHARED), len(tgt), mixed)
