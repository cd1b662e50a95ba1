"""tetmesh: the box generator, files read through meshio, groupings, subsets and bad input."""
import meshio
import numpy as np
import pytest

import relsim as rs
from relsim import domains
from relsim.domains import cells, tetmesh

UNIT_TET = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)


def test_registered_by_name():
    for name in ("tetmesh", "trimesh", "hexmesh"):
        assert name in domains.available()
    assert domains.get("tetmesh") is tetmesh


@pytest.mark.parametrize("n, counts", [((1, 1, 1), (8, 19, 6, 12)),
                                       ((2, 1, 1), (12, 33, 12, 20)),
                                       ((2, 3, 4), (60, 0, 144, 2 * 2 * (6 + 8 + 12)))])
def test_box_counts(n, counts):
    m = tetmesh.box(*n)
    nv, ne, nt, nb = counts
    assert (len(m.vertices), len(m.tets), len(m.boundary)) == (nv, nt, nb)
    if ne:
        assert len(m.edges) == ne
    # Euler characteristic of a ball: V - E + F - T = 1 (F counted from the tets' faces)
    faces = np.unique(np.sort(m.tets.v.numpy()[:, np.array(cells.TETRA.faces)].reshape(-1, 3),
                              axis=1), axis=0)
    assert len(m.vertices) - len(m.edges) + len(faces) - len(m.tets) == 1


def test_box_orientation_volume_and_outward_boundary():
    m = tetmesh.box(3, 2, 2, size=(3.0, 1.0, 2.0), origin=(-1.0, 0.0, 0.0))
    p, t = m.vertices.pos.numpy(), m.tets.v.numpy()
    vol = cells.tet_volumes(p, t)
    assert (vol > 0).all()
    assert np.isclose(vol.sum(), 6.0)
    b = m.boundary.v.numpy()
    n = cells.triangle_normals(p, b)
    assert (np.einsum("ij,ij->i", n, p[b].mean(1) - p.mean(0)) > 0).all()
    # the boundary normals of a closed surface sum to zero, their areas to the box's surface
    assert np.allclose(n.sum(0), 0)
    assert np.isclose(0.5 * np.linalg.norm(n, axis=1).sum(), 2 * (3 * 1 + 3 * 2 + 1 * 2))
    # each boundary face is the face `side` of its tet
    elem, side = m.boundary.elem.numpy(), m.boundary.side.numpy()
    assert (t[elem[:, None], np.array(cells.TETRA.faces)[side]] == b).all()


def test_edges_unique_and_consistent():
    m = tetmesh.box(2)
    tail, head = m.edges.tail.numpy(), m.edges.head.numpy()
    assert (tail < head).all()
    assert len(np.unique(np.column_stack([tail, head]), axis=0)) == len(tail)
    assert (m.edges.v.numpy() == np.column_stack([tail, head])).all()
    t, te = m.tets.v.numpy(), m.tets.edges.numpy()
    for k, (a, b) in enumerate(cells.TETRA.edges):
        got = np.sort(np.column_stack([t[:, a], t[:, b]]), axis=1)
        assert (got == m.edges.v.numpy()[te[:, k]]).all()


def test_groupings_list_incident_rows_ascending():
    m = tetmesh.box(2)
    V, E, T = m.vertices, m.edges, m.tets
    off, rows = V.tets.arrays()
    t = T.v.numpy()
    for v in range(len(V)):
        want = np.flatnonzero((t == v).any(axis=1))
        assert list(rows[off[v]:off[v + 1]]) == list(want)
    off, rows = V.edges.arrays()
    ev = E.v.numpy()
    for v in range(len(V)):
        assert list(rows[off[v]:off[v + 1]]) == list(np.flatnonzero((ev == v).any(axis=1)))


def test_box_side_subsets():
    m = tetmesh.box(2, 3, 4)
    p = m.vertices.pos.numpy()
    for axis, a in enumerate("xyz"):
        for name, value in ((f"{a}min", 0.0), (f"{a}max", 1.0)):
            vs = m.vertices.subset(name).numpy()
            assert list(vs) == list(np.flatnonzero(np.isclose(p[:, axis], value)))
            faces = m.boundary.v.numpy()[m.boundary.subset(name).numpy()]
            assert np.allclose(p[faces, axis], value)
    n = {name: len(s) for name, s in m.boundary.subsets.items()}
    assert n == {"xmin": 24, "xmax": 24, "ymin": 16, "ymax": 16, "zmin": 12, "zmax": 12}


