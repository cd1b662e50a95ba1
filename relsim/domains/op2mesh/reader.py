"""The OP2 Airfoil ASCII mesh format: reading, rendering and writing.

Layout (see the Airfoil reference, section 4.2 step 8)::

    nnode ncell nedge nbedge
    nnode lines   x y                  (C "%f")
    ncell lines   n0 n1 n2 n3          (pcell,  cells -> nodes)
    nedge lines   n0 n1 c0 c1          (pedge,  edges -> nodes; pecell, edges -> cells)
    nbedge lines  n0 n1 c bound        (pbedge, bedges -> nodes; pbecell, bedges -> cells)

Indices are 0-based. Every rendered line starts with a space and has a space before the
newline. Files may be plain or gzip-compressed (detected by the gzip magic, not the name).
"""

from __future__ import annotations

import gzip
import os
import warnings
import zlib
from dataclasses import dataclass

import numpy as np

try:  # Part of the relsim error hierarchy when the core is importable.
    from relsim import DomainError as _MeshErrorBase
except ImportError:  # pragma: no cover - standalone use
    _MeshErrorBase = ValueError

__all__ = [
    "INDEX_DTYPE",
    "MeshFormatError",
    "Op2Mesh",
    "format_op2",
    "read_op2",
    "round_f6",
    "write_op2",
]

#: dtype of every map and of ``bound`` (OP2 uses C ``int``).
INDEX_DTYPE = np.int32
_INDEX_MAX = np.iinfo(INDEX_DTYPE).max


class MeshFormatError(_MeshErrorBase):
    """An OP2 mesh file is malformed. ``path`` is the file, ``reason`` what is wrong."""

    def __init__(self, path, reason: str):
        self.path = os.fspath(path) if path is not None else "<memory>"
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


@dataclass(frozen=True, eq=False)
class Op2Mesh:
    """An Airfoil mesh. Arrays are C-contiguous and read-only.

    Field names follow the OP2 maps: ``cell`` = pcell, ``edge`` = pedge, ``ecell`` = pecell,
    ``bedge`` = pbedge, ``becell`` = pbecell.
    """

    x: np.ndarray  # (nnode, 2) float64, node coordinates
    cell: np.ndarray  # (ncell, 4) int32, cells -> nodes (counter-clockwise)
    edge: np.ndarray  # (nedge, 2) int32, edges -> nodes (n1, n2)
    ecell: np.ndarray  # (nedge, 2) int32, edges -> cells (c1, c2)
    bedge: np.ndarray  # (nbedge, 2) int32, bedges -> nodes
    becell: np.ndarray  # (nbedge,) int32, bedges -> the interior cell
    bound: np.ndarray  # (nbedge,) int32, 1 = wall, else far field

    def __post_init__(self):
        spec = {
            "x": (np.float64, 2),
            "cell": (INDEX_DTYPE, 4),
            "edge": (INDEX_DTYPE, 2),
            "ecell": (INDEX_DTYPE, 2),
            "bedge": (INDEX_DTYPE, 2),
            "becell": (INDEX_DTYPE, None),
            "bound": (INDEX_DTYPE, None),
        }
        for name, (dtype, width) in spec.items():
            a = np.ascontiguousarray(getattr(self, name), dtype=dtype)
            shape_ok = a.ndim == 1 if width is None else (a.ndim == 2 and a.shape[1] == width)
            if not shape_ok:
                want = "(n,)" if width is None else f"(n, {width})"
                raise ValueError(f"Op2Mesh.{name}: expected shape {want}, got {a.shape}")
            if a is getattr(self, name) or a.base is not None:
                a = a.copy()  # never freeze (or alias) the caller's array
            a.flags.writeable = False
            object.__setattr__(self, name, a)
        if self.edge.shape[0] != self.ecell.shape[0]:
            raise ValueError("Op2Mesh: edge and ecell differ in length")
        if not (self.bedge.shape[0] == self.becell.shape[0] == self.bound.shape[0]):
            raise ValueError("Op2Mesh: bedge, becell and bound differ in length")

    @property
    def nnode(self) -> int:
        """The number of nodes (rows of ``x``)."""
        return self.x.shape[0]

    @property
    def ncell(self) -> int:
        """The number of cells (rows of ``cell``)."""
        return self.cell.shape[0]

    @property
    def nedge(self) -> int:
        """The number of interior edges (rows of ``edge``)."""
        return self.edge.shape[0]

    @property
    def nbedge(self) -> int:
        """The number of boundary edges (rows of ``bedge``)."""
        return self.bedge.shape[0]

    def equals(self, other: Op2Mesh) -> bool:
        """Exact equality of every array (coordinates bit for bit, -0.0 vs 0.0 included)."""
        if not isinstance(other, Op2Mesh):
            return False
        for name in ("cell", "edge", "ecell", "bedge", "becell", "bound"):
            if not np.array_equal(getattr(self, name), getattr(other, name)):
                return False
        return self.x.shape == other.x.shape and self.x.tobytes() == other.x.tobytes()


