"""Coloured launches (runtime/colouring.py): a kernel reading a field through keys and writing it
at its own row runs over a subset none of those reads reach (red-black SOR, graph-coloured
Gauss-Seidel), with the same bits on every target and thread count; anything the launch cannot
prove stays a PhaseError naming both sites."""
import numpy as np
import pytest

import relsim as rs
from tests import coloured

pytestmark = pytest.mark.device_sized  # tiny: the cuda target (simulator) runs them too


def test_red_black_sor_converges_with_the_same_bits_everywhere(target):
    C, red, black, sor, residual, res = coloured.red_black()
    history = []
    for sweep in range(60):
        red.foreach(sor, target)
        black.foreach(sor, target)
        if sweep % 20 == 19:
            res.value = 0.0
            C.foreach(residual, target)
            history.append(res.value)
    assert history[-1] < 1e-8 * history[0], history  # (residuals after 20, 40, 60 sweeps)
    want = _interp_answer("rb")
    assert C.u.numpy().tobytes() == want


def test_graph_coloured_gauss_seidel_on_a_tet_mesh(target):
    V, colours, sweep, residual, res = coloured.mesh_gauss_seidel()
    assert len(colours) >= 4  # a tet's four vertices are pairwise joined
    assert sorted(np.concatenate([c.rows for c in colours]).tolist()) == list(range(V.size))
    before = None
    for k in range(30):
        for c in colours:
            c.foreach(sweep, target)
        if k == 0:
            res.value = 0.0
            V.foreach(residual, target)
            before = res.value
    res.value = 0.0
    V.foreach(residual, target)
    assert res.value < 1e-6 * before  # (1.5e-7 after 30 sweeps)
    assert V.u.numpy().tobytes() == _interp_answer("mesh")


_ANSWERS: dict = {}


def _interp_answer(which):
    """The solution computed on interp (once), as bytes."""
    if which not in _ANSWERS:
        cfg = rs.Config(target="interp")
        if which == "rb":
            C, red, black, sor, _, _ = coloured.red_black()
            for _ in range(60):
                red.foreach(sor, cfg)
                black.foreach(sor, cfg)
            _ANSWERS[which] = C.u.numpy().tobytes()
        else:
            V, colours, sweep, _, _ = coloured.mesh_gauss_seidel()
            for _ in range(30):
                for c in colours:
                    c.foreach(sweep, cfg)
            _ANSWERS[which] = V.u.numpy().tobytes()
    return _ANSWERS[which]


