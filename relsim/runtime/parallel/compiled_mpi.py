"""MPI called from compiled code: a captured step's ghost exchanges and Global merges on several
ranks run inside its compiled segment, with no return to Python (`captured_mpi`); a launch's
exchange and merge are one call each (`exchange.Route`, `global_merge._compiled_merge`).

The functions called are those of the MPI library mpi4py loaded. Each is an external symbol
(`numba.types.ExternalFunction`) that LLVM resolves by name to the library's address, which
this module registers when imported (`llvmlite.binding.add_symbol`): the machine code holds no
address, so it is cached on disk like relsim's other helpers (a process loading it imports this
module first, as the callees of a cached segment are made again). MPI's handles (communicator,
datatype, requests) are arguments, of the library's handle type (MPICH: int; Open MPI: a
pointer), so the helpers compile once per handle type, not once per value.

Imported only by a process that runs on several ranks (it imports mpi4py)."""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import binding as llvm
from mpi4py import MPI
from numba import types

from ..host.jit import njit

_JIT = dict(cache=True, error_model="numpy", boundscheck=False, _nrt=False)


def _handle_type():
    """(Numba type, NumPy dtype) of the library's communicator and datatype handles (None
    when they differ in size: not supported here)."""
    sizes = {MPI._sizeof(MPI.Comm), MPI._sizeof(MPI.Datatype)}
    if sizes == {4}:
        return types.int32, np.int32
    if sizes == {8}:
        return types.int64, np.int64
    return None, None


HANDLE, HANDLE_DTYPE = _handle_type()
REQUEST_BYTES = MPI._sizeof(MPI.Request)
STATUS_BYTES = MPI._sizeof(MPI.Status)

_int, _addr, _h = types.int32, types.uintp, HANDLE or types.int64
_SIGNATURES = {
    "MPI_Irecv": _int(_addr, _int, _h, _int, _int, _h, _addr),
    "MPI_Isend": _int(_addr, _int, _h, _int, _int, _h, _addr),
    "MPI_Testall": _int(_int, _addr, _addr, _addr),
    "MPI_Allgather": _int(_addr, _int, _h, _addr, _int, _h, _h),
    "MPI_Wtime": types.float64(),
}


def _register() -> bool:
    """Tell LLVM where the functions are; False where they cannot be found (the layer then
    calls MPI through mpi4py only)."""
    try:
        library = ctypes.CDLL(MPI.__file__)  # (dlsym searches the libraries it links: libmpi)
        libc = ctypes.CDLL(None)
        found = {name: getattr(library, name) for name in _SIGNATURES}
        found["sched_yield"] = libc.sched_yield
    except (OSError, AttributeError, TypeError):  # (not a POSIX dynamic linker)
        return False
    for name, fn in found.items():
        llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
    return True


SUPPORTED = HANDLE is not None and _register()

_irecv = types.ExternalFunction("MPI_Irecv", _SIGNATURES["MPI_Irecv"])
_isend = types.ExternalFunction("MPI_Isend", _SIGNATURES["MPI_Isend"])
_testall = types.ExternalFunction("MPI_Testall", _SIGNATURES["MPI_Testall"])
_allgather = types.ExternalFunction("MPI_Allgather", _SIGNATURES["MPI_Allgather"])
_wtime = types.ExternalFunction("MPI_Wtime", _SIGNATURES["MPI_Wtime"])
_sched_yield = types.ExternalFunction("sched_yield", _int())

# polls of MPI_Testall between two yields of the core: a rank waiting for another spins a few
# microseconds, then lets a process that wants the core have it (on a machine with more
# processes than cores, MPICH's own wait spins its whole time slice away)
SPINS = 64


_handles: dict = {}  # (id(world), tag) -> (world, handles)


def handles(world, tag: int) -> np.ndarray:
    """The handles the helpers take, in one array of the library's handle type (its dtype
    keeps the helpers' compiled code apart per handle type): the communicator, MPI_BYTE,
    and the tag of ghost exchanges. One array per world and tag (a segment takes it once)."""
    made = _handles.get((id(world), tag))
    if made is None or made[0] is not world:
        unsigned = np.uint32 if np.dtype(HANDLE_DTYPE).itemsize == 4 else np.uint64
        made = _handles[id(world), tag] = (world, np.array(
            [MPI._handleof(world.comm), MPI._handleof(MPI.BYTE), tag],
            dtype=unsigned).view(HANDLE_DTYPE))
    return made[1]


