"""Which rank owns each row of a relation (every rank computes the same answer, from the same
relations: no communication).

* a structured grid: blocks along the axes (`grid_owners`), the rank counts per axis chosen
  to keep blocks near-cubic; any rank count works;
* a relation whose geometry a domain registered (`relsim.output`: a mesh's points or cells, a
  point cloud): recursive coordinate bisection (`rcb`) of its points or cell centroids;
* a relation with a key field into another relation: each row goes with the row its first key
  field's first key names (edges with their tail vertex), so the rows a kernel reaches through
  keys are mostly on the same rank;
* otherwise: `rcb` of a float vec2/vec3 field named like coordinates (`COORDINATE_NAMES`) when
  it has one, else contiguous blocks of rows;
* ``method="metis"`` (pymetis installed): METIS's k-way partition of the graph in which two rows
  are adjacent when a row of another relation keys both (`adjacency`).

`rs.partition(R, method=..., coords=...)` chooses for one relation instead. Ownership decides
only where rows are computed: results are the same bits for any partition.
"""
from __future__ import annotations

import weakref

import numpy as np

from ... import output
from ...errors import ConfigError
from ...types import VecType

METHODS = ("auto", "blocks", "rcb", "metis")

_requests: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # relation -> (method, coords)


class Partition:
    """How a relation's rows are distributed (``R.partition`` when running on several ranks).

    ``rank``, ``nranks``; ``owner`` (the owning rank of every row); ``owned`` (how many rows this
    rank owns) and ``owned_rows``; ``ghosts``: how many rows it does not own but holds copies of
    (read by its kernels) or computes redundantly (to fold its own rows' reductions)."""

    def __init__(self, relation, rank: int, nranks: int, owner: np.ndarray, method: str):
        self.relation_name = relation.name
        self.size = relation.size
        self.rank, self.nranks, self.method = rank, nranks, method
        self.owner = owner
        self.owner.flags.writeable = False
        self.owned_rows = np.flatnonzero(owner == rank)
        self.owned_rows.flags.writeable = False
        self.counts = np.bincount(owner, minlength=nranks)
        # rows of each rank, ranks in order (each ascending): how host gathers lay them out
        self.by_rank = np.argsort(owner, kind="stable")
        self.ghost_rows = np.zeros(0, dtype=np.int64)

    @property
    def owned(self) -> int:
        return len(self.owned_rows)

    @property
    def ghosts(self) -> int:
        return len(self.ghost_rows)

    def written_locally(self, field) -> None:
        """`field`'s owned rows were written on this rank only (``load(local=True)``): its other
        rows are current on their owners."""
        from .ghosts import StaleGhosts
        from .world import current
        field.residency = StaleGhosts(current())

    def add_ghosts(self, rows) -> None:
        self.ghost_rows = np.union1d(self.ghost_rows, rows)

    def __repr__(self) -> str:
        return (f"<Partition of {self.relation_name}: rank {self.rank} of {self.nranks} owns "
                f"{self.owned} of {self.size} rows, {self.ghosts} ghost rows ({self.method})>")


def request(relation, method: str = "auto", coords=None) -> None:
    """Record how `relation` is to be partitioned when kernels run on several ranks."""
    if method not in METHODS:
        raise ConfigError(f"partition method must be one of {', '.join(METHODS)}, got "
                          f"{method!r}")
    fields = [] if coords is None else \
        [coords] if hasattr(coords, "relation") else list(coords)
    if coords is not None and (not fields or any(getattr(f, "relation", None) is not relation
                                                 for f in fields)):
        raise ConfigError(f"partition of {relation.name}: coords must be a field of "
                          f"{relation.name} (or a sequence of its scalar fields), got {coords!r}")
    if relation.partition is not None:
        raise ConfigError(f"{relation.name} is partitioned already ({relation.partition!r}); "
                          f"call rs.partition before its first kernel runs")
    _requests[relation] = (method, coords)


