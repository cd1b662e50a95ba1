"""Double buffers: `Field.swap` each step gives what copying gives, on every target; on the cpu
a launch takes up the binding it made for the arrays it finds again (`CpuExecutable.rebind`)
instead of binding anew after every swap, and binds anew whenever anything else changed; keys
that changed re-bind the launches that computed something from them, not the others (keys
changed in their arrays, moving particles: those keep their bindings; keys loaded as new
arrays: those take the new arrays in, `swap_keys`)."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime import execute
from tests.conftest import chain_mesh

total = rs.Global(rs.f64, 0.0)


@rs.kernel
def copy_u(v):
    v.un = v.u


@rs.kernel
def diffuse(e):
    e.head.un += 0.25 * (e.tail.u - e.head.u)  # into the other buffer, through a key


@rs.kernel
def energy(v):
    total += v.un * v.un


def _mesh(n=9):
    V, E = chain_mesh(n)
    V.new_field("u", rs.f64).load(np.sin(np.arange(n) * 1.3))
    V.new_field("un", rs.f64)
    return V, E


def _steps(V, E, cfg, steps, swap):
    out = []
    for _ in range(steps):
        V.foreach(copy_u, cfg)
        E.foreach(diffuse, cfg)
        total.value = 0.0
        V.foreach(energy, cfg)
        out.append(total.value)
        if swap:
            V.u.swap(V.un)
        else:
            V.u.copy_from(V.un)
    return out, V.u.numpy().copy()


def test_swapping_gives_what_copying_gives(target):
    V, E = _mesh()
    swapped = _steps(V, E, target, 7, swap=True)
    V, E = _mesh()
    copied = _steps(V, E, target, 7, swap=False)
    assert swapped[0] == copied[0]
    assert swapped[1].tobytes() == copied[1].tobytes()
    head, tail = E.head.numpy(), E.tail.numpy()  # and both what NumPy computes
    u = np.sin(np.arange(9) * 1.3)
    for _ in range(7):
        un = u.copy()
        np.add.at(un, head, 0.25 * (u[tail] - u[head]))
        u = un
    np.testing.assert_allclose(swapped[1], u, rtol=1e-14, atol=1e-15)


def _count_binds(monkeypatch, kernels, relations, cfg):
    calls = []
    for k, R in zip(kernels, relations):
        exe = execute.executable(k, R, cfg)
        bind = exe.bind
        monkeypatch.setattr(exe, "bind", lambda *a, bind=bind: calls.append(1) or bind(*a))
    return calls


def test_a_double_buffer_binds_twice_not_every_step(monkeypatch):
    cfg = rs.Config(target="cpu", parallel_threshold=1)
    V, E = _mesh()
    _steps(V, E, cfg, 2, swap=True)  # each kernel bound for both states of the buffers
    calls = _count_binds(monkeypatch, (copy_u, diffuse, energy), (V, E, V), cfg)
    _steps(V, E, cfg, 6, swap=True)
    assert calls == []
    exe = execute.executable(diffuse, E, cfg)
    bound = []
    for _ in range(3):
        E.foreach(diffuse, cfg)
        bound.append(exe.bindings[None])
        V.u.swap(V.un)
    assert bound[0] is bound[2] and bound[1] is not bound[0]
    V.u.swap(V.un)  # twice between launches: the arrays of the binding of the last launch
    E.foreach(diffuse, cfg)
    assert exe.bindings[None] is bound[2] and calls == []


def test_anything_else_changed_binds_anew(monkeypatch):
    cfg = rs.Config(target="cpu", parallel_threshold=1)
    V, E = _mesh()
    _steps(V, E, cfg, 2, swap=True)
    calls = _count_binds(monkeypatch, (diffuse,), (E,), cfg)
    head = E.head.numpy()[::-1].copy()  # other keys while the buffers are swapped
    E.head.load(head)
    V.u.swap(V.un)
    V.foreach(copy_u, cfg)
    E.foreach(diffuse, cfg)
    assert len(calls) == 1  # the binding from before the keys changed is not taken up
    u = V.u.numpy()
    want = u.copy()
    np.add.at(want, head, 0.25 * (u[E.tail.numpy()] - u[head]))
    np.testing.assert_allclose(V.un.numpy(), want, rtol=1e-14, atol=1e-15)
    other = V.new_field("w", rs.f64)  # a new field: the schema changed
    other.swap(V.un)
    V.foreach(copy_u, cfg)
    assert (V.un.numpy() == V.u.numpy()).all() and not (other.numpy() == V.u.numpy()).all()


@rs.kernel
def drift(p):
    p.pos = p.pos + p.vel  # moves the particles: their `cell` keys are computed again


@rs.kernel
def count_in_cell(p):
    p.n = 0.0
    for _q in p.cell.particles:  # reads the keys and the cell lists
        p.n += 1.0


def _moving_particles():
    from relsim.domains import grid, particles
    g = grid.Grid((4, 4), spacing=0.25, periodic=True)
    rng = np.random.default_rng(3)
    pts = particles.Particles(g, rng.random((40, 2)), 0.3 * rng.random((40, 2)) - 0.15)
    pts.locate()
    pts.rel.new_field("n", rs.f64)
    return g, pts


def _count_swaps(monkeypatch, kernel, relation, cfg):
    """The launches of `kernel` over `relation` that took new keys into their binding."""
    exe, calls = execute.executable(kernel, relation, cfg), []
    swap = exe.swap_keys

    def counted(*a):
        b = swap(*a)
        if b is not None:
            calls.append(1)
        return b

    monkeypatch.setattr(exe, "swap_keys", counted)
    return calls


def _new_arrays(P):
    """The particles' keys loaded as a new array (the same keys): their cell lists are built
    into new arrays too."""
    P.cell.load(P.cell.numpy(copy=True))


@pytest.mark.parametrize("anew", [False, True])
def test_moving_keys_rebind_only_the_launches_that_read_them(monkeypatch, anew):
    """Particles that move get new `cell` keys each step, in the key field's own array (or,
    with `anew`, loaded as a new array): the launch reading the keys keeps its binding (with
    `anew`, takes the new keys and cell lists into it) and sees them without binding anew, the
    one that does not keeps its binding."""
    cfg = rs.Config(target="cpu", parallel_threshold=1)
    g, pts = _moving_particles()
    P = pts.rel
    for _ in range(2):
        P.foreach(drift, cfg)
        P.foreach(count_in_cell, cfg)
    drifts = _count_binds(monkeypatch, (drift,), (P,), cfg)
    counts = _count_binds(monkeypatch, (count_in_cell,), (P,), cfg)
    swaps = _count_swaps(monkeypatch, count_in_cell, P, cfg)
    exe = execute.executable(count_in_cell, P, cfg)
    kept = exe.bindings[None]
    for _ in range(5):
        P.foreach(drift, cfg)
        if anew:
            _new_arrays(P)
        P.foreach(count_in_cell, cfg)
        assert (exe.bindings[None] is kept) != anew
        cells = P.cell.numpy()
        want = np.bincount(cells, minlength=16)[cells]
        assert (P.n.numpy() == want).all()  # the cell lists of the positions just written
        wrapped = np.floor(np.mod(P.pos.numpy(), 1.0) * 4).astype(int)
        assert (cells == wrapped[:, 1] * 4 + wrapped[:, 0]).all()  # (x fastest)
    assert drifts == [] and counts == [] and len(swaps) == (5 if anew else 0)


@rs.kernel
def deposit(p):
    p.cell.mass += p.w  # a reduction into the cells through the moving keys


pairs = rs.Global(rs.f64, 0.0)


@rs.kernel
def pair_sum(p):
    s = 0.0
    for q in p.cell.particles:
        s += p.w * q.pos[0] + 0.1 * q.w
    pairs += s  # a float64 Global sum (exact)


def test_moving_keys_bind_anew_where_the_binding_was_computed_from_them(monkeypatch):
    """A kernel reducing into the cells through the keys holds a plan made from their
    contents: it binds anew each step, and each step's cell sums are those of the new keys."""
    cfg = rs.Config(target="cpu", parallel_threshold=1)
    g, pts = _moving_particles()
    P = pts.rel
    P.new_field("w", rs.f64).load(np.random.default_rng(4).random(P.size))
    g.cells.new_field("mass", rs.f64)
    P.foreach(drift, cfg)
    P.foreach(deposit, cfg)
    binds = _count_binds(monkeypatch, (deposit,), (P,), cfg)
    swaps = _count_swaps(monkeypatch, deposit, P, cfg)
    for _ in range(4):
        before = g.cells.mass.numpy(copy=True)
        P.foreach(drift, cfg)
        P.foreach(deposit, cfg)
        want = before.copy()
        np.add.at(want, P.cell.numpy(), P.w.numpy())
        np.testing.assert_allclose(g.cells.mass.numpy(), want, rtol=1e-14)
    assert len(binds) == 4 and swaps == []


