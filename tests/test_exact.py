"""rs.exact_sum: the sum of an array exactly rounded (the fold of relsim's float Global sums):
math.fsum's bits on finite values in any order, specials as the exact sum implies."""
import math

import numpy as np

import relsim as rs


def test_exact_sum_is_fsums_bits_in_any_order():
    rng = np.random.default_rng(0)
    for case in range(100):
        a = rng.standard_normal(int(rng.integers(0, 3000))) * 10.0 ** rng.integers(-40, 40)
        a = np.concatenate([a, -a[: len(a) // 2] * (1.0 + 2.0 ** -52), [1e-300, 3.5]])
        want = math.fsum(a.tolist())
        for _ in range(2):
            rng.shuffle(a)
            got = rs.exact_sum(a)
            assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), case
    assert rs.exact_sum([1e16, 1.0, -1e16]) == 1.0       # (a plain float sum gives 0.0)
    assert rs.exact_sum(np.ones((3, 4))) == 12.0 and rs.exact_sum([]) == 0.0


def test_specials_follow_the_exact_sum():
    assert math.isnan(rs.exact_sum([1.0, math.nan]))
    assert math.isnan(rs.exact_sum([math.inf, -math.inf]))
    assert rs.exact_sum([math.inf, 1.0]) == math.inf
    assert rs.exact_sum([1.7e308, 1.7e308]) == math.inf  # (fsum raises OverflowError)
    assert math.copysign(1.0, rs.exact_sum([-0.0, -0.0])) == 1.0
