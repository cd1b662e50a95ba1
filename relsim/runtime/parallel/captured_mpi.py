"""A distributed launch inside a captured step, its MPI work compiled (`compiled_mpi`): the ghost
exchanges before its loop and the Global merge after it run in the step's compiled segment as
`CompiledStop`s, so that a replay on several ranks returns to Python only when the host has
something to decide.

They do what `DistributedLaunch.launch` does around a launch, with the same collectives in the
same order (ranks whose launch cannot join a segment replay it as a launch, and the two must
meet):

* an exchange of a field's ghost rows runs when those rows may be stale, as `ghosts.refresh`
  decides: compiled code keeps each field's record (`GhostState`, read from and written back to
  the field's `StaleGhosts` residency whenever the segment is entered or left);
* after the loop, written fields are marked stale at every ghost row, and each Global's lanes
  are gathered and rounded (`compiled_mpi.gather_lanes`, `lane_sums.finish_gathered`), in the
  kernel's layout order. When the host must act — a written field's array is exposed (it is
  gathered at once: `ghosts.after_launch`), a rank had no lanes or more chunks than a message
  holds, a sum is undecided — the segment returns to the host, which does the rest as the
  launch path does, from where compiled code left it.

Built when the plan is made (`DistributedLaunch.capture_call`); None where it cannot be (a
Global merged from slots, a field array that is not C-contiguous, a message over 2 GiB, more
ghost row sets on one field than `CAPACITY`): the launch then returns to the host for each
exchange and merge, as before."""
from __future__ import annotations

import weakref

import numpy as np

from ..backends.base import CompiledStop
from ..folds import lane_sums
from . import compiled_mpi, exchange
from .ghosts import StaleGhosts

CAPACITY = 32  # ghost row sets one field's `GhostState` keeps
DIRTY = CAPACITY + 1  # (its flag: compiled code changed the state)


class GhostState:
    """Which ghost rows of a field (holding `array`) are current on this rank, for compiled
    code: state[1 + j] is 1 while the rows of ghost set ids[j] are current; state[0] is set
    when a launch of the segment wrote the field, state[DIRTY] when compiled code changed
    the state. `enter` reads it from the field's residency (when that changed since it was
    last written here), `leave` writes it back (`ghosts.StaleGhosts`, as `ghosts.refresh` and
    `after_launch` keep it). Both run around every call into a segment: the state's bytes
    are read as a `bytearray` (`raw`), and a step that ends as the last one did, on a
    residency nobody changed since, changes nothing."""

    __slots__ = ("world", "field", "array", "ids", "raw", "state", "seen", "left",
                 "__weakref__")

    def __init__(self, world, field, array):
        self.world, self.field, self.array = world, field, array
        self.ids: list = []
        self.raw = bytearray(DIRTY + 1)
        self.state = np.frombuffer(self.raw, dtype=np.int8)  # (the same bytes)
        self.seen = (False, -1)  # (the residency, its version) the state was last synced with
        self.left = None  # the state's bytes the last `leave` wrote to `seen`

    def index(self, ghost_id: int):
        """The position of a ghost set in `state` (1 + j), or None when full."""
        if ghost_id not in self.ids:
            if len(self.ids) == CAPACITY:
                return None
            self.ids.append(ghost_id)
            self.seen, self.left = (False, -1), None  # (read again at the next entry)
        return 1 + self.ids.index(ghost_id)

    def enter(self) -> None:
        r = self.field.residency
        stale = isinstance(r, StaleGhosts)
        if self.seen[0] is r and (not stale or self.seen[1] == r.version):
            return
        raw = self.raw
        if stale:
            for j, i in enumerate(self.ids, 1):
                raw[j] = i in r.fresh
            self.seen = (r, r.version)
        else:  # (current at every row)
            raw[1:DIRTY] = b"\x01" * CAPACITY
            self.seen = (r, -1)
        self.left = None

    def leave(self) -> None:
        raw = self.raw
        if not raw[DIRTY]:
            return
        raw[DIRTY] = 0
        flags = raw[:1 + len(self.ids)]
        raw[0] = 0
        f = self.field
        r = f.residency
        if flags == self.left and r is self.seen[0] and r.version == self.seen[1]:
            return  # (as the last step left it: nothing changed)
        if flags[0]:  # (written: stale at every ghost row not received since)
            if not isinstance(r, StaleGhosts):
                r = f.residency = StaleGhosts(self.world)
            r.fresh.clear()
        if isinstance(r, StaleGhosts):  # (else received nothing: current at every row)
            r.fresh.update(i for i, current in zip(self.ids, flags[1:]) if current)
            r.version += 1
            self.seen, self.left = (r, r.version), flags


