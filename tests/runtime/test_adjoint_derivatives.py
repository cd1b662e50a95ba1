"""The derivative rules' conventions (relsim/runtime/adjoint/derivatives.py): at a distance of
zero, where sqrt's partial is infinite and the factors before it are zero, the gradient is the
zero central differences see, not NaN."""
import contextlib
import math

import numpy as np

import relsim as rs
from tests.conftest import configured
from tests.test_tape import agrees_with_central


def test_a_distance_of_zero_passes_zero_back_not_nan():
    V = rs.Relation("V", 4)
    x0 = np.array([[0.1, 0.2, 0.3], [0.5, -0.4, 0.2], [1.0, 0.0, 0.0], [0.3, 0.3, 0.3]])
    V.new_field("x", rs.vec(3, rs.f64)).load(x0)
    V.new_field("y", rs.vec(3, rs.f64)).load(np.array([[0.1, 0.2, 0.3], [0.0, 0.1, 0.2],
                                                       [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def spread(v):
        d = v.x - v.y  # zero in rows 0 and 2
        r = math.sqrt(rs.dot(d, d))
        loss += (1.0 - r) ** 3 + 0.5 * r * r

    def run(x, tape=None):
        V.x.load(x)
        with tape if tape is not None else contextlib.nullcontext():
            loss.value = 0.0
            V.foreach(spread)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return V.x.grad.numpy(copy=True)

    with configured(target="interp"):
        dx = run(x0, rs.Tape())
        assert np.isfinite(dx).all() and not dx[[0, 2]].any()
        assert np.count_nonzero(dx[[1, 3]]) == 5  # (row 1 moves nothing along z)
        agrees_with_central(dx, run, x0, what="x")
