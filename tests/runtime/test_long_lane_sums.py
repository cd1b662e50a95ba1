"""float64 Global sums in the launch's loop (`folds/lane_sums.py`) over launches of several
full chunks of rows (test_lane_sums.py's are shorter than one): the correctly rounded exact sum
on data of every kind (scales, growth, zeros, sparse rows, a late spike, a jump, NaN, infinity,
subnormals, values near overflow, cancellation, near ties), at 1 and 2 threads, serial and
parallel; decided in the loop for ordinary data."""
import math

import numpy as np
import pytest

import relsim as rs
from relsim.runtime.backends.cpu import lanes
from relsim.runtime.folds import lane_sums

N = 3 * lane_sums.CHUNK_ROWS + 1237  # several chunks, and a tail
CONFIGS = [rs.Config(target="cpu", threads=t, parallel_threshold=p)
           for t in (1, 2) for p in (4096, 10 ** 9)]
IDS = ["1-thread-parallel", "1-thread-serial", "2-thread-parallel", "2-thread-serial"]

R = rs.Relation("long_lanes_R", N)
R.new_field("x", rs.f64)
R.new_field("y", rs.f64)
total = rs.Global(rs.f64, 0.0)
pair = rs.Global(rs.vec(2, rs.f64), (0.0, 0.0))


@rs.kernel
def dot(r):
    total += r.x * r.y


@rs.kernel
def both(r):
    pair += (r.x, r.x * r.y)


def _data(case, rng):
    x, y = rng.standard_normal(N), rng.standard_normal(N)
    seg = 2048  # rows
    if case == "scaled":
        x *= 10.0 ** rng.integers(-200, 200)
    elif case == "growing":
        x = np.abs(x) * np.linspace(1.0, 1e8, N)
    elif case == "zeros first":
        x[:N // 2] = 0.0
    elif case == "sparse":
        x[rng.uniform(size=N) < 0.97] = 0.0
    elif case == "a late spike":
        x[N - 3000] = 1e200
    elif case == "a jump between segments":
        x[5 * seg:] *= 1e6
    elif case == "a NaN":
        x[N // 2 + 7] = math.nan
    elif case == "an infinity":
        x[2 * seg + 3] = math.inf
    elif case == "subnormals":
        x *= 1e-160
        y *= 1e-160
    elif case == "near the top":
        x *= 1e150
        y *= 1e150
    elif case == "cancelling":
        x[1::2] = -x[::2][:len(x[1::2])]
        y[:] = 1.0
        x[::97] += 1e-9
    elif case == "near ties":
        x = np.full(N, 1.0)
        x[1::2] = 2.0 ** -53
        y[:] = 1.0
    return x, y


CASES = ["normal", "scaled", "growing", "zeros first", "sparse", "a late spike",
         "a jump between segments", "a NaN", "an infinity", "subnormals", "near the top",
         "cancelling", "near ties"]


def _fsum(values, init):
    if any(math.isnan(v) for v in values) or math.isnan(init):
        return math.nan
    if any(math.isinf(v) for v in values):
        return math.fsum(v for v in values if math.isinf(v))
    return math.fsum([init] + list(values))


def _same(a, b):
    return np.float64(a).tobytes() == np.float64(b).tobytes() or \
        (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
@pytest.mark.parametrize("case", CASES)
def test_long_sums_are_the_exact_sums(case, cfg):
    x, y = _data(case, np.random.default_rng(CASES.index(case)))
    R.x.load(x)
    R.y.load(y)
    total.value = 0.25
    pair.value = (-1.5, 0.125)
    before = lanes.EXACT_PATH["count"]
    R.foreach(dot, cfg)
    R.foreach(both, cfg)
    products = [float(a) * float(b) for a, b in zip(x, y)]
    assert _same(total.value, _fsum(products, 0.25)), (total.value, _fsum(products, 0.25))
    assert _same(pair.value[0], _fsum(list(x), -1.5))
    assert _same(pair.value[1], _fsum(products, 0.125))
    if case in ("normal", "scaled", "growing", "zeros first", "subnormals"):
        assert lanes.EXACT_PATH["count"] == before  # decided in the loop
