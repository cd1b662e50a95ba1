"""The MPI world a script runs in: detected from the launcher's environment (``mpiexec -n N``
sets the process-manager variables read here), so the same script runs unchanged on one process
or on N. Nothing is imported from mpi4py unless the script runs under a launcher with N > 1.

When distributed, an uncaught exception on any rank prints its traceback (labelled with the
rank) and aborts every rank with exit status 1: one rank failing never leaves the others waiting
forever in a collective."""
from __future__ import annotations

import os
import sys
import time

from ... import errors
from ...errors import ConfigError

# process-manager variables that give the number of ranks (MPICH/Hydra, Open MPI, Slurm's PMI)
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


class World:
    """The communicator relsim uses, with this process's rank and the rank count."""

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def __repr__(self) -> str:
        return f"<World rank {self.rank} of {self.size}>"

    def waiting_barrier(self) -> None:
        """A barrier whose early ranks sleep while they wait, for a wait that may last seconds
        (the others' compilation at a first launch). MPICH's Barrier polls, spinning a core all
        the while: measured, ranks waiting for rank 0 to compile a program's adjoint kernels
        spent 35 s of system time in 45 s, a core taken from the compiler on a small machine.
        The sleeps start at 0.1 ms and grow to 10 ms: only the first launches wait here."""
        request = self.comm.Ibarrier()
        pause = 1e-4
        while not request.Test():
            time.sleep(pause)
            pause = min(2 * pause, 1e-2)


_world: World | None = None
_detected = False


def launched_size() -> int:
    """How many ranks the launcher started (1 when not started by one)."""
    for name in _SIZE_VARIABLES:
        text = os.environ.get(name)
        if text and text.strip().isdigit():
            return int(text)
    return 1


def current() -> World | None:
    """The world when this process is one of several ranks, else None (one process)."""
    global _world, _detected
    if not _detected:
        _detected = True
        if launched_size() > 1:
            _world = _connect()
    return _world


def _connect() -> World | None:
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ConfigError(f"this process was started by an MPI launcher with "
                          f"{launched_size()} ranks, but mpi4py cannot be imported ({exc}); "
                          f'install it with: pip install "relsim[mpi]"') from None
    comm = MPI.COMM_WORLD
    if comm.Get_size() <= 1:
        return None
    world = World(comm)
    _abort_on_uncaught(world)
    _share_cores(comm, MPI)
    return world


def _share_cores(comm, MPI) -> None:
    """Ranks on one node share its cores: each backend is told its share (cores /
    ranks-on-the-node; the cpu's then runs that many Numba threads). N ranks each starting a
    thread per core would run N times as many threads as cores."""
    from ...target_registry import registered
    from ..backends.base import Backend
    local = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_size()
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    for backend in registered():
        if isinstance(backend, Backend):  # (a plugin need not subclass it: then it has no say)
            backend.share_cores(max(1, cores // local))


def _abort_on_uncaught(world: World) -> None:
    previous = sys.excepthook

    def hook(kind, value, tb):
        head = f"[relsim rank {world.rank} of {world.size}] uncaught exception; aborting " \
            f"every rank\n"
        if previous in (sys.__excepthook__, errors.excepthook):
            # the label and the whole traceback in one write: the abort can end this rank
            # while the launcher is still forwarding its output, and a report written line by
            # line then arrives cut short (seen under load: the label and the first frame only)
            sys.stderr.write(head + errors.format_uncaught(kind, value, tb))
        else:  # the program's own hook reports it
            sys.stderr.write(head)
            previous(kind, value, tb)
        abort(world, 1)

    sys.excepthook = hook


def abort(world: World, status: int) -> None:
    """End every rank now (after flushing this one's output)."""
    sys.stdout.flush()
    sys.stderr.flush()
    world.comm.Abort(status)
