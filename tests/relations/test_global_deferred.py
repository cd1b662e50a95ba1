"""Global reductions fold when the value is next needed; assigning the value drops the fold.
A float Global sum is the exact sum of its value before the launch and the launch's
contributions, rounded once (math.fsum's value), whatever the order of the rows."""
import math

import numpy as np
import pytest

import relsim as rs
from relsim.runtime.backends.cpu import pending
from tests.conftest import CPU_TARGETS


def _setup():
    R = rs.Relation("R", 7)
    # values whose sum depends on the order of the adds (1e16 + 1 - 1e16 ...)
    R.new_field("v", rs.f64).load(np.array([1e16, 1.0, -1e16, 3.0, 1.0, 1e16, -1e16]))
    R.new_field("seen", rs.f64)
    return R


@pytest.mark.device_sized
def test_pending_sum_is_folded_before_a_reading_launch_and_the_host(target):
    R = _setup()
    total = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def accumulate(r):
        total += r.v

    @rs.kernel
    def read_total(r):
        r.seen = total

    R.foreach(accumulate, target)
    R.foreach(read_total, target)  # must see the folded sum, not the stale 0.0
    exact = math.fsum(R.v.numpy())
    assert exact == 5.0  # a left-to-right sum gives 4.0 (1e16 + 1.0 rounds to 1e16)
    assert np.all(R.seen.numpy() == exact)
    assert total.value == exact


@pytest.mark.device_sized
def test_two_launches_reduce_in_launch_order(target):
    R = _setup()
    total = rs.Global(rs.f64, 0.5)

    @rs.kernel
    def add_v(r):
        total += r.v

    @rs.kernel
    def add_twice_v(r):
        total += 2.0 * r.v

    R.foreach(add_v, target)
    R.foreach(add_twice_v, target)
    R.foreach(add_v, target)  # overwrites the slots of the first launch: folded before
    want = 0.5
    for factor in (1.0, 2.0, 1.0):  # each launch rounds once, in launch order
        want = math.fsum([want] + [factor * x for x in R.v.numpy()])
    assert total.value == want


def test_assigning_the_value_drops_the_pending_fold(target):
    R = _setup()
    total = rs.Global(rs.f64, 0.0)
    best = rs.Global(rs.f64, 0.0)
    positive = rs.Global(rs.i64, 0)

    @rs.kernel
    def reduce_both(r):
        total += r.v
        rs.reduce_argmax(best, r.v)
        if r.v > 0.0:
            positive += 1

    R.foreach(reduce_both, target)
    if target.target in CPU_TARGETS:  # the cpu leaves a conditional integer sum's fold pending
        # for a reader (a float64 sum and an arg-max it folds in the launch itself:
        # runtime/folds/lane_sums.py, backends/cpu/lanes.py)
        assert pending.pending_global(positive) and not pending.pending_global(total)
        assert not pending.pending_global(best)
    total.value = 0.0
    assert not pending.pending_global(total) and total.value == 0.0
    positive.value = 10
    assert not pending.pending_global(positive) and positive.value == 10
    assert best.row == 0 and best.value == 1e16  # first row attaining the max
    R.foreach(reduce_both, target)
    total.value = 1.0
    best.value = -1.0
    R.foreach(reduce_both, target)
    want = math.fsum([1.0, *R.v.numpy()])
    assert total.value == want and best.value == 1e16 and best.row == 0
    assert positive.value == 10 + 2 * 5
