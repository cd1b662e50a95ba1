"""Captured steps over moving particles: the keys that follow the positions (`KeyField.follow`:
a grid's cells) and the cell lists over them are computed again after the launch that moves
the particles, into the arrays they had, so the step keeps one plan and its launches their
bindings; a launch that computed something from the keys (a reduction into the cells through
them) is not kept in a segment, and every replay gives the launches' bits."""
import math

import numpy as np
import pytest

import relsim as rs
from relsim.domains import grid, particles
from tests.conftest import held_in_tier_0

DT = 0.05


def _world(seed=4, n=40, periodic=True):
    g = grid.Grid((6, 6), spacing=1.0 / 6, periodic=periodic)
    rng = np.random.default_rng(seed)
    atoms = particles.Particles(g, rng.uniform(0.05, 0.95, (n, 2)),
                                rng.uniform(-1.0, 1.0, (n, 2)))
    atoms.locate()
    P, C = atoms.rel, g.cells
    P.new_field("mass", rs.f64).load(rng.uniform(0.5, 2.0, n))
    P.new_field("crowd", rs.f64)
    C.new_field("m", rs.f64)
    return g, P, C


@rs.kernel
def move(p):
    x = p.pos + DT * p.vel
    p.pos = x - rs.vec(2)(math.floor(x[0]), math.floor(x[1]))  # (the unit box, periodic)


@rs.kernel
def move_bounded(p):
    p.pos = p.pos + DT * p.vel


