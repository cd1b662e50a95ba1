"""Float Global sums accumulated inside the launch's loop, rounded once, checked, exact.

A float64 Global's ``+=`` means the exact sum of its value and every contribution, rounded once
(`exact_sum`). Parking every contribution in a slot array and summing that exactly afterwards
costs a second pass over memory. Here instead the compiled launch carries, per chunk of rows and
per *lane* (row ``i`` of a chunk goes to lane ``i % LANES``; independent lanes let the CPU
overlap, and LLVM vectorise, the additions), three float64 numbers:

* ``s``: the running float sum of the lane's contributions;
* ``e``: the float sum of the rounding errors ``pi`` of the additions into ``s``, each computed
  exactly by Knuth's TwoSum (``t = s + x; z = t - s; pi = (s - (t - z)) + (x - z)``: then
  ``s + x == t + pi`` exactly, for any finite ``s``, ``x`` whose sum does not overflow);
* ``p``: the float sum of ``|pi|``.

`finish` merges the lanes of every chunk with TwoSum too (its errors join ``e`` and ``p``),
starting from the Global's value, and ends with ``(h, l) = TwoSum(S, E)``. By construction::

    exact sum == S + (sum of every pi)        exactly (TwoSum is error-free)
    |E - sum of every pi| <= gamma_D * sum |pi|    (E is a float sum of the pi, each pi
                                                   passing through at most D additions)
    sum |pi| <= P / (1 - gamma_D)                 (P, the float sum of the |pi|, same tree)

with ``gamma_D = D u / (1 - D u)``, ``u = 2**-53``; so ``exact == h + l + delta`` with
``|delta| <= B = D * 2**-52 * P`` (valid while ``D u <= 1/4``). ``D`` is at most the number of
``pi`` summed, which the caller bounds by (rows x contributions per row) + the lanes merged.
Additions whose result is subnormal are exact, so the bounds hold down to the smallest numbers;
the few multiplications and subtractions in the test below get generous margins instead.

``h`` is then the correctly rounded exact sum iff ``l + delta`` stays strictly inside ``h``'s
rounding interval, ``(-gap below / 2, gap above / 2)``, for every ``|delta| <= B``. `finish`
checks exactly that (strictly: an exact tie is left to the exact path); an exact zero (``h ==
0`` and ``B == 0``) gives ``+0.0``, as `exact_sum` does. Anything it cannot decide (a non-finite
number anywhere, ``|h|`` the largest double, a tiny nonzero sum hidden in ``B``, or a sum too
close to a rounding boundary) returns False, and the caller takes the exact path over the
contributions instead (`exact_sum`): the value is the same correctly rounded one either way, so
the bits never depend on the path, the chunks or the thread count.

How often the check fails: ``B`` is about ``D u`` times the rounding errors, themselves about
``u`` times the partial sums, so the undecided window is ~``D u`` of an ulp of the result
relative to the partial sums (2**-24 of an ulp for a 1M-row sum of positive terms): in
practice only exact ties and sums that cancel almost completely take the exact path.
"""
from __future__ import annotations

import numpy as np

from ..host.jit import njit

# Every constant the compiled code uses is defined in this file: Numba's on-disk cache is keyed
# by this file alone, so compiled code must not depend on values from another module.
LANES = 16
CHUNK_ROWS = 8192  # a chunk holds at least this many rows by default (there is always one)
MAX_CHUNKS = 64
STATE = 3  # s, e, p per lane
TWO_M52 = 2.0 ** -52
MARGIN = 1e-4  # relative slack for the test's own roundings
TINY = 2.0 ** -1060  # absolute slack for them (far above the subnormal rounding error)
MAX_F64 = np.finfo(np.float64).max

_JIT = dict(cache=True, error_model="numpy", boundscheck=False)