@pytest.mark.parametrize("threads, anew", [(1, False), (2, False), (1, True), (2, True)])
def test_swapped_keys_give_interps_bits_step_after_step(threads, anew, monkeypatch):
    """Global sums over the moving particles' cell lists (in lanes) through bindings kept
    while the keys changed in their arrays (with `anew`: bindings that took new key arrays):
    interp's bits at every step."""
    swaps = []

    def run(cfg):
        g, pts = _moving_particles()
        P = pts.rel
        P.new_field("w", rs.f64).load(np.random.default_rng(5).random(P.size) * 1e3 - 500)
        out = []
        for step in range(6):
            if step == 1 and cfg.target == "cpu":
                swaps.append(_count_swaps(monkeypatch, pair_sum, P, cfg))
            P.foreach(drift, cfg)
            if anew:
                _new_arrays(P)
            pairs.value = 0.0
            P.foreach(pair_sum, cfg)
            out.append(pairs.value)
        return out, P.pos.numpy(copy=True)

    want, pos = run(rs.Config(target="interp"))
    got, gpos = run(rs.Config(target="cpu", parallel_threshold=1, threads=threads))
    assert got == want and (gpos == pos).all()
    # (each step's launch kept its binding, or took the new key arrays into it)
    assert len(swaps[0]) == (5 if anew else 0)


