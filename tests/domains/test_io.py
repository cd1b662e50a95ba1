"""rs.write and output.TimeSeries: fields round-trip through VTU, XDMF+HDF5 and PVD files."""
import os
import xml.etree.ElementTree as ET

import meshio
import numpy as np
import pytest
from meshio.xdmf import TimeSeriesReader

import relsim as rs
from relsim import output
from relsim.domains import grid, hexmesh, particles, tetmesh, trimesh


@pytest.fixture
def mesh():
    m = tetmesh.box(2, 1, 1)
    V, T = m.vertices, m.tets
    rng = np.random.default_rng(0)
    V.new_field("T", rs.f64).load(rng.random(len(V)))
    V.new_field("u", rs.vec(3, rs.f64)).load(rng.random((len(V), 3)))
    T.new_field("p", rs.f32).load(rng.random(len(T)).astype(np.float32))
    T.new_field("S", rs.mat(3, 3, rs.f64)).load(rng.random((len(T), 3, 3)))
    T.new_field("id", rs.i64).load(np.arange(len(T)))
    return m


@pytest.mark.parametrize("suffix", [".vtu", ".vtk", ".xdmf"])
def test_vertex_fields_round_trip(tmp_path, mesh, suffix):
    path = tmp_path / f"v{suffix}"
    rs.write(path, mesh.vertices, ["T", "u"])
    back = meshio.read(path)
    assert np.array_equal(back.points, mesh.vertices.pos.numpy())
    assert np.array_equal(back.cells_dict["tetra"], mesh.tets.v.numpy())
    assert np.array_equal(back.point_data["T"], mesh.vertices.T.numpy())
    assert np.array_equal(back.point_data["u"], mesh.vertices.u.numpy())
    assert set(back.point_data) == {"T", "u"}


@pytest.mark.parametrize("suffix", [".vtu", ".xdmf"])
def test_cell_fields_round_trip(tmp_path, mesh, suffix):
    path = tmp_path / f"t{suffix}"
    rs.write(path, mesh.tets)                      # default: every non-key field
    back = meshio.read(path)
    T = mesh.tets
    assert np.array_equal(back.cell_data["p"][0], T.p.numpy())
    assert np.array_equal(back.cell_data["id"][0], T.id.numpy())
    assert np.array_equal(back.cell_data["S"][0].reshape(-1, 3, 3), T.S.numpy())


def test_edges_boundary_and_hex_relations(tmp_path, mesh):
    mesh.edges.new_field("k", rs.f64).load(np.arange(len(mesh.edges), dtype=float))
    rs.write(tmp_path / "e.vtu", mesh.edges, ["k"])
    back = meshio.read(tmp_path / "e.vtu")
    assert np.array_equal(back.cells_dict["line"], mesh.edges.v.numpy())
    assert np.array_equal(back.cell_data["k"][0], mesh.edges.k.numpy())
    rs.write(tmp_path / "b.vtu", mesh.boundary)
    assert np.array_equal(meshio.read(tmp_path / "b.vtu").cells_dict["triangle"],
                          mesh.boundary.v.numpy())
    h = hexmesh.box(2)
    h.nodes.x.numpy()[:] += 1.0                    # a moved mesh is written where it is now
    rs.write(tmp_path / "h.vtu", h.elems, ["elemBC"])
    back = meshio.read(tmp_path / "h.vtu")
    assert np.array_equal(back.points[:, 0], h.nodes.x.numpy())
    assert np.array_equal(back.cell_data["elemBC"][0], h.elems.elemBC.numpy())
    t = trimesh.plane(2)
    t.vertices.new_field("flag", rs.bool_, init=True)
    rs.write(tmp_path / "p.vtu", t.vertices, ["flag"])
    assert (meshio.read(tmp_path / "p.vtu").point_data["flag"] == 1).all()


def test_xdmf_time_series_round_trip(tmp_path, mesh):
    V = mesh.vertices
    path = tmp_path / "out" / "series.xdmf"
    path.parent.mkdir()
    values = []
    with output.TimeSeries(path, V, ["T", "u"]) as series:
        for step in range(3):
            V.T.numpy()[:] += 1.0
            values.append(V.T.numpy().copy())
            series.write(0.5 * step)
    assert (path.parent / "series.h5").exists()
    reader = TimeSeriesReader(str(path))
    points, cells = reader.read_points_cells()
    assert np.array_equal(points, V.pos.numpy())
    assert reader.num_steps == 3
    for step in range(3):
        t, point_data, _ = reader.read_data(step)
        assert t == 0.5 * step
        assert np.array_equal(point_data["T"], values[step])
        assert np.array_equal(point_data["u"], V.u.numpy())


def test_pvd_series_writes_vtu_per_step(tmp_path, mesh):
    T = mesh.tets
    with output.TimeSeries(tmp_path / "tets.pvd", T, ["p"]) as series:
        for step in range(2):
            T.p.numpy()[:] = step
            series.write(float(step))
    entries = ET.parse(tmp_path / "tets.pvd").getroot().findall("./Collection/DataSet")
    assert [(e.get("timestep"), e.get("file")) for e in entries] == \
        [("0.0", "tets_000000.vtu"), ("1.0", "tets_000001.vtu")]
    assert (meshio.read(tmp_path / "tets_000001.vtu").cell_data["p"][0] == 1).all()