def chunks(n: int, least: int = CHUNK_ROWS) -> int:
    """Chunks a launch of n rows is cut into, each of at least `least` rows (a parallel launch
    runs a chunk per thread at a time; the split never changes a value, only how often the
    exact path is needed)."""
    return max(1, min(MAX_CHUNKS, n // max(1, least)))


def new_lanes(nchunks: int, ncomp: int) -> np.ndarray:
    """The lanes of a launch: (chunks, components, STATE, LANES) float64, zeroed by the
    kernel at the start of each chunk."""
    return np.zeros((nchunks, ncomp, STATE, LANES), dtype=np.float64)


def depth_bound(rows: int, per_row: int, nchunks: int) -> int:
    """D: at least the number of TwoSum errors one component's sum adds up."""
    return rows * per_row + (nchunks + 2) * LANES + 8


@njit(inline="always")
def _two_sum(a, x):
    t = a + x
    z = t - a
    return t, (a - (t - z)) + (x - z)


@njit(**_JIT)
def _rounded(S, E, P, depth):
    """(ok, value): the correctly rounded S + E + delta for every |delta| <= D 2**-52 P, when
    that is one float64 decided here (see the module docstring)."""
    if not (np.isfinite(S) and np.isfinite(E) and np.isfinite(P)):
        return False, 0.0
    h, low = _two_sum(S, E)
    if not np.isfinite(h) or abs(h) == MAX_F64:
        return False, 0.0
    bound = 0.0
    if P > 0.0:
        bound = P * (depth * TWO_M52) * (1.0 + MARGIN) + TINY
    if h == 0.0:  # S + E == 0 exactly (a nonzero float sum never rounds to zero)
        return bound == 0.0, 0.0
    half_up = (np.nextafter(h, np.inf) - h) * 0.5
    half_down = (h - np.nextafter(h, -np.inf)) * 0.5
    slack = bound * (1.0 + MARGIN) + TINY
    if slack < (half_up - low) * (1.0 - MARGIN) and \
            slack < (half_down + low) * (1.0 - MARGIN):
        return True, h
    return False, 0.0


@njit(**_JIT, _nrt=True)  # (said: a caller without it, a segment, must not pass that on)
def finish_gathered(gathered, info, old, out):
    """`finish` of every rank's chunks as a captured step's merge gathered them on several
    ranks (`parallel.compiled_mpi.gather_lanes`: info[0] chunks, depth bound info[1]), the
    Global `old` then set to the result. Returns 0, else 1 (undecided: the Global untouched)."""
    if not finish(gathered[:info[0]], 0, old.shape[0], info[1], old, out):
        return 1
    for q in range(old.shape[0]):
        old[q] = out[q]
    return 0


@njit(**_JIT)
def finish(lanes, q0, q1, depth, old, out):
    """Components q0..q1 of `lanes` (one Global's), each started from old[q - q0] (the
    Global's value): out[q - q0] = the correctly rounded exact sum. False (out partly
    written, the Global untouched) when any component is undecided: take the exact path."""
    nch = lanes.shape[0]
    s = np.empty(LANES)
    e = np.empty(LANES)
    p = np.empty(LANES)
    for q in range(q0, q1):
        for j in range(LANES):  # chunk 0 seeds the lanes
            s[j] = lanes[0, q, 0, j]
            e[j] = lanes[0, q, 1, j]
            p[j] = lanes[0, q, 2, j]
        for c in range(1, nch):  # lane by lane (vectorised across lanes)
            for j in range(LANES):
                t, err = _two_sum(s[j], lanes[c, q, 0, j])
                s[j] = t
                e[j] += err + lanes[c, q, 1, j]
                p[j] += abs(err) + lanes[c, q, 2, j]
        S = old[q - q0]
        E = 0.0
        P = 0.0
        for j in range(LANES):
            S, err = _two_sum(S, s[j])
            E += err + e[j]
            P += abs(err) + p[j]
        ok, v = _rounded(S, E, P, depth)
        if not ok:
            return False
        out[q - q0] = v
    return True