_MAX_BYTES = 2 ** 31 - 1  # (MPI's counts are C ints)


def exchange_arrays(recv, send, width: int):
    """`exchange_rows`' plan, buffer and scratch for an exchange of rows of `width` bytes
    (`recv`, `send`: (peer, rows) pairs, as `exchange.requests` gives them), or None (no row
    bytes, a message over 2 GiB)."""
    if width == 0:
        return None
    plan, nrows = [len(recv), len(send)], 0
    for pairs in (recv, send):
        sizes = [len(r) for _, r in pairs]
        if any(n * width > _MAX_BYTES for n in sizes):
            return None
        plan += [q for q, _ in pairs] + np.concatenate(([0], np.cumsum(sizes))).tolist() + \
            [int(i) for _, r in pairs for i in r]
        nrows += sum(sizes)
    n = len(recv) + len(send)
    scratch = np.zeros(REQUEST_BYTES * n + 16 + STATUS_BYTES * n, dtype=np.uint8)
    return np.array(plan, dtype=np.int64), np.empty(nrows * width, dtype=np.uint8), scratch


@njit(**_JIT)
def _wait_all(n, requests, statuses, flag):
    """Wait for the first n requests (MPI_Testall, yielding the core every SPINS polls)."""
    polls = 0
    while True:
        rc = _testall(np.int32(n), requests, flag.ctypes.data, statuses)
        if rc != 0:
            return rc
        if flag[0] != 0:
            return 0
        polls += 1
        if polls == SPINS:
            polls = 0
            _sched_yield()


