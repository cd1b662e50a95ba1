"""Compiled helpers run after a kernel: fold reduction slots in serial order.

* `gather_*`: each target row folds its slots in ascending slot order (= source row order);
  parallel over target rows, so the result does not depend on the thread count;
* `fold_*`: a Global folds all slots in order (serial);
* `build_inverse`: the CSR of slot ids per target row, by a stable counting sort.

Slot ids are ``None`` when the kernel stored its slots in fold order (then slot j is read for
entry j), and int32 when they fit (less index traffic than int64 in a memory-bound fold).
"""
from __future__ import annotations

import types

import numpy as np
from numba import prange

from .. import semantics
from ..host.jit import njit


class PendingFold:
    """One launch's key-reduction slots into a field, not yet folded (`pending.defer`): `fold`
    runs the compiled gather; a consuming kernel instead receives `absorb_args` and folds each
    row itself (`lowering.pending_folds`). `owner` (the launch's binding) counts its folds
    still pending."""

    __slots__ = ("field", "fn", "args", "op", "absorb_args", "owner")

    def __init__(self, field, fn, args, op, absorb_args, owner):
        self.field, self.fn, self.args, self.op = field, fn, args, op
        self.absorb_args, self.owner = absorb_args, owner

    def fold(self) -> None:
        self.fn(*self.args)

    def run(self) -> None:
        """Fold now (called by `pending.flush`, once this fold left the field's pending list)."""
        self.owner.outstanding -= 1
        self.fn(*self.args)


# a fold's operator is passed as its code: its position in `semantics.FOLD_OPS`
OPS = {op: code for code, op in enumerate(semantics.FOLD_OPS)}
OP_NAMES = dict(enumerate(semantics.FOLD_OPS))
# a gather over only the touched target rows runs in parallel from this many rows on
SPARSE_PARALLEL_ROWS = 1 << 16


# `_combine` and `_combine_bool` are the compiled form of the one fold rule,
# `semantics.reduce_step` (tests/runtime/test_fold_rule.py checks them against it, op by op, on
# ties, signed zeros and NaNs). They spell the op codes as literals: Numba's on-disk cache is keyed
# by this file alone, so compiled code must not depend on values from another module.
@njit(inline="always")
def _combine(op, acc, v):
    """acc op v for numbers: + (0), * (1), min (2), max (3)."""
    if op == 0:
        return acc + v
    if op == 1:
        return acc * v
    if op == 2:
        return v if v < acc else acc
    return v if v > acc else acc


@njit(inline="always")
def _combine_global(op, acc, v):
    """The compiled form of `semantics.global_step` for numbers: as `_combine`, except that a
    min/max keeps the first NaN (x != x only for a NaN)."""
    if op >= 2:
        if acc != acc:
            return acc
        if v != v:
            return v
    return _combine(op, acc, v)


@njit(inline="always")
def _combine_bool(op, acc, v):
    """acc op v for bools: and (4), or (5)."""
    return acc & v if op == 4 else acc | v


@njit(inline="always")
def _fold_row(F, t, off, ids, vals, op):
    """Fold target row t's slots into F[t], slot by slot in order (each component folds its
    slots in order: the serial meaning). Slots are vals[ids[j]], or vals[j] without ids.
    All components of a slot at once: one pass over the slots, about 1.8x faster than one
    pass per component."""
    for j in range(off[t], off[t + 1]):
        s = j if ids is None else ids[j]
        if s >= 0:
            for c in range(F.shape[1]):
                F[t, c] = _combine(op, F[t, c], vals[s, c])
        else:  # ~s: the negation of shared slot s (slot_sharing); acc + (-v) is acc - v
            for c in range(F.shape[1]):
                F[t, c] = _combine(op, F[t, c], -vals[~s, c])


def _gather_num(F, off, ids, vals, op):
    for t in prange(F.shape[0]):
        _fold_row(F, t, off, ids, vals, op)


def _gather_num_scalar(F, off, ids, vals, op):
    """`_gather_num` for a scalar field, on 1-D views of F and vals: the same folds, but without
    the component loop and 2-D indexing, which cost about 1.3x on a large random gather."""
    for t in prange(F.shape[0]):
        acc = F[t]
        for j in range(off[t], off[t + 1]):
            s = j if ids is None else ids[j]
            acc = _combine(op, acc, vals[s] if s >= 0 else -vals[~s])
        F[t] = acc


def _gather_num_rows(F, rows, off, ids, vals, op):
    """`_gather_num` over only the target rows listed in `rows` (those that receive slots): for
    a reduction into a few rows of a large relation (boundary faces into cells)."""
    for i in prange(rows.shape[0]):
        _fold_row(F, rows[i], off, ids, vals, op)


def _gather_num_listed(F, rows, off, vals, op):
    """Fold vals[off[i]:off[i + 1]] into target row rows[i], slot by slot in order, for each
    i: a split's shared targets (`backends/cpu/ownership.Split`), their slots in fold order."""
    for i in prange(rows.shape[0]):
        t = rows[i]
        for j in range(off[i], off[i + 1]):
            for c in range(F.shape[1]):
                F[t, c] = _combine(op, F[t, c], vals[j, c])


def _gather_bool(F, off, ids, vals, op):
    for t in prange(F.shape[0]):
        for c in range(F.shape[1]):
            acc = F[t, c]
            for j in range(off[t], off[t + 1]):
                acc = _combine_bool(op, acc, vals[j, c] if ids is None else vals[ids[j], c])
            F[t, c] = acc