_states: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def state_of(world, field) -> GhostState:
    """The field's record, one per field and array (the segments a plan holds keep it)."""
    array = field._stored()
    key = (id(field), id(array))
    st = _states.get(key)
    if st is None:
        st = _states[key] = GhostState(world, field, array)
    return st


class _Exposed:
    """Before each entry into the segment: whether a field the launch writes is exposed now
    (the host then gathers it right after the launch, as the launch path does)."""

    __slots__ = ("fields", "raw", "flag")
    leaves = False  # (nothing to do on leaving the segment)

    def __init__(self, fields):
        self.fields, self.raw = fields, bytearray(1)
        self.flag = np.frombuffer(self.raw, dtype=np.int8)

    def enter(self) -> None:
        if not self.raw[0]:  # (an exposed field stays exposed)
            for f in self.fields:
                if f.exposed:
                    self.raw[0] = 1


def stops(world, plan, call, stale, written, merge, settle):
    """(the receive stops, the settle stop) of one launch (`call`, the wrapped launch's
    capture call) of plan `plan`: `stale` its (field, ghost set) pairs to refresh before it,
    `written` the fields it writes, `merge` its `GlobalMerge` (or None), `settle` the host's
    whole settle (for an exposed field); None when they cannot be compiled."""
    if merge is not None and (call.handed is None or call.handed.chunks or
                              any(id(lay.target) not in merge.lane_ids
                                  for lay in merge.layouts)):
        return None
    if not compiled_mpi.SUPPORTED:
        return None
    handles = compiled_mpi.handles(world, exchange.TAG)
    receives = []
    for f, g in stale:
        st = state_of(world, f)
        j = st.index(g.id)
        calls = _exchange_call(st, j, g, handles) if j is not None else None
        if calls is None:
            return None
        receives.append(CompiledStop(_failed(f"the ghost exchange of {f.qualname}"), calls,
                                     (st,)))
    states = []
    for f in written:
        st = state_of(world, f)
        if not f._stored().flags.c_contiguous:
            return None
        states.append(st)
    exposed = _Exposed(written)
    calls = [(compiled_mpi.flagged, (exposed.flag,))] + \
        [(compiled_mpi.written, (st.state,)) for st in states]
    where = np.zeros(1, dtype=np.int64)
    if merge is not None:
        for k, lay in enumerate(merge.layouts):
            calls += _merge_calls(world, merge, call.handed, lay.target, k, where, handles)

    def rest():
        if exposed.flag[0]:  # (nothing done yet: all of it, as the launch path does)
            settle()
            return
        merge.begin(plan)
        merge.collect_lanes(call.handed)
        merge.finish(int(where[0]), gathered=True)
    return tuple(receives), CompiledStop(rest, tuple(calls), (exposed, *states))


def _exchange_call(st, j, g, handles):
    """The compiled exchange of st's array for ghost set g (`compiled_mpi.exchange_rows`), or
    None (not C-contiguous, no row bytes, a message over 2 GiB)."""
    arr = st.array
    width = arr.dtype.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))
    made = compiled_mpi.exchange_arrays(g.recv, g.send, width)
    if not arr.flags.c_contiguous or made is None:
        return None
    rows = arr.reshape(len(arr), -1).view(np.uint8).reshape(len(arr), width)
    return ((compiled_mpi.exchange_rows,
             (st.state, j, rows, *made, exchange.COMPILED, handles)),)


def _merge_calls(world, merge, handed, g, k, where, handles) -> list:
    """Global g's merge (layout k): its lanes gathered, then rounded into it."""
    from .global_merge import lane_message
    lanes, q0, q1, depth = handed.part(g)
    ncomp = q1 - q0
    m = lane_message(merge.messages, ncomp, world.size)
    return [(compiled_mpi.at, (where, k)),
            (compiled_mpi.gather_lanes, (lanes, q0, q1, depth, m.buf, m.every, m.gathered,
                                         m.info, exchange.COMPILED, handles)),
            (lane_sums.finish_gathered, (m.gathered, m.info, g._data.reshape(-1),
                                         np.empty(ncomp)))]


def _failed(what: str):
    def fail():
        raise RuntimeError(f"relsim: an MPI call failed in {what} (a captured step)")
    return fail
