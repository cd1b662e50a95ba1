"""Rows deleted and inserted on the device (the cuda target): a deterministic stream compaction
with prefix sums, in the row order the cpu gives (`host.row_changes`: the survivors in order,
then the inserted rows in slot order), so a relation's fields stay on the device when its rows
change.

`row_map(flags, want, n)` numbers the rows whose flag equals `want`: ``pos[i]`` is the number of
such rows before row i (an exclusive prefix sum of integers: exact, in any order of the
additions), -1 for the others. Three passes: each of ``nt = ceil(n / chunk)`` threads counts its
chunk of rows; one block scans the counts (each thread a run of them, then a scan of the runs in
shared memory); each thread numbers its chunk's rows from its offset. Then `compact` moves every
numbered row of a field's device array to its number, `place` writes numbered insert slots at
their number after the rows already there, `resized` copies an array's rows into a longer or
shorter one (new rows zero) and `zero` clears an array, all on the device.
"""
from __future__ import annotations

import numpy as np
from numba import config, cuda

from . import device
from .allocate import empty

CHUNK = 64  # rows a thread counts and numbers
SCAN_THREADS = 8 if config.ENABLE_CUDASIM else 256  # the one block scanning the counts
THREADS = 8 if config.ENABLE_CUDASIM else 256  # per block, row-parallel kernels
MAX_BLOCKS = 1 << 16
_JIT = {} if config.ENABLE_CUDASIM else {"cache": True}


@cuda.jit(**_JIT)
def _count(flags, want, n, chunk, counts):
    t = cuda.grid(1)
    if t < counts.shape[0]:
        c = 0
        for i in range(t * chunk, min(n, (t + 1) * chunk)):
            if flags[i] == want:
                c += 1
        counts[t] = c


@cuda.jit(**_JIT)
def _scan(counts):
    """counts[t] <- the sum of counts[:t] (one block)."""
    part = cuda.shared.array(SCAN_THREADS, dtype=np.int64)
    tid = cuda.threadIdx.x
    m = counts.shape[0]
    run = (m + SCAN_THREADS - 1) // SCAN_THREADS
    lo = tid * run
    hi = min(m, lo + run)
    s = 0
    for i in range(lo, hi):
        s += counts[i]
    part[tid] = s
    cuda.syncthreads()
    step = 1
    while step < SCAN_THREADS:  # Hillis-Steele: part[t] <- sum of part[:t + 1]
        v = part[tid - step] if tid >= step else 0
        cuda.syncthreads()
        part[tid] += v
        cuda.syncthreads()
        step *= 2
    s = part[tid] - s  # the runs before this thread's
    for i in range(lo, hi):
        c = counts[i]
        counts[i] = s
        s += c


@cuda.jit(**_JIT)
def _number(flags, want, n, chunk, offsets, pos):
    t = cuda.grid(1)
    if t < offsets.shape[0]:
        p = offsets[t]
        for i in range(t * chunk, min(n, (t + 1) * chunk)):
            if flags[i] == want:
                pos[i] = p
                p += 1
            else:
                pos[i] = -1


@cuda.jit(**_JIT)
def _compact(src, pos, dst, start):
    """dst[start + pos[i]] = src[i] for every numbered row i (all components)."""
    i0 = cuda.grid(1)
    for i in range(i0, src.shape[0], cuda.gridsize(1)):
        p = pos[i]
        if p >= 0:
            for c in range(src.shape[1]):
                dst[start + p, c] = src[i, c]


@cuda.jit(**_JIT)
def _copy_rows(src, dst, m):
    i0 = cuda.grid(1)
    for i in range(i0, m, cuda.gridsize(1)):
        for c in range(src.shape[1]):
            dst[i, c] = src[i, c]


@cuda.jit(**_JIT)
def _zero(a):
    i0 = cuda.grid(1)
    for i in range(i0, a.shape[0], cuda.gridsize(1)):
        for c in range(a.shape[1]):
            a[i, c] = 0


def _shape(n: int):
    return max(1, min(-(-n // THREADS), MAX_BLOCKS)), THREADS


def _stride_shape(n: int):
    """The launch shape of a grid-stride kernel over n rows: in the simulator a few blocks
    (each of its threads is a Python thread started per launch: `device.SIM_BLOCKS`)."""
    blocks, threads = _shape(n)
    return (min(blocks, device.SIM_BLOCKS) if config.ENABLE_CUDASIM else blocks), threads


def _rows2d(a):
    """The (rows, components) view of a device array (C-contiguous)."""
    return a.reshape(a.shape[0], -1) if a.ndim != 2 else a


def row_map(flags, want: bool, n: int):
    """pos: pos[i] the place of row i among the rows whose flag (a bool device array) equals
    `want`, -1 for the others (the caller knows how many there are: from the flags it
    downloaded, or the mask it uploaded)."""
    pos = empty(n, np.int64, "a row map")
    nt = max(1, -(-n // CHUNK))
    counts = empty(nt, np.int64, "a row map")
    _count[_shape(nt)](flags, want, n, CHUNK, counts)
    _scan[1, SCAN_THREADS](counts)
    _number[_shape(nt)](flags, want, n, CHUNK, counts, pos)
    return pos


def compact(dev, pos, count: int, start: int = 0, out=None):
    """A device array of `start + count` rows (or `out`) holding, from row `start`, the rows
    of `dev` that `pos` numbers, in their order (rows before `start` are left as they are)."""
    if out is None:
        out = empty((start + count,) + dev.shape[1:], dev.dtype, "compacted rows")
    if dev.shape[0]:
        _compact[_stride_shape(dev.shape[0])](_rows2d(dev), pos, _rows2d(out), start)
    return out


def resized(dev, size: int):
    """A device array of `size` rows: `dev`'s first rows, then zeros."""
    out = empty((size,) + dev.shape[1:], dev.dtype, "resized rows")
    keep = min(size, dev.shape[0])
    if size > keep:
        zero(out)
    if keep:
        _copy_rows[_stride_shape(keep)](_rows2d(dev), _rows2d(out), keep)
    return out


def zero(dev) -> None:
    """Clear a device array (no copy from the host)."""
    if dev.shape[0]:
        _zero[_stride_shape(dev.shape[0])](_rows2d(dev))
