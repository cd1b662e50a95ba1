"""hexmesh: LULESH's box topology (reference sections 5.1-5.2), hex files through meshio."""
import meshio
import numpy as np
import pytest

import relsim as rs
from relsim.domains import cells, hexmesh

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized


def reference(n):
    """The reference's definitions, written as its loops (one element/node at a time)."""
    e1, e2 = n + 1, (n + 1) ** 2
    x, y, z = [], [], []
    for plane in range(n + 1):
        for row in range(n + 1):
            for col in range(n + 1):
                x.append((1.125 * col) / n)
                y.append((1.125 * row) / n)
                z.append((1.125 * plane) / n)
    nodelist, bc = [], []
    for plane in range(n):
        for row in range(n):
            for col in range(n):
                base = plane * e2 + row * e1 + col
                nodelist.append([base, base + 1, base + e1 + 1, base + e1, base + e2,
                                 base + e2 + 1, base + e2 + e1 + 1, base + e2 + e1])
                b = 0
                b |= 0x1 if col == 0 else 0
                b |= 0x10 if col == n - 1 else 0
                b |= 0x40 if row == 0 else 0
                b |= 0x400 if row == n - 1 else 0
                b |= 0x1000 if plane == 0 else 0
                b |= 0x10000 if plane == n - 1 else 0
                bc.append(b)
    ne = n ** 3
    nb = {"lxim": [max(e - 1, 0) for e in range(ne)],
          "lxip": [min(e + 1, ne - 1) for e in range(ne)],
          "letam": [e - n if e >= n else e for e in range(ne)],
          "letap": [e + n if e < ne - n else e for e in range(ne)],
          "lzetam": [e - n * n if e >= n * n else e for e in range(ne)],
          "lzetap": [e + n * n if e < ne - n * n else e for e in range(ne)]}
    symm = {"symmZ": [], "symmY": [], "symmX": []}
    for i in range(n + 1):
        for j in range(n + 1):
            symm["symmZ"].append(i * e1 + j)
            symm["symmY"].append(i * e2 + j)
            symm["symmX"].append(i * e2 + j * e1)
    corners = [[] for _ in range((n + 1) ** 3)]
    for e in range(ne):
        for k in range(8):
            corners[nodelist[e][k]].append(8 * e + k)
    return dict(x=x, y=y, z=z, nodelist=nodelist, elemBC=bc, corners=corners, **nb, **symm)


