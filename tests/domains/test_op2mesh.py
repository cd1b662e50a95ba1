"""OP2 Airfoil mesh: generator, ASCII writer and reader (no data files needed)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import pathlib
import sys

import numpy as np
import pytest

try:
    from relsim.domains import op2mesh
except ImportError:  # relsim core not importable: load the package on its own
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "relsim" / "domains"))
    import op2mesh

naca_mesh = op2mesh.naca_mesh
read_op2 = op2mesh.read_op2
write_op2 = op2mesh.write_op2
format_op2 = op2mesh.format_op2
MeshFormatError = op2mesh.MeshFormatError

I, J = 20, 30  # noqa: E741
# sha256 of format_op2(naca_mesh(20, 30)): a regression pin from the generator whose
# (400, 600) rendering reproduces the reference file's sha256 (test_standard_mesh_sha256).
SHA_20_30 = "3b2e8455ba263b5182bc7309db81dd6f4f903187f5c93fb541087ec75f0e38f0"


@pytest.fixture(scope="module")
def mesh():
    return naca_mesh(I, J)


def test_counts_match_reference_formulas(mesh):
    assert (mesh.nnode, mesh.ncell, mesh.nedge, mesh.nbedge) == (1891, 1800, 3530, 140)
    sizes = op2mesh.naca_sizes(I, J)
    assert sizes == {
        "nnode": (3 * I + 1) * (J + 1),
        "ncell": 3 * I * J,
        "nedge": (3 * I - 1) * J + 3 * I * (J - 1) + I,
        "nbedge": 4 * I + 2 * J,
    }
    for I2, J2 in [(1, 2), (3, 5), (7, 4)]:
        m = naca_mesh(I2, J2)
        assert (m.nnode, m.ncell, m.nedge, m.nbedge) == tuple(op2mesh.naca_sizes(I2, J2).values())


def test_dtypes_shapes_readonly(mesh):
    assert mesh.x.dtype == np.float64 and mesh.x.shape == (mesh.nnode, 2)
    for name, shape in [
        ("cell", (mesh.ncell, 4)),
        ("edge", (mesh.nedge, 2)),
        ("ecell", (mesh.nedge, 2)),
        ("bedge", (mesh.nbedge, 2)),
        ("becell", (mesh.nbedge,)),
        ("bound", (mesh.nbedge,)),
    ]:
        a = getattr(mesh, name)
        assert a.shape == shape and a.dtype == np.int32, name
        assert not a.flags.writeable
    with pytest.raises(dataclasses.FrozenInstanceError):
        mesh.x = None


def test_structure(mesh):
    # Every cell has 4 faces; far-field corners have two boundary faces.
    faces = np.bincount(mesh.ecell.ravel(), minlength=mesh.ncell) + np.bincount(
        mesh.becell, minlength=mesh.ncell
    )
    assert (faces == 4).all()
    nb = np.bincount(mesh.becell, minlength=mesh.ncell)
    assert (nb == 2).sum() == 2 and (nb == 1).sum() == 4 * I + 2 * J - 4
    assert (mesh.bound == 1).sum() == I and (mesh.bound == 2).sum() == 3 * I + 2 * J
    # Positive signed area of every cell (corners counter-clockwise).
    p = mesh.x[mesh.cell]
    xs, ys = p[..., 0], p[..., 1]
    area = 0.5 * (xs * np.roll(ys, -1, axis=1) - np.roll(xs, -1, axis=1) * ys).sum(axis=1)
    assert (area > 0).all()
    # The wake cut: I+1 coincident node pairs on the bottom row.
    row = mesh.x[: 3 * I + 1]
    assert np.array_equal(row[: I + 1], row[2 * I :][::-1])
    # The airfoil lies in x in [-0.0077, 1], |y| <= 0.0595.
    foil = row[I : 2 * I + 1]
    assert foil[:, 0].min() >= -0.0077 - 1e-6 and foil[:, 0].max() == 1.0
    assert np.abs(foil[:, 1]).max() <= 0.0595


def test_rendering_is_stable(mesh):
    data = format_op2(mesh)
    assert hashlib.sha256(data).hexdigest() == SHA_20_30
    lines = data.split(b"\n")
    assert lines[-1] == b""
    assert lines[0] == b" 1891 1800 3530 140 "
    assert all(ln.startswith(b" ") and ln.endswith(b" ") for ln in lines[:-1])
    assert len(lines) - 1 == 1 + mesh.nnode + mesh.ncell + mesh.nedge + mesh.nbedge


def test_coordinates_are_printf_rounded(mesh):
    # The in-memory coordinates are what "%f" then strtod gives.
    flat = mesh.x.ravel()
    assert all(float(format(v, "f")) == v for v in flat.tolist())


def test_round_f6_matches_printf():
    rng = np.random.default_rng(1)
    vals = [
        rng.uniform(-20, 20, 2000),
        rng.uniform(-1e-5, 1e-5, 200),
        np.array(
            [
                0.0,
                -0.0,
                -1e-9,
                0.5e-6,
                1.5e-6,
                2.5e-6,
                -2.5e-6,
                0.0000005,
                123456.0000005,
                8.9700245,
                1e12 + 0.25,
                3e15,
                -7.25,
            ]
        ),
    ]
    # near-ties: k + 0.5 micro-units, nudged by a few ulps either way
    ties = (np.arange(-300, 300) + 0.5) / 1e6
    vals += [ties, np.nextafter(ties, np.inf), np.nextafter(ties, -np.inf)]
    v = np.concatenate(vals)
    expect = np.array([float(format(t, "f")) for t in v.tolist()])
    got = op2mesh.round_f6(v)
    assert got.tobytes() == expect.tobytes()  # bit for bit, signs of zero included
    # and format_op2 renders them exactly like "%f" (vectorised path, then the huge-value path)
    small = v[np.abs(v) < 1e9]
    for w in (small, v):
        n = len(w) // 2 * 2
        xy = w[:n].reshape(-1, 2)
        m = op2mesh.Op2Mesh(
            x=xy,
            cell=np.zeros((0, 4)),
            edge=np.zeros((0, 2)),
            ecell=np.zeros((0, 2)),
            bedge=np.zeros((0, 2)),
            becell=np.zeros(0),
            bound=np.zeros(0),
        )
        body = format_op2(m).split(b"\n", 1)[1]
        assert body == b"".join(b" %f %f \n" % (a, b) for a, b in xy.tolist())


def test_int_rendering_negative_and_wide():
    bound = np.array([1, 2, -7, 0, 2147483647, -2147483648, 10, 99, 100], dtype=np.int64)
    nb = len(bound)
    m = op2mesh.Op2Mesh(
        x=np.zeros((1, 2)),
        cell=np.zeros((0, 4)),
        edge=np.zeros((0, 2)),
        ecell=np.zeros((0, 2)),
        bedge=np.zeros((nb, 2)),
        becell=np.zeros(nb),
        bound=bound,
    )
    tail = format_op2(m).split(b"\n")[2:-1]
    assert tail == [b" 0 0 0 %d " % b for b in bound.tolist()]


@pytest.mark.parametrize("suffix", [".dat", ".dat.gz"])
def test_write_read_roundtrip(mesh, tmp_path, suffix):
    path = tmp_path / ("grid" + suffix)
    write_op2(mesh, path)
    if suffix.endswith(".gz"):
        assert gzip.decompress(path.read_bytes()) == format_op2(mesh)
    else:
        assert path.read_bytes() == format_op2(mesh)
    back = read_op2(path)
    assert back.equals(mesh)
    for name in ("x", "cell", "edge", "ecell", "bedge", "becell", "bound"):
        assert np.array_equal(getattr(back, name), getattr(mesh, name)), name
        assert getattr(back, name).dtype == getattr(mesh, name).dtype


def test_read_accepts_loose_whitespace(mesh, tmp_path):
    # No leading/trailing spaces, CRLF line ends, no final newline: still the same mesh.
    text = format_op2(mesh).decode()
    loose = "\r\n".join(ln.strip() for ln in text.split("\n")).rstrip()
    path = tmp_path / "loose.dat"
    path.write_text(loose, newline="")
    assert read_op2(path).equals(mesh)


# ---------------------------------------------------------------------------------------
# Errors


def _write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _assert_error(path, *words):
    with pytest.raises(MeshFormatError) as ei:
        read_op2(path)
    err = ei.value
    assert isinstance(err, ValueError)
    assert str(path) in str(err)
    assert err.path == str(path)
    for w in words:
        assert w in str(err), (w, str(err))
    return err


def test_truncated_in_edge_block(mesh, tmp_path):
    lines = format_op2(mesh).split(b"\n")
    cut = 1 + mesh.nnode + mesh.ncell + 100  # 100 edge lines survive
    p = _write(tmp_path, "trunc_edges.dat", b"\n".join(lines[:cut]) + b"\n")
    _assert_error(p, "truncated", "edge block", "100 of 3530")


def test_truncated_in_node_block(mesh, tmp_path):
    lines = format_op2(mesh).split(b"\n")
    p = _write(tmp_path, "trunc_nodes.dat", b"\n".join(lines[:500]) + b"\n")
    _assert_error(p, "truncated", "node")


def test_truncated_mid_line(mesh, tmp_path):
    data = format_op2(mesh)
    p = _write(tmp_path, "trunc_mid.dat", data[: len(data) - 7])
    _assert_error(p, "truncated", "bedge")


def test_truncated_gzip(mesh, tmp_path):
    gz = gzip.compress(format_op2(mesh))
    p = _write(tmp_path, "trunc.dat.gz", gz[: len(gz) // 2])
    _assert_error(p, "gzip")


def test_index_out_of_range(mesh, tmp_path):
    lines = format_op2(mesh).split(b"\n")
    k = 1 + mesh.nnode + 17  # cell row 17
    lines[k] = b" 0 1 %d 3 " % mesh.nnode
    p = _write(tmp_path, "bad_cell.dat", b"\n".join(lines))
    _assert_error(p, "out of range", "cell", "row 17", str(mesh.nnode), f"line {k + 1}")

    lines = format_op2(mesh).split(b"\n")
    k = 1 + mesh.nnode + mesh.ncell + 5  # edge row 5, second cell
    lines[k] = b" 0 1 2 %d " % mesh.ncell
    p = _write(tmp_path, "bad_ecell.dat", b"\n".join(lines))
    _assert_error(p, "out of range", "ecell", "row 5")

    lines = format_op2(mesh).split(b"\n")
    k = 1 + mesh.nnode + mesh.ncell + mesh.nedge + 3  # bedge row 3, its cell
    lines[k] = b" 0 1 -1 2 "
    p = _write(tmp_path, "bad_becell.dat", b"\n".join(lines))
    _assert_error(p, "out of range", "becell", "-1")


def test_bad_header_and_garbage(mesh, tmp_path):
    _assert_error(_write(tmp_path, "empty.dat", b""), "header")
    _assert_error(_write(tmp_path, "hdr.dat", b" 1 2 3\n"), "header")
    _assert_error(_write(tmp_path, "hdr2.dat", b" 1 2 x 4\n"), "header")
    lines = format_op2(mesh).split(b"\n")
    lines[3] = b" 1.0 abc "
    _assert_error(_write(tmp_path, "garbage.dat", b"\n".join(lines)), "node")
    lines = format_op2(mesh).split(b"\n")
    lines[1 + mesh.nnode + 2] = b" 0 1 2.5 3 "
    _assert_error(_write(tmp_path, "float_index.dat", b"\n".join(lines)), "unparsable")
    data = format_op2(mesh) + b" 1 2 3 4 \n"
    _assert_error(_write(tmp_path, "extra.dat", data), "extra")


def test_missing_file(tmp_path):
    _assert_error(tmp_path / "nope.dat", "cannot read")


def test_standard_mesh_sha256():  # the generator reproduces the published file (about 4 s)
    data = format_op2(naca_mesh(400, 600))
    assert len(data) == 78_753_807
    assert hashlib.sha256(data).hexdigest() == op2mesh.STANDARD_SHA256
