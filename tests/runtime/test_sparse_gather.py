"""A key reduction into a few rows of a large relation folds only the rows that receive
contributions (the boundary faces of a mesh into its cells), with the same serial meaning."""
import dataclasses

import numpy as np
import pytest

import relsim as rs
from relsim.runtime.folds import host_folds
from tests.conftest import CPU_TARGETS


@pytest.fixture
def target(target):
    """These tests are about parked reduction slots: the cpu targets park every contribution
    (`Config.scatter="slots"`; the direct and split schemes are tests/runtime/test_scatter.py's)."""
    return dataclasses.replace(target, scatter="slots")


@pytest.mark.parametrize("parallel_from", [1 << 16, 1])
def test_reduction_into_few_target_rows(target, parallel_from, monkeypatch):
    monkeypatch.setattr(host_folds, "SPARSE_PARALLEL_ROWS", parallel_from)
    V = rs.Relation("V", 1000)
    B = rs.Relation("B", 5)
    B.new_key_field("cell", V).load([7, 3, 7, 999, 3])
    B.new_field("w", rs.vec(2, rs.f64)).load(np.array([[0.1, 1], [0.2, 2], [0.3, 3], [0.4, 4],
                                                       [1e16, 5]]))
    V.new_field("acc", rs.vec(2, rs.f64)).load(np.tile([1.0, -0.0], (1000, 1)))

    @rs.kernel
    def k(b):
        b.cell.acc += b.w
        b.cell.acc[1] -= b.w[0]

    B.foreach(k, target)
    want = np.tile([1.0, -0.0], (1000, 1))
    for r, c in enumerate([7, 3, 7, 999, 3]):  # serial meaning: ascending row, program order
        w = B.w.numpy()[r]
        want[c, 0] = want[c, 0] + w[0]
        want[c, 1] = want[c, 1] + w[1]
        want[c, 1] = want[c, 1] + -w[0]
    assert V.acc.numpy().tobytes() == want.tobytes()
    if target.target in CPU_TARGETS:  # the cpu binding's pending fold
        exe = k._last[3]
        pending, = exe.bindings[None].deferred  # the fold (left pending by the launch)
        fn, args = pending.fn, pending.args
        assert "rows" in fn.py_func.__name__ and args[1].tolist() == [3, 7, 999]
        parallel = target.target == "cpu" and parallel_from == 1
        assert fn.py_func.__name__.endswith("_parallel" if parallel else "_serial")
