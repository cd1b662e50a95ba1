"""Moving rows of host arrays between ranks (mpi4py, raw bytes: any dtype and value shape).

* `requests`: each rank tells every owner which of its rows it needs (one all-to-all, when a
  launch's plan is built), and learns which of its own rows each rank needs;
* `exchange`: the needed rows of one array, owner to reader (point to point, both ways at once);
* `gather_all`: every rank's owned rows to every rank (the host's view of a whole field)."""
from __future__ import annotations

import time

import numpy as np

TAG = 7101

# what this rank received: ghost exchanges (messages, bytes, seconds), host gathers (calls,
# bytes), and the seconds Global merges took (`global_merge`); read it with `traffic()`, which
# adds what compiled code counted
TRAFFIC = {"ghost_messages": 0, "ghost_bytes": 0, "ghost_seconds": 0.0, "gathers": 0,
           "gather_bytes": 0, "merge_seconds": 0.0}
# a captured step's compiled MPI calls (`compiled_mpi`): the exchanges' messages, bytes and
# seconds, and the seconds of its merges' gathers, not yet in TRAFFIC
COMPILED = np.zeros(4)


# how ghost exchanges were made: one call of the compiled helper, or through mpi4py (tests
# check that each path is taken)
PATHS = {"compiled": 0, "mpi4py": 0}


def traffic() -> dict:
    """What this rank received so far (TRAFFIC, with what compiled code counted)."""
    if COMPILED.any():
        TRAFFIC["ghost_messages"] += int(COMPILED[0])
        TRAFFIC["ghost_bytes"] += int(COMPILED[1])
        TRAFFIC["ghost_seconds"] += float(COMPILED[2])
        TRAFFIC["merge_seconds"] += float(COMPILED[3])
        COMPILED[:] = 0
    return dict(TRAFFIC)


_MPI = None


def _mpi():
    global _MPI
    if _MPI is None:
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


def requests(world, needed: np.ndarray, owner: np.ndarray):
    """(recv, send): for each other rank q, the rows of `needed` that q owns (received from q),
    and the rows of this rank that q needs (sent to q). Collective."""
    by_rank = [needed[owner[needed] == q] for q in range(world.size)]
    asked = world.comm.alltoall(by_rank)
    recv = tuple((q, rows) for q, rows in enumerate(by_rank) if q != world.rank and len(rows))
    send = tuple((q, np.asarray(rows, dtype=np.int64)) for q, rows in enumerate(asked)
                 if q != world.rank and len(rows))
    return recv, send


def _bytes(buf):
    return [buf.reshape(-1).view(np.uint8), _mpi().BYTE]


def exchange(world, arr: np.ndarray, recv, send, routes: dict) -> int:
    """arr[rows] for every (q, rows) of `recv` becomes q's values; q receives arr[rows] for every
    (q, rows) of `send`. Returns the bytes received. `routes`: a dict kept with `recv` and
    `send` (a plan's ghost rows), where each array layout's `Route` is kept between calls."""
    t0 = time.perf_counter()
    key = (arr.dtype.str, arr.shape[1:])
    route = routes.get(key)
    if route is None:
        route = routes[key] = Route(arr.dtype, arr.shape[1:], recv, send, world)
    got = route.run(world, arr)
    TRAFFIC["ghost_messages"] += len(route.incoming)
    TRAFFIC["ghost_bytes"] += got
    TRAFFIC["ghost_seconds"] += time.perf_counter() - t0
    return got


class Route:
    """One array layout's exchange of some rows with other ranks: its staging buffers and
    message specifications, made once (an exchange then packs, posts, waits and unpacks).
    Where relsim's compiled MPI helper is at hand (`compiled_mpi.exchange_rows`, in the disk
    cache), one call of it does all that (`fast`): the same messages, without ~10 us of
    Python and mpi4py an exchange."""

    __slots__ = ("incoming", "outgoing", "receives", "sends", "nbytes", "fast")

    def __init__(self, dtype, shape, recv, send, world=None):
        self.incoming = [(rows, np.empty((len(rows),) + shape, dtype=dtype)) for _, rows in recv]
        self.outgoing = [(rows, np.empty((len(rows),) + shape, dtype=dtype)) for _, rows in send]
        self.receives = [(_bytes(buf), q) for (q, _), (_, buf) in zip(recv, self.incoming)]
        self.sends = [(_bytes(buf), q) for (q, _), (_, buf) in zip(send, self.outgoing)]
        self.nbytes = sum(buf.nbytes for _, buf in self.incoming)
        width = np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64))
        self.fast = None if world is None else _compiled(world, recv, send, width)

    def run(self, world, arr) -> int:
        if self.fast is not None and arr.flags.c_contiguous:
            entry, state, args = self.fast
            state[0] = 0  # (stale: exchanged)
            if entry(state, 0, arr.reshape(len(arr), -1).view(np.uint8), *args) == 0:
                PATHS["compiled"] += 1
                return self.nbytes
            raise RuntimeError("relsim: an MPI call failed in a ghost exchange")
        PATHS["mpi4py"] += 1
        comm = world.comm
        reqs = [comm.Irecv(spec, source=q, tag=TAG) for spec, q in self.receives]
        for rows, buf in self.outgoing:  # (rows in range: "clip" skips np.take's checks and
            arr.take(rows, 0, buf, "clip")  # its copy of `out`, ~2 us of a 6-row exchange)
        reqs += [comm.Isend(spec, dest=q, tag=TAG) for spec, q in self.sends]
        if reqs:
            _mpi().Request.Waitall(reqs)
        for rows, buf in self.incoming:
            arr[rows] = buf
        return self.nbytes


def _compiled(world, recv, send, width: int):
    """(entry, state, further arguments) of `compiled_mpi.exchange_rows` for this exchange,
    when its machine code is here or in the disk cache (else None: mpi4py it is; rank 0's
    background worker compiles it for the next run)."""
    from ..host.compile_jobs import load_cached
    from ..host.jit import entry_point
    from . import compiled_mpi
    if not compiled_mpi.SUPPORTED:
        return None
    if world.rank == 0:
        compiled_mpi.ahead()
    made = compiled_mpi.exchange_arrays(recv, send, width)
    fn = compiled_mpi.exchange_rows
    if made is None or not load_cached(fn, compiled_mpi.exchange_signature()):
        return None
    state = np.zeros(2, dtype=np.int8)
    args = (*made, np.zeros(4), compiled_mpi.handles(world, TAG))  # (TRAFFIC counts it: not here)
    return entry_point(fn, (state, 0, np.zeros((1, width), np.uint8), *args)), state, args


def gather_all(world, arr: np.ndarray, part) -> None:
    """Every row of arr becomes its owner's value (on every rank). Collective."""
    MPI = _mpi()
    mine = np.ascontiguousarray(arr[part.owned_rows])
    row_bytes = arr.dtype.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))
    counts = part.counts.astype(np.int64) * row_bytes
    displs = np.concatenate(([0], np.cumsum(counts)[:-1]))
    buf = np.empty((len(arr),) + arr.shape[1:], dtype=arr.dtype)
    world.comm.Allgatherv(_bytes(mine), [buf.reshape(-1).view(np.uint8), (counts, displs),
                                         MPI.BYTE])
    arr[part.by_rank] = buf
    TRAFFIC["gathers"] += 1
    TRAFFIC["gather_bytes"] += buf.nbytes - mine.nbytes