@njit(**_JIT)
def exchange_rows(fresh, j, rows, plan, buf, scratch, traffic, handles):
    """The ghost exchange of one array (`rows`: its rows as bytes, (rows, row bytes)) for one
    plan's ghost rows (`exchange.Route`'s, in its order: receives posted, rows packed, sends
    posted, all waited for, rows unpacked), unless `fresh[j]` says they are current (then set,
    and the state's last flag). `plan` (int64): the receive peer count R and send peer count
    S, then the R peers, R + 1 offsets and the rows received, then the same for sends; `buf`:
    the received rows, then the sent; `scratch`: room for the requests, statuses and a flag;
    `traffic`: messages, bytes and seconds added. Returns MPI's error code (0)."""
    if fresh[j] != 0:
        return 0
    t0 = _wtime()
    fresh[j] = 1
    fresh[fresh.shape[0] - 1] = 1  # (changed: `captured_mpi.GhostState.leave`)
    width = rows.shape[1]
    comm, byte, tag = handles[0], handles[1], np.int32(handles[2])
    nr, ns = plan[0], plan[1]
    r_peers, r_from = 2, 2 + nr
    r_rows = r_from + nr + 1
    nrows_r = plan[r_from + nr]
    s_peers = r_rows + nrows_r
    s_from = s_peers + ns
    s_rows = s_from + ns + 1
    nrows_s = plan[s_from + ns]
    sent = nrows_r * width  # (where the sent rows start in buf)
    requests = scratch.ctypes.data
    at = REQUEST_BYTES * (nr + ns)
    flag = scratch[at:at + 4].view(np.int32)
    statuses = scratch[(at + 11) // 8 * 8:].ctypes.data  # (8-byte aligned)
    n = 0
    for k in range(nr):
        a, b = plan[r_from + k], plan[r_from + k + 1]
        rc = _irecv(buf[a * width:].ctypes.data, np.int32((b - a) * width), byte,
                    np.int32(plan[r_peers + k]), tag, comm,
                    scratch[REQUEST_BYTES * n:].ctypes.data)
        if rc != 0:
            return rc
        n += 1
    for i in range(nrows_s):
        r = plan[s_rows + i]
        for c in range(width):
            buf[sent + i * width + c] = rows[r, c]
    for k in range(ns):
        a, b = plan[s_from + k], plan[s_from + k + 1]
        rc = _isend(buf[sent + a * width:].ctypes.data, np.int32((b - a) * width), byte,
                    np.int32(plan[s_peers + k]), tag, comm,
                    scratch[REQUEST_BYTES * n:].ctypes.data)
        if rc != 0:
            return rc
        n += 1
    rc = _wait_all(n, requests, statuses, flag)
    if rc != 0:
        return rc
    for i in range(nrows_r):
        r = plan[r_rows + i]
        for c in range(width):
            rows[r, c] = buf[i * width + c]
    traffic[0] += nr
    traffic[1] += nrows_r * width
    traffic[2] += _wtime() - t0
    return 0


@njit(**_JIT)
def gather_lanes(lanes, q0, q1, depth, buf, every, gathered, info, traffic, handles):
    """`global_merge._gather_lanes` for a rank with lanes, every rank's chunks inline: this
    rank's message (`buf`, float64: its chunk count and depth bound as int64, then its first
    chunks of components q0:q1, as many as `buf` holds) gathered from every rank into `every`
    (ranks, message), then every rank's chunks, in rank order, copied into `gathered`, with
    their count and the sum of the depth bounds in `info`; the seconds it took added to
    traffic[3]. Returns 0, else 1 when a rank had no lanes or more chunks than a message
    holds (the host goes on from the gathered messages), or MPI's error code."""
    t0 = _wtime()
    ncomp, state, width = gathered.shape[1], gathered.shape[2], gathered.shape[3]
    chunk = ncomp * state * width
    room = (buf.shape[0] - 2) // chunk
    nch = lanes.shape[0]
    head = buf.view(np.int64)
    head[0], head[1] = nch, depth
    at = 2
    for c in range(min(nch, room)):
        for q in range(q0, q1):
            for s in range(state):
                for lane in range(width):
                    buf[at] = lanes[c, q, s, lane]
                    at += 1
    nbytes = np.int32(buf.shape[0] * 8)
    rc = _allgather(buf.ctypes.data, nbytes, handles[1], every.ctypes.data, nbytes,
                    handles[1], handles[0])
    traffic[3] += _wtime() - t0
    if rc != 0:
        return rc
    heads = every.view(np.int64)
    total, depths = 0, 0
    for r in range(every.shape[0]):
        if heads[r, 0] < 0 or heads[r, 0] > room:
            return 1
        total += heads[r, 0]
        depths += heads[r, 1]
    k = 0
    for r in range(every.shape[0]):
        at = 2
        for _c in range(heads[r, 0]):
            for q in range(ncomp):
                for s in range(state):
                    for lane in range(width):
                        gathered[k, q, s, lane] = every[r, at]
                        at += 1
            k += 1
    info[0], info[1] = total, depths
    return 0


@njit(**_JIT)
def written(state):
    """A launch wrote the field whose ghost state this is: every ghost row stale (the field
    marked written and the state changed, for the host: `captured_mpi.GhostState.leave`)."""
    last = state.shape[0] - 1
    state[0] = 1
    for j in range(1, last):
        state[j] = 0
    state[last] = 1
    return 0


@njit(**_JIT)
def flagged(flag):
    """The host's answer to a question asked before the run (`flag[0]`): 0 to go on."""
    return flag[0]


@njit(**_JIT)
def at(where, k):
    """Where the host would go on from (the Global merge under way): where[0] = k."""
    where[0] = k
    return 0


def signatures() -> list:
    """(helper, argument types) of each compiled helper a captured step's MPI work calls, as
    `captured_mpi` calls them: what `ahead` compiles."""
    from numba import typeof

    from ..folds.lane_sums import finish_gathered

    def types_of(*values):
        return tuple(typeof(v) for v in values)
    state, i64, f64 = np.zeros(1, np.int8), np.zeros(1, np.int64), np.zeros(1)
    every, lanes = np.zeros((1, 1)), np.zeros((1, 1, 1, 1))
    handles = np.zeros(1, HANDLE_DTYPE)
    return [(written, types_of(state)), (flagged, types_of(state)), (at, types_of(i64, 0)),
            (exchange_rows, exchange_signature()),
            (gather_lanes, types_of(lanes, 0, 0, 0, f64, every, lanes, i64, f64, handles)),
            (finish_gathered, types_of(lanes, i64, f64, f64))]


def exchange_signature() -> tuple:
    """The argument types `exchange_rows` is called with (every call: the same)."""
    from numba import typeof
    rows = np.zeros((1, 1), np.uint8)
    return tuple(typeof(v) for v in (np.zeros(1, np.int8), 0, rows, np.zeros(1, np.int64),
                                      rows[0], rows[0], np.zeros(1),
                                      np.zeros(1, HANDLE_DTYPE)))


_ahead = []


def ahead() -> None:
    """Have the background worker compile the helpers (`signatures`) into the disk cache,
    once per process: a captured step's first replay on several ranks then loads them (~5 s
    of compiling on this machine's first run otherwise, while the replay waits)."""
    if _ahead:
        return
    _ahead.append(True)
    from ..host.compile_jobs import helper_in_background
    for fn, signature in signatures():
        helper_in_background(fn, signature)
