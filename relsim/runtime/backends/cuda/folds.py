"""Global reductions folded on the device (the cuda target): a launch's reduction slots are
reduced by a few passes of device kernels to one partial result per component, and only that
(one value and its slot, or one 576-byte exact accumulator) is downloaded and folded into the
Global on the host, by the same rules as the cpu's folds. Nothing else crosses the bus.

Each pass has ``nt = ceil(n / CHUNK)`` threads; thread t folds items t, t + nt, t + 2nt, ...
(adjacent threads read adjacent items), and the next pass folds the nt results, until one is
left. The result depends on no thread count or schedule, because every pass combines by a rule
that does not depend on the order of its inputs:

* a float sum (``+=`` into a float Global): each thread deposits its items into an exact
  accumulator (`exact_sum`'s layout and deposit, on the device: 67 int64 chunks and three
  special counts), carried every ``RUN`` deposits; a later pass adds normalised accumulators
  elementwise (`exact_sum`'s merge rule); the host adds the Global's value and rounds once —
  the bits of `exact_sum.fold_of` on the cpu;
* min / max / argmin / argmax: each candidate carries its slot; the better value wins, a NaN wins
  over a number, and between equals (ties, two zeros of different signs, two NaNs) the lower
  slot: the first-best in slot order, which is what the cpu's serial fold keeps
  (`semantics.global_step`, `semantics.arg_better`); the host then folds that one candidate
  into the Global's value;
* integer + and *, bool and / or: exact and order-free (integers wrap, as on the cpu).
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
from numba import config, cuda

from .... import types as rt
from ....types import elem_of
from ...folds import exact_sum, host_folds
from . import memory

CHUNK = 64  # items per thread and pass (min/max/arg, integer and bool folds)
SUM_CHUNK = 256  # items per thread in a float sum's first pass
THREADS = 256  # per block on a GPU
SIM_THREADS = 8  # per block in the simulator (one Python thread each)

# exact_sum's accumulator layout (`exact_sum` is the one home of these facts; the kernels take
# them as module constants, which numba freezes at compile time)
ACC_LEN = exact_sum.ACC_LEN
TOP = exact_sum.TOP
I_NAN, I_PINF, I_NINF, I_HEAD = exact_sum.I_NAN, exact_sum.I_PINF, exact_sum.I_NINF, \
    exact_sum.I_HEAD
RUN = exact_sum.RUN
LOW_MASK = exact_sum.LOW_MASK

if config.ENABLE_CUDASIM:
    def _bits(x):
        """The IEEE bits of a float64 (the simulator runs this as Python)."""
        return int(np.float64(x).view(np.int64))
else:
    from numba.cuda import libdevice

    _bits = libdevice.double_as_longlong

_JIT = {} if config.ENABLE_CUDASIM else {"cache": True}


@cuda.jit(device=True, **_JIT)
def _deposit(acc, u):
    """acc += the double with bits u (exact_sum._deposit, without the headroom count)."""
    e = (u >> 52) & 0x7FF
    if e == 0x7FF:
        if u & 0xFFFFFFFFFFFFF:
            acc[I_NAN] += 1
        elif u < 0:
            acc[I_NINF] += 1
        else:
            acc[I_PINF] += 1
        return
    nz = 1 if e != 0 else 0
    m = (u & 0xFFFFFFFFFFFFF) | (nz << 52)
    p = e + 1 - nz
    s = u >> 63
    m = (m ^ s) - s
    sh = p & 31
    j = p >> 5
    acc[j] += (m << sh) & LOW_MASK
    acc[j + 1] += m >> (32 - sh)


@cuda.jit(device=True, **_JIT)
def _carry(acc):
    """Carry-normalise acc (exact_sum._carry)."""
    c = 0
    for j in range(TOP):
        v = acc[j] + c
        c = v >> 32
        acc[j] = v & LOW_MASK
    acc[TOP] += c
    acc[I_HEAD] = 1


@cuda.jit(**_JIT)
def _sum_pass(vals, c, n, nt, out):
    """Thread t: the exact accumulator of vals[t::nt, c] (normalised) into out[t]."""
    t = cuda.grid(1)
    if t >= nt:
        return
    acc = cuda.local.array(ACC_LEN, np.int64)
    for j in range(ACC_LEN):
        acc[j] = 0
    k = 0
    for s in range(t, n, nt):
        _deposit(acc, _bits(np.float64(vals[s, c])))
        k += 1
        if k == RUN:
            _carry(acc)
            k = 0
    _carry(acc)
    for j in range(ACC_LEN):
        out[t, j] = acc[j]


@cuda.jit(**_JIT)
def _acc_pass(accs, n, nt, out):
    """Thread t: the elementwise sum of the normalised accumulators accs[t::nt] (valid for up to
    2**31 - 2 of them), normalised, into out[t]."""
    t = cuda.grid(1)
    if t >= nt:
        return
    acc = cuda.local.array(ACC_LEN, np.int64)
    for j in range(ACC_LEN):
        acc[j] = 0
    for s in range(t, n, nt):
        for j in range(ACC_LEN):
            acc[j] += accs[s, j]
    _carry(acc)
    for j in range(ACC_LEN):
        out[t, j] = acc[j]


@cuda.jit(**_JIT)
def _select_pass(vals, c, ids, has_ids, n, nt, is_min, out_v, out_i):
    """Thread t: the best of vals[t::nt, c] with its slot (ids[s], or s itself in the first
    pass): a NaN beats a number, else the lesser (is_min) or greater value, and between equals
    the lower slot."""
    t = cuda.grid(1)
    if t >= nt:
        return
    best = vals[t, c]
    bi = ids[t] if has_ids else t
    for s in range(t + nt, n, nt):
        v = vals[s, c]
        i = ids[s] if has_ids else s
        if best != best:  # a NaN: only a NaN at a lower slot replaces it
            take = v != v and i < bi
        elif v != v:
            take = True
        elif v == best:
            take = i < bi
        else:
            take = v < best if is_min else v > best
        if take:
            best = v
            bi = i
    out_v[t, 0] = best
    out_i[t] = bi


@cuda.jit(**_JIT)
def _num_pass(vals, c, n, nt, op, out):
    """Thread t: vals[t::nt, c] folded by integer + (op 0) or * (op 1), into out[t, 0]."""
    t = cuda.grid(1)
    if t >= nt:
        return
    acc = vals[t, c]
    for s in range(t + nt, n, nt):
        if op == 0:
            acc = acc + vals[s, c]
        else:
            acc = acc * vals[s, c]
    out[t, 0] = acc


@cuda.jit(**_JIT)
def _bool_pass(vals, c, n, nt, op, out):
    """Thread t: vals[t::nt, c] folded by and (op 4) or or (op 5), into out[t, 0]."""
    t = cuda.grid(1)
    if t >= nt:
        return
    acc = vals[t, c]
    for s in range(t + nt, n, nt):
        if op == 4:
            acc = acc and vals[s, c]
        else:
            acc = acc or vals[s, c]
    out[t, 0] = acc


@contextlib.contextmanager
def _integers_wrap():
    """Integer folds wrap on the device as on the cpu; the simulator computes them with NumPy
    scalars, which wrap too but warn: silenced there."""
    if not config.ENABLE_CUDASIM:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _shape(nt: int):
    tpb = SIM_THREADS if config.ENABLE_CUDASIM else THREADS
    return -(-nt // tpb), tpb


def _passes(n: int, chunk: int) -> list[int]:
    """The thread counts of the passes that reduce n items to one."""
    counts = []
    while True:
        nt = -(-n // chunk)
        counts.append(nt)
        if nt == 1:
            return counts
        n, chunk = nt, CHUNK


class DeviceFold:
    """A Global reduction of one launch (bound once per binding): `run()` reduces the device
    slots `dev` (shape ``(nslots, ncomp)``) and folds the result into the Global.
    ``rows`` / ``has_rows``: the launch's subset rows (argmin/argmax name a row)."""

    def __init__(self, lay, dev, rows, has_rows):
        self.glob = lay.target
        self.op = lay.op
        self.per_row = lay.per_row
        self.dev = dev
        self.rows, self.has_rows = rows, has_rows
        self.et = elem_of(self.glob.type)
        n = dev.shape[0]
        self.sum = self.op == "+" and self.et.is_float
        self.select = self.op in ("min", "max", "argmin", "argmax")
        self.counts = _passes(n, SUM_CHUNK if self.sum else CHUNK) if n else []
        what = f"the reduction of kernel slots into Global {self.glob.name or ''}".rstrip()
        if self.sum:
            self.outs = [memory.empty((nt, ACC_LEN), np.int64, what)
                         for nt in self.counts]
        else:
            self.outs = [memory.empty((nt, 1), dev.dtype, what)
                         for nt in self.counts]
            if self.select:
                self.ids = [memory.empty(nt, np.int64, what)
                            for nt in self.counts]

    def run(self) -> None:
        if not self.counts and not self.sum:
            return  # no slots: a fold of nothing leaves the value
        g = self.glob
        g.data  # noqa: B018 (settles anything pending on the Global first)
        flat = g._data.reshape(-1)
        ncomp = self.dev.shape[1]
        if self.sum:  # (of no slots too: the value rounded once, so -0.0 becomes +0.0)
            accs = exact_sum.new_many(ncomp)
            for c in range(ncomp):
                exact_sum.add(accs[c], float(flat[c]))
                if self.counts:
                    exact_sum.merge(accs[c], self._reduce_sum(c))
            rnd = exact_sum.round_f32 if flat.dtype == np.float32 else exact_sum.round_f64
            for c in range(ncomp):
                flat[c] = rnd(accs[c])
        elif self.select:
            for c in range(ncomp):
                v, slot = self._reduce_select(c)
                if self.op in ("argmin", "argmax"):
                    self._fold_arg(flat, g._row_data, v[0], slot)
                else:  # the Global's value first: it wins ties, as in the serial fold
                    host_folds.fold_num(flat[c:c + 1], v.reshape(1, 1),
                                       host_folds.OPS[self.op])
        else:
            for c in range(ncomp):
                v = self._reduce_plain(c)
                fn = host_folds.fold_bool if self.et is rt.bool_ else host_folds.fold_num
                fn(flat[c:c + 1], v.reshape(1, 1), host_folds.OPS[self.op])

    def _reduce_sum(self, c):
        n, src = self.dev.shape[0], self.dev
        for k, (nt, out) in enumerate(zip(self.counts, self.outs)):
            if k == 0:
                _sum_pass[_shape(nt)](src, c, n, nt, out)
            else:
                _acc_pass[_shape(nt)](src, n, nt, out)
            n, src = nt, out
        return memory.download(src, "fold")[0]

    def _reduce_select(self, c):
        n, src, ids, is_min = self.dev.shape[0], self.dev, self.ids[0], self.op in ("min",
                                                                                     "argmin")
        for k, nt in enumerate(self.counts):
            _select_pass[_shape(nt)](src, c if k == 0 else 0, ids, k > 0, n, nt, is_min,
                                     self.outs[k], self.ids[k])
            n, src, ids = nt, self.outs[k], self.ids[k]
        return memory.download(src, "fold")[0], int(memory.download(ids, "fold")[0])

    def _reduce_plain(self, c):
        n, src = self.dev.shape[0], self.dev
        kernel = _bool_pass if self.et is rt.bool_ else _num_pass
        with _integers_wrap():
            for k, (nt, out) in enumerate(zip(self.counts, self.outs)):
                kernel[_shape(nt)](src, c if k == 0 else 0, n, nt, host_folds.OPS[self.op], out)
                n, src = nt, out
        return memory.download(src, "fold")[0]

    def _fold_arg(self, flat, grow, v, slot) -> None:
        """The cpu's arg rule (`host_folds.fold_arg`) over the Global's value, then the one
        candidate, at the row of its slot."""
        i = slot // self.per_row
        row = np.array([self.rows[i] if self.has_rows else i], dtype=np.int64)
        host_folds.fold_arg(flat, grow, np.array([[v]], dtype=flat.dtype), 1, row, True,
                           self.op == "argmin")
