"""`relsim run lulesh`: the reference's command line and report, plus relsim's options.

Reference options (same parsing, messages and status as lulesh2.0): ``-s N -i K -r R -b B -c C -p -q
-f F -v -h``. relsim adds ``--target T``, ``--threads N``, ``--output DIR`` (VTU and XDMF series
every ``--every K`` cycles), ``--json PATH`` (the end state in full precision) and
``--no-progress``. Exit status: 0; 255 for bad options (after the usage) and VolumeError; 254 for
QStopError, as the reference.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import time

from .._checkpointing import Checkpointer, parse_every
from .._progress import Progress

USAGE = """Usage: relsim run lulesh [opts]
 where [opts] is one or more of:
 -q              : quiet mode - suppress all stdout
 -i <iterations> : number of cycles to run
 -s <size>       : length of cube mesh along side
 -r <numregions> : Number of distinct regions (def: 11)
 -b <balance>    : Load balance between regions of a domain (def: 1)
 -c <cost>       : Extra cost of more expensive regions (def: 1)
 -f <numfiles>   : Number of files to split viz dump into (def: (np+10)/9)
 -p              : Print out progress
 -v              : Output viz file (requires compiling with -DVIZ_MESH
 -h              : This message
 relsim's options:
 --target <name>   : backend (interp, cpu, cpu-serial, ...; def: $RELSIM_TARGET or cpu)
 --threads <n>     : number of threads (def: all Numba threads)
 --output <dir>    : write the node and element fields as VTU (.pvd) and XDMF series
 --every <k>       : with --output, write every k cycles (def: 10) and the last one
 --json <path>     : write the end state in full precision (iterations, time, dt, e(0),
                     symmetry figures, checksums)
 --no-progress     : no progress bar (it is shown only on a terminal)
 --wait-compile    : with a cold cache, compile every parallel kernel before the first cycle
                     (by default the first cycles run serial code, same bits, while they
                     compile in the background)
 --checkpoint <path>       : write the state to this HDF5 file (atomically)
 --checkpoint-every <k>    : every k cycles (def: 100), or auto (from its cost and --mttf)
 --mttf <hours>            : mean time to failure for --checkpoint-every auto (def: 24)
 --restart <path>          : continue from a checkpoint (written on any number of ranks)

"""

HEADER = """Running problem size {s}^3 per domain until completion
Num processors: 1
Num threads: {threads}
Total number of elements: {elems}{space}

To run other sizes, use -s <integer>.
To run a fixed number of iterations, use -i <integer>.
To run a more or less balanced region set, use -b <integer>.
To change the relative costs of regions, use -c <integer>.
To print out progress, use -p
To write an output file for VisIt, use -v
See help (-h) for more options
"""


class OptionError(Exception):
    """A bad command line: the usage and the message are printed, the status is 255 (the
    reference prints the usage only for an unknown option)."""

    def __init__(self, message: str, usage: bool = True, status: int = 255):
        super().__init__(message)
        self.usage, self.status = usage, status


def _int(tok):
    """The reference's StrToInt: strtol in base 10, then only a space or the end may follow."""
    m = re.match(r"\s*([+-]?\d+)(?: |$)", tok or "")
    return int(m.group(1)) if m else None


def parse(argv) -> dict:
    opts = dict(its=9999999, nx=30, numReg=11, numFiles=1, showProg=False, quiet=False,
                balance=1, cost=1, target=None, threads=None, output=None, every=10, json=None,
                progress=True, checkpoint=None, checkpoint_every=100, mttf=24.0, restart=None,
                wait_compile=False)
    names = {"-i": "its", "-s": "nx", "-r": "numReg", "-f": "numFiles", "-b": "balance",
             "-c": "cost"}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in names:
            if i + 1 >= len(argv):
                raise OptionError(f"Missing integer argument to {a}\n")
            v = _int(argv[i + 1])
            if v is None:
                raise OptionError(f"Parse Error on option {a} integer value required after "
                                  f"argument\n")
            opts[names[a]] = v
            i += 2
        elif a == "-p":
            opts["showProg"] = True
            i += 1
        elif a == "-q":
            opts["quiet"] = True
            i += 1
        elif a == "-v":
            raise OptionError("Use of -v (VisIt/SILO output) is not supported by relsim: use "
                              "--output DIR (VTU/XDMF series for ParaView)\n")
        elif a in ("-h", "--help"):
            raise OptionError("", usage=True, status=0)
        elif a in ("--target", "--threads", "--output", "--every", "--json"):
            if i + 1 >= len(argv):
                raise OptionError(f"Missing argument to {a}\n", usage=True)
            v = argv[i + 1]
            if a in ("--threads", "--every"):
                v = _int(v)
                if v is None or v < 1:
                    raise OptionError(f"{a} needs a positive integer\n", usage=True)
            opts[a[2:]] = v
            i += 2
        elif a in ("--checkpoint", "--checkpoint-every", "--mttf", "--restart"):
            if i + 1 >= len(argv):
                raise OptionError(f"Missing argument to {a}\n", usage=True)
            v = argv[i + 1]
            try:
                if a == "--checkpoint-every":
                    v = parse_every(v)
                elif a == "--mttf":
                    v = float(v)
                    if not v > 0:
                        raise ValueError
            except ValueError:
                raise OptionError(f"{a} needs a positive number{' or auto' if 'every' in a else ''}"
                                  f", got {argv[i + 1]}\n", usage=True) from None
            opts[a[2:].replace("-", "_")] = v
            i += 2
        elif a == "--no-progress":
            opts["progress"] = False
            i += 1
        elif a == "--wait-compile":
            opts["wait_compile"] = True
            i += 1
        else:
            raise OptionError(f"ERROR: Unknown command line argument: {a}\n", usage=True)
    if opts["nx"] < 1:
        raise OptionError(f"-s must be at least 1, got {opts['nx']}\n", usage=True)
    if opts["numReg"] < 1:
        raise OptionError(f"-r must be at least 1, got {opts['numReg']}\n", usage=True)
    return opts


def report(L, elapsed: float) -> str:
    """VerifyAndWriteFinalOutput's report, formatted as the reference's iostream does."""
    import relsim as rs
    nx = L.s
    cycles = L.cycle
    grind = (elapsed * 1e6 / cycles) / (nx * nx * nx) if cycles else math.inf
    fom = 1000.0 / grind
    mad, tad, mrd = L.symmetry()
    return (f"Run completed:\n"
            f"   Problem size        =  {nx}\n"
            f"   MPI tasks           =  {rs.ranks().size}\n"
            f"   Iteration count     =  {cycles}\n"
            f"   Final Origin Energy =  {_e(L.origin_energy())}\n"
            f"   Testing Plane 0 of Energy Array on rank 0:\n"
            f"        MaxAbsDiff   = {_e(mad)}\n"
            f"        TotalAbsDiff = {_e(tad)}\n"
            f"        MaxRelDiff   = {_e(mrd)}\n"
            f"\n"
            f"Elapsed time         = {_g(elapsed, 2):>10s} (s)\n"
            f"Grind time (us/z/c)  = {_g(grind, 8):>10s} (per dom)  ({_g(elapsed, 8):>10s} "
            f"overall)\n"
            f"FOM                  = {_g(fom, 8):>10s} (z/s)\n")


def _e(x: float) -> str:
    return f"{x:12.6e}" if math.isfinite(x) else f"{_nonfinite(x):>12s}"


def _g(x: float, prec: int) -> str:
    return f"{x:.{prec}g}" if math.isfinite(x) else _nonfinite(x)


def _nonfinite(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def end_state(L, elapsed: float) -> dict:
    """The end state in full precision (floats round-trip through JSON exactly)."""
    mad, tad, mrd = L.symmetry()
    return {"problem_size": L.s, "regions": L.num_reg, "balance": L.balance, "cost": L.cost,
            "iterations": L.cycle, "time": L.time, "dt": L.deltatime,
            "e0": L.origin_energy(),
            "symmetry": {"MaxAbsDiff": mad, "TotalAbsDiff": tad, "MaxRelDiff": mrd},
            "sums": {k: float(v) for k, v in L.checksums().items()},
            "elapsed_s": elapsed,
            "fom": (L.s ** 3 * L.cycle / (1000.0 * elapsed)) if elapsed > 0 else 0.0}


class Output:
    """--output DIR: node fields (velocity, coordinates) and element fields as .pvd (VTU per
    step, moving geometry) and .xdmf (HDF5) series."""

    NODE = ["xd", "yd", "zd", "x", "y", "z"]
    ELEM = ["e", "p", "q", "v", "ss"]

    def __init__(self, directory: str, L, every: int):
        from relsim.output import TimeSeries
        os.makedirs(directory, exist_ok=True)
        self.every = every
        self.series = []
        for rel, fields, stem in ((L.nodes, self.NODE, "lulesh_nodes"),
                                  (L.elems, self.ELEM, "lulesh_elems")):
            for ext in (".pvd", ".xdmf"):
                self.series.append(TimeSeries(os.path.join(directory, stem + ext), rel, fields))

    def write(self, t: float) -> None:
        for s in self.series:
            s.write(t)

    def __call__(self, L) -> None:
        if L.cycle % self.every == 0:
            self.write(L.time)

    def close(self) -> None:
        for s in self.series:
            s.close()


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        o = parse(argv)
    except OptionError as exc:
        if exc.usage:
            print(USAGE, end="")
        if str(exc):
            print(exc)
        return exc.status
    import relsim as rs

    from .._checks import nonfinite
    from .problem import STOPTIME, Lulesh, QStopError, VolumeError
    changes = {k: o[k] for k in ("target", "threads") if o[k] is not None}
    try:
        cfg = rs.configure(**changes) if changes else rs.configure()
    except rs.ConfigError as exc:
        print(f"relsim run lulesh: {exc}")
        return 255
    quiet = o["quiet"]
    if not quiet:
        print(HEADER.format(s=o["nx"], threads=_threads(cfg), elems=o["nx"] ** 3, space=" "))
    t0 = time.perf_counter()
    L = Lulesh(o["nx"], o["numReg"], o["balance"], o["cost"])
    # compile (or load from the cache) every kernel outside the timed loop; a cold cache's
    # parallel variants compile in the background unless --wait-compile
    ahead = L.warm_up(background=not o["wait_compile"] and rs.ranks().size == 1)
    if o["restart"]:
        L.restart(o["restart"])
        if not quiet:
            print(f"relsim: restarted from {o['restart']} at cycle {L.cycle}, time {L.time:e}")
    setup = time.perf_counter() - t0
    hooks = []
    if o["checkpoint"]:
        every = Checkpointer(o["checkpoint"], o["checkpoint_every"], o["mttf"], L.checkpoint,
                             say=(lambda text: None) if quiet else print)
        hooks.append(lambda L: every(L.cycle))
    out = Output(o["output"], L, o["every"]) if o["output"] else None
    if out is not None:
        out.write(L.time)
        hooks.append(out)
    if o["showProg"] and not quiet:
        hooks.append(lambda L: print(f"cycle = {L.cycle}, time = {L.time:e}, "
                                     f"dt={L.deltatime:e}"))
    bar = None
    if o["progress"] and not quiet and not o["showProg"]:  # (shown on a terminal only)
        bar = Progress(STOPTIME, "simulated time", delay=0.0, every=0.2)
        hooks.append(lambda L: bar.update(L.time, f"cycle {L.cycle}  dt {L.deltatime:.3e}"))
    status = 0
    start = time.perf_counter()
    try:
        L.run(o["its"], (lambda L: [h(L) for h in hooks]) if hooks else None)
    except (VolumeError, QStopError) as exc:
        status = exc.status
        if bar is not None:
            bar.close()
        print(f"relsim run lulesh: {exc}", file=sys.stderr)
    elapsed = time.perf_counter() - start
    if bar is not None and status == 0:
        bar.close()
    if out is not None:
        if status == 0 and L.cycle % o["every"]:
            out.write(L.time)
        out.close()
    if status:
        return status
    elapsed = _slowest(elapsed)
    bad = nonfinite(**{f"elems.{f}": L.elems.field(f).numpy() for f in ("e", "p", "q", "v")})
    if bad:  # the reference would go on printing numbers; a NaN is never a result
        print("relsim run lulesh: FAILED: " + "; ".join(bad), file=sys.stderr)
        return 1
    if not quiet:
        print(report(L, elapsed))
        print(f"relsim: target {cfg.target}, {_threads(cfg)} thread(s); setup and compilation "
              f"{setup:.2f} s (not in the elapsed time)")
        if ahead and not o["wait_compile"] and _threads(cfg) > 1:
            print("relsim: a cold cache: parallel variants compile in the background, and until "
                  "they are ready kernels run their serial ones (same bits; --wait-compile "
                  "waits for them first)")
        if out is not None:
            print(f"relsim: wrote {o['output']}/lulesh_nodes.pvd, lulesh_elems.pvd (VTU) and "
                  f"the .xdmf series")
    if o["json"]:
        state = end_state(L, elapsed)  # (on every rank: reading fields is collective)
        state.update(target=cfg.target, threads=_threads(cfg), setup_s=setup,
                     ranks=rs.ranks().size)
        if rs.ranks().rank:
            return 0
        with open(o["json"], "w") as fh:
            json.dump(state, fh, indent=1)
            fh.write("\n")
    return 0


def _slowest(elapsed: float) -> float:
    """The longest time loop over the MPI ranks, on every rank (the reference reduces its timer
    with MPI_MAX before its report and FOM); `elapsed` itself on one process."""
    from relsim.runtime.parallel import world
    w = world.current()
    if w is None:
        return elapsed
    from mpi4py import MPI
    return w.comm.allreduce(elapsed, op=MPI.MAX)


def _threads(cfg) -> int:
    return cfg.thread_count()
