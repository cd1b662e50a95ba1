"""What one rank does for one launch (`Plan`), inferred from the kernel's key expressions
(`rowsets.Reach`) and the partitions:

* **executed rows**: the launch's rows this rank owns, and the rows of other ranks whose
  reductions through keys reach a target row this rank owns (an *execution halo*, as OP2's):
  every owned target then folds all its contributions, in ascending source row, as one process
  does. Rows reached otherwise are computed by their owner only;
* **ghost rows**: rows of other ranks that the executed rows read (through keys, grid offsets,
  or their own row when it is a halo row), per relation; with the ranks that own them and the
  ranks that need this rank's rows (`exchange.requests`, collective).

A plan is built once per iteration space and key state (the key fields' versions, the relations'
sizes), by every rank at the same launch."""
from __future__ import annotations

import itertools

import numpy as np

from .. import ir
from ..analysis.access import stmt_exprs
from . import exchange, partition
from .rowsets import Reach

_ids = itertools.count(1)


class RelationGhosts:
    """The ghost rows of one relation for one plan, and the value fields read there."""

    __slots__ = ("id", "relation", "fields", "recv", "send", "routes")

    def __init__(self, relation, fields, recv, send):
        self.id = next(_ids)
        self.relation, self.fields = relation, fields
        self.recv, self.send = recv, send
        self.routes = {}  # (`exchange.Route`s, per array layout: made at their first use)


class Plan:
    __slots__ = ("subset", "ghosts", "part", "halo", "owned_positions")

    def __init__(self, subset, rows, ghosts, part, halo):
        self.subset = subset  # what the wrapped launch runs over (a Subset, or None: every row)
        self.ghosts = ghosts  # RelationGhosts, in the kernel's order of first access
        self.part = part  # the launch relation's Partition
        self.halo = halo  # executed rows this rank does not own
        self.owned_positions = part.owner[rows] == part.rank  # per executed row: this rank's?


def reads(analysed) -> list:
    """(relation, [value fields]) read by the kernel, relations in order of first access."""
    out: dict = {}
    for node in _field_reads(analysed.body):
        f = node.field
        if f.is_key:
            continue
        fields = out.setdefault(id(f.relation), (f.relation, []))[1]
        if f not in fields:
            fields.append(f)
    return list(out.values())


def _expr_nodes(body):
    """Every node of every expression the statements of `body` evaluate."""
    for s in ir.walk_stmts(body):
        for e in stmt_exprs(s):
            yield from e.walk()


def _field_reads(body):
    return (node for node in _expr_nodes(body) if isinstance(node, ir.FieldRead))


def key_fields(analysed) -> tuple:
    """The key fields the kernel's keys go through (their versions key the plan cache)."""
    out: dict = {}
    for node in _expr_nodes(analysed.body):
        if isinstance(node, ir.FieldRead) and node.field.is_key:
            out[id(node.field)] = node.field
        elif isinstance(node, ir.GroupRead):
            out[id(node.grouping.key_field)] = node.grouping.key_field
    return tuple(out.values())


class Share:
    """What one rank of a partition runs for one launch, and the rows of others it reads:
    `rows` (executed, ascending), `halo` (those it does not own), `ghosts` [(relation, fields,
    rows)] (rows of other ranks that the executed rows read, per relation). A pure function of
    the kernel, the key values and the owners: `build` uses it for this rank, and a model of
    the traffic at any rank count can use it for every rank without running them."""

    __slots__ = ("rows", "halo", "ghosts")

    def __init__(self, rows, halo, ghosts):
        self.rows, self.halo, self.ghosts = rows, halo, ghosts


def share(analysed, relation, subset, rank: int, owner_of) -> Share:
    """Rank `rank`'s Share of a launch of `analysed` over `relation` (or `subset`);
    `owner_of(R)`: the owning rank of every row of relation R."""
    owner = owner_of(relation)
    launch_rows = np.arange(relation.size) if subset is None else subset.rows
    execute = owner[launch_rows] == rank
    reach = Reach(analysed, launch_rows)
    for s in ir.walk_stmts(analysed.body):
        if not (isinstance(s, ir.FieldReduce) and not isinstance(s.key, ir.Centred)):
            continue
        targets = reach.per_row(s.key)
        if targets is None:  # cannot tell which rows it reaches: run them all
            execute[:] = True
            break
        target_owner = owner_of(s.field.relation)
        hit = targets >= 0
        mine = np.zeros(targets.shape, dtype=bool)
        mine[hit] = target_owner[targets[hit]] == rank
        execute |= mine if mine.ndim == 1 else mine.any(axis=1)
    rows = launch_rows[execute]
    halo = rows[owner[rows] != rank]
    reach = Reach(analysed, rows)
    ghosts = []
    for rel, fields in reads(analysed):
        needed = _needed(reach, analysed.body, rel)
        ghosts.append((rel, tuple(fields), needed[owner_of(rel)[needed] != rank]))
    return Share(rows, halo, ghosts)


def build(analysed, relation, subset, world, make_subset) -> Plan:
    """This rank's plan (collective: every rank builds the same launch's plan at once)."""
    part = partition.of(relation, world)
    sh = share(analysed, relation, subset, world.rank,
               lambda rel: partition.of(rel, world).owner)
    part.add_ghosts(sh.halo)
    ghosts = []
    for rel, fields, mine in sh.ghosts:
        rel_part = partition.of(rel, world)
        recv, send = exchange.requests(world, mine, rel_part.owner)
        rel_part.add_ghosts(mine)
        if recv or send:  # (nothing to move for this rank: no exchange to make)
            ghosts.append(RelationGhosts(rel, fields, recv, send))
    rows = sh.rows
    run_over = None if subset is None and len(rows) == relation.size else make_subset(rows)
    return Plan(run_over, rows, tuple(ghosts), part, sh.halo)


def _needed(reach, body, rel) -> np.ndarray:
    """Rows of `rel` whose value fields the executed rows read."""
    parts = []
    for node in _field_reads(body):
        if node.field.is_key or node.field.relation is not rel:
            continue
        rows = reach.rows_of(node.key)
        if rows is None:
            return np.arange(rel.size)
        parts.append(rows)
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
