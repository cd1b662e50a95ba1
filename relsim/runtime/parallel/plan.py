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
from . import exchange, partition
from .rowsets import Reach

_ids = itertools.count(1)


class RelationGhosts:
    """The ghost rows of one relation for one plan, and the value fields read there."""

    __slots__ = ("id", "relation", "fields", "recv", "send", "rows")

    def __init__(self, relation, fields, rows, recv, send):
        self.id = next(_ids)
        self.relation, self.fields, self.rows = relation, fields, rows
        self.recv, self.send = recv, send


class Plan:
    __slots__ = ("subset", "rows", "ghosts", "part", "halo", "owned_positions")

    def __init__(self, subset, rows, ghosts, part, halo):
        self.subset = subset  # what the wrapped launch runs over (a Subset, or None: every row)
        self.rows = rows  # its rows (global ids, ascending)
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


def _field_reads(body):
    from ..access import stmt_exprs
    for s in ir.walk_stmts(body):
        for e in stmt_exprs(s):
            for node in e.walk():
                if isinstance(node, ir.FieldRead):
                    yield node


def key_fields(analysed) -> tuple:
    """The key fields the kernel's keys go through (their versions key the plan cache)."""
    out: dict = {}
    for s in ir.walk_stmts(analysed.body):
        from ..access import stmt_exprs
        for e in stmt_exprs(s):
            for node in e.walk():
                if isinstance(node, ir.FieldRead) and node.field.is_key:
                    out[id(node.field)] = node.field
                elif isinstance(node, ir.GroupRead):
                    out[id(node.grouping.key_field)] = node.grouping.key_field
    return tuple(out.values())


def build(analysed, relation, subset, world, make_subset) -> Plan:
    part = partition.of(relation, world)
    launch_rows = np.arange(relation.size) if subset is None else subset.rows
    execute = part.owner[launch_rows] == world.rank
    reach = Reach(analysed, launch_rows)
    for s in ir.walk_stmts(analysed.body):
        if not (isinstance(s, ir.FieldReduce) and not isinstance(s.key, ir.Centred)):
            continue
        targets = reach.per_row(s.key)
        if targets is None:  # cannot tell which rows it reaches: run them all
            execute[:] = True
            break
        target_owner = partition.of(s.field.relation, world).owner
        hit = targets >= 0
        mine = np.zeros(targets.shape, dtype=bool)
        mine[hit] = target_owner[targets[hit]] == world.rank
        execute |= mine
    rows = launch_rows[execute]
    halo = rows[part.owner[rows] != world.rank]
    part.add_ghosts(halo)
    reach = Reach(analysed, rows)
    ghosts = []
    for rel, fields in reads(analysed):
        needed = _needed(reach, analysed.body, rel)
        rel_part = partition.of(rel, world)
        mine = needed[rel_part.owner[needed] != world.rank]
        recv, send = exchange.requests(world, mine, rel_part.owner)
        rel_part.add_ghosts(mine)
        ghosts.append(RelationGhosts(rel, tuple(fields), mine, recv, send))
    run_over = None if subset is None and len(rows) == relation.size else make_subset(rows)
    return Plan(run_over, rows, tuple(ghosts), part, halo)


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
