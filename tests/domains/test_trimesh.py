"""trimesh: the plane generator, surfaces read through meshio, orientation checks."""
import meshio
import numpy as np
import pytest

import relsim as rs
from relsim.domains import cells, trimesh

# the surface of the unit tetrahedron, outward (a closed, consistently oriented surface)
TET_PTS = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
TET_SURF = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]])


@pytest.mark.parametrize("nx, ny", [(1, 1), (3, 2), (5, 7)])
def test_plane_counts(nx, ny):
    m = trimesh.plane(nx, ny)
    assert len(m.vertices) == (nx + 1) * (ny + 1)
    assert len(m.triangles) == 2 * nx * ny
    assert len(m.edges) == nx * (ny + 1) + ny * (nx + 1) + nx * ny
    assert len(m.boundary) == 2 * (nx + ny)
    assert len(m.vertices) - len(m.edges) + len(m.triangles) == 1


def test_plane_orientation_and_outward_boundary():
    m = trimesh.plane(4, 3, size=(2.0, 1.5), origin=(-1.0, 0.0))
    p, t = m.vertices.pos.numpy(), m.triangles.v.numpy()
    n = cells.triangle_normals(p, t)
    assert (n[:, 2] > 0).all() and np.isclose(0.5 * n[:, 2].sum(), 3.0)
    assert (p[:, 2] == 0).all()
    b = m.boundary.v.numpy()
    d = p[b[:, 1]] - p[b[:, 0]]
    outward = np.column_stack([d[:, 1], -d[:, 0]])          # right-hand normal of the edge
    mid = 0.5 * (p[b[:, 0]] + p[b[:, 1]]) - p.mean(0)
    assert (np.einsum("ij,ij->i", outward, mid[:, :2]) > 0).all()
    assert {k: len(s) for k, s in m.boundary.subsets.items()} == \
        {"xmin": 3, "xmax": 3, "ymin": 4, "ymax": 4}
    assert np.allclose(p[m.vertices.subset("xmax").numpy(), 0], 1.0)


def test_groupings():
    m = trimesh.plane(3, 3)
    off, rows = m.vertices.triangles.arrays()
    t = m.triangles.v.numpy()
    for v in range(len(m.vertices)):
        assert list(rows[off[v]:off[v + 1]]) == list(np.flatnonzero((t == v).any(axis=1)))
    off, _ = m.vertices.edges.arrays()
    assert np.diff(off).sum() == 2 * len(m.edges)


def test_closed_surface_from_obj_file(tmp_path):
    path = tmp_path / "tet.obj"
    meshio.write(path, meshio.Mesh(TET_PTS, [("triangle", TET_SURF)]))
    m = trimesh.load(path)
    assert (len(m.vertices), len(m.edges), len(m.triangles), len(m.boundary)) == (4, 6, 4, 0)
    n = cells.triangle_normals(m.vertices.pos.numpy(), m.triangles.v.numpy())
    assert np.allclose(n.sum(0), 0)


def test_off_file_and_gmsh_line_sets(tmp_path):
    pts, tris = trimesh.plane_arrays(2, 1)
    path = tmp_path / "p.off"
    meshio.write(path, meshio.Mesh(pts, [("triangle", tris)]))
    assert len(trimesh.load(path).triangles) == 4
    lines = np.array([[0, 1], [1, 2]])                        # the y = 0 side
    m = meshio.Mesh(pts, [("triangle", tris), ("line", lines)],
                    cell_data={"gmsh:physical": [np.array([5] * 4), np.array([3, 3])],
                               "gmsh:geometrical": [np.array([1] * 4), np.array([1, 1])]},
                    field_data={"wall": np.array([3, 1]), "domain": np.array([5, 2])})
    path = tmp_path / "p.msh"
    meshio.write(path, m, file_format="gmsh22", binary=True)
    mesh = trimesh.load(path)
    assert list(mesh.vertices.subset("wall").numpy()) == [0, 1, 2]
    b = mesh.boundary.v.numpy()[mesh.boundary.subset("wall").numpy()]
    assert sorted(map(tuple, np.sort(b, axis=1))) == [(0, 1), (1, 2)]
    assert len(mesh.triangles.subset("domain")) == 4


def test_clockwise_planar_triangle_is_inverted():
    with pytest.raises(rs.DomainError, match=r"triangle 0 .* is inverted: its normal points "
                                             r"to -z"):
        trimesh.from_arrays([[0, 0], [1, 0], [0, 1]], [[0, 2, 1]])


def test_inconsistent_surface_orientation():
    bad = TET_SURF.copy()
    bad[0] = bad[0][::-1]
    with pytest.raises(rs.DomainError, match="inconsistently oriented"):
        trimesh.from_arrays(TET_PTS, bad)


def test_degenerate_and_missing_triangles(tmp_path):
    with pytest.raises(rs.DomainError, match="is degenerate"):
        trimesh.from_arrays([[0, 0], [1, 0], [2, 0]], [[0, 1, 2]])
    path = tmp_path / "tets.vtu"
    meshio.write(path, meshio.Mesh(TET_PTS, [("tetra", np.array([[0, 1, 2, 3]]))]))
    with pytest.raises(rs.DomainError, match=r"tets\.vtu: no triangle cells"):
        trimesh.load(path)


def test_load_reorients_planar_triangles(tmp_path):
    pts = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    tris = np.array([[0, 1, 2], [1, 2, 3]])  # the second is clockwise
    path = tmp_path / "cw.vtu"
    meshio.write(path, meshio.Mesh(pts, [("triangle", tris)]), binary=False)
    with pytest.warns(RuntimeWarning, match="1 of its 2 triangle elements had the opposite"):
        mesh = trimesh.load(path)
    assert len(mesh.triangles) == 2


def test_load_of_a_volume_file_says_it_reads_only_the_triangles(tmp_path):
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    path = tmp_path / "vol.vtu"
    meshio.write(path, meshio.Mesh(pts, [("tetra", np.array([[0, 1, 2, 3]])),
                                         ("triangle", np.array([[0, 2, 1]]))]))
    with pytest.warns(RuntimeWarning) as record:
        mesh = trimesh.load(path)
    said = [str(w.message) for w in record]
    assert any("holds a volume mesh (tetra); only its 1 triangle cells" in m for m in said)
    assert len(mesh.triangles) == 1
