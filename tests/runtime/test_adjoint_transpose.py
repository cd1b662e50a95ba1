"""Gradients through grouping loops that read their rows' float fields (cell lists: molecular
dynamics, SPH), transposed (`relsim/runtime/adjoint/transpose.py`): against central
differences, the same bits on every target, and the loops that cannot be transposed refused at
their line."""
import contextlib
import math

import numpy as np
import pytest

import relsim as rs
from relsim.domains import grid, particles
from tests.conftest import configured
from tests.test_tape import agrees_with_central, refused, same_bits_on_every_target

SIDE = 3.0  # a periodic box of 3 x 3 x 3 cells of width 1


def cells(seed=0, n=40, fluid_only=False):
    """Particles in a periodic box, a density and a pair force over the 27 neighbour cells (an
    inlined rs.func, a cut-off branch, distances through sqrt, vector and scalar accumulators, a
    local from before the loop read in it, the force optionally only for the "fluid" rows), two
    steps of motion (the particles move between cells), a loss: run(x[, tape]) -> the loss, or
    the gradients with respect to the start's positions, velocities and masses."""
    rng = np.random.default_rng(seed)
    g = grid.Grid((3, 3, 3), spacing=SIDE / 3, periodic=True)
    parts = particles.Particles(g, rng.uniform(0.0, SIDE, (n, 3)), name="atoms", fields={
        "f": (rs.vec(3), (0.0, 0.0, 0.0)), "m": (rs.f64, 1.0), "rho": (rs.f64, 0.0),
        "fluid": (rs.bool_, True)})
    parts.locate()
    P = parts.rel
    P.m.load(rng.uniform(0.5, 1.5, n))
    P.fluid.load(rng.uniform(size=n) < (0.7 if fluid_only else 2.0))
    x0, v0 = P.pos.numpy(copy=True), rng.standard_normal((n, 3)) * 0.05
    w = P.new_field("w", rs.vec(3))
    w.load(rng.standard_normal((n, 3)))
    reach2, box, dt = rs.Global(rs.f64, 0.81), rs.Global(rs.f64, SIDE), rs.Global(rs.f64, 0.02)
    loss = rs.Global(rs.f64, 0.0)

    @rs.func
    def apart(p, q):  # q to p, the nearest image
        d = p.pos - q.pos
        return d - box * rs.vec(3)(round(d[0] / box), round(d[1] / box), round(d[2] / box))

    @rs.kernel
    def density(p):
        s = 0.0
        for k in range(27):
            for q in p.cell(k % 3 - 1, (k // 3) % 3 - 1, k // 9 - 1).particles:
                r2 = rs.dot(apart(p, q), apart(p, q))
                if r2 < reach2:  # (the row's own pair too: a distance of 0)
                    s += q.m * (1.0 - math.sqrt(r2) / 0.9) ** 3
        p.rho = s

    @rs.kernel
    def forces(p):
        f = rs.vec(3)(0.0, 0.0, 0.0)
        pm = p.m * (1.0 + 0.1 * p.rho)  # (read in the loop: kept per row for its transpose)
        if p.fluid:
            for k in range(27):
                for q in p.cell(k % 3 - 1, (k // 3) % 3 - 1, k // 9 - 1).particles:
                    d = apart(p, q)
                    r2 = rs.dot(d, d)
                    if r2 < reach2 and r2 > 0.0:
                        c = (1.0 - r2 / reach2) ** 2
                        f += (q.m * c * (p.rho + q.rho) * pm) * d + 0.1 * c * (q.vel - p.vel)
        p.f = f

    @rs.kernel
    def move(p):
        p.vel += dt * p.f / p.m
        x = p.pos + dt * p.vel
        p.pos = x - box * rs.vec(3)(math.floor(x[0] / box), math.floor(x[1] / box),
                                    math.floor(x[2] / box))

    @rs.kernel
    def measure(p):
        loss += rs.dot(p.w, p.pos) + 0.3 * rs.dot(p.vel, p.vel) + 0.05 * p.rho * p.rho

    def run(x, tape=None, v=None, m=None):
        P.pos.load(x)
        P.vel.load(v0 if v is None else v)
        if m is not None:
            P.m.load(m)
        with tape if tape is not None else contextlib.nullcontext():
            for _ in range(2):
                P.foreach(density)
                P.foreach(forces)
                P.foreach(move)
            loss.value = 0.0
            P.foreach(density)
            P.foreach(measure)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return P.pos.grad.numpy(copy=True), P.vel.grad.numpy(copy=True), \
            P.m.grad.numpy(copy=True)

    run.x0, run.v0, run.m0 = x0, v0, P.m.numpy(copy=True)
    return run


@pytest.mark.parametrize("fluid_only", [False, True])
def test_cell_list_gradients_agree_with_central_differences(fluid_only):
    """Every row's gradient, through two steps with pairs across cells and the periodic
    boundary, a branch around the loop (fluid rows only), against central differences."""
    with configured(target="cpu", threads=1):
        run = cells(fluid_only=fluid_only)
        dx, dv, dm = run(run.x0, rs.Tape())
        assert np.count_nonzero(dx) == dx.size and np.count_nonzero(dm) >= 30
        agrees_with_central(dx, run, run.x0, what="x")
        agrees_with_central(dv, lambda v: run(run.x0, v=v), run.v0, what="v")
        agrees_with_central(dm, lambda m: run(run.x0, m=m), run.m0, what="m")


def test_cell_list_gradients_are_the_same_bits_on_every_target():
    def gradients():
        run = cells(seed=1, n=24, fluid_only=True)
        return run(run.x0, rs.Tape())

    same_bits_on_every_target(gradients)


def gather(seed=0):
    """Loops over the row's own groups: edges by their head (a scalar key) and triangles by
    their three vertices (a key vector), inside a branch and a constant loop whose variable the
    body reads; run(k[, tape], vol=) -> the loss, or the gradients."""
    rng = np.random.default_rng(seed)
    V = rs.Relation("V", 6)
    V.new_field("T", rs.f64).load(rng.uniform(0.5, 1.5, 6))
    V.new_field("on", rs.bool_).load(np.arange(6) != 4)
    E = rs.Relation("E", 14)
    E.new_key_field("head", V, values=rng.integers(0, 6, 14))
    E.new_field("k", rs.f64).load(rng.uniform(0.5, 1.5, 14))
    E.group_by("head", "ins")
    T = rs.Relation("T", 5)
    T.new_key_field("v", V, arity=3, values=rng.integers(0, 6, (5, 3)))
    T.new_field("vol", rs.f64).load(rng.uniform(0.5, 1.5, 5))
    T.group_by("v", "tris")
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def collect(v):
        s = 0.0
        c = 0.0
        if v.on:
            for e in v.ins:
                s += e.k * e.k * v.T
            for i in range(2):
                for t in v.tris:
                    c += t.vol * (1.0 + v.T * i)
        loss += s * s + c * s + c * c

    def run(k, tape=None, vol=None, T0=None):
        E.k.load(k)
        if vol is not None:
            T.vol.load(vol)
        if T0 is not None:
            V.T.load(T0)
        with tape if tape is not None else contextlib.nullcontext():
            loss.value = 0.0
            V.foreach(collect)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return E.k.grad.numpy(copy=True), T.vol.grad.numpy(copy=True), \
            V.T.grad.numpy(copy=True)

    run.k0, run.vol0, run.T0 = E.k.numpy(copy=True), T.vol.numpy(copy=True), \
        V.T.numpy(copy=True)
    return run


def test_gathers_over_the_rows_own_groups():
    with configured(target="interp"):
        run = gather()
        dk, dvol, dT = run(run.k0, rs.Tape())
        assert np.count_nonzero(dk) >= 8 and np.count_nonzero(dvol) == 5
        agrees_with_central(dk, run, run.k0, what="k")
        agrees_with_central(dvol, lambda v: run(run.k0, vol=v), run.vol0, what="vol")
        agrees_with_central(dT, lambda T: run(run.k0, T0=T), run.T0, what="T")
    def gradients():
        run = gather()
        return run(run.k0, rs.Tape())

    same_bits_on_every_target(gradients)


def test_loops_that_cannot_be_transposed_are_refused_at_their_line():
    g = grid.Grid((3, 3, 3), spacing=1.0, periodic=True)
    parts = particles.Particles(g, np.random.default_rng(0).uniform(0.0, 3.0, (8, 3)),
                                name="atoms", fields={"m": (rs.f64, 1.0)})
    parts.locate()
    P = parts.rel
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def one_sided(p):
        s = 0.0
        for k in range(3):
            for q in p.cell(k - 1, 0, k % 2).particles:
                s += q.m
        loss += s * s

    msg = refused(one_sided, P, loss=loss)
    assert "offsets that are not symmetric" in msg and "p.cell(k - 1, 0, k % 2)" in msg

    @rs.kernel
    def changing(p):
        s = 0.0
        for k in range(27):
            w = p.m * k
            for q in p.cell(k % 3 - 1, (k // 3) % 3 - 1, k // 9 - 1).particles:
                s += q.m * w
        loss += s * s

    msg = refused(changing, P, loss=loss)
    assert "local 'w', which changes in the loops around" in msg and "s += q.m * w" in msg

    @rs.kernel
    def tested(p):
        s = 0.0
        big = p.m > 0.5
        if big:
            for q in p.cell.particles:
                s += q.m
        loss += s * s

    msg = refused(tested, P, loss=loss)
    assert "branch testing local 'big'" in msg and "if big:" in msg

    @rs.kernel
    def restarted(p):
        t = 0.0
        for k in range(27):
            s = 0.0
            for q in p.cell(k % 3 - 1, (k // 3) % 3 - 1, k // 9 - 1).particles:
                s += q.m
            t += s * s
        loss += t

    msg = refused(restarted, P, loss=loss)
    assert "accumulating into local 's', which the loops around it do not" in msg


def test_checkpointed_tapes_give_the_same_bits_through_transposed_loops():
    answers = set()
    with configured(target="cpu", threads=1):
        for every in (None, 1, 4):
            run = cells(seed=5, n=30, fluid_only=True)
            tape = rs.Tape(checkpoint_every=every)
            answers.add(b"".join(a.tobytes() for a in run(run.x0, tape)))
    assert len(answers) == 1


def test_the_gallery_tetheat_set_up_gathers_over_tets_and_edges():
    """tetheat's capacity kernel gathers its tets' volumes and its edges' conductances (loops
    over the vertex's own groups, through key vectors) and takes a min into a Global: its
    gradient with respect to the vertex positions, through the set-up and three steps,
    against central differences."""
    from relsim.domains import tetmesh
    from relsim_simulations import tetheat

    mesh = tetmesh.box(2)
    setup, conduct, update, dt, _ = tetheat.build(mesh)
    V, E = mesh.vertices, mesh.edges
    V.T.load(tetheat.initial_temperature(mesh))
    T0 = V.T.numpy(copy=True)
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def measure(v):
        loss += v.c * v.T + 0.1 * v.Q * v.Q

    x0 = V.pos.numpy(copy=True) + np.random.default_rng(0).uniform(-0.01, 0.01, (V.size, 3))

    def run(x, tape=None):
        V.pos.load(x)
        E.k.load(0.0)  # (the set-up adds into it)
        V.T.load(T0)
        with tape if tape is not None else contextlib.nullcontext():
            setup()
            dt.value = 1e-3  # (the host's time step: a constant to the tape)
            for _ in range(3):
                E.foreach(conduct)
                V.foreach(update)
            loss.value = 0.0
            V.foreach(measure)
        if tape is None:
            return loss.value
        tape.backward(loss)
        return V.pos.grad.numpy(copy=True)

    with configured(target="interp"):
        dx = run(x0, rs.Tape())
        assert np.count_nonzero(dx) == dx.size
        agrees_with_central(dx, run, x0, what="pos")
