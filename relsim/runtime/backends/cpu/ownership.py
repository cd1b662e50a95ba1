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
    own = np.full(ntarget, -2, dtype=np.int32)
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
def _shared_places(tgt, own, per_row, mixed):
    """The shared targets' slots, in fold order (target row ascending, then slot ascending),
    kept only for the *mixed* source positions (those with a slot to a shared target): fills
    `mixed` (per position: its index among the mixed positions, or -1) and returns (places:
    per slot of a mixed position, its position among the shared slots, or -1 when its target
    is owned; rows: the shared target rows, ascending; off: their slots are positions
    off[i]:off[i + 1]). `own` (from `owners`) is overwritten: a shared row's entry becomes
    -3 - its index in `rows`."""
    nrows = 0
    for t in range(own.shape[0]):
        if own[t] == -1:
            nrows += 1
    rows = np.empty(nrows, dtype=np.int64)
    i = 0
    for t in range(own.shape[0]):
        if own[t] == -1:
            own[t] = -3 - i
            rows[i] = t
            i += 1
    off = np.zeros(nrows + 1, dtype=np.int64)
    nmixed = 0
    for pos in range(mixed.shape[0]):
        mixed[pos] = -1
        for j in range(per_row):
            t = tgt[pos * per_row + j]
            if t >= 0 and own[t] <= -3:
                off[-2 - own[t]] += 1
                if mixed[pos] < 0:
                    mixed[pos] = nmixed
                    nmixed += 1
    for i in range(nrows):
        off[i + 1] += off[i]
    fill = off[:-1].copy()
    places = np.full(nmixed * per_row, -1, dtype=np.int64)
    for pos in range(mixed.shape[0]):
        m = mixed[pos]
        if m < 0:
            continue
        for j in range(per_row):
            t = tgt[pos * per_row + j]
            if t >= 0 and own[t] <= -3:
                places[m * per_row + j] = fill[-3 - own[t]]
                fill[-3 - own[t]] += 1
    return places, rows, off


@dataclass(frozen=True)
class Split:
    """The split of one key reduction for one partition (see the module's docstring): what a
    block needs of the shared targets, for the few source positions that reach one (at miniFE
    80^3 on 2 threads, 0.4% of the element rows: a few MB where one place per slot and one
    offset per target row took 187 MB)."""
    bounds: np.ndarray  # block b: source positions bounds[b]:bounds[b + 1]
    mixed: np.ndarray  # per source position: its index among the mixed positions, or -1
    places: np.ndarray  # per slot of a mixed position: its shared slot's position, or -1 (owned)
    rows: np.ndarray  # the shared target rows, ascending
    off: np.ndarray  # shared target rows[i]'s slots are positions off[i]:off[i + 1]
    nslots: int  # all slots
    per_row: int  # slots per source position

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
    npos = len(tgt) // per_row if per_row else 0
    mixed = np.empty(npos, dtype=np.int32 if npos < 2 ** 31 else np.int64)
    places, rows, off = _shared_places(tgt, own, per_row, mixed)
    small = len(tgt) < 2 ** 31
    return Split(bounds, mixed, places.astype(np.int32) if small else places, rows,
                 off.astype(np.int32) if small else off, len(tgt), per_row)


def combined(splits: list) -> tuple:
    """For several reductions of one launch, split alike: (mixed, places) indexed by the
    positions mixed in any of them (the kernel tests one `_mixed[pos]` per row), each one's
    places -1 in the rows where only others are mixed."""
    if len(splits) == 1:
        return splits[0].mixed, [splits[0].places]
    reach = np.logical_or.reduce([sp.mixed >= 0 for sp in splits])
    where = np.flatnonzero(reach)
    mixed = np.full(len(reach), -1, dtype=splits[0].mixed.dtype)
    mixed[where] = np.arange(len(where), dtype=mixed.dtype)
    places = []
    for sp in splits:
        pl = np.full((len(where), sp.per_row), -1, dtype=sp.places.dtype)
        mine = np.flatnonzero(sp.mixed >= 0)
        pl[mixed[mine]] = sp.places.reshape(len(mine), sp.per_row)
        places.append(pl.reshape(-1))
    return mixed, places
