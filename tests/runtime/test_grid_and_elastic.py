"""Affine (grid neighbour) keys and elastic relations (insert/delete from kernels)."""
import numpy as np
import pytest

import relsim as rs

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized


def _grid(periodic):
    C = rs.Relation("C", 12)
    C.set_grid((4, 3), periodic=periodic)
    C.new_field("u", rs.f64).load(np.arange(12.0) ** 2)
    C.new_field("lap", rs.f64)
    return C


def test_affine_neighbours_periodic_and_bounded(target):
    C = _grid((True, False))
    C.subset("inner", np.array([4, 5, 6, 7]))

    @rs.kernel
    def lap(c):
        c.lap = c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u - 4 * c.u

    C.inner.foreach(lap, target)
    u = (np.arange(12.0) ** 2).reshape(3, 4)  # [j, i]
    want = np.roll(u, -1, 1) + np.roll(u, 1, 1) - 4 * u
    want[1] += u[2] + u[0]
    assert C.lap.numpy()[4:8].tolist() == want[1].tolist()
    with pytest.raises(rs.KernelRuntimeError, match=r"neighbour \(0, 1\) of row 8 .* interior"):
        C.foreach(lap, target)


def test_affine_fully_periodic_and_reductions_through_neighbours(target):
    C = _grid(True)
    C.new_field("acc", rs.f64)

    @rs.kernel
    def spread(c):
        c(1, 1).acc += c.u
        c(0, -1)(-1, 0).acc += 1.0

    C.foreach(spread, target)
    u = (np.arange(12.0) ** 2).reshape(3, 4)
    want = np.roll(np.roll(u, 1, 0), 1, 1) + 1.0
    assert C.acc.numpy().reshape(3, 4).tolist() == want.tolist()


def test_affine_needs_a_grid_and_constant_offsets():
    R = rs.Relation("R", 3)
    R.new_field("u", rs.f64)

    @rs.kernel
    def bad(r):
        r.u = r(1).u

    with pytest.raises(rs.KernelTypeError, match="grid relations"):
        R.foreach(bad, rs.Config(target="interp"))


def test_insert_and_delete_from_kernels(target):
    P = rs.Relation("P", 6, elastic=True)
    P.new_field("x", rs.f64).load(np.arange(6.0))
    P.new_field("tag", rs.i32)

    @rs.kernel
    def step(p):
        p.x += 1.0
        if p.x > 5.5:
            rs.delete(p)
        for k in range(2):
            if p.x < 2.5:
                rs.insert(P, x=p.x * 10 + k, tag=7)

    P.foreach(step, target)
    assert P.x.numpy().tolist() == [1, 2, 3, 4, 5, 10, 11, 20, 21]
    assert P.tag.numpy().tolist() == [0] * 5 + [7] * 4
    P.foreach(step, target)  # storage grew: the launch re-binds
    assert P.x.numpy().tolist() == [2, 3, 4, 5, 20, 21]


def test_delete_keeps_incoming_keys_valid_or_refuses():
    P = rs.Relation("P", 5, elastic=True)
    P.new_field("x", rs.f64).load(np.arange(5.0))
    Q = rs.Relation("Q", 2)
    Q.new_key_field("p", P).load([1, 4])
    S = P.subset("some", [0, 1, 4])
    P.delete([0, 2])
    assert Q.p.numpy().tolist() == [0, 2] and P.x.numpy().tolist() == [1, 3, 4]
    assert S.rows.tolist() == [0, 2]
    with pytest.raises(rs.DataError, match=r"Q\.p row 0 still points at deleted"):
        P.delete([0])
    assert P.size == 3  # refused: nothing changed
    R = rs.Relation("R", 2)
    with pytest.raises(rs.DataError, match="not elastic"):
        R.delete([0])


def test_delete_needs_elastic_relation_and_own_key():
    R = rs.Relation("R", 2)
    R.new_field("x", rs.f64)

    @rs.kernel
    def k(r):
        rs.delete(r)

    with pytest.raises(rs.KernelTypeError, match="elastic"):
        R.foreach(k, rs.Config(target="interp"))