@rs.kernel
def tie_sum(p):
    pairs += p.w * p.w + p.cell.mass  # (reads the moving keys)


@pytest.mark.parametrize("threads, anew", [(1, False), (2, False), (1, True), (2, True)])
def test_a_swapped_binding_re_runs_its_slots_with_the_new_keys(threads, anew, monkeypatch):
    """Squares 2^52 + 2^52 + 1 plus an even number from the cells: an exact tie the lanes
    cannot round, each step, so the launch runs its slots again (`LaneSums.rerun`); with
    stale keys there it would add the old cells' numbers and round the other way (keys
    changed in their array: the binding kept; `anew`: new key arrays taken in)."""
    from relsim.runtime.backends.cpu import lanes

    def run(cfg):
        g, pts = _moving_particles()
        P = pts.rel
        P.new_field("w", rs.f64).load([2.0 ** 26, 2.0 ** 26, 1.0] + [0.0] * (P.size - 3))
        g.cells.new_field("mass", rs.f64).load(2.0 * np.arange(g.cells.size))
        out, swaps = [], []
        for step in range(6):
            if step == 1 and cfg.target == "cpu":
                swaps = _count_swaps(monkeypatch, tie_sum, P, cfg)
            P.foreach(drift, cfg)
            if anew:
                _new_arrays(P)
            pairs.value = 0.0
            P.foreach(tie_sum, cfg)
            out.append((pairs.value, P.cell.numpy().tolist()))
        return out, swaps

    want, _ = run(rs.Config(target="interp"))
    before = lanes.EXACT_PATH["count"]
    got, swaps = run(rs.Config(target="cpu", parallel_threshold=1, threads=threads))
    assert got == want and len(swaps) == (5 if anew else 0)
    assert lanes.EXACT_PATH["count"] >= before + 6  # (every step)
    assert len({tuple(cells) for _, cells in want}) > 1  # (the particles changed cells)