def test_write_errors(tmp_path, mesh):
    plain = rs.Relation("plain", 3)
    plain.new_field("a", rs.f64)
    with pytest.raises(rs.DomainError, match="relation 'plain' has no mesh geometry"):
        rs.write(tmp_path / "x.vtu", plain)
    with pytest.raises(rs.DomainError, match="has no field 'nope'"):
        rs.write(tmp_path / "x.vtu", mesh.vertices, ["nope"])
    with pytest.raises(rs.DomainError, match=r"x\.unknownsuffix: cannot tell the file format "
                       r"from the suffix '\.unknownsuffix'; rs.write knows .*\.vtk, \.vtu"):
        rs.write(tmp_path / "x.unknownsuffix", mesh.tets)
    with pytest.raises(rs.DomainError, match=r"suffix '\(none\)'"):
        rs.write(tmp_path / "noext", mesh.tets)
    with pytest.raises(rs.DomainError, match="a .pvd or an .xdmf file"):
        output.TimeSeries(tmp_path / "x.vtu", mesh.tets)


def _xdmf_steps(path):
    """Every step of an XDMF series as written: (time, points, cells, {field: values}), read
    with ElementTree and h5py (meshio's reader keeps the first step's mesh)."""
    import h5py
    root = ET.parse(path).getroot()
    grids = root.findall("./Domain/Grid/Grid")
    out = []
    with h5py.File(os.path.splitext(path)[0] + ".h5", "r") as h5:
        def item(node):
            return np.asarray(h5[node.find("DataItem").text.split(":", 1)[1]])
        for g in grids:
            fields = {a.get("Name"): item(a) for a in g.findall("Attribute")}
            out.append((float(g.find("Time").get("Value")), item(g.find("Geometry")),
                        item(g.find("Topology")), fields))
    return out


def test_an_xdmf_series_of_moving_inserted_and_deleted_particles(tmp_path):
    """Each step of the XDMF file has that step's positions and row count (the geometry
    follows the particles), and a fixed mesh's points are stored once."""
    g = grid.Grid((4, 4), spacing=0.25, periodic=True)
    p = particles.Particles(g, np.array([[0.1, 0.1], [0.6, 0.6], [0.3, 0.8]]))
    P = p.rel
    P.new_field("id", rs.i64).load(np.arange(3))
    path = tmp_path / "parts.xdmf"
    want = []
    with output.TimeSeries(path, P, ["id"]) as series:
        for step in range(4):
            want.append(P.pos.numpy().copy())
            series.write(0.1 * step)
            P.pos.load((P.pos.numpy() + 0.05) % 1.0)
            if step == 1:
                P.insert(2, pos=[[0.5, 0.5], [0.7, 0.2]], id=[3, 4])
            if step == 2:
                P.delete(np.array([True, False, False, False, True]))
    steps = _xdmf_steps(str(path))
    assert [len(s[1]) for s in steps] == [3, 3, 5, 3]
    for (t, points, cells, fields), pos, k in zip(steps, want, range(4)):
        assert t == 0.1 * k
        assert np.array_equal(points[:, :2], pos) and (points[:, 2] == 0).all()
        assert cells.ravel().tolist() == list(range(len(pos)))
        assert len(fields["id"]) == len(pos)
    assert steps[3][3]["id"].tolist() == [1, 2, 3]
    # a mesh that does not move: its points are stored once, every step refers to them
    mesh = tetmesh.box(1)
    with output.TimeSeries(tmp_path / "fixed.xdmf", mesh.vertices, ["pos"]) as series:
        for step in range(3):
            series.write(float(step))
    refs = {g.find("Geometry/DataItem").text
            for g in ET.parse(tmp_path / "fixed.xdmf").getroot().findall("./Domain/Grid/Grid")}
    assert len(refs) == 1


def test_a_pvd_series_of_moving_and_inserted_particles(tmp_path):
    """Each step's VTU holds that step's positions and rows (the geometry follows the
    particles in VTU/PVD as in XDMF)."""
    g = grid.Grid((4, 4), spacing=0.25, periodic=True)
    P = particles.Particles(g, np.array([[0.1, 0.1], [0.6, 0.6], [0.3, 0.8]])).rel
    P.new_field("id", rs.i64).load(np.arange(3))
    want = []
    with output.TimeSeries(tmp_path / "parts.pvd", P, ["id"]) as series:
        for step in range(3):
            want.append(P.pos.numpy().copy())
            series.write(float(step))
            P.pos.load((P.pos.numpy() + 0.05) % 1.0)
            if step == 0:
                P.insert(1, pos=[[0.5, 0.5]], id=[3])
    for step, pos in enumerate(want):
        m = meshio.read(tmp_path / f"parts_{step:06d}.vtu")
        assert np.array_equal(m.points[:, :2], pos)
        assert m.point_data["id"].tolist() == list(range(len(pos)))
