"""Reductions of a value and its negation share one stored slot (and the fold negates it); any
change to what the value reads between the two sites keeps them apart."""
import dataclasses

import numpy as np
import pytest

import relsim as rs
from tests.conftest import chain_mesh

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized


@pytest.fixture
def target(target):
    """These tests are about parked reduction slots: the cpu targets park every contribution
    (`Config.scatter="slots"`; the direct and split schemes are tests/runtime/test_scatter.py's)."""
    return dataclasses.replace(target, scatter="slots")


def _mesh():
    V, E = chain_mesh(9)
    E.new_field("w", rs.f64).load(np.array([1e16, 1.0, -3.5, 2.0, 0.25, -1e16, 7.0, 1e-3]))
    V.new_field("acc", rs.vec(2, rs.f64), init=0.5)
    V.new_field("out", rs.f64)
    return V, E


def _serial(E, values_head, values_tail, n=9):
    """The serial meaning: edge by edge, head then tail."""
    acc = np.full((n, 2), 0.5)
    head, tail = E.head.numpy(), E.tail.numpy()
    for e in range(E.size):
        acc[head[e]] = acc[head[e]] + values_head[e]
        if values_tail[e] is not None:
            acc[tail[e]] = acc[tail[e]] + values_tail[e]
    return acc


def _check(V, E, target, kernel, want):
    @rs.kernel
    def consume(v):  # folds pending reductions itself (cpu): the shared slots' other reader
        v.out = v.acc[0] - v.acc[1]

    E.foreach(kernel, target)
    V.foreach(consume, target)
    assert np.array_equal(V.out.numpy(), want[:, 0] - want[:, 1])
    assert np.array_equal(V.acc.numpy(), want)  # and the plain gather (after numpy())
    V.acc.fill(0.5)
    E.foreach(kernel, target)
    assert np.array_equal(V.acc.numpy(), want)


def test_plus_minus_pair_shares_a_slot_and_folds_bitwise(target):
    V, E = _mesh()

    @rs.kernel
    def flux(e):
        f = (e.w, 2.0 * e.w)
        e.head.acc += f
        e.tail.acc -= f

    w = E.w.numpy()
    f = np.stack([w, 2.0 * w], axis=1)
    _check(V, E, target, flux, _serial(E, f, -f))
    if target.target != "interp":
        text = rs.explain(flux, E, target)
        assert "2 slot(s) per row (1 stored)" in text
        assert "stores nothing: it reuses slot 0 of its row, negated in the fold" in text


def test_value_changed_between_sites_is_not_shared(target):
    V, E = _mesh()

    @rs.kernel
    def flux(e):
        f = (e.w, 2.0 * e.w)
        e.head.acc += f
        f = (f[0] + 1.0, f[1])
        e.tail.acc -= f

    w = E.w.numpy()
    f = np.stack([w, 2.0 * w], axis=1)
    g = f.copy()
    g[:, 0] += 1.0
    _check(V, E, target, flux, _serial(E, f, -g))
    if target.target != "interp":
        assert "stored" not in rs.explain(flux, E, target).split("-- generated")[0]


def test_conditional_sites_are_not_shared(target):
    V, E = _mesh()

    @rs.kernel
    def flux(e):
        f = (e.w, e.w)
        e.head.acc += f
        if e.w > 0.0:
            e.tail.acc -= f

    w = E.w.numpy()
    f = np.stack([w, w], axis=1)
    _check(V, E, target, flux, _serial(E, f, [-x if x[0] > 0.0 else None for x in f]))
    if target.target != "interp":
        assert "stored" not in rs.explain(flux, E, target).split("-- generated")[0]
