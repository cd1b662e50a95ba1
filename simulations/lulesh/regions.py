"""LULESH's region partition (CreateRegionIndexSets) with an emulation of glibc's `rand()`, so the
regions, and with them the EOS cost, are the reference's on every platform.

glibc seeds `srand(0)` as seed 1 and draws from its additive feedback generator (TYPE_3: degree
31, separation 3): r[i] = 16807 r[i-1] mod (2^31 - 1) for i < 31, r[31..33] = r[0..2], then
r[i] = r[i-3] + r[i-31] (mod 2^32); the first 310 values are discarded and rand() returns
r[i] >> 1.
"""
from __future__ import annotations

import numpy as np


class GlibcRand:
    """glibc's `srand(seed)` / `rand()`."""

    def __init__(self, seed: int = 0):
        seed = seed & 0xFFFFFFFF or 1
        r = [0] * 34
        r[0] = seed
        for i in range(1, 31):
            r[i] = (16807 * r[i - 1]) % 2147483647
        for i in range(31, 34):
            r[i] = r[i - 31]
        self._r = r
        for _ in range(310):
            self._next()

    def _next(self) -> int:
        r = self._r
        v = (r[-31] + r[-3]) & 0xFFFFFFFF
        r.append(v)
        if len(r) > 64:
            del r[:-34]
        return v

    def rand(self) -> int:
        return self._next() >> 1


def region_numbers(num_elem: int, num_reg: int, balance: int, seed: int = 0) -> np.ndarray:
    """regNumList: the region (1 .. num_reg) of every element, as the reference draws it."""
    reg = np.ones(num_elem, dtype=np.int64)
    if num_reg == 1:
        return reg
    rng = GlibcRand(seed)
    bin_end, total = [], 0
    for i in range(num_reg):
        total = int(total + float(i + 1) ** balance)  # int += pow(...) in the reference
        bin_end.append(total)

    def pick() -> int:
        var = rng.rand() % total
        i = 0
        while var >= bin_end[i]:
            i += 1
        return i % num_reg + 1

    nxt, last = 0, -1
    while nxt < num_elem:
        region = pick()
        while region == last:
            region = pick()
        b = rng.rand() % 1000
        if b < 773:
            n = rng.rand() % 15 + 1
        elif b < 937:
            n = rng.rand() % 16 + 16
        elif b < 970:
            n = rng.rand() % 32 + 32
        elif b < 974:
            n = rng.rand() % 64 + 64
        elif b < 978:
            n = rng.rand() % 128 + 128
        elif b < 981:
            n = rng.rand() % 256 + 256
        else:
            n = rng.rand() % 1537 + 512
        end = min(nxt + n, num_elem)
        reg[nxt:end] = region
        nxt = end
        last = region
    return reg


def repetitions(r: int, num_reg: int, cost: int) -> int:
    """How many times the EOS of region index r (0-based) is evaluated per cycle."""
    if r < num_reg // 2:
        return 1
    if r < num_reg - (num_reg + 15) // 20:
        return 1 + cost
    return 10 * (1 + cost)