# --------------------------------------------------------------------------------------
# Reading


def _load_bytes(path) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MeshFormatError(path, f"cannot read file: {e.strerror or e}") from e
    if data[:2] == b"\x1f\x8b":
        try:
            # One-shot zlib is a bit faster than gzip.open(...).read().
            data = zlib.decompress(data, wbits=31)
        except zlib.error:
            try:  # multi-member gzip files
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as e:
                raise MeshFormatError(path, f"corrupt or truncated gzip data ({e})") from e
    return data


def _newline_positions(data: bytes, count: int, start: int) -> np.ndarray:
    """Positions of the first ``count`` newlines at or after ``start`` (fewer if the data ends)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    found = []
    nfound = 0
    lo = start
    step = (count + 1) * 24  # rendered node lines are ~20 bytes
    while nfound < count and lo < len(buf):
        hi = min(len(buf), lo + step)
        nl = np.flatnonzero(buf[lo:hi] == 10) + lo
        found.append(nl)
        nfound += len(nl)
        lo = hi
        step = max(step, 1 << 20)
    if not found:
        return np.empty(0, dtype=np.int64)
    return np.concatenate(found)[:count]


def _parse(path, text: bytes, dtype, what: str, first_line: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return np.fromstring(text, dtype=dtype, sep=" ")
        except (ValueError, DeprecationWarning):
            pass
    # Error path only: find the first offending token for the message.
    conv = float if dtype == np.float64 else int
    for k, line in enumerate(text.split(b"\n")):
        for tok in line.split():
            try:
                conv(tok)
            except ValueError:
                raise MeshFormatError(
                    path,
                    f"{what}: unparsable value {tok.decode(errors='replace')!r} "
                    f"at line {first_line + k}",
                ) from None
    raise MeshFormatError(path, f"{what}: unparsable data")


def _check_range(path, name, arr, upper, first_line, cols=None):
    """Raise if any entry of ``arr`` lies outside [0, upper)."""
    bad = (arr < 0) | (arr >= upper)
    if bad.any():
        flat = np.flatnonzero(bad.ravel())
        k = int(flat[0])
        row, col = (k // arr.shape[1], k % arr.shape[1]) if arr.ndim == 2 else (k, 0)
        value = int(arr.ravel()[k])
        column = f", column {cols[col]}" if cols else ""
        raise MeshFormatError(
            path,
            f"map {name}: index {value} out of range [0, {upper}) at row {row} "
            f"(line {first_line + row}{column}); {len(flat)} bad entr"
            f"{'y' if len(flat) == 1 else 'ies'} in total",
        )


def read_op2(path) -> Op2Mesh:
    """Read an OP2 Airfoil ASCII mesh (plain or gzip). Raises :class:`MeshFormatError`."""
    data = _load_bytes(path)
    # Header.
    end = data.find(b"\n")
    if end < 0:
        end = len(data)
    head = data[:end].split()
    if len(head) != 4:
        raise MeshFormatError(
            path,
            f"bad header: expected 4 integers 'nnode ncell nedge nbedge', got {head[:8]!r}",
        )
    try:
        nnode, ncell, nedge, nbedge = (int(t) for t in head)
    except ValueError:
        raise MeshFormatError(path, f"bad header: not integers: {b' '.join(head)!r}") from None
    if min(nnode, ncell, nedge, nbedge) < 0 or max(nnode, ncell, nedge, nbedge) > _INDEX_MAX:
        raise MeshFormatError(
            path, f"bad header: sizes out of range: {nnode} {ncell} {nedge} {nbedge}"
        )

    # Node block: the next nnode lines (delimited so that the float parse sees only them).
    start = end + 1
    if nnode:
        nl = _newline_positions(data, nnode, start)
        if len(nl) == nnode:
            xend = int(nl[-1])
        else:
            tail_start = int(nl[-1]) + 1 if len(nl) else start
            has_tail = bool(data[tail_start:].strip())  # a last line without its newline
            if len(nl) == nnode - 1 and has_tail:
                xend = len(data)  # the file ends with the last node line
            else:
                raise MeshFormatError(
                    path,
                    f"truncated file: expected {nnode} node lines, found {len(nl) + has_tail}",
                )
    else:
        xend = start
    x = _parse(path, data[start:xend], np.float64, "node block", 2)
    if x.size != 2 * nnode:
        raise MeshFormatError(
            path,
            f"node block (lines 2..{nnode + 1}): expected {2 * nnode} coordinates, got {x.size}",
        )
    if not np.isfinite(x).all():
        raise MeshFormatError(path, "node block: non-finite coordinate")

    # Integer blocks: one parse for cells, edges and bedges.
    ints = _parse(path, data[xend + 1 :], np.int64, "cell/edge/bedge blocks", nnode + 2)
    want = 4 * (ncell + nedge + nbedge)
    if ints.size < want:
        # Which block is short?
        got = ints.size
        for name, n in (("cell", ncell), ("edge", nedge), ("bedge", nbedge)):
            if got < 4 * n:
                raise MeshFormatError(
                    path,
                    f"truncated file: {name} block has {got // 4} of {n} lines "
                    f"({ints.size} of {want} integers after the node block)",
                )
            got -= 4 * n
    if ints.size > want:
        raise MeshFormatError(
            path,
            f"{ints.size - want} unexpected extra values after the last block (expected {want})",
        )
    a = 0
    cell = ints[a : a + 4 * ncell].reshape(ncell, 4)
    a += 4 * ncell
    eb = ints[a : a + 4 * nedge].reshape(nedge, 4)
    a += 4 * nedge
    bb = ints[a : a + 4 * nbedge].reshape(nbedge, 4)

    line = nnode + 2  # first line of the cell block (1-based)
    _check_range(path, "cell (cells->nodes)", cell, nnode, line)
    line += ncell
    _check_range(path, "edge (edges->nodes)", eb[:, 0:2], nnode, line, cols=(1, 2))
    _check_range(path, "ecell (edges->cells)", eb[:, 2:4], ncell, line, cols=(3, 4))
    line += nedge
    _check_range(path, "bedge (bedges->nodes)", bb[:, 0:2], nnode, line, cols=(1, 2))
    _check_range(path, "becell (bedges->cells)", bb[:, 2], ncell, line, cols=(3,))
    bound = bb[:, 3]
    if bound.size and (bound.min() < np.iinfo(INDEX_DTYPE).min or bound.max() > _INDEX_MAX):
        raise MeshFormatError(path, "bound: value does not fit in int32")

    return Op2Mesh(
        x=x.reshape(nnode, 2),
        cell=cell.astype(INDEX_DTYPE),
        edge=eb[:, 0:2].astype(INDEX_DTYPE),
        ecell=eb[:, 2:4].astype(INDEX_DTYPE),
        bedge=bb[:, 0:2].astype(INDEX_DTYPE),
        becell=bb[:, 2].astype(INDEX_DTYPE),
        bound=bound.astype(INDEX_DTYPE),
    )


# --------------------------------------------------------------------------------------
# Rendering: C printf "%f" and "%d", vectorised.

_F6_LIMIT = 2.0**50  # |v| * 1e6 below this: the fast exact path applies


def _round_f6_units(a: np.ndarray):
    """For finite |a| < 2**50/1e6: (M, ok), where M = |a| * 10**6 rounded to the nearest integer
    exactly as printf's "%f" rounds it (the true binary value, ties to even); ``ok`` is False
    where the fast path cannot decide and the caller must fall back to string formatting."""
    p = np.abs(a) * 1e6  # rounded product
    m = np.rint(p)
    frac = p - np.floor(p)  # exact for p < 2**52
    # The exact product differs from p by <= ulp(p)/2; only near-ties can round differently.
    ok = (np.abs(frac - 0.5) > 4.0 * np.spacing(p)) & (p < _F6_LIMIT)
    return m, ok


def round_f6(a) -> np.ndarray:
    """Round like printf("%f") followed by strtod: the coordinates an ASCII OP2 file holds.

    Exact (not ``np.round(a, 6)``, which can differ in the last ulp).
    """
    a = np.asarray(a, dtype=np.float64)
    m, ok = _round_f6_units(a)
    out = np.copysign(m / 1e6, a)  # M < 2**53 and 1e6 exact: the division is strtod's result
    bad = ~ok | ~np.isfinite(a)
    if bad.any():
        idx = np.flatnonzero(bad.ravel())
        flat = out.reshape(-1)
        src = a.reshape(-1)
        for k in idx:
            flat[k] = float(format(src[k], "f"))
    return out


def _digits_into(out: np.ndarray, pos: np.ndarray, value: np.ndarray, ndig: np.ndarray):
    """Write the digits of non-negative int64 ``value`` into out[pos : pos + ndig]."""
    v = value.copy()
    end = pos + ndig
    for d in range(int(ndig.max()) if ndig.size else 0):
        live = ndig > d
        out[end[live] - 1 - d] = (v[live] % 10 + 48).astype(np.uint8)
        v //= 10


def _ndigits(v: np.ndarray) -> np.ndarray:
    """Number of decimal digits of non-negative int64 values (1 for 0)."""
    n = np.ones(v.shape, dtype=np.int64)
    t = 10
    while t <= (int(v.max()) if v.size else 0):
        n += v >= t
        t *= 10
    return n


def _render_rows(cols) -> bytes:
    """Render rows " c0 c1 ... \\n". Each column is ("int", int64 array) or
    ("f6", (neg bool, M int64 units of 1e-6))."""
    nrow = len(cols[0][1]) if cols[0][0] == "int" else len(cols[0][1][1])
    if nrow == 0:
        return b""
    widths = []
    prepared = []
    for kind, val in cols:
        if kind == "int":
            neg = val < 0
            mag = np.abs(val)
            nd = _ndigits(mag)
            widths.append(1 + neg + nd)  # leading space, sign, digits
            prepared.append(("int", neg, mag, nd))
        else:
            neg, m = val
            ip, fp = np.divmod(m, 1_000_000)
            nd = _ndigits(ip)
            widths.append(1 + neg + nd + 7)  # space, sign, int digits, '.', 6 decimals
            prepared.append(("f6", neg, ip, nd, fp))
    row_len = np.sum(widths, axis=0) + 2  # trailing " \n"
    row_start = np.zeros(nrow, dtype=np.int64)
    np.cumsum(row_len[:-1], out=row_start[1:])
    total = int(row_start[-1] + row_len[-1])
    out = np.full(total, 32, dtype=np.uint8)  # spaces
    pos = row_start.copy()
    for w, prep in zip(widths, prepared, strict=True):
        p = pos + 1  # skip the leading space
        neg = prep[1]
        out[p[neg]] = ord("-")
        p = p + neg
        if prep[0] == "int":
            _, _, mag, nd = prep
            _digits_into(out, p, mag, nd)
        else:
            _, _, ip, nd, fp = prep
            _digits_into(out, p, ip, nd)
            out[p + nd] = ord(".")
            _digits_into(out, p + nd + 1, fp, np.full(nrow, 6, dtype=np.int64))
        pos = pos + w
    out[row_start + row_len - 1] = 10
    return out.tobytes()


def _f6_column(a: np.ndarray):
    """(neg, M) for the "%f" rendering of a float64 column with finite |a| < 1e9."""
    m, ok = _round_f6_units(a)
    m = m.astype(np.int64)
    if not ok.all():
        for k in np.flatnonzero(~ok):
            m[k] = int(format(abs(a[k]), "f").replace(".", ""))
    return np.signbit(a), m


def _render_coords(x: np.ndarray) -> bytes:
    if np.isfinite(x).all() and (np.abs(x) < 1e9).all():
        return _render_rows([("f6", _f6_column(x[:, 0])), ("f6", _f6_column(x[:, 1]))])
    # Huge or non-finite values: Python's "%f" (same digits as C's for finite values).
    return "".join(f" {a:f} {b:f} \n" for a, b in x.tolist()).encode("ascii")


def _i64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int64)


def format_op2(mesh: Op2Mesh) -> bytes:
    """The ASCII rendering of ``mesh``, byte-identical to the C generator's output
    (coordinates with "%f", every line starting with a space and ending in " \\n")."""
    head = b" %d %d %d %d \n" % (mesh.nnode, mesh.ncell, mesh.nedge, mesh.nbedge)
    x = _render_coords(mesh.x)
    cell = _render_rows([("int", _i64(mesh.cell[:, k])) for k in range(4)])
    edge = _render_rows(
        [
            ("int", _i64(mesh.edge[:, 0])),
            ("int", _i64(mesh.edge[:, 1])),
            ("int", _i64(mesh.ecell[:, 0])),
            ("int", _i64(mesh.ecell[:, 1])),
        ]
    )
    bedge = _render_rows(
        [
            ("int", _i64(mesh.bedge[:, 0])),
            ("int", _i64(mesh.bedge[:, 1])),
            ("int", _i64(mesh.becell)),
            ("int", _i64(mesh.bound)),
        ]
    )
    return b"".join((head, x, cell, edge, bedge))


def write_op2(mesh: Op2Mesh, path) -> None:
    """Write ``mesh`` in the ASCII format (see :func:`format_op2`); gzip if ``path`` ends in .gz."""
    data = format_op2(mesh)
    if os.fspath(path).endswith(".gz"):
        with gzip.open(path, "wb", compresslevel=6) as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)
