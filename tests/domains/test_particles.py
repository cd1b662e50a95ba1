"""Particles: inserted and moved particles are binned when the cell keys or the cell lists are
next read (no second locate() needed for them), and numpy() views of the elastic relation's
fields go stale loudly, not silently, when rows are inserted or deleted."""
import numpy as np
import pytest

import relsim as rs
from relsim.domains import grid, particles

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized


def setup(n_cells=4):
    g = grid.Grid((n_cells, n_cells), spacing=1.0 / n_cells)
    pos = np.array([[0.1, 0.1], [0.9, 0.1], [0.6, 0.6]])
    p = particles.Particles(g, pos)
    p.locate()
    return g, p


def histogram(g, p):
    return np.bincount(g.cell_of(p.rel.pos.numpy()), minlength=g.cells.size)


def test_particles_inserted_by_a_kernel_are_in_their_cells(target):
    g, p = setup()
    C, P = g.cells, p.rel
    C.new_field("count", rs.i64)
    C.new_field("first_x", rs.f64, init=-1.0)
    C.subset("sources", [5, 10])

    @rs.kernel
    def emit(c):
        rs.insert(P, pos=c.center)
        rs.insert(P, pos=c.center + (0.1, 0.0))

    @rs.kernel
    def count(c):
        m = 0
        for q in c.particles:
            if m == 0:
                c.first_x = q.pos[0]
            m += 1
        c.count = m

    C.sources.foreach(emit, target)
    assert P.size == 7
    C.foreach(count, target)  # no locate(): the new rows were binned when the kernel read them
    assert np.array_equal(C.count.numpy(), histogram(g, p))
    assert C.count.numpy()[5] == 2 and C.first_x.numpy()[5] == P.pos.numpy()[3, 0] == 0.375
    assert np.array_equal(p.counts(), histogram(g, p))  # the host sees the same cell lists


def test_a_kernel_reading_the_cell_key_sees_inserted_particles_binned(target):
    g, p = setup()
    P = p.rel
    P.new_field("c", rs.vec(2, rs.f64))

    @rs.kernel
    def centre(q):
        q.c = q.cell.center

    P.insert(2, pos=[[0.3, 0.8], [0.7, 0.3]])
    P.foreach(centre, target)
    want = g.cells.center.numpy()[g.cell_of(P.pos.numpy())]
    assert np.array_equal(P.c.numpy(), want)
    assert np.array_equal(P.cell.numpy(), g.cell_of(P.pos.numpy()))


def test_inserted_then_deleted_particles_are_never_binned():
    g, p = setup()
    P = p.rel
    P.insert(2, pos=[[5.0, 5.0], [0.3, 0.3]])  # the first lies outside the (bounded) grid
    P.delete([3])
    assert P.size == 4
    assert np.array_equal(p.counts(), histogram(g, p))


def test_an_inserted_particle_outside_the_grid_is_an_error_when_binned():
    g, p = setup()
    p.rel.insert(1, pos=[[0.5, 7.0]])
    for _ in range(2):  # and stays one until it is deleted or moved back
        with pytest.raises(rs.DomainError, match="outside the grid"):
            p.counts()
    p.rel.pos.numpy()[3] = (0.5, 0.7)
    assert np.array_equal(p.counts(), histogram(g, p))


def test_inserted_keys_given_explicitly_are_kept():
    g, p = setup()
    p.rel.insert(1, pos=[[0.1, 0.1]], cell=[15])  # the caller's key wins over the rule
    assert p.rel.cell.numpy()[3] == 15
    assert p.counts()[15] == 1


def test_elastic_views_are_current_until_rows_change_then_refuse():
    g, p = setup()
    P = p.rel
    view = P.pos.numpy()
    view[0] = (0.2, 0.2)  # a view: writes go to the field
    assert P.pos.numpy(copy=True)[0].tolist() == [0.2, 0.2]
    total = np.sum(view, axis=0)
    assert type(total) is np.ndarray and type(view + 1.0) is np.ndarray
    assert type(view[1:]) is np.ndarray and len(view) == 3
    view += 0.0  # in place: `view` stays the checking view (used stale below)
    keys = P.cell.numpy()
    P.insert(1, pos=[[0.4, 0.4]])
    for use in (lambda: view[0], lambda: view.sum(), lambda: np.mean(view), lambda: view * 2,
                lambda: len(view), lambda: view.tolist(), lambda: view.copy(), lambda: repr(view)):
        with pytest.raises(rs.DataError, match=r"stale view of field particles\.pos.*numpy\(\) "
                                               r"again"):
            use()
    with pytest.raises(rs.DataError, match="stale view"):
        view[0] = (0.5, 0.5)
    with pytest.raises(rs.DataError, match=r"stale view of field particles\.cell"):
        keys[0]
    fresh = P.pos.numpy()
    assert fresh.shape == (4, 2) and fresh[3].tolist() == [0.4, 0.4]
    P.delete([0])
    with pytest.raises(rs.DataError, match="stale view"):
        fresh[0]
    assert P.pos.numpy().shape == (3, 2)


def test_views_of_fixed_relations_are_plain_arrays():
    g, _ = setup()
    assert type(g.cells.center.numpy()) is np.ndarray


def test_particles_moved_by_a_kernel_or_the_host_are_in_their_new_cells(target):
    """After one locate(), the cell keys follow the positions: a launch writing pos (or a host
    load) leaves them to be computed again at their next read, by a kernel (through the cell
    lists or the keys themselves) or by the host; in debug mode too."""
    g, p = setup()
    C, P = g.cells, p.rel
    C.new_field("count", rs.i64)
    P.new_field("cx", rs.f64)

    @rs.kernel
    def drift(q):
        q.pos = q.pos + (0.02, 0.13)

    @rs.kernel
    def count(c):
        m = 0
        for _q in c.particles:
            m += 1
        c.count = m

    @rs.kernel
    def cell_x(q):
        q.cx = q.cell.center[0]

    for cfg in (target, rs.Config(target=target.target, debug=True)):
        P.foreach(drift, cfg)
        C.foreach(count, cfg)
        assert np.array_equal(C.count.numpy(), histogram(g, p))
        P.foreach(cell_x, cfg)
        cells = g.cell_of(P.pos.numpy())
        assert np.array_equal(P.cx.numpy(), C.center.numpy()[cells, 0])
        assert np.array_equal(P.cell.numpy(), cells)  # the host sees them too
    P.pos.load(np.array([[0.9, 0.9], [0.1, 0.9], [0.1, 0.1]]))
    C.foreach(count, target)
    assert np.array_equal(C.count.numpy(), histogram(g, p))
    assert np.array_equal(p.counts(), histogram(g, p))
