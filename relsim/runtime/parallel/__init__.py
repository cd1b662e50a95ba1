"""Running kernels on several MPI ranks: a layer around any backend's launches.

`world` (who we are; abort on error), `partition` (who owns which rows), `rowsets` (which rows
a kernel reaches), `plan` (what a rank runs and which ghost rows it needs), `exchange` (moving
rows), `ghosts` (which rows are current), `global_merge` (Globals across ranks), `distributed`
(the wrapped launch), `compiled_mpi` (MPI called from compiled code) and `captured_mpi` (a
captured step's exchanges and merges inside its compiled segment). See docs/architecture.md,
"Several ranks (MPI)"."""
from __future__ import annotations

from . import world as _world


def wrap(launch, config):
    """`launch`, or the same launch run on this process's share of the rows when the script
    runs on several ranks (and `config.distributed` is not False; when it is, every row on
    every rank, after gathering the fields distributed launches left current only in part)."""
    w = _world.current()
    if w is None:
        return launch
    if config.distributed is False:  # every row on every rank, from current values
        from .whole import WholeLaunch
        return WholeLaunch(launch)
    from .distributed import DistributedLaunch
    return DistributedLaunch(launch, w, config.target)


def capturing() -> None:
    """A step is being captured (`rs.capture`): on several ranks, rank 0's background worker
    compiles the helpers its replays call MPI through (`compiled_mpi.ahead`) while the
    recording compiles its kernels."""
    w = _world.current()
    if w is not None and w.rank == 0:
        from . import compiled_mpi
        if compiled_mpi.SUPPORTED:
            compiled_mpi.ahead()


class Ranks(tuple):
    """(rank, size) of this process among the MPI ranks running the script ((0, 1) on one)."""

    __slots__ = ()

    def __new__(cls, rank: int, size: int):
        return super().__new__(cls, (rank, size))

    rank = property(lambda self: self[0])
    size = property(lambda self: self[1])

    def __repr__(self) -> str:
        return f"Ranks(rank={self[0]}, size={self[1]})"


def ranks() -> Ranks:
    """This process's rank and the number of ranks (``rs.ranks()``; (0, 1) on one process).
    Under ``mpiexec -n N`` with mpi4py installed, kernels partition their relations over the N
    ranks; print or write files from rank 0 only, as `relsim run` does."""
    w = _world.current()
    return Ranks(0, 1) if w is None else Ranks(w.rank, w.size)


def partition_rows(relation, method: str = "auto", coords=None):
    """How `relation`'s rows are distributed over MPI ranks: ``"rcb"`` (recursive coordinate
    bisection of `coords`, a float vector field of it, or its first such field), ``"blocks"``
    (contiguous rows), ``"metis"`` (pymetis), ``"auto"`` (see `parallel.partition`). Call it
    before the first kernel over the relation runs. On several ranks the partition is made now
    and returned (also as ``relation.partition``: its ``owned_rows`` are the rows
    ``field.load(values, local=True)`` takes); on one process nothing changes (None)."""
    from .partition import of, request
    request(relation, method, coords)
    w = _world.current()
    return None if w is None else of(relation, w)
