"""Key reductions a compiled launch leaves pending: folded by the next kernel that reads the
field at its own key (row by row), or before anything else sees the field; never for a field
whose array was handed out. Every case must equal the serial meaning bit for bit."""
import dataclasses

import numpy as np
import pytest

import relsim as rs
from relsim.runtime.backends.cpu import pending
from tests.conftest import CPU_TARGETS, chain_mesh


@pytest.fixture
def target(target):
    """These tests are about parked reduction slots: the cpu targets park every contribution
    (`Config.scatter="slots"`; the direct and split schemes are tests/runtime/test_scatter.py's)."""
    return dataclasses.replace(target, scatter="slots")

W = np.array([1e16, 1.0, -3.5, 2.0, 0.25, -1e16, 7.0, 1e-3])


def _mesh():
    V, E = chain_mesh(9)
    E.new_field("w", rs.f64).load(W)
    V.new_field("acc", rs.vec(2, rs.f64), init=0.5)
    V.new_field("out", rs.f64)
    V.subset("odd", np.arange(1, 9, 2))
    return V, E


def _kernels():
    @rs.kernel
    def scatter(e):
        e.head.acc += (e.w, 2.0 * e.w)
        e.tail.acc -= (e.w, 0.5)

    @rs.kernel
    def consume(v):  # reads acc at its own key, then resets it
        v.out = v.acc[0] * 3.0 + v.acc[1]
        v.acc = (0.25, 0.5)

    @rs.kernel
    def neighbour(e):  # reads acc through keys: pending reductions must be folded first
        e.w = e.head.acc[0] - e.tail.acc[1]

    return scatter, consume, neighbour


def _serial_scatter(acc, times=1):
    acc = acc.copy()
    for _ in range(times):
        for e in range(len(W)):
            acc[e + 1] = acc[e + 1] + np.array([W[e], 2.0 * W[e]])
            acc[e] = acc[e] + np.array([-W[e], -0.5])
    return acc


def _consume(acc):
    return acc[:, 0] * 3.0 + acc[:, 1]


@pytest.mark.device_sized
def test_consumer_absorbs_pending_reductions(target):
    V, E = _mesh()
    scatter, consume, _ = _kernels()
    E.foreach(scatter, target)
    E.foreach(scatter, target)  # would overwrite its pending slots: folds them first
    V.foreach(consume, target)
    acc = _serial_scatter(np.full((9, 2), 0.5), times=2)
    assert np.array_equal(V.out.numpy(), _consume(acc))
    assert np.array_equal(V.acc.numpy(), np.tile([0.25, 0.5], (9, 1)))
    if target.target == "cpu":  # the consumer folded the second launch's slots itself
        exe = consume._last[3]
        assert [len(k[0]) for k in exe.absorbing_fns] == [1]


@pytest.mark.device_sized
def test_reading_through_keys_or_over_a_subset_folds_first(target):
    V, E = _mesh()
    scatter, consume, neighbour = _kernels()
    E.foreach(scatter, target)
    E.foreach(neighbour, target)
    acc = _serial_scatter(np.full((9, 2), 0.5))
    assert np.array_equal(E.w.numpy(), acc[1:, 0] - acc[:-1, 1])
    E.w.load(W)
    E.foreach(scatter, target)
    V.subset("odd").foreach(consume, target)
    acc = _serial_scatter(acc)
    odd = np.arange(1, 9, 2)
    assert np.array_equal(V.out.numpy()[odd], _consume(acc)[odd])
    acc[odd] = (0.25, 0.5)
    assert np.array_equal(V.acc.numpy(), acc)


@pytest.mark.device_sized
def test_a_held_array_is_current_after_every_launch(target):
    V, E = _mesh()
    scatter, _, _ = _kernels()
    held = V.acc.numpy()
    E.foreach(scatter, target)
    assert np.array_equal(held, _serial_scatter(np.full((9, 2), 0.5)))
    assert not pending.folds_of(V.acc)


def test_a_copy_does_not_hand_the_field_out(target):
    V, E = _mesh()
    scatter, consume, _ = _kernels()
    E.foreach(scatter, target)
    snap = V.acc.numpy(copy=True)  # folds what is pending, copies
    assert np.array_equal(snap, _serial_scatter(np.full((9, 2), 0.5)))
    assert not V.acc.exposed
    snap[:] = 0.0  # the field keeps its values
    E.foreach(scatter, target)
    if target.target in CPU_TARGETS:  # not exposed: the next fold may be left pending again
        assert pending.folds_of(V.acc)
    assert np.array_equal(V.acc.numpy(), _serial_scatter(np.full((9, 2), 0.5), times=2))


@pytest.mark.device_sized
def test_a_consumer_that_also_reduces_through_keys_absorbs(target):
    """The absorbing variant of a kernel that itself reduces into a field through keys (so it
    has direct and split variants, or grid loops) takes the same parameters as its other
    variants (it once lowered without theirs and failed an internal check)."""
    V, E = _mesh()
    V.new_key_field("next", V).load((np.arange(9) + 1) % 9)
    V.new_field("spread", rs.f64)
    scatter, _, _ = _kernels()

    @rs.kernel
    def consume_and_pass(v):
        v.out = v.acc[0] * 3.0 + v.acc[1]
        v.next.spread += v.acc[0]

    E.foreach(scatter, target)
    V.foreach(consume_and_pass, target)
    acc = _serial_scatter(np.full((9, 2), 0.5))
    assert np.array_equal(V.out.numpy(), _consume(acc))
    want = np.zeros(9)
    for i in range(9):
        want[(i + 1) % 9] += acc[i, 0]
    assert np.array_equal(V.spread.numpy(), want)