@pytest.mark.device_sized
def test_kernel_loops_over_groupings(use_target):
    m = tetmesh.box(2)
    V = m.vertices
    V.new_field("ntets", rs.i64, init=0)
    V.new_field("nedges", rs.i64, init=0)
    m.tets.new_field("one", rs.i64, init=1)
    m.edges.new_field("one", rs.i64, init=1)

    @rs.kernel
    def count(v):
        for t in v.tets:
            v.ntets += t.one
        for e in v.edges:
            v.nedges += e.one

    V.foreach(count)
    off, _ = V.tets.arrays()
    assert (V.ntets.numpy() == np.diff(off)).all()
    assert V.nedges.numpy().sum() == 2 * len(m.edges)


def _gmsh_file(tmp_path):
    """A two-tet mesh with physical volume 'solid' and surfaces 'bottom', 'top' (gmsh 2.2)."""
    pts = np.vstack([UNIT_TET, [[1, 1, 1]]])
    tets = np.array([[0, 1, 2, 3], [1, 2, 3, 4]])
    assert (cells.tet_volumes(pts, tets) != 0).all()
    tets[1] = tets[1][[0, 2, 1, 3]] if cells.tet_volumes(pts, tets)[1] < 0 else tets[1]
    tris = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 4]])
    m = meshio.Mesh(pts, [("tetra", tets), ("triangle", tris)],
                    cell_data={"gmsh:physical": [np.array([7, 7]), np.array([1, 1, 2])],
                               "gmsh:geometrical": [np.array([1, 1]), np.array([1, 1, 2])]},
                    field_data={"solid": np.array([7, 3]), "bottom": np.array([1, 2]),
                                "top": np.array([2, 2])})
    path = tmp_path / "two.msh"
    meshio.write(path, m, file_format="gmsh22", binary=True)
    return path, pts, tets


def test_load_gmsh_physical_groups(tmp_path):
    path, pts, tets = _gmsh_file(tmp_path)
    m = tetmesh.load(path)
    assert m.path == str(path)
    assert (len(m.vertices), len(m.tets), len(m.edges), len(m.boundary)) == (5, 2, 9, 6)
    assert np.allclose(m.vertices.pos.numpy(), pts)
    assert (m.tets.v.numpy() == tets).all()
    assert list(m.tets.subset("solid").numpy()) == [0, 1]
    b = m.boundary.v.numpy()
    bottom = {tuple(sorted(f)) for f in b[m.boundary.subset("bottom").numpy()]}
    assert bottom == {(0, 1, 2), (0, 1, 3)}
    top = b[m.boundary.subset("top").numpy()]
    assert {tuple(sorted(f)) for f in top} == {(1, 2, 4)}
    assert list(m.vertices.subset("bottom").numpy()) == [0, 1, 2, 3]
    assert list(m.vertices.subset("top").numpy()) == [1, 2, 4]


def test_load_vtu_point_and_cell_data_become_fields(tmp_path):
    pts, tets = tetmesh.box_arrays(2, 2, 2)
    T = np.linspace(0, 1, len(pts))
    vel = np.arange(3 * len(pts), dtype=float).reshape(-1, 3)
    mat = np.arange(len(tets), dtype=np.int32)
    path = tmp_path / "box.vtu"
    meshio.write(path, meshio.Mesh(pts, [("tetra", tets)], point_data={"T": T, "vel": vel},
                                   cell_data={"material id": [mat]}))
    m = tetmesh.load(path)
    assert m.vertices.T.type == rs.f64 and np.array_equal(m.vertices.T.numpy(), T)
    assert m.vertices.vel.type == rs.vec(3, rs.f64)
    assert np.array_equal(m.vertices.vel.numpy(), vel)
    assert m.tets.material_id.type == rs.i32
    assert np.array_equal(m.tets.material_id.numpy(), mat)


def test_point_sets_become_vertex_subsets():
    pts, tets = tetmesh.box_arrays(1, 1, 1)
    m = tetmesh.from_arrays(pts, tets, point_sets={"corner": [0, 7]}, tet_sets={"first": [0]})
    assert list(m.vertices.corner.numpy()) == [0, 7]
    assert list(m.tets.first.numpy()) == [0]


# -- bad input: a DomainError naming the file and the problem ------------------------------

def _write(tmp_path, name, pts, cells_):
    path = tmp_path / name
    meshio.write(path, meshio.Mesh(pts, cells_))
    return path


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(rs.DomainError, match=r"nope\.msh: no such file"):
        tetmesh.load(tmp_path / "nope.msh")
    junk = tmp_path / "junk.vtu"
    junk.write_text("this is not a mesh")
    with pytest.raises(rs.DomainError, match=r"junk\.vtu: cannot read the mesh file"):
        tetmesh.load(junk)


