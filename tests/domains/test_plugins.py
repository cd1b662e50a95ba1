"""Third-party domains are found through the `relsim.domains` entry-point group, and declare
their geometry with the public plugin API `rs.geometry` (which rs.write then writes)."""
import ast
import re
import sys
import warnings
from pathlib import Path

import meshio
import numpy as np
import pytest

import relsim as rs
from relsim import domains, output

ROOT = Path(__file__).resolve().parents[2]


GUIDE = ROOT / "docs" / "guide" / "domains.md"


def _guide_chain() -> str:
    """The domains guide's plugin example (its ```python block that starts `# chain_domain.py`):
    the test installs exactly what the guide shows."""
    m = re.search(r"^```python\n(# chain_domain\.py.*?)^```$", GUIDE.read_text(), re.S | re.M)
    assert m, f"{GUIDE.relative_to(ROOT)} lost its chain_domain.py plugin example"
    return m.group(1)


CHAIN = _guide_chain()


def _install(tmp_path, monkeypatch, name, module_text):
    """Install a distribution the way pip leaves it: a module plus dist-info with entry
    points, on sys.path."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / f"{name}_domain.py").write_text(module_text)
    info = site / f"{name}_domain-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-domain\n"
                                   f"Version: 1.0\n")
    (info / "entry_points.txt").write_text(f"[relsim.domains]\n{name} = {name}_domain\n")
    monkeypatch.syspath_prepend(str(site))
    domains._loaded.pop(name, None)


def test_entry_point_domain_is_listed_and_used_from_a_kernel(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, "chain", CHAIN)
    assert "chain" in domains.available()
    chain = domains.get("chain").Chain(5)
    chain.links.new_field("dx", rs.f64)

    @rs.kernel
    def length(e):
        e.dx = e.head.x - e.tail.x

    chain.links.foreach(length)
    assert np.allclose(chain.links.dx.numpy(), 0.25)
    sys.modules.pop("chain_domain", None)


def test_unknown_domain_lists_registered_ones():
    with pytest.raises(rs.DomainError, match="grid.*tetmesh|tetmesh.*grid"):
        domains.get("nosuchdomain")


def test_broken_plugin_warns_instead_of_crashing(tmp_path, monkeypatch, capsys):
    _install(tmp_path, monkeypatch, "broken", "raise ImportError('missing dependency xyz')\n")
    assert "broken" in domains.available()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(rs.DomainError, match="broken"):
            domains.get("broken")
    assert any("missing dependency xyz" in str(x.message) for x in w)
    assert "grid" in domains.available()  # the rest still works
    # listed with a mark: domains.failures() and `relsim list` say it does not import
    assert domains.failures() == {"broken": "ImportError: missing dependency xyz"}
    from relsim import cli
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "  broken  (broken: it fails to import: ImportError: missing dependency xyz)" in out
    assert "  grid\n" in out
    domains._failed.pop("broken", None)


def test_readme_plugin_is_written_by_rs_write(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, "chain", CHAIN)
    chain = domains.get("chain").Chain(5)
    V, L = chain.vertices, chain.links
    V.new_field("T", rs.f64).load(np.arange(5.0))
    L.new_field("k", rs.i32).load(np.arange(4, dtype=np.int32))
    rs.write(tmp_path / "v.vtu", V)                    # default: every non-key, non-coord field
    back = meshio.read(tmp_path / "v.vtu")
    assert np.array_equal(back.points, np.column_stack([V.x.numpy(), np.zeros((5, 2))]))
    assert np.array_equal(back.cells_dict["line"], [[0, 1], [1, 2], [2, 3], [3, 4]])
    assert set(back.point_data) == {"T"} and np.array_equal(back.point_data["T"], V.T.numpy())
    V.x.numpy()[:] *= 2.0                              # written where it is now
    rs.write(tmp_path / "l.xdmf", L, ["k"])
    back = meshio.read(tmp_path / "l.xdmf")
    assert np.array_equal(back.points[:, 0], V.x.numpy())
    assert np.array_equal(back.cells_dict["line"], np.column_stack([L.tail.numpy(),
                                                                    L.head.numpy()]))
    assert np.array_equal(back.cell_data["k"][0], L.k.numpy())
    sys.modules.pop("chain_domain", None)


def test_geometry_declarations_of_every_kind(tmp_path):
    """Scalar (x, y) coordinates, a vec2 field, an array of cells and key fields as the
    connectivity, and an elastic point cloud."""
    V = rs.Relation("plate_vertices", 4)
    V.new_field("x", rs.f64).load([0.0, 1.0, 1.0, 0.0])
    V.new_field("y", rs.f32).load([0.0, 0.0, 1.0, 1.0])
    T = rs.Relation("plate_triangles", 2)
    T.new_key_field("v", V, 3).load([[0, 1, 2], [0, 2, 3]])
    T.new_field("area", rs.f64, init=0.5)
    rs.geometry.points(V, coords=("x", "y"), cells=[[0, 1, 2], [0, 2, 3]], cell_type="triangle")
    rs.geometry.cells(T, keys=T.v, coords=(V.x, V.y), cell_type="triangle")
    rs.write(tmp_path / "v.vtu", V, [])
    back = meshio.read(tmp_path / "v.vtu")
    assert np.array_equal(back.points, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    assert np.array_equal(back.cells_dict["triangle"], T.v.numpy())
    rs.write(tmp_path / "t.vtu", T)
    assert np.array_equal(meshio.read(tmp_path / "t.vtu").cell_data["area"][0], [0.5, 0.5])
    # a key vector as the points' connectivity; declaring again replaces the geometry
    rs.geometry.points(V, coords="x", cells=T.v, cell_type="triangle")
    rs.write(tmp_path / "v1.vtu", V, ["y"])
    back = meshio.read(tmp_path / "v1.vtu")
    assert np.array_equal(back.points[:, 1], np.zeros(4))
    assert np.array_equal(back.point_data["y"], V.y.numpy())
    # the key vector's own array is kept, not a copy; keys loaded later (a new array) leave
    # the connectivity as it was declared
    from relsim import output
    assert np.shares_memory(output._GEOMETRY[V].cells, T.v.numpy())
    T.v.load([[3, 2, 1], [3, 1, 0]])
    assert output.geometry(V)[1].tolist() == [[0, 1, 2], [0, 2, 3]]
    assert output.geometry(V)[1].dtype == np.int64

    P = rs.Relation("drops", 2, elastic=True)
    P.new_field("pos", rs.vec(2, rs.f64)).load([[0.1, 0.2], [0.3, 0.4]])
    P.new_field("m", rs.f64, init=1.0)
    rs.geometry.point_cloud(P, coords=P.pos)
    P.insert(1, pos=[[0.5, 0.6]])
    rs.write(tmp_path / "p.vtu", P)
    back = meshio.read(tmp_path / "p.vtu")
    assert np.array_equal(back.points[:, :2], P.pos.numpy())
    assert np.array_equal(back.cells_dict["vertex"].ravel(), [0, 1, 2])
    assert set(back.point_data) == {"m"}


def test_geometry_errors_name_the_relation_and_field():
    V = rs.Relation("verts", 3)
    V.new_field("pos", rs.vec(3, rs.f64))
    V.new_field("id", rs.i64)
    V.new_field("ivec", rs.vec(3, rs.i32))
    V.new_field("S", rs.mat(3, 3, rs.f64))
    V.new_field("x", rs.f64)
    E = rs.Relation("segs", 2)
    E.new_key_field("v", V, 2).load([[0, 1], [1, 2]])
    E.new_key_field("tail", V).load([0, 1])
    E.new_field("w", rs.f64)
    W = rs.Relation("others", 3)
    E.new_key_field("far", W).load([0, 1])
    F = rs.Relation("more_segs", 2)
    F.new_key_field("head", V).load([1, 2])
    g = rs.geometry

    def raises(match, fn, *args, **kw):
        with pytest.raises(rs.DomainError, match=match):
            fn(*args, **kw)

    raises(r"rs.geometry.points: vertices must be a relsim Relation, got str 'verts'",
           g.points, "verts", coords="pos", cells=[[0, 1]], cell_type="line")
    raises(r"rs.geometry.cells: relation must be a relsim Relation, got KeyField <Field segs.v",
           g.cells, E.v, keys="v", coords="pos", cell_type="line")
    raises(r"rs.geometry.point_cloud: relation must be a relsim Relation",
           g.point_cloud, None, coords="pos")
    # coordinates
    raises(r"rs.geometry.point_cloud\(verts\): coords 'p' is not a field of verts; it has "
           r"S, id, ivec, pos, x", g.point_cloud, V, coords="p")
    raises(r"coords verts.id is i64, not a float vector field \(rs.vec\(2 or 3, rs.f64\)\)",
           g.point_cloud, V, coords="id")
    raises(r"coords verts.ivec is vec3\[i32\], not a float vector field",
           g.point_cloud, V, coords="ivec")
    raises(r"coords verts.S is mat3x3\[f64\], not a float vector field",
           g.point_cloud, V, coords="S")
    raises(r"coords verts.pos is vec3\[f64\], not a float scalar field",
           g.point_cloud, V, coords=("x", "pos"))
    raises(r"coords must be one field or 2 or 3 scalar fields", g.point_cloud, V,
           coords=("x",) * 4)
    raises(r"rs.geometry.cells\(segs\): coords segs.w is not a field of verts",
           g.cells, E, keys="v", coords=E.w, cell_type="line")
    # cell types
    raises(r"rs.geometry.points\(verts\): unknown cell type 'tet'; the meshio cell types "
           r"are vertex, line, triangle, quad, tetra", g.points, V, coords="pos",
           cells=[[0, 1, 2, 0]], cell_type="tet")
    raises(r"rs.geometry.cells\(segs\): unknown cell type \['line'\]", g.cells, E, keys="v",
           coords="pos", cell_type=["line"])
    raises(r"rs.geometry.cells\(segs\): a 'triangle' cell has 3 vertices, but key field\(s\) "
           r"segs.v give 2", g.cells, E, keys="v", coords="pos", cell_type="triangle")
    raises(r"rs.geometry.points\(verts\): a 'triangle' cell has 3 vertices, but cells give 2",
           g.points, V, coords="pos", cells=[[0, 1]], cell_type="triangle")
    # connectivity
    raises(r"rs.geometry.points\(verts\): cell 1 has vertex rows \[2, 3\], outside verts "
           r"\(size 3\); 1 such cell", g.points, V, coords="pos", cells=[[0, 1], [2, 3]],
           cell_type="line")
    raises(r"cells must be an \(m, 2\) integer array of rows of verts, or key field\(s\) into "
           r"it; got float64 array of shape \(1, 2\)", g.points, V, coords="pos",
           cells=[[0.0, 1.0]], cell_type="line")
    raises(r"got list \[\[0, 1\], \[2\]\]", g.points, V, coords="pos", cells=[[0, 1], [2]],
           cell_type="line")
    raises(r"rs.geometry.points\(verts\): key field segs.far points into others, not into "
           r"verts, the relation of the vertices", g.points, V, coords="pos",
           cells=(E.tail, E.far), cell_type="line")
    raises(r"key fields segs.tail and more_segs.head belong to different relations",
           g.points, V, coords="pos", cells=(E.tail, F.head), cell_type="line")
    raises(r"rs.geometry.points\(verts\): segs.w is f64, not a key field", g.points, V,
           coords="pos", cells=E.w, cell_type="vertex")
    raises(r"rs.geometry.cells\(segs\): key 'head' is not a field of segs; it has far, tail, "
           r"v, w", g.cells, E, keys=("tail", "head"), coords="pos", cell_type="line")
    raises(r"rs.geometry.cells\(segs\): key field segs.far points into others, not into verts",
           g.cells, E, keys=("tail", "far"), coords="pos", cell_type="line")
    raises(r"rs.geometry.cells\(segs\): segs.w is f64, not a key field", g.cells, E, keys="w",
           coords="pos", cell_type="line")
    raises(r"rs.geometry.cells\(segs\): no key fields given", g.cells, E, keys=(),
           coords="pos", cell_type="line")
    for rel in (V, E):  # nothing was declared by the failed calls
        assert not output.has_geometry(rel)


def test_cell_types_agree_with_meshio():
    from meshio._common import num_nodes_per_cell
    assert {k: num_nodes_per_cell[k] for k in rs.geometry.CELL_TYPES} == rs.geometry.CELL_TYPES


def test_the_plugin_api_is_public_and_the_domains_use_only_it():
    """`rs.geometry` is the one way to declare geometry (relsim.output keeps no register_*),
    and every module of relsim/domains imports from relsim only its public API (`relsim`
    itself, names in `relsim.__all__`) and other domain modules."""
    assert "geometry" in rs.__all__
    assert {"points", "cells", "point_cloud", "CELL_TYPES"} <= set(rs.geometry.__all__)
    assert not [n for n in dir(output) if n.startswith("register")]
    bad = []
    for path in sorted((ROOT / "relsim" / "domains").rglob("*.py")):
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        package = package.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                pairs = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = node.module or ""
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                pairs = [(src, a.name) for a in node.names]
            else:
                continue
            for src, name in pairs:
                if src == "relsim" and (name is None or name in rs.__all__):
                    continue
                if src.split(".")[0] != "relsim" or src.startswith("relsim.domains"):
                    continue
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {src}"
                           f"{'.' + name if name else ''}")
    assert not bad, "domains import relsim's internals:\n  " + "\n  ".join(bad)