def of(relation, world) -> Partition:
    """`relation`'s partition over `world` (computed once, and again if its size changed)."""
    p = relation.partition
    if p is None or p.size != relation.size:
        owner, method = owners(relation, world.size, set())
        p = relation.partition = Partition(relation, world.rank, world.size, owner, method)
    return p


def owners(relation, nranks: int, visiting: set):
    """(owning rank of every row, how it was decided)."""
    method, coords = _requests.get(relation, ("auto", None))
    n = relation.size
    if method == "blocks":
        return blocks(n, nranks), "blocks"
    if method == "metis":
        return metis(relation, nranks), "metis"
    if method == "rcb" or coords is not None:
        xyz, what = _coordinates(relation) if coords is None else _given(coords)
        if xyz is None:
            raise ConfigError(f"partition of {relation.name} by rcb needs coordinates: pass "
                              f"coords=<a float vector field of {relation.name}, or its x, y"
                              f"(, z) fields>")
        return rcb(xyz, nranks), f"rcb on {what}"
    if relation.grid is not None:
        return grid_owners(relation.grid, nranks), "grid blocks"
    xyz = output.row_coordinates(relation)
    if xyz is not None:  # a mesh's points or cells: bisect where they are
        return rcb(xyz, nranks), "rcb on its mesh geometry"
    visiting = visiting | {id(relation)}
    for f in relation.fields.values():
        t = getattr(f, "target", None)
        if f.is_key and t is not relation and id(t) not in visiting and t.size > 0 and n > 0:
            if t.partition is not None and t.partition.size == t.size:
                target_owner = t.partition.owner
            else:
                target_owner, _ = owners(t, nranks, visiting)
            keys = f.data.reshape(n, -1)[:, 0]
            return target_owner[keys].astype(np.int32), f"with {t.name} through {f.name}"
    xyz, what = _coordinates(relation)
    if xyz is not None:
        return rcb(xyz, nranks), f"rcb on {what}"
    return blocks(n, nranks), "blocks"


def adjacency(relation):
    """(xadj, adjncy): rows of `relation` are adjacent when one row of another relation keys
    both (an edge's two vertices, a tet's four), as CSR without self-loops or repeats."""
    pairs = []
    for kf in relation._incoming():
        src = kf.relation
        if src is relation:
            continue
        keys = np.concatenate([f.data.reshape(src.size, -1) for f in src.fields.values()
                               if f.is_key and f.target is relation], axis=1)
        for i in range(keys.shape[1]):
            for j in range(keys.shape[1]):
                if i != j:
                    pairs.append(np.stack([keys[:, i], keys[:, j]], axis=1))
    n = relation.size
    if not pairs:
        return np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    e = np.unique(np.concatenate(pairs), axis=0)
    e = e[e[:, 0] != e[:, 1]]
    xadj = np.zeros(n + 1, dtype=np.int64)
    np.add.at(xadj, e[:, 0] + 1, 1)
    return np.cumsum(xadj), e[:, 1].copy()


def metis(relation, nranks: int) -> np.ndarray:
    """METIS's k-way partition of the rows' adjacency (`adjacency`), through pymetis."""
    try:
        import pymetis
    except ImportError:
        raise ConfigError(f"partition of {relation.name} by metis needs pymetis: pip install "
                          f"pymetis (or use method='rcb' or 'blocks')") from None
    xadj, adjncy = adjacency(relation)
    if nranks == 1 or relation.size == 0:
        return np.zeros(relation.size, dtype=np.int32)
    graph = pymetis.CSRAdjacency(xadj, adjncy) if hasattr(pymetis, "CSRAdjacency") else None
    _, parts = pymetis.part_graph(nranks, graph) if graph is not None else \
        pymetis.part_graph(nranks, xadj=xadj, adjncy=adjncy)
    return np.asarray(parts, dtype=np.int32)


