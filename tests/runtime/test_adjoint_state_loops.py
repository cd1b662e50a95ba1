"""Gradients through loops that carry state from one iteration to the next (a while loop's
Newton iteration, Horner's rule, a vector map, a loop of run-time length, nested and in a
branch), reversed by recomputation (`relsim/runtime/adjoint/state_loops.py`): against central
differences, the same bits on every target, and what is refused at its line."""
import contextlib

import numpy as np

import relsim as rs
from tests.conftest import configured
from tests.test_tape import agrees_with_central, refused, same_bits_on_every_target


def iterations():
    V = rs.Relation("V", 5)
    V.new_field("a", rs.f64).load(np.array([2.0, 3.0, 0.5, 7.0, 1.5]))
    V.new_field("b", rs.f64).load(np.array([0.3, -0.2, 0.1, 0.4, -0.6]))
    V.new_field("n", rs.i64).load(np.array([0, 1, 2, 3, 5]))
    V.new_field("x", rs.vec(2, rs.f64)).load(np.array([[0.1, 0.2], [0.3, 0.1], [0.5, 0.5],
                                                      [0.2, 0.9], [-0.4, 0.3]]))
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def iterate(v):
        x = v.a
        it = 0
        while abs(x * x - v.a) > 1e-12 * v.a and it < 60:  # sqrt(a) by Newton's method
            x = x - (x * x - v.a) / (2.0 * x)
            it += 1
        y = 0.0
        for i in range(4):  # Horner's rule
            y = y * v.b + x * (i + 1.0)
        z = v.x
        if v.b > -0.5:
            for _ in range(3):  # a vector map, in a branch
                z = rs.vec(2)(z[1], z[0] * v.b + 0.5)
        w = v.b
        for _ in range(v.n):  # a run-time count, a loop inside
            for j in range(2):
                w = w * (1.0 - 0.1 * w) + 0.01 * j
        loss += y * y + x + rs.dot(z, z) + w * w * x

    a0, b0, x0 = (V.a.numpy(copy=True), V.b.numpy(copy=True), V.x.numpy(copy=True))

    def run(a, tape=None, b=None, x=None):
        V.a.load(a)
        V.b.load(b0 if b is None else b)
        V.x.load(x0 if x is None else x)
        with tape if tape is not None else contextlib.nullcontext():
            loss.value = 0.0
            V.foreach(iterate)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return V.a.grad.numpy(copy=True), V.b.grad.numpy(copy=True), V.x.grad.numpy(copy=True)

    run.a0, run.b0, run.x0 = a0, b0, x0
    return run


def test_state_loops_agree_with_central_differences():
    with configured(target="interp"):
        run = iterations()
        da, db, dx = run(run.a0, rs.Tape())
        assert np.count_nonzero(da) == 5 and np.count_nonzero(db) == 5
        assert np.count_nonzero(dx) == 10
        agrees_with_central(da, run, run.a0, what="a")
        agrees_with_central(db, lambda b: run(run.a0, b=b), run.b0, what="b")
        agrees_with_central(dx, lambda x: run(run.a0, x=x), run.x0, what="x")


def test_state_loops_are_the_same_bits_on_every_target():
    def gradients():
        run = iterations()
        return run(run.a0, rs.Tape())

    same_bits_on_every_target(gradients)


def test_state_loops_that_cannot_be_reversed_are_refused_at_their_line():
    R = rs.Relation("R", 4)
    R.new_field("f", rs.f64).load(np.arange(4.0))
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def walk(r):
        x = r.f
        i = 0
        while i < 3:  # reads at keys the iteration computes: adjoints inside the loop
            x = x * 0.5 + rs.at(R, i).f
            i += 1
        loss += x * x

    msg = refused(walk, R, loss=loss)
    assert "carrying state that reads float fields through keys" in msg and "while i < 3" in msg

    @rs.kernel
    def mixed(r):
        s = 0.0
        for _ in range(3):
            x = r.f
            while x > 0.5:
                x = x * 0.5
                s = s + x
            s += x
        loss += s * s

    msg = refused(mixed, R, loss=loss)
    assert "carrying local 's'" in msg and "inside a loop accumulating into it" in msg

    R.new_key_field("next", R, values=[1, 2, 3, 0])

    @rs.kernel
    def hop(r):
        k = r
        for _ in range(2):
            k = k.next
        loss += k.f * r.f

    msg = refused(hop, R, loss=loss)
    assert "carrying key local 'k'" in msg and "for _ in range(2):" in msg

    @rs.kernel
    def chosen(r):
        k = r.next
        if r.f > 1.5:
            k = r
        loss += k.f * k.f

    msg = refused(chosen, R, loss=loss)
    assert "key local 'k', which the branches of this if set" in msg and "if r.f > 1.5:" in msg