def test_what_cannot_be_proven_stays_a_phase_error():
    C, red, black, sor, _, _ = coloured.red_black()
    with pytest.raises(rs.PhaseError, match="one colour of a red-black") as info:
        C.foreach(sor)  # the whole grid
    assert str(info.value).count('line ') >= 2  # both sites
    half = C.subset("left", np.arange(C.size // 2))
    with pytest.raises(rs.PhaseError, match=r"over subset 'left' the read at line \d+ reaches row"):
        half.foreach(sor)
    odd = C.subset("odd_rows", np.arange(1, C.size, 2))  # rows, not cells: x-neighbours collide
    with pytest.raises(rs.PhaseError, match="odd_rows"):
        odd.foreach(sor)


def test_two_loops_over_one_variable_name_each_reach_their_own_rows():
    """A loop variable reused by two grouping loops holds each loop's rows in that loop (it
    once held both loops' rows in both: a false PhaseError on a proper colour)."""
    m = 6
    V, E = rs.Relation("chain_v", m), rs.Relation("chain_e", m - 1)
    E.new_key_field("tail", V, values=np.arange(m - 1))
    E.new_key_field("head", V, values=np.arange(1, m))
    E.group_by("head", "incoming")
    E.group_by("tail", "outgoing")
    V.new_field("u", rs.f64)
    V.new_field("f", rs.f64, init=1.0)

    @rs.kernel
    def gauss_seidel(v):
        s = v.f
        d = 1.0
        for e in v.incoming:
            s += e.tail.u
            d += 1.0
        for e in v.outgoing:
            s += e.head.u
            d += 1.0
        v.u = s / d

    colours = rs.colour(V, E.tail, E.head)
    for _ in range(30):
        for colour in colours:
            colour.foreach(gauss_seidel)
    assert np.allclose(V.u.numpy(), 1.0)
    with pytest.raises(rs.PhaseError, match="over subset 'pair' the read at line"):
        V.subset("pair", [2, 3]).foreach(gauss_seidel)  # still refused where a read reaches


def test_reads_at_computed_offsets_cannot_be_proven():
    C = rs.Relation("cc", 16)
    C.set_grid((4, 4), True)
    C.new_field("u", rs.f64)
    C.new_field("d", rs.i64)
    red = C.subset("red2", np.arange(0, 16, 2))

    @rs.kernel
    def shift(c):
        c.u = c(c.d, 0).u

    with pytest.raises(rs.PhaseError, match="cannot be told before it runs"):
        red.foreach(shift)


def test_colour_gives_proper_deterministic_colours():
    from relsim.domains import tetmesh
    mesh = tetmesh.box(3)
    V, E = mesh.vertices, mesh.edges
    colours = rs.colour(V, E.tail, E.head, name="c")
    of = np.empty(V.size, dtype=np.int64)
    for k, s in enumerate(colours):
        of[s.rows] = k
        assert s.name == f"c{k}"
    assert (of[E.tail.numpy()] != of[E.head.numpy()]).all()
    again = rs.colour(V, E.v, name="d")  # the key vector: the same colours
    assert [s.rows.tolist() for s in again] == [s.rows.tolist() for s in colours]
    with pytest.raises(rs.SchemaError, match="not a key field"):
        rs.colour(V, V.pos)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_and_two_threads_give_interps_bits(threads):
    cfg = rs.Config(target="cpu", threads=threads, parallel_threshold=1)
    C, red, black, sor, _, _ = coloured.red_black()
    for _ in range(60):
        red.foreach(sor, cfg)
        black.foreach(sor, cfg)
    assert C.u.numpy().tobytes() == _interp_answer("rb")
    V, colours, sweep, _, _ = coloured.mesh_gauss_seidel()
    for _ in range(30):
        for c in colours:
            c.foreach(sweep, cfg)
    assert V.u.numpy().tobytes() == _interp_answer("mesh")


def test_a_proof_outlives_swapped_arrays_but_not_new_keys(monkeypatch):
    """A colour's proof is kept while the keys of the relations the kernel reaches stay as
    they are: a time loop swapping fields between sweeps does not prove again (it did, on every
    sweep), while new keys are proven afresh and refused where a read now reaches the colour."""
    from relsim.runtime import colouring
    m = 6
    V, E = rs.Relation("swap_v", m), rs.Relation("swap_e", m - 1)
    E.new_key_field("tail", V, values=np.arange(m - 1))
    E.new_key_field("head", V, values=np.arange(1, m))
    E.group_by("head", "ins")
    V.new_field("u", rs.f64)
    V.new_field("old", rs.f64)
    V.new_field("new", rs.f64)

    @rs.kernel
    def sweep(v):
        s = v.old
        for e in v.ins:
            s += e.tail.u
        v.u = 0.5 * s

    proofs = []
    real = colouring.Colouring.prove
    monkeypatch.setattr(colouring.Colouring, "prove",
                        lambda self, R, sub: (proofs.append(sub.name), real(self, R, sub)))
    even = V.subset("even", [0, 2, 4])
    for _ in range(3):
        even.foreach(sweep)
        V.old.swap(V.new)  # arrays exchanged: the keys are as they were
    assert proofs == ["even"]
    E.tail.load([1, 1, 2, 3, 4])  # row 2's incoming edge now starts at row 1... still odd
    even.foreach(sweep)
    assert proofs == ["even", "even"]
    E.tail.load([0, 2, 2, 3, 4])  # row 2 now reads row 2 through an edge
    with pytest.raises(rs.PhaseError, match="over subset 'even' the read at line"):
        even.foreach(sweep)