def test_no_tets_in_file(tmp_path):
    path = _write(tmp_path, "surf.vtu", UNIT_TET, [("triangle", np.array([[0, 1, 2]]))])
    with pytest.raises(rs.DomainError, match=r"surf\.vtu: no tetra cells in the file "
                                             r"\(it has triangle\)"):
        tetmesh.load(path)


def test_inverted_and_degenerate_tets(tmp_path):
    with pytest.raises(rs.DomainError, match=r"<arrays>: tetra 0 .* is inverted"):
        tetmesh.from_arrays(UNIT_TET, [[0, 2, 1, 3]])  # arrays: the caller's order is kept
    flat = UNIT_TET.copy()
    flat[3] = [0.5, 0.5, 0.0]
    path = _write(tmp_path, "flat.vtu", flat, [("tetra", np.array([[0, 1, 2, 3]]))])
    with pytest.raises(rs.DomainError, match=r"flat\.vtu: tetra 0 .* is degenerate"):
        tetmesh.load(path)
    with pytest.raises(rs.DomainError, match="repeats a vertex"):
        tetmesh.from_arrays(UNIT_TET, [[0, 1, 2, 2]])


def test_dangling_vertex_indices():
    with pytest.raises(rs.DomainError, match=r"<arrays>: tetra 0 has vertex indices "
                                             r"\[0, 1, 2, 9\], dangling"):
        tetmesh.from_arrays(UNIT_TET, [[0, 1, 2, 9]])


def test_overlapping_tets():
    pts = np.vstack([UNIT_TET, [[0.2, 0.2, 0.2]]])
    with pytest.raises(rs.DomainError, match="overlapping or inverted"):
        # both tets lie on the same side of their shared face (0, 1, 2)
        tetmesh.from_arrays(pts, [[0, 1, 2, 3], [0, 1, 2, 4]])


def test_name_clash_is_an_error_and_nothing_is_registered():
    pts, tets = tetmesh.box_arrays(1, 1, 1)
    with pytest.raises(rs.DomainError, match="'edges' on vertices clashes"):
        tetmesh.from_arrays(pts, tets, point_data={"edges": np.zeros(len(pts))})


def test_load_reorients_tets_and_drops_unused_points(tmp_path):
    """Files from other tools: tets of mixed orientation, and a point no tet uses (gmsh's
    Mesh.SaveAll=1); both fixed on load, each with a warning that counts what changed."""
    pts = np.vstack([[[9.0, 9.0, 9.0]], UNIT_TET, [[1.0, 1.0, 1.0]]])  # point 0: unused
    tets = np.array([[1, 2, 3, 4], [2, 3, 5, 4]])  # the second has the opposite order
    T = np.arange(6, dtype=float) * 10.0
    path = tmp_path / "mixed.vtu"
    meshio.write(path, meshio.Mesh(pts, [("tetra", tets)], point_data={"T": T}),
                 binary=False)
    with pytest.warns(RuntimeWarning) as record:
        mesh = tetmesh.load(path)
    said = [str(w.message) for w in record]
    assert any("1 of its 6 points are used by no tetra element; they were dropped" in m
               for m in said)
    assert any("1 of its 2 tetra elements had the opposite vertex order; they were "
               "reoriented" in m for m in said)
    V = mesh.vertices
    assert V.size == 5 and V.T.numpy().tolist() == [10.0, 20.0, 30.0, 40.0, 50.0]
    v = mesh.tets.v.numpy()
    assert (cells.tet_volumes(V.pos.numpy(), v) > 0).all()
    assert sorted(v[1].tolist()) == [1, 2, 3, 4]  # the same tet, renumbered and reoriented


def test_empty_and_truncated_files_say_so(tmp_path):
    empty = tmp_path / "empty.msh"
    empty.write_text("")
    with pytest.raises(rs.DomainError, match=r"empty\.msh: the file is empty"):
        tetmesh.load(empty)
    good = tmp_path / "good.vtu"
    meshio.write(good, meshio.Mesh(UNIT_TET, [("tetra", np.array([[0, 1, 2, 3]]))]),
                 binary=False)
    text = good.read_bytes()
    cut = tmp_path / "cut.vtu"
    cut.write_bytes(text[: len(text) // 2])
    with pytest.raises(rs.DomainError, match=r"cut\.vtu: cannot read the mesh file "
                                             r"\(truncated, or not a mesh"):
        tetmesh.load(cut)
