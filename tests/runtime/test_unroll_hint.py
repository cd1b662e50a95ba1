"""A run-time loop with a constant trip count that indexes a captured constant tuple by its
variable (a lattice's velocities: 18-24x slower than rs.static, and grid offsets MPI cannot
know) is named at its line, once, with the rs.static loop to write; the two loops give the same
bits."""
import warnings

import numpy as np

import relsim as rs
from tests.conftest import configured

EX = (0, 1, 0, -1, 0)
EY = (0, 0, 1, 0, -1)
W = np.array([0.4, 0.15, 0.15, 0.15, 0.15])
DIRS = tuple(zip(range(5), EX, EY))


@rs.kernel
def pull_runtime(c):
    for i in range(5):
        c.fn[i] = W[i] * c(-EX[i], -EY[i]).f[i]


@rs.kernel
def pull_static(c):
    for i, ex, ey in rs.static(DIRS):
        c.fn[i] = W[i] * c(-ex, -ey).f[i]


@rs.kernel
def no_table(c):
    s = 0.0
    for i in range(5):  # indexes the row's own vector only: nothing to say
        s += c.f[i]
    for _ in range(c.n):  # a trip count known only when the kernel runs
        s += W[0]
    c.fn[0] = s


def grid():
    C = rs.Relation("C", 36)
    C.set_grid((6, 6), True)
    C.new_field("f", rs.vec(5)).load(np.random.default_rng(1).standard_normal((36, 5)))
    C.new_field("fn", rs.vec(5))
    C.new_field("n", rs.i64, init=2)
    return C


def said(kernel, C):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with configured(target="interp"):
            C.foreach(kernel)
    return [w for w in caught if w.category is rs.RelsimWarning]


def test_the_loop_is_named_at_its_line_with_the_static_loop_to_write():
    C = grid()
    (w,) = said(pull_runtime, C)
    assert w.filename == __file__ and w.lineno == 20
    text = str(w.message)
    assert text.startswith("in kernel 'pull_runtime': this loop runs at run time although its "
                           "trip count is a constant and it indexes the constant W[i]; write "
                           "`for i in rs.static(range(5)):` to unroll it")
    assert "line 20, in pull_runtime\n    for i in range(5):" in text
    runtime = C.fn.numpy(copy=True)
    assert said(pull_static, C) == []
    assert C.fn.numpy().tobytes() == runtime.tobytes()  # the same bits
    assert said(no_table, C) == []
