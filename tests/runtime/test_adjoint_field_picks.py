"""Gradients through min/max reductions into float fields through keys (the adjoint pass's
`field_picks.py`): the derivative goes to the contribution the fold chose per target row (ties:
the first in fold order), or to the row's value before the launch when none beat it; against
central differences, with ties, and the same bits on every target."""
import contextlib

import numpy as np

import relsim as rs
from tests.conftest import configured
from tests.test_tape import CONFIGS, agrees_with_central


def graph(op, ties=False, seed=3):
    rng = np.random.default_rng(seed)
    V = rs.Relation("V", 7)
    V.new_field("x", rs.f64).load(rng.standard_normal(7))
    V.new_field("m", rs.f64)
    E = rs.Relation("E", 12)
    heads, tails = rng.integers(0, 7, 12), rng.integers(0, 7, 12)
    if ties:
        tails[:] = tails[0]  # every head's contributions from site 1 tie
    E.new_key_field("head", V, values=heads)
    E.new_key_field("tail", V, values=tails)
    w = rng.uniform(0.5, 1.5, 12)
    if ties:
        w[:] = 1.0  # equal contributions: the first in fold order wins
    E.new_field("w", rs.f64).load(w)
    m0 = rng.uniform(-0.6, 0.6, 7)  # some rows keep their start value
    loss = rs.Global(rs.f64, 0.0)

    if op == "min":
        @rs.kernel
        def spread(e):
            e.head.m = min(e.head.m, e.w * e.tail.x)
            if e.w > 0.7:
                e.tail.m = min(e.tail.m, e.w * e.head.x + 0.25)
    else:
        @rs.kernel
        def spread(e):
            e.head.m = max(e.head.m, e.w * e.tail.x)
            if e.w > 0.7:
                e.tail.m = max(e.tail.m, e.w * e.head.x + 0.25)

    @rs.kernel
    def measure(v):
        loss += v.m * v.m * (1.0 + v.x) + v.m

    def run(x=None, wv=None, m=None, tape=None):
        V.x.load(V.x.numpy(copy=True) if x is None else x)
        E.w.load(w if wv is None else wv)
        V.m.load(m0 if m is None else m)
        with tape if tape is not None else contextlib.nullcontext():
            E.foreach(spread)
            loss.value = 0.0
            V.foreach(measure)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return V.x.grad.numpy(copy=True), E.w.grad.numpy(copy=True), V.m.grad.numpy(copy=True)

    run.keys = (heads, tails)
    return run, V.x.numpy(copy=True), w, m0


def check(op, ties=False):
    run, x0, w0, m0 = graph(op, ties)
    dx, dw, dm = run(tape=rs.Tape())
    for grad, base, arg in ((dx, x0, "x"), (dw, w0, "wv"), (dm, m0, "m")):
        agrees_with_central(grad, lambda v, arg=arg: run(**{arg: v}), base, h=1e-7,
                            what=(op, arg))
    return dx, dw, dm


def test_min_and_max_into_fields_against_central_differences():
    for op in ("min", "max"):
        dx, dw, dm = check(op)
        assert np.count_nonzero(dw) >= 3 and np.count_nonzero(dm) >= 1
        assert np.count_nonzero(dm) < len(dm)  # some rows' start values lost


def test_ties_go_to_the_first_contribution():
    """All weights 1: edges with the same tail give a head equal contributions; the derivative
    goes to the first in fold order (edge, then site), as the fold kept it (a reference fold
    in NumPy says which); x and the start values against central differences."""
    run, x0, w0, m0 = graph("min", ties=True)
    dx, dw, dm = run(tape=rs.Tape())
    for grad, base, arg in ((dx, x0, "x"), (dm, m0, "m")):
        agrees_with_central(grad, lambda v, arg=arg: run(**{arg: v}), base, h=1e-7, what=arg)
    V_head, V_tail = run.keys
    m, chosen = m0.copy(), {}
    for e in range(12):
        for site, (v, c) in enumerate(((V_head[e], w0[e] * x0[V_tail[e]]),
                                       (V_tail[e], w0[e] * x0[V_head[e]] + 0.25))):
            if site == 1 and not w0[e] > 0.7:
                continue
            if c < m[v]:
                m[v], chosen[v] = c, (e, site)
    assert len(set(chosen.values())) < 12  # (some edge lost a tie or its row)
    dl = 2.0 * m * (1.0 + x0) + 1.0
    want = np.zeros(12)
    for v, (e, site) in chosen.items():
        want[e] += dl[v] * (x0[V_tail[e]] if site == 0 else x0[V_head[e]])
    assert np.allclose(dw, want, rtol=1e-12, atol=0.0), (dw, want)


def test_the_same_bits_on_every_target():
    answers = set()
    for config in CONFIGS.values():
        with configured(**config):
            for op in ("min", "max"):
                run, *_ = graph(op)
                answers.add((op, b"".join(a.tobytes() for a in run(tape=rs.Tape()))))
    assert len(answers) == 2
