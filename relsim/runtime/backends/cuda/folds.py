"""Global reductions folded on the device (the cuda target): a launch's reduction slots are
reduced by a few passes of device kernels to one partial result per component (one value and
its slot, or one exact accumulator), which a one-thread kernel folds into the Global's device
copy (`memory.GlobalCopy`) by the same rules as the cpu's folds (`_finish_*`). Nothing crosses
the bus: the host downloads the value when it reads it. When the device does not hold the
Global's current value (the host assigned it), the finish starts from the host value passed as
a kernel argument, so resetting a Global before each reduction uploads nothing either.

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

A float sum into a Global made with sum="ordered" is the exception: its slots are added one at a
time, in slot order, from the Global's value, by one thread (`_ordered_sum`): the cpu's serial
fold, bit for bit (additions only: nothing to contract), and slow on a GPU (it is there to
follow a serial code's rounding, not for speed).
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
from numba import config, cuda

from .... import types as rt
from ....types import elem_of
from ... import semantics
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

    def _f32_of_bits(u):
        """The float32 with IEEE bits u (int32)."""
        return np.int32(u).view(np.float32)
else:
    from numba.cuda import libdevice

    _bits = libdevice.double_as_longlong
    _f32_of_bits = libdevice.int_as_float

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


# -- finishing on the device: one thread folds the partial result into the Global's copy --
NCHUNK = exact_sum.NCHUNK
_SIGN64 = -(1 << 63)
_SIGN32 = -(1 << 31)


@cuda.jit(device=True, **_JIT)
def _bit(mag, p):
    """Bit p of the non-negative integer with base-2**32 digits mag[0..TOP]."""
    k = min(p >> 5, TOP)
    off = p - 32 * k
    if off > 62:
        return 0
    return (mag[k] >> off) & 1


@cuda.jit(device=True, **_JIT)
def _rounded_bits(acc, single):
    """The exact sum in local accumulator acc (changed) rounded once, to nearest with ties to
    even, as the IEEE bits of a float64 (or float32, `single`): `exact_sum.round_f64` /
    `round_f32`, statement for statement."""
    _carry(acc)
    if acc[I_NAN] > 0 or (acc[I_PINF] > 0 and acc[I_NINF] > 0):
        return 0x7FC00000 if single else 0x7FF8000000000000
    if acc[I_PINF] > 0:
        return 0x7F800000 if single else 0x7FF0000000000000
    if acc[I_NINF] > 0:
        return _SIGN32 + 0x7F800000 if single else _SIGN64 + 0x7FF0000000000000
    negative = acc[TOP] < 0
    if negative:
        for j in range(NCHUNK):
            acc[j] = -acc[j]
        _carry(acc)
    prec = 24 if single else 53
    dmin = 926 if single else 1  # the smallest quantum, 2**(dmin - 1075)
    t = TOP
    while t > 0 and acc[t] == 0:
        t -= 1
    top = acc[t]
    q = 0
    d = dmin
    if top != 0:
        nbits = 0
        while top >> nbits:
            nbits += 1
        length = 32 * t + nbits
        d = max(length - prec, dmin)
        for p in range(length - 1, d - 1, -1):
            q = (q << 1) | _bit(acc, p)
        if _bit(acc, d - 1):
            k = min((d - 1) >> 5, TOP)
            low = min((d - 1) - 32 * k, 62)
            sticky = (acc[k] & ((1 << low) - 1)) != 0
            for j in range(k):
                if acc[j] != 0:
                    sticky = True
            if sticky or (q & 1):
                q += 1
    if single:
        if q == 0:
            return _SIGN32 if negative else 0
        bits = ((d - 926) << 23) + q
        if bits >= 0x7F800000:
            bits = 0x7F800000
        return bits + _SIGN32 if negative else bits
    if q == 0:
        return _SIGN64 if negative else 0
    if d >= 2047:
        bits = 0x7FF0000000000000
    else:
        bits = ((d - 1) << 52) + q
        if bits >= 0x7FF0000000000000:
            bits = 0x7FF0000000000000
    return bits + _SIGN64 if negative else bits


@cuda.jit(device=True, **_JIT)
def _start(acc, accs, has_acc):
    for j in range(ACC_LEN):
        acc[j] = accs[0, j] if has_acc else 0


@cuda.jit(**_JIT)
def _finish_sum64(accs, has_acc, gbits, c, from_host, host_bits):
    """gbits[c] (a float64 Global's bits; host_bits instead when from_host) plus the exact
    accumulator accs[0] (when has_acc), rounded once, into gbits[c]."""
    if cuda.grid(1) != 0:
        return
    acc = cuda.local.array(ACC_LEN, np.int64)
    _start(acc, accs, has_acc)
    _deposit(acc, host_bits if from_host else gbits[c])
    gbits[c] = _rounded_bits(acc, False)


@cuda.jit(**_JIT)
def _finish_sum32(accs, has_acc, gbits, c, from_host, host_bits):
    """As `_finish_sum64`, for a float32 Global (int32 bits), rounded once to float32."""
    if cuda.grid(1) != 0:
        return
    acc = cuda.local.array(ACC_LEN, np.int64)
    _start(acc, accs, has_acc)
    u = host_bits if from_host else gbits[c]
    _deposit(acc, _bits(np.float64(_f32_of_bits(u))))
    gbits[c] = _rounded_bits(acc, True)


@cuda.jit(**_JIT)
def _finish_num(v, g, c, op, from_host, host_value):
    """g[c] (or host_value) folded with the candidate v[0, 0] by `host_folds._combine_global`:
    integer + (op 0) and * (1), min (2) and max (3), a min/max keeping the first NaN."""
    if cuda.grid(1) != 0:
        return
    acc = host_value if from_host else g[c]
    x = v[0, 0]
    if op == 0:
        acc = acc + x
    elif op == 1:
        acc = acc * x
    elif acc != acc:
        pass
    elif x != x:
        acc = x
    elif op == 2:
        if x < acc:
            acc = x
    elif x > acc:
        acc = x
    g[c] = acc


@cuda.jit(**_JIT)
def _ordered_sum(vals, c, n, g, from_host, host_value):
    """g[c] (or host_value) + vals[0, c] + vals[1, c] + ... + vals[n - 1, c], each addition
    rounded, in that order (a float sum into a Global with sum="ordered"; one thread)."""
    if cuda.grid(1) != 0:
        return
    acc = host_value if from_host else g[c]
    for s in range(n):
        acc = acc + vals[s, c]
    g[c] = acc


@cuda.jit(**_JIT)
def _finish_bool(v, g, c, op, from_host, host_value):
    """g[c] (or host_value) and (op 4) / or (op 5) v[0, 0]."""
    if cuda.grid(1) != 0:
        return
    acc = host_value if from_host else g[c]
    if op == 4:
        acc = acc and v[0, 0]
    else:
        acc = acc or v[0, 0]
    g[c] = acc


@cuda.jit(**_JIT)
def _finish_arg(v, ids, g, grow, per_row, rows, has_rows, is_min, from_host, host_value,
                host_row):
    """The arg rule (`host_folds.fold_arg`) over the Global's value and row (or host_value,
    host_row), then the one candidate v[0, 0] at slot ids[0]."""
    if cuda.grid(1) != 0:
        return
    best = host_value if from_host else g[0]
    brow = host_row if from_host else grow[0]
    x = v[0, 0]
    if best == best and (x != x or ((x < best) if is_min else (x > best))):
        best = x
        i = ids[0] // per_row
        brow = rows[i] if has_rows else i
    g[0] = best
    grow[0] = brow


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
    slots `dev` (shape ``(nslots, ncomp)``) and folds the result into the Global's device copy.
    ``rows`` / ``has_rows``: the launch's subset rows (argmin/argmax name a row; `rows_dev`
    their device copy, uploaded here when not given)."""

    def __init__(self, lay, dev, rows, has_rows, rows_dev=None):
        self.glob = lay.target
        self.op = lay.op
        self.per_row = lay.per_row
        self.dev = dev
        self.has_rows = has_rows
        self.et = elem_of(self.glob.type)
        n = dev.shape[0]
        self.sum = semantics.sums_exactly(self.glob, self.op)
        self.ordered = semantics.sums_in_row_order(self.glob, self.op)
        self.select = self.op in ("min", "max", "argmin", "argmax")
        self.arg = self.op in ("argmin", "argmax")
        self.counts = ([1] if self.ordered else
                       _passes(n, SUM_CHUNK if self.sum else CHUNK)) if n else []
        what = f"the reduction of kernel slots into Global {self.glob.name or ''}".rstrip()
        if self.ordered:
            self.outs = []  # (folded straight from the slots)
        elif self.sum:
            self.outs = [memory.empty((nt, ACC_LEN), np.int64, what)
                         for nt in self.counts] or [memory.empty((1, ACC_LEN), np.int64, what)]
        else:
            self.outs = [memory.empty((nt, 1), dev.dtype, what)
                         for nt in self.counts]
            if self.select:
                self.ids = [memory.empty(nt, np.int64, what)
                            for nt in self.counts]
        self.rows_dev = rows_dev
        if self.arg and rows_dev is None:
            self.rows_dev = memory.upload(np.asarray(rows, dtype=np.int64), "rows")

    def run(self) -> None:
        if not self.counts and not self.sum:
            return  # no slots: a fold of nothing leaves the value
        g = self.glob
        r = memory.global_copy(g)
        if self.arg and r.device_newer and not r.row_newer:
            r.before_host_read(g)  # (the value from another fold, the row the host's)
        # where the fold starts: the device's copy, or the host value passed by value
        from_host = not r.device_newer and not (r.holds(g._data) and not self.arg)
        if r.dev is None:
            r.dev = memory.empty(g._data.shape, g._data.dtype, f"Global {g.name!r}")
        if self.arg and r.row is None:
            r.row = memory.empty(1, np.int64, f"Global {g.name!r}")
        host = g._data.reshape(-1)
        flat = r.dev.reshape(r.dev.size)
        if self.sum:  # (of no slots too: the value rounded once, so -0.0 becomes +0.0)
            single = host.dtype == np.float32
            bits, hbits = flat.view(np.int32 if single else np.int64), \
                host.view(np.int32 if single else np.int64)
            finish = _finish_sum32 if single else _finish_sum64
            for c in range(host.shape[0]):
                acc = self._reduce_sum(c) if self.counts else self.outs[0]
                finish[1, 1](acc, bool(self.counts), bits, c, from_host, hbits[c])
        elif self.ordered:
            for c in range(host.shape[0]):
                _ordered_sum[1, 1](self.dev, c, self.dev.shape[0], flat, from_host, host[c])
        elif self.arg:
            v, ids = self._reduce_select(0)
            _finish_arg[1, 1](v, ids, flat, r.row, self.per_row, self.rows_dev, self.has_rows,
                              self.op == "argmin", from_host, host[0], g._row_data[0])
            r.row_newer = True
        else:
            kernel = _finish_bool if self.et is rt.bool_ else _finish_num
            op = host_folds.OPS[self.op]
            with _integers_wrap():
                for c in range(host.shape[0]):
                    v = self._reduce_select(c)[0] if self.select else self._reduce_plain(c)
                    kernel[1, 1](v, flat, c, op, from_host, host[c])
        r.device_newer = True
        r.last = None

    def _reduce_sum(self, c):
        n, src = self.dev.shape[0], self.dev
        for k, (nt, out) in enumerate(zip(self.counts, self.outs)):
            if k == 0:
                _sum_pass[_shape(nt)](src, c, n, nt, out)
            else:
                _acc_pass[_shape(nt)](src, n, nt, out)
            n, src = nt, out
        return src

    def _reduce_select(self, c):
        n, src, ids, is_min = self.dev.shape[0], self.dev, self.ids[0], self.op in ("min",
                                                                                     "argmin")
        for k, nt in enumerate(self.counts):
            _select_pass[_shape(nt)](src, c if k == 0 else 0, ids, k > 0, n, nt, is_min,
                                     self.outs[k], self.ids[k])
            n, src, ids = nt, self.outs[k], self.ids[k]
        return src, ids

    def _reduce_plain(self, c):
        n, src = self.dev.shape[0], self.dev
        kernel = _bool_pass if self.et is rt.bool_ else _num_pass
        with _integers_wrap():
            for k, (nt, out) in enumerate(zip(self.counts, self.outs)):
                kernel[_shape(nt)](src, c if k == 0 else 0, n, nt, host_folds.OPS[self.op], out)
                n, src = nt, out
        return src