@rs.kernel
def crowd(p):  # reads the cell lists around the particle's cell (nothing bound from them)
    s = 0.0
    for k in range(9):
        for q in p.cell(k % 3 - 1, k // 3 - 1).particles:
            s += q.mass
    p.crowd = s


@rs.kernel
def weigh(p):
    p.crowd = p.cell.m


@rs.kernel
def clear(c):
    c.m = 0.0


@rs.kernel
def deposit(p):  # a reduction into the cells through the keys (its binding plans a scatter)
    p.cell.m += p.mass


@rs.kernel
def push(p):
    p.vel = p.vel * (1.0 - 0.01 * p.cell.m) + rs.vec(2)(0.001 * p.crowd, 0.0)


def _step(P, C, cfg):
    P.foreach(move, cfg)
    P.foreach(crowd, cfg)
    C.foreach(clear, cfg)
    P.foreach(deposit, cfg)
    P.foreach(push, cfg)


def _around(c):
    """The 3 x 3 cells around cell c of the 6 x 6 periodic grid."""
    i, j = c % 6, c // 6
    return [(i + di) % 6 + 6 * ((j + dj) % 6) for dj in (-1, 0, 1) for di in (-1, 0, 1)]


def _state(P, C):
    return [f.numpy(copy=True).tobytes() for f in (P.pos, P.vel, P.crowd, C.m)] + \
        [P.cell.numpy(copy=True).tolist()]


@pytest.mark.parametrize("threads, scatter, compiled", [
    (1, "auto", True), (2, "auto", True), (2, "slots", True), (2, "slots", False)])
def test_a_captured_particle_step_recomputes_cells_in_place_with_the_launches_bits(
        threads, scatter, compiled):
    """(`compiled`: the grid's compiled rule inside the step; else the rule on the host, in a
    host stop of the step)"""
    cfg = rs.Config(target="cpu", threads=threads, parallel_threshold=1, scatter=scatter)
    _, P, C = _world()
    _, Q, D = _world()
    if not compiled:
        P.cell.follow(P.pos, P.cell._derive)  # (the Python rule alone)
    with rs.capture() as step:
        _step(P, C, cfg)
    step.compile()
    _step(Q, D, cfg)
    step()  # (the plan for the keys' own array: made once)
    _step(Q, D, cfg)
    keys, version = P.cell._stored(), P.structure_version
    offsets = C.grouping("particles").offsets()
    for _ in range(6):
        step()
        _step(Q, D, cfg)
        assert _state(P, C) == _state(Q, D)
        # (and what the launches computed from the keys is the new keys')
        cells, mass = P.cell.numpy(), P.mass.numpy()
        assert np.allclose(C.m.numpy(), np.bincount(cells, mass, minlength=C.size), rtol=1e-14)
        crowd = [mass[np.isin(cells, _around(int(c)))].sum() for c in cells]
        assert np.allclose(P.crowd.numpy(), crowd, rtol=1e-14)
    # the keys and cell lists changed in their arrays: no re-binding, one plan
    assert P.cell._stored() is keys and C.grouping("particles").offsets() is offsets
    assert P.structure_version == version and len(step.plans) == 1
    assert P.cell.numpy().tolist() != _world()[1].cell.numpy().tolist()  # (they moved)
    assert step.segments >= 1


def test_particles_the_host_moves_between_replays_are_binned_before_the_step():
    cfg = rs.Config(target="cpu", threads=1, parallel_threshold=1)
    _, P, C = _world()
    _, Q, D = _world()
    with rs.capture() as step:
        P.foreach(crowd, cfg)  # (reads the cells before any launch of the step moves them)
        P.foreach(move, cfg)
    step.compile()
    Q.foreach(crowd, cfg)
    Q.foreach(move, cfg)
    jump = np.random.default_rng(9).uniform(0.0, 1.0, (P.size, 2))
    for k in range(4):
        if k == 2:
            P.pos.load(jump)
            Q.pos.load(jump)
        step()
        Q.foreach(crowd, cfg)
        Q.foreach(move, cfg)
        assert _state(P, C) == _state(Q, D)


@rs.kernel
def fling(p):  # far into other images of the periodic box: too far to wrap in integers
    p.pos = p.pos + rs.vec(2)(p.mass * 1e17, 0.0)


def test_cells_the_compiled_rule_leaves_to_the_host_are_binned_there_and_the_step_goes_on():
    cfg = rs.Config(target="cpu", threads=1)
    _, P, C = _world()
    _, Q, D = _world()
    with rs.capture() as step:
        P.foreach(fling, cfg)
        P.foreach(weigh, cfg)
        P.foreach(move, cfg)
    step.compile()
    Q.foreach(fling, cfg)
    Q.foreach(weigh, cfg)
    Q.foreach(move, cfg)
    for _ in range(3):
        step()
        for k in (fling, weigh, move):
            Q.foreach(k, cfg)
        assert _state(P, C) == _state(Q, D)
    assert step.segments == 1


def test_a_particle_leaving_a_bounded_grid_in_a_captured_step_is_named():
    cfg = rs.Config(target="cpu", threads=1)
    _, P, _ = _world(periodic=False)
    P.vel.load(np.tile([0.0, 0.4], (P.size, 1)))  # (upwards: out within 3 replays)
    with rs.capture() as step:
        P.foreach(move_bounded, cfg)
        P.foreach(weigh, cfg)
    step.compile()
    with pytest.raises(rs.DomainError, match="lies outside the grid along axis 1"):
        for _ in range(10):
            step()
    assert step.segments == 1  # (raised inside it: the move, the cells, the reading launch)


def test_a_move_planned_in_tier_0_joins_the_compiled_call_once_it_ends():
    """The launch that moves the particles, first planned while in tier 0 (its parallel
    variant still compiling: it replays as a launch, the cells binned when next read), is
    planned again once it leaves tier 0: one compiled call with the binning, the same bits."""
    from relsim.runtime import execute
    cfg = rs.Config(target="cpu", segments="now")
    _, P, C = _world()
    _, Q, D = _world()
    exe = execute.executable(move, P, cfg)
    ready = held_in_tier_0([exe])
    with rs.capture() as step:
        P.foreach(move, cfg)
        P.foreach(crowd, cfg)
    step()
    assert step.segments == 0 and exe.capture_later()
    ready.append(True)
    for _ in range(3):
        step()
    assert step.segments == 1
    for _ in range(5):
        Q.foreach(move, cfg)
        Q.foreach(crowd, cfg)
    assert _state(P, C) == _state(Q, D)
