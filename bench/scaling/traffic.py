"""Per-rank work and ghost traffic of one cycle on P ranks, computed exactly from the partitions,
without MPI (the measured half of the scaling model, `bench.scaling`).

A cycle is the sequence of launches a simulation makes, recorded as it runs one process
(`record`: the launcher hook of `relsim.relations.launch`, so eos repetitions, subsets and
their order are the program's own). For P ranks:

* every rank's share of every launch (executed rows, halo rows, ghost rows per relation) is
  `relsim.runtime.parallel.plan.share` with the owners the runtime computes
  (`partition.owners`: the same rule, so the same partitions);
* which exchanges happen follows the runtime's dirty rule (`parallel.ghosts`): a field read at
  ghost rows is received before a launch only if some launch wrote it since that launch's plan
  last received it; a written field whose array the host holds (``exposed``) is gathered to
  every rank at once instead (one Allgatherv), and is then current everywhere;
* one message per (field, neighbour rank) pair; bytes = rows x itemsize x components;
* Global merges: one allgather per Global a launch reduces (`global_merge`).

The cycle is replayed `passes` times from clean fields and the last pass is counted: from the
second cycle on, the exchanges of a cycle do not depend on what came before it (fields written
only while setting up are received once, in the first cycle)."""
from __future__ import annotations

import contextlib
import pickle
import time

import numpy as np

from relsim.relations import launch as _launch_hook
from relsim.relations.field import Field
from relsim.relations.globals import Global
from relsim.runtime.folds import exact_sum
from relsim.runtime.parallel import partition
from relsim.runtime.parallel import plan as plans
from relsim.runtime.pipeline import analyse

# per launch and rank: executed rows, owned executed rows, ghost messages and bytes received and
# sent, bytes received by host gathers of exposed fields
QUANTITIES = ("rows", "owned", "recv_msgs", "recv_bytes", "send_msgs", "send_bytes",
              "gather_bytes")
Q = {name: i for i, name in enumerate(QUANTITIES)}


class Launch:
    """One launch of a cycle: kernel over relation (or subset), what it writes and merges."""

    def __init__(self, kernel, relation, subset):
        self.kernel, self.relation, self.subset = kernel, relation, subset
        self.key = (id(kernel), id(relation), id(subset))  # the runtime's plan identity
        self.name = kernel.name
        self.analysed = a = analyse(kernel, relation)
        self.rows = relation.size if subset is None else len(subset.rows)
        self.written = tuple({id(acc.target): acc.target for acc in a.summary.accesses
                              if acc.mode in ("write", "reduce") and isinstance(acc.target, Field)
                              and not acc.target.is_key}.values())
        # (op, payload bytes each rank contributes) per Global the launch reduces
        self.merges = tuple((lay.op, _merge_payload(lay.op, lay.target))
                            for lay in a.layouts if isinstance(lay.target, Global))

    @property
    def kind(self) -> str:
        """What the timing model groups launches by (kernel and relation)."""
        return f"{self.name}/{self.relation.name}"


def _merge_payload(op, g) -> int:
    """The pickled bytes one rank contributes to the allgather of `global_merge._merge`."""
    n = int(np.asarray(g.data).size)
    if op == "+" and np.asarray(g.data).dtype.kind == "f":
        return len(pickle.dumps(exact_sum.new_many(n)))
    if op in ("min", "max", "argmin", "argmax"):
        return len(pickle.dumps([(np.float64(0.0), np.int64(0))] * n))
    return len(pickle.dumps(np.zeros(n, dtype=np.asarray(g.data).dtype)))


class Recording(list):
    """[(Launch, seconds)] of the launches made while recording; `analysing`: the seconds spent
    making `Launch`s (not the program's: take them off its wall time)."""
    analysing = 0.0


@contextlib.contextmanager
def _launches_through(make):
    """Within the block, every launch goes through `make(inner)` (`inner`: the launcher it
    stands in front of, which it calls)."""
    inner, listener = _launch_hook._launcher, _launch_hook._storage_listener
    _launch_hook.install(make(inner), listener)
    try:
        yield
    finally:
        _launch_hook.install(inner, listener)


@contextlib.contextmanager
def record(seen: dict | None = None):
    """Within the block, every launch is run as usual and appended, with its wall time, to the
    `Recording` the block receives. `Launch`s are made once per plan key (`seen`: those of
    earlier recordings of the same program, shared)."""
    seen = {} if seen is None else seen
    out = Recording()

    def timed(inner):
        def launch(kernel, relation, subset, config):
            key = (id(kernel), id(relation), id(subset))
            if key not in seen:
                t0 = time.perf_counter()
                seen[key] = Launch(kernel, relation, subset)
                out.analysing += time.perf_counter() - t0
            t0 = time.perf_counter()
            inner(kernel, relation, subset, config)
            out.append((seen[key], time.perf_counter() - t0))
        return launch

    with _launches_through(timed):
        yield out