def _named(fn, suffix: str):
    """A copy of `fn` under its own name. Numba's on-disk cache keys an entry by the function's
    qualified name, signature and bytecode, not by the compile flags: a serial and a parallel
    compilation of one function would share one entry, and whichever was cached first would be
    loaded for both (a "parallel" gather running serially, or the reverse)."""
    g = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix, fn.__defaults__,
                           fn.__closure__)
    g.__qualname__ = fn.__qualname__ + suffix
    return g


gather_num_serial = njit(cache=True)(_named(_gather_num, "_serial"))
gather_num_parallel = njit(cache=True, parallel=True)(_named(_gather_num, "_parallel"))
gather_num_scalar_serial = njit(cache=True)(_named(_gather_num_scalar, "_serial"))
gather_num_scalar_parallel = njit(cache=True, parallel=True)(
    _named(_gather_num_scalar, "_parallel"))
gather_num_rows_serial = njit(cache=True)(_named(_gather_num_rows, "_serial"))
gather_num_rows_parallel = njit(cache=True, parallel=True)(_named(_gather_num_rows, "_parallel"))
gather_num_listed_serial = njit(cache=True)(_named(_gather_num_listed, "_serial"))
gather_num_listed_parallel = njit(cache=True, parallel=True)(
    _named(_gather_num_listed, "_parallel"))
gather_bool_serial = njit(cache=True)(_named(_gather_bool, "_serial"))
gather_bool_parallel = njit(cache=True, parallel=True)(_named(_gather_bool, "_parallel"))


@njit(cache=True)
def fold_num(g, vals, op):
    """A Global's fold (not a float sum: those are exact, `exact_sum`): its slots in row order
    (`semantics.global_step`)."""
    for c in range(g.shape[0]):
        acc = g[c]
        for s in range(vals.shape[0]):
            acc = _combine_global(op, acc, vals[s, c])
        g[c] = acc


@njit(cache=True)
def fold_bool(g, vals, op):
    for c in range(g.shape[0]):
        acc = g[c]
        for s in range(vals.shape[0]):
            acc = _combine_bool(op, acc, vals[s, c])
        g[c] = acc


@njit(cache=True)
def fold_arg(g, grow, vals, per_row, rows, has_rows, is_min):
    """Arg-min/arg-max: the first slot (in row order) strictly better than the running best, or
    the first NaN, which then stays (`semantics.arg_better`)."""
    best = g[0]
    brow = grow[0]
    for s in range(vals.shape[0]):
        v = vals[s, 0]
        if best != best:  # a NaN (the lowest row's) stays
            break
        if v != v or ((v < best) if is_min else (v > best)):
            best = v
            i = s // per_row
            brow = rows[i] if has_rows else i
    g[0] = best
    grow[0] = brow


@njit(cache=True)
def fold_candidates(g, grow, vals, rows, op, arg, is_min):
    """A Global's min/max (`arg` False: by `_combine_global`) or arg-min/arg-max (as
    `fold_arg`) from per-lane candidates: `vals`, `rows` (chunks, components, lanes) hold
    each lane's first best value of a chunk's rows and its row (-1: the lane had none). Within
    a chunk the candidates are folded in ascending row order, then chunk after chunk: the
    fold of every row in order keeps the same value and row (a non-candidate is never the
    first best of all rows, and the first best of all rows is its lane's candidate)."""
    nch, ncomp, lanes = vals.shape
    order = np.empty(lanes, dtype=np.int64)
    for c in range(ncomp):
        acc = g[c]
        brow = grow[0]
        for ch in range(nch):
            n = 0
            for j in range(lanes):  # insertion sort of the lanes with a candidate, by row
                r = rows[ch, c, j]
                if r < 0:
                    continue
                t = n
                while t > 0 and rows[ch, c, order[t - 1]] > r:
                    order[t] = order[t - 1]
                    t -= 1
                order[t] = j
                n += 1
            for t in range(n):
                x = vals[ch, c, order[t]]
                if not arg:
                    acc = _combine_global(op, acc, x)
                elif acc == acc and (x != x or ((x < acc) if is_min else (x > acc))):
                    acc = x
                    brow = rows[ch, c, order[t]]
        g[c] = acc
        if arg:
            grow[0] = brow


def shared_ids(ids, per_row, stored_per_row, stores):
    """Map the inverse index's slot ids (one per reduction site and row) to stored slots when
    sites share them: slot r*per_row + k becomes r*stored_per_row + stored[k], as ~that when
    site k stores the negation."""
    stored = np.array([s for s, _ in stores], dtype=np.int64)
    negated = np.array([n for _, n in stores], dtype=bool)
    row, k = np.divmod(ids, per_row)
    sid = row * stored_per_row + stored[k]
    return np.where(negated[k], ~sid, sid)


@njit(cache=True)
def build_inverse(tgt, ntarget):
    off = np.zeros(ntarget + 1, dtype=np.int64)
    for s in range(tgt.shape[0]):
        off[tgt[s] + 1] += 1
    for t in range(ntarget):
        off[t + 1] += off[t]
    pos = off[:-1].copy()
    ids = np.empty(tgt.shape[0], dtype=np.int64)
    for s in range(tgt.shape[0]):
        t = tgt[s]
        ids[pos[t]] = s
        pos[t] += 1
    return off, ids
