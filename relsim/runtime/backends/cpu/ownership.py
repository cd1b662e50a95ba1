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


# source positions whose slots' targets `split` holds at once: at miniFE 80^3 (64 slots a row,
# 512,000 rows) 16 MB of int32 where the whole array took 131 MB
CHUNK_POSITIONS = 1 << 16


def owners(tgt, per_row, bounds, ntarget):
    """Per target row: the block all its slots come from, SHARED, or UNTOUCHED. Slot s belongs
    to source position s // per_row; `tgt[s]` is its target row (negative: none)."""
    own = np.full(ntarget, UNTOUCHED, dtype=np.int32)
    _fold_owners(tgt, 0, per_row, bounds, own)
    return own


@njit(cache=True)
def _fold_owners(tgt, first, per_row, bounds, own):
    """Fold the slots of source positions first, first + 1, ... (their targets `tgt`) into
    `own` (see `owners`)."""
    npos = tgt.shape[0] // per_row if per_row else 0
    b = 0
    for i in range(npos):
        pos = first + i
        while pos >= bounds[b + 1]:
            b += 1
        for j in range(per_row):
            t = tgt[i * per_row + j]
            if t < 0:
                continue
            o = own[t]
            if o == -2:
                own[t] = b
            elif o != b:
                own[t] = -1


@njit(cache=True)
def _shared_rows(own):
    """The shared target rows, ascending; a shared row's entry of `own` (from `owners`) becomes
    -3 - its index among them."""
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
    return rows


@njit(cache=True)
def _count_shared(tgt, first, own, per_row, mixed, off, nmixed):
    """For the source positions first, first + 1, ... (their slots' targets `tgt`): number the
    *mixed* ones (with a slot to a shared target) in `mixed` from `nmixed` (the others -1) and
    count each shared row's slots in `off` (row i's at off[i + 1]); returns the mixed count."""
    npos = tgt.shape[0] // per_row if per_row else 0
    for i in range(npos):
        pos = first + i
        mixed[pos] = -1
        for j in range(per_row):
            t = tgt[i * per_row + j]
            if t >= 0 and own[t] <= -3:
                off[-2 - own[t]] += 1
                if mixed[pos] < 0:
                    mixed[pos] = nmixed
                    nmixed += 1
    return nmixed


@njit(cache=True)
def _place_shared(tgt, first, own, per_row, mixed, places, fill):
    """For the mixed positions among first, first + 1, ...: each slot's position among the
    shared slots in fold order (target row ascending, then slot ascending), -1 when its target
    is owned; `fill[i]`: shared row i's next position."""
    npos = tgt.shape[0] // per_row if per_row else 0
    for i in range(npos):
        m = mixed[first + i]
        if m < 0:
            continue
        for j in range(per_row):
            t = tgt[i * per_row + j]
            if t >= 0 and own[t] <= -3:
                places[m * per_row + j] = fill[-3 - own[t]]
                fill[-3 - own[t]] += 1


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
    npos = len(tgt) // per_row if per_row else 0
    return split_chunks(lambda lo, hi: tgt[lo * per_row:hi * per_row], npos, per_row, bounds,
                        ntarget)


def split_chunks(targets, npos: int, per_row: int, bounds: np.ndarray, ntarget: int,
                 chunk: int | None = None) -> Split:
    """The split of `npos` source positions' slots, whose targets `targets(lo, hi)` gives for
    positions lo..hi - 1 ((hi - lo) * per_row of them, in slot order), asked for `chunk`
    positions at a time in three passes (the owners, the mixed positions and the shared rows'
    counts, the places): no more than a chunk of the targets is held at once (default
    `CHUNK_POSITIONS`)."""
    chunk = chunk or CHUNK_POSITIONS
    ranges = [(lo, min(lo + chunk, npos)) for lo in range(0, npos, chunk)] if per_row else []
    own = np.full(ntarget, UNTOUCHED, dtype=np.int32)
    for lo, hi in ranges:
        _fold_owners(targets(lo, hi), lo, per_row, bounds, own)
    rows = _shared_rows(own)
    mixed = np.full(npos, -1, dtype=np.int32 if npos < 2 ** 31 else np.int64)
    off = np.zeros(len(rows) + 1, dtype=np.int64)
    nmixed = 0
    for lo, hi in ranges:
        nmixed = _count_shared(targets(lo, hi), lo, own, per_row, mixed, off, nmixed)
    np.cumsum(off, out=off)
    places = np.full(nmixed * per_row, -1, dtype=np.int64)
    fill = off[:-1].copy()
    for lo, hi in ranges:
        _place_shared(targets(lo, hi), lo, own, per_row, mixed, places, fill)
    nslots = npos * per_row
    small = nslots < 2 ** 31
    return Split(bounds, mixed, places.astype(np.int32) if small else places, rows,
                 off.astype(np.int32) if small else off, nslots, per_row)


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
