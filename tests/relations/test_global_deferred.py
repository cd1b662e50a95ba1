"""Global reductions fold when the value is next needed; assigning the value drops the fold."""
import numpy as np

import relsim as rs
from relsim.runtime import pending


def _setup():
    R = rs.Relation("R", 7)
    # values whose sum depends on the order of the adds (1e16 + 1 - 1e16 ...)
    R.new_field("v", rs.f64).load(np.array([1e16, 1.0, -1e16, 3.0, 1.0, 1e16, -1e16]))
    R.new_field("seen", rs.f64)
    return R


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
    serial = 0.0
    for x in R.v.numpy():
        serial = serial + x
    assert np.all(R.seen.numpy() == serial)
    assert total.value == serial


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
    serial = 0.5
    for factor in (1.0, 2.0, 1.0):
        for x in R.v.numpy():
            serial = serial + factor * x
    assert total.value == serial


def test_assigning_the_value_drops_the_pending_fold(target):
    R = _setup()
    total = rs.Global(rs.f64, 0.0)
    best = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def reduce_both(r):
        total += r.v
        rs.reduce_argmax(best, r.v)

    R.foreach(reduce_both, target)
    if target.target != "interp":  # compiled: the folds wait for a reader
        assert pending.pending_global(total) and pending.pending_global(best)
    total.value = 0.0
    assert not pending.pending_global(total) and total.value == 0.0
    assert best.row == 0 and best.value == 1e16  # first row attaining the max
    R.foreach(reduce_both, target)
    total.value = 1.0
    best.value = -1.0
    R.foreach(reduce_both, target)
    serial = 1.0
    for x in R.v.numpy():
        serial = serial + x
    assert total.value == serial and best.value == 1e16 and best.row == 0