def lulesh_volume(p):
    """ElemVolume (reference 5.2) of one element's 8 points."""
    def d(a, b):
        return p[a] - p[b]

    def tp(a, b, c):
        return np.dot(a, np.cross(b, c))
    return (tp(d(3, 1) + d(7, 2), d(6, 3), d(2, 0)) + tp(d(4, 3) + d(5, 7), d(6, 4), d(7, 0))
            + tp(d(1, 4) + d(2, 5), d(6, 1), d(5, 0))) / 12.0


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_box_matches_reference_topology(n):
    ref = reference(n)
    m = hexmesh.box(n)
    nodes, elems, corners = m.nodes, m.elems, m.corners
    assert (len(nodes), len(elems), len(corners)) == ((n + 1) ** 3, n ** 3, 8 * n ** 3)
    for c in "xyz":  # bitwise: each coordinate is (1.125 * integer) / n
        assert nodes.field(c).numpy().tolist() == ref[c]
    assert elems.nodelist.numpy().tolist() == ref["nodelist"]
    for name in hexmesh.NEIGHBOURS:
        assert elems.field(name).numpy().tolist() == ref[name], name
        assert elems.field(name).target is elems
    assert elems.elemBC.type == rs.i32
    assert elems.elemBC.numpy().tolist() == ref["elemBC"]
    for name in ("symmX", "symmY", "symmZ"):
        assert nodes.subset(name).numpy().tolist() == ref[name]
        assert len(ref[name]) == (n + 1) ** 2
    off, rows = nodes.corners.arrays()
    for v in range(len(nodes)):
        assert rows[off[v]:off[v + 1]].tolist() == ref["corners"][v]
    assert (corners.elem.numpy() == np.arange(8 * n ** 3) // 8).all()
    assert (corners.node.numpy() == elems.nodelist.numpy().ravel()).all()
    assert (elems.corners.numpy().ravel() == np.arange(8 * n ** 3)).all()


def test_box_without_corners():
    """`corners=False` (LULESH reduces through nodelist): no corners relation, the rest as
    with it."""
    m, full = hexmesh.box(3, corners=False), hexmesh.box(3)
    assert list(m.relations) == ["nodes", "elems"] and not m.elems.has_field("corners")
    assert (m.elems.nodelist.numpy() == full.elems.nodelist.numpy()).all()
    assert sorted(m.elems.fields) == sorted(set(full.elems.fields) - {"corners"})


def test_box_geometry_positive_and_constants():
    n = 3
    m = hexmesh.box(n)
    p = np.column_stack([m.nodes.field(c).numpy() for c in "xyz"])
    nl = m.elems.nodelist.numpy()
    vols = [lulesh_volume(p[e]) for e in nl]
    assert np.allclose(vols, (1.125 / n) ** 3)
    assert (cells.hex_corner_jacobians(p, nl) > 0).all()
    assert hexmesh.XI_M_SYMM == 0x1 and hexmesh.XI_P_FREE == 0x10
    assert hexmesh.ETA_M_SYMM == 0x40 and hexmesh.ETA_P_FREE == 0x400
    assert hexmesh.ZETA_M_SYMM == 0x1000 and hexmesh.ZETA_P_FREE == 0x10000
    # element 0 is the origin corner: symmetric on all three minus faces
    assert m.elems.elemBC.numpy()[0] == 0x1 | 0x40 | 0x1000


def test_nodes_gather_corners_in_a_kernel(use_target):
    m = hexmesh.box(2)
    m.corners.new_field("f", rs.f64, init=0.0)
    m.corners.f.load(np.arange(len(m.corners), dtype=float))
    m.nodes.new_field("fsum", rs.f64, init=0.0)

    @rs.kernel
    def gather(nd):
        for c in nd.corners:
            nd.fsum += c.f

    m.nodes.foreach(gather)
    want = np.bincount(m.corners.node.numpy(), weights=m.corners.f.numpy())
    assert np.array_equal(m.nodes.fsum.numpy(), want)


def test_load_hex_file(tmp_path):
    a = hexmesh.lulesh_arrays(2, 1.0)
    pts = np.column_stack([a["x"], a["y"], a["z"]])
    path = tmp_path / "cube.vtk"
    meshio.write(path, meshio.Mesh(pts, [("hexahedron", a["nodelist"])],
                                   point_data={"T": a["x"] * 2.0}))
    m = hexmesh.load(path)
    assert (len(m.nodes), len(m.elems), len(m.edges), len(m.boundary), len(m.corners)) == \
        (27, 8, 54, 24, 64)
    assert (m.elems.nodelist.numpy() == a["nodelist"]).all()
    assert np.array_equal(m.nodes.T.numpy(), a["x"] * 2.0)
    b = m.boundary.v.numpy()
    q = pts[b]
    normal = np.cross(q[:, 2] - q[:, 0], q[:, 3] - q[:, 1])     # a quad's area vector (x2)
    assert (np.einsum("ij,ij->i", normal, q.mean(1) - pts.mean(0)) > 0).all()


def test_inverted_hex_is_an_error(tmp_path):
    a = hexmesh.lulesh_arrays(1, 1.0)
    pts = np.column_stack([a["x"], a["y"], a["z"]])
    mirrored = a["nodelist"][:, [4, 5, 6, 7, 0, 1, 2, 3]]
    path = tmp_path / "inv.vtu"
    meshio.write(path, meshio.Mesh(pts, [("hexahedron", mirrored)]))
    with pytest.raises(rs.DomainError, match=r"inv\.vtu: hexahedron 0 .* is inverted"):
        hexmesh.load(path)
    with pytest.raises(rs.DomainError, match="has no hexahedron elements"):
        hexmesh.from_arrays(pts, np.zeros((0, 8), int))