@contextlib.contextmanager
def first_coordinates():
    """Within the block (the program's set-up), the coordinates that `partition.owners` reads
    (`partition.coordinate_fields`) of every relation a launch touches, copied as they
    are at its first launch: the runtime partitions a relation then, once. The block receives
    {id(field): (field, values)}, for `exact`."""
    out: dict = {}
    seen: set = set()

    def snap(inner):
        def launch(kernel, relation, subset, config):
            if (id(kernel), id(relation)) not in seen:
                seen.add((id(kernel), id(relation)))
                for rel in [relation] + [r for r, _ in plans.reads(analyse(kernel, relation))]:
                    for f in partition.coordinate_fields(rel):
                        if id(f) not in out:
                            out[id(f)] = (f, f.numpy(copy=True))
            inner(kernel, relation, subset, config)
        return launch

    with _launches_through(snap):
        yield out


@contextlib.contextmanager
def _coordinates_as(start: dict):
    """The fields of `start` hold their first-launch values within the block (their storage
    swapped, on one process: nothing else sees it)."""
    saved = [(f, f._data) for f, _ in start.values()]
    try:
        for f, values in start.values():
            f._data = values
        yield
    finally:
        for f, data in saved:
            f._data = data


def row_bytes(field) -> int:
    arr = field._stored()
    return int(arr.dtype.itemsize * np.prod(arr.shape[1:], dtype=np.int64))


class _Shares:
    """Every rank's share of one plan (kernel over relation or subset) on P ranks."""

    def __init__(self, launch, nranks, owner_of):
        P = nranks
        self.rows = np.zeros(P, dtype=np.int64)
        self.owned = np.zeros(P, dtype=np.int64)
        self.groups = []  # per relation read: (fields, recv_msgs, recv_rows, send_msgs, send_rows)
        per_rank = [plans.share(launch.analysed, launch.relation, launch.subset, r, owner_of)
                    for r in range(P)]
        own = owner_of(launch.relation)
        for r, sh in enumerate(per_rank):
            self.rows[r] = len(sh.rows)
            self.owned[r] = len(sh.rows) - len(sh.halo)
            assert np.all(own[sh.halo] != r)
        for g in range(len(per_rank[0].ghosts) if P else 0):
            rel, fields, _ = per_rank[0].ghosts[g]
            owner = owner_of(rel)
            recv_m, recv_n = np.zeros(P, np.int64), np.zeros(P, np.int64)
            send_m, send_n = np.zeros(P, np.int64), np.zeros(P, np.int64)
            for r, sh in enumerate(per_rank):
                rows = sh.ghosts[g][2]
                senders, counts = np.unique(owner[rows], return_counts=True)
                recv_m[r], recv_n[r] = len(senders), len(rows)
                send_m[senders] += 1
                send_n[senders] += counts
            self.groups.append((fields, recv_m, recv_n, send_m, send_n))


def exact(launches, nranks: int, start: dict | None = None, passes: int = 2) -> np.ndarray:
    """(len(launches), nranks, len(QUANTITIES)) of one cycle on `nranks` ranks (the last of
    `passes` replays of `launches` from clean fields). `start`: `first_coordinates`' snapshot
    (partitions by coordinates are then those of the first launch, as the runtime's)."""
    owners: dict = {}

    def owner_of(rel):
        if id(rel) not in owners:
            with _coordinates_as(start or {}):
                owners[id(rel)] = partition.owners(rel, nranks, set())[0]
        return owners[id(rel)]

    shares: dict = {}
    for ln in launches:
        if ln.key not in shares:
            shares[ln.key] = _Shares(ln, nranks, owner_of)
    out = np.zeros((len(launches), nranks, len(QUANTITIES)), dtype=np.int64)
    fresh: dict = {}  # id(field) -> the (plan, group) that received it since its last write
    for p in range(passes):
        counting = p == passes - 1
        for i, ln in enumerate(launches):
            sh = shares[ln.key]
            q = out[i]
            if counting:
                q[:, Q["rows"]], q[:, Q["owned"]] = sh.rows, sh.owned
            for g, (fields, recv_m, recv_n, send_m, send_n) in enumerate(sh.groups):
                for f in fields:
                    got = fresh.get(id(f))
                    if got is None or (ln.key, g) in got:
                        continue  # current everywhere, or received for this plan already
                    got.add((ln.key, g))
                    if counting:
                        b = row_bytes(f)
                        q[:, Q["recv_msgs"]] += recv_m
                        q[:, Q["recv_bytes"]] += recv_n * b
                        q[:, Q["send_msgs"]] += send_m
                        q[:, Q["send_bytes"]] += send_n * b
            for f in ln.written:
                if f.exposed:  # gathered to every rank after the launch: current everywhere
                    fresh.pop(id(f), None)
                    if counting and nranks > 1:
                        counts = np.bincount(owner_of(f.relation), minlength=nranks)
                        q[:, Q["gather_bytes"]] += (f.relation.size - counts) * row_bytes(f)
                else:
                    fresh[id(f)] = set()
    return out