COORDINATE_NAMES = ("pos", "position", "positions", "xyz", "xy", "coords", "coordinates",
                    "x", "center", "centre")


def _coordinates(relation):
    """(coordinates (n, d), their name) of `relation`'s rows, or (None, None): those a domain
    registered for it (`relsim.output`: mesh points, particles), else a float vec2/vec3 field
    named like coordinates (`COORDINATE_NAMES`, in that order of preference), else None: a
    vector field of another name (a force, a velocity) says nothing of where rows are."""
    xyz = output.row_coordinates(relation)
    if xyz is not None:
        return xyz, "its mesh geometry"
    vecs = {f.name: f for f in relation.fields.values()
            if isinstance(f.type, VecType) and f.type.n in (2, 3) and f.type.elem.is_float}
    for name in COORDINATE_NAMES:
        if name in vecs:
            return vecs[name].data.reshape(relation.size, -1), name
    return None, None


def coordinate_fields(relation) -> list:
    """The fields whose values the automatic rule bisects for `relation` ([] when none): what
    a relation's partition depends on besides its keys (they are read at its first launch)."""
    fields = output.geometry_fields(relation)
    if fields:
        return fields
    names = {f.name for f in relation.fields.values()
             if isinstance(f.type, VecType) and f.type.n in (2, 3) and f.type.elem.is_float}
    return [relation.field(n) for n in COORDINATE_NAMES if n in names][:1]


def _given(coords):
    """`coords` (a float vector field, or a sequence of scalar fields) as (n, d) coordinates."""
    fields = [coords] if hasattr(coords, "relation") else list(coords)
    cols = [f.data.reshape(f.relation.size, -1) for f in fields]
    return np.column_stack(cols).astype(np.float64), ", ".join(f.name for f in fields)


def blocks(n: int, nranks: int) -> np.ndarray:
    """Contiguous blocks of rows, sizes differing by at most one."""
    return (np.arange(n, dtype=np.int64) * nranks // max(n, 1)).astype(np.int32)


def rcb(xyz: np.ndarray, nranks: int) -> np.ndarray:
    """Recursive coordinate bisection: split along the widest axis, in proportion to the rank
    counts of the two halves, until each part has one rank (ties broken by row: deterministic)."""
    owner = np.zeros(len(xyz), dtype=np.int32)
    stack = [(np.arange(len(xyz)), 0, nranks)]
    while stack:
        rows, first, count = stack.pop()
        if count == 1 or len(rows) == 0:
            owner[rows] = first
            continue
        pts = xyz[rows]
        axis = int(np.argmax(pts.max(axis=0) - pts.min(axis=0))) if len(rows) else 0
        order = rows[np.lexsort((rows, pts[:, axis]))]
        left = count // 2
        cut = len(rows) * left // count
        stack.append((np.sort(order[:cut]), first, left))
        stack.append((np.sort(order[cut:]), first + left, count - left))
    return owner


def grid_dims(shape, nranks: int) -> tuple:
    """Ranks per axis (their product is `nranks`): each prime factor, largest first, goes to
    the axis whose blocks are longest."""
    dims = [1] * len(shape)
    factors, m, p = [], nranks, 2
    while m > 1:
        while m % p == 0:
            factors.append(p)
            m //= p
        p += 1
    for f in sorted(factors, reverse=True):
        axis = max(range(len(shape)), key=lambda a: (shape[a] / dims[a], -a))
        dims[axis] *= f
    return tuple(dims)


def grid_owners(grid, nranks: int) -> np.ndarray:
    dims = grid_dims(grid.shape, nranks)
    coords = grid.coords(np.arange(int(np.prod(grid.shape))))
    owner = np.zeros(len(coords[0]), dtype=np.int64)
    stride = 1
    for c, n, d in zip(coords, grid.shape, dims):
        owner += (c * d // n) * stride
        stride *= d
    return owner.astype(np.int32)
