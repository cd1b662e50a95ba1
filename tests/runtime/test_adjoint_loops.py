"""Gradients through loops that accumulate into vector locals (forces summed over a cell's
vertices, over a grouping whose reads do not depend on the iteration), against central
differences, and the same bits on every target."""
import contextlib

import numpy as np

import relsim as rs
from tests.conftest import configured
from tests.test_tape import CONFIGS, agrees_with_central, same_bits_on_every_target


def springs(seed=0):
    rng = np.random.default_rng(seed)
    V = rs.Relation("V", 6)
    V.new_field("x", rs.vec(3, rs.f64)).load(rng.standard_normal((6, 3)))
    V.new_field("f", rs.vec(3, rs.f64))
    T = rs.Relation("T", 4)
    T.new_key_field("v", V, arity=4, values=rng.integers(0, 6, (4, 4)))
    T.new_field("k", rs.f64).load(rng.uniform(0.5, 1.5, 4))
    T.new_field("c", rs.vec(3, rs.f64))
    T.new_field("o", rs.vec(3, rs.f64)).load(rng.standard_normal((4, 3)))
    loss = rs.Global(rs.f64, 0.0)
    weight = rs.Global(rs.vec(3, rs.f64), (0.3, -0.2, 0.5))

    @rs.kernel
    def centre(t):
        c = rs.vec(3)(0.0, 0.0, 0.0)
        s = 0.0
        for i in range(4):
            d = t.v[i].x - t.o
            c = c + t.k * d * rs.norm(d)
            c -= 0.25 * t.v[i].x
            s += rs.dot(d, weight)
        t.c = c * s
        for i in range(4):
            t.v[i].f += c / (1.0 + s * s)

    @rs.kernel
    def measure(v):
        loss += rs.dot(v.f, v.f) + rs.dot(v.x, v.f)

    x0 = V.x.numpy(copy=True)

    def run(x, tape=None):
        V.x.load(x)
        V.f.load(0.0)
        with tape if tape is not None else contextlib.nullcontext():
            T.foreach(centre)
            loss.value = 0.0
            V.foreach(measure)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return V.x.grad.numpy(copy=True), T.k.grad.numpy(copy=True), np.array(weight.grad)

    return run, x0, T.k.numpy(copy=True)


def test_vector_accumulators_in_loops():
    run, x0, k0 = springs()
    dx, dk, dw = run(x0, rs.Tape())
    assert np.count_nonzero(dx) >= 12 and np.count_nonzero(dw) == 3
    agrees_with_central(dx, run, x0, what="x")
    answers = set()
    for config in CONFIGS.values():
        with configured(**config):
            run, x0, _ = springs()
            answers.add(b"".join(a.tobytes() for a in run(x0, rs.Tape())))
    assert len(answers) == 1


def test_an_entry_assigned_in_a_loop_is_differentiated_not_zero():
    """`a[0] = a[0] + ...` in a loop, `a` from before it: the vector is the loop's state
    (`state_loops.py`; it once gave a zero gradient without a word, then was refused)."""
    V = rs.Relation("V", 2)
    x0 = np.arange(6.0).reshape(2, 3)
    V.new_field("x", rs.vec(3, rs.f64)).load(x0)
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def entries(v):
        a = rs.vec(3)(0.0, 0.0, 0.0)
        for i in range(3):
            a[0] = a[0] + v.x[1] * v.x[1] * (i + 1.0)
        loss += a[0]

    def run(x, tape=None):
        V.x.load(x)
        with tape if tape is not None else contextlib.nullcontext():
            loss.value = 0.0
            V.foreach(entries)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return V.x.grad.numpy(copy=True)

    with configured(target="interp"):
        dx = run(x0, rs.Tape())
        assert np.array_equal(dx, [[0.0, 12.0, 0.0], [0.0, 48.0, 0.0]])
        agrees_with_central(dx, run, x0, what="x")


def nested(seed=0):
    rng = np.random.default_rng(seed)
    V = rs.Relation("V", 5)
    V.new_field("x", rs.f64).load(rng.uniform(-1.0, 1.0, 5))
    V.new_field("y", rs.vec(3, rs.f64)).load(rng.standard_normal((5, 3)))
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def nest(v):
        s = 0.0
        c = rs.vec(3)(0.0, 0.0, 0.0)
        for i in range(3):
            s += v.x * (i + 1.0)
            for j in range(2):
                s += v.x * v.x * (j - 0.5)
                c = c + (s_free(i, j) * v.x) * v.y
        loss += s * s + rs.dot(c, c) * s

    x0 = V.x.numpy(copy=True)

    def run(x, tape=None):
        V.x.load(x)
        with tape if tape is not None else contextlib.nullcontext():
            loss.value = 0.0
            V.foreach(nest)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return V.x.grad.numpy(copy=True), V.y.grad.numpy(copy=True)

    return run, x0


@rs.func
def s_free(i, j):
    return 0.5 + i - j


def test_nested_loops_accumulate_into_the_same_locals():
    """Loops nested in loops, accumulating into the same locals, used nonlinearly after them:
    the inner loop once started a copy of the outer accumulator, so the value after the loops
    (and every gradient through it) was the start's: a silent zero."""
    with configured(target="interp"):
        run, x0 = nested()
        dx, dy = run(x0, rs.Tape())
        assert np.count_nonzero(dx) == 5 and np.count_nonzero(dy) == 15
        agrees_with_central(dx, run, x0, what="x")
    def gradients():
        run, x0 = nested()
        return run(x0, rs.Tape())

    same_bits_on_every_target(gradients)
