"""Partitions and row reach, on one process (no MPI needed): every rank computes these alike."""
from __future__ import annotations

import numpy as np
import pytest

import relsim as rs
from relsim.runtime.parallel import partition
from relsim.runtime.parallel.rowsets import Reach, neighbours
from relsim.runtime.pipeline import analyse


def test_blocks_are_contiguous_and_balanced():
    owner = partition.blocks(10, 3)
    assert owner.tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert np.bincount(partition.blocks(7, 7)).tolist() == [1] * 7


@pytest.mark.parametrize("nranks", [1, 2, 3, 5, 8])
def test_rcb_gives_every_rank_its_share_of_the_points(nranks):
    xyz = np.random.default_rng(1).random((1000, 3))
    owner = partition.rcb(xyz, nranks)
    counts = np.bincount(owner, minlength=nranks)
    assert counts.sum() == 1000 and counts.max() - counts.min() <= 1
    # each part is compact: its bounding box is well below the whole box's volume
    if nranks > 1:
        for r in range(nranks):
            pts = xyz[owner == r]
            assert np.prod(pts.max(0) - pts.min(0)) < 0.8


def test_rcb_breaks_ties_by_row():
    xyz = np.zeros((9, 2))  # every point equal
    assert partition.rcb(xyz, 3).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize("shape, nranks, dims", [((8, 8), 4, (2, 2)), ((30, 10), 3, (3, 1)),
                                                  ((4, 4, 4), 6, (3, 2, 1)), ((5,), 7, (7,))])
def test_grid_dims_multiply_to_the_rank_count(shape, nranks, dims):
    assert partition.grid_dims(shape, nranks) == dims


def test_grid_blocks_are_boxes():
    R = rs.Relation("C", 6 * 4)
    R.set_grid((6, 4))
    owner = partition.grid_owners(R.grid, 4)
    assert owner.reshape(4, 6).tolist() == [[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1],
                                            [2, 2, 2, 3, 3, 3], [2, 2, 2, 3, 3, 3]]


def test_relations_with_keys_go_with_their_first_keys_target():
    V = rs.Relation("V", 6)
    V.new_field("pos", rs.vec(2, rs.f64)).load(np.c_[np.arange(6.0), np.zeros(6)])
    E = rs.Relation("E", 3)
    E.new_key_field("ends", V, 2).load([[5, 0], [1, 2], [3, 4]])
    v_owner, how = partition.owners(V, 2, set())
    assert v_owner.tolist() == [0, 0, 0, 1, 1, 1] and how == "rcb on pos"
    e_owner, how = partition.owners(E, 2, set())
    assert e_owner.tolist() == [1, 0, 1] and "through ends" in how


def test_a_request_chooses_the_method_and_bad_ones_are_refused():
    V = rs.Relation("V", 4)
    rs.partition(V, "blocks")
    assert partition.owners(V, 2, set())[1] == "blocks"
    with pytest.raises(rs.ConfigError, match="partition method"):
        rs.partition(V, "metis-please")
    W = rs.Relation("W", 4)
    with pytest.raises(rs.ConfigError, match="coords must be a field of W"):
        rs.partition(W, "rcb", coords=rs.Relation("X", 4).new_field("p", rs.vec(2, rs.f64)))
    with pytest.raises(rs.ConfigError, match="needs coordinates"):
        rs.partition(W, "rcb")
        partition.owners(W, 2, set())


def test_grid_neighbours_wrap_on_periodic_axes_and_leave_bounded_ones():
    R = rs.Relation("C", 12)
    R.set_grid((4, 3), periodic=(True, False))
    rows = np.arange(12)
    assert neighbours(rows, (1, 0), R.grid).tolist() == [1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8]
    assert neighbours(rows, (0, 1), R.grid).tolist() == list(range(4, 12)) + [-1] * 4


def test_reach_follows_keys_locals_groupings_and_offsets():
    V = rs.Relation("V", 6)
    E = rs.Relation("E", 4)
    E.new_key_field("a", V).load([0, 1, 2, 3])
    E.new_key_field("b", V).load([1, 2, 3, 5])
    V.new_field("x", rs.f64)
    V.new_field("y", rs.f64)
    E.group_by("a", "out")

    @rs.kernel
    def k(e):
        v = e.b
        v.x += e.a.y

    @rs.kernel
    def g(v):
        s = 0.0
        for e in v.out:
            s += e.b.y
        v.x = s

    ak = analyse(k, E)
    reach = Reach(ak, np.array([1, 3]))
    (local,) = [s for s in ak.body if type(s).__name__ == "FieldReduce"]
    assert reach.per_row(local.key).tolist() == [2, 5]  # through the local v = e.b
    assert reach.sets["v"].tolist() == [2, 5]
    ag = analyse(g, V)
    reach = Reach(ag, np.array([0, 2]))
    assert reach.sets["e"].tolist() == [0, 2]  # edges whose key a is 0 or 2


def test_metis_partitions_the_graph_of_rows_keyed_together():
    pytest.importorskip("pymetis")
    from relsim.domains import tetmesh
    mesh = tetmesh.box(4)
    V = mesh.vertices
    xadj, adjncy = partition.adjacency(V)
    assert len(xadj) == V.size + 1 and xadj[-1] == len(adjncy)
    # a box vertex's neighbours: the vertices it shares a tet (or an edge) with
    assert 0 < np.diff(xadj).min() and np.diff(xadj).max() <= 14
    rs.partition(V, "metis")
    owner, how = partition.owners(V, 3, set())
    assert how == "metis" and set(owner.tolist()) == {0, 1, 2}
    assert np.bincount(owner).min() > V.size // 4
    cut = np.sum(owner[np.repeat(np.arange(V.size), np.diff(xadj))] != owner[adjncy])
    blocks = partition.blocks(V.size, 3)
    assert cut < np.sum(blocks[np.repeat(np.arange(V.size), np.diff(xadj))] != blocks[adjncy])
