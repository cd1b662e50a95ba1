"""`relsim run minife`: the reference's options, progress lines and YAML summary.

The reference's flop counts and report layout are kept (driver.hpp): WAXPY 3 n (3 k + 2), DOT
2 n (2 k), MATVEC 2 NNZ (k + 1) flops for k iterations, with n = nx ny nz (the elements, as
the reference counts). relsim's CG fuses each update of x and r with the sum r.r that the
reference computes apart, so its "WAXPY" time includes that dot and its "DOT" time is p.Ap's.
The first solve of a process compiles the solver's kernels: a one-iteration solve runs first,
reported as "relsim warm-up Time", so that the CG times are those of the iterations ("FE
assembly Time" includes compiling the element kernel when the cache is cold: its serial
variant, while its parallel one compiles in the background for later runs, unless
--wait-compile). "Iterations" is the updates made until the residual norm reached the
tolerance: the reference reports one more (it makes one more update after the residual it
prints last is below the tolerance).
`--dots ordered` sums CG's dot products in row order as the serial reference does: every
residual line is then the serial reference's (docs/benchmarks/history.md).
"""
from __future__ import annotations

import argparse
import datetime
import sys
import time

import relsim as rs

from .._progress import Progress
from .problem import MiniFE, verify

MAX_ITER = 200


def parse(argv):
    p = argparse.ArgumentParser(prog="relsim run minife", description=__doc__.split("\n")[0])
    p.add_argument("-nx", type=int, default=10, help="elements along x (default 10)")
    p.add_argument("-ny", type=int, default=None, help="elements along y (default nx)")
    p.add_argument("-nz", type=int, default=None, help="elements along z (default ny)")
    p.add_argument("-verify_solution", type=int, default=0, choices=(0, 1),
                   help="compare with the analytic solution near the centre (1), as the "
                        "reference does")
    p.add_argument("--target", default=None, help="backend (default $RELSIM_TARGET or cpu)")
    p.add_argument("--threads", type=int, default=None, help="threads (default all)")
    p.add_argument("--dots", default="exact", choices=rs.Global.SUMS,
                   help="CG's dot products: exact sums (default: independent of the row order), "
                        "or summed in row order as the serial reference does (its history)")
    p.add_argument("--wait-compile", action="store_true",
                   help="with a cold cache, compile the element kernel's parallel variant before "
                        "assembling (by default the assembly runs its serial one, same bits, "
                        "while it compiles in the background for the next run)")
    p.add_argument("--yaml", default=None, metavar="PATH", help="also write the summary here")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    a = p.parse_args(argv)
    a.ny = a.nx if a.ny is None else a.ny
    a.nz = a.ny if a.nz is None else a.nz
    for name in ("nx", "ny", "nz"):
        if getattr(a, name) < 1:
            p.error(f"-{name} must be at least 1")
    return a


def _g(x) -> str:
    """A number as the reference's C++ streams print it (6 significant digits)."""
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def main(argv=None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    kw = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    cfg = rs.configure(**kw) if kw else rs.config.current()
    root = rs.ranks().rank == 0
    say = (lambda *s: print(*s, flush=True)) if root and not a.quiet else (lambda *s: None)
    times = {}

    def timed(label, fn):
        t0 = time.perf_counter()
        out = fn()
        times[label] = time.perf_counter() - t0
        say(f"{label + '...':>30}{times[label]:.6g}s")
        return out

    fe = timed("creating/filling mesh", lambda: MiniFE(a.nx, a.ny, a.nz, cfg))
    background = not a.wait_compile and rs.ranks().size == 1
    timed("assembling FE data", lambda: (fe.precompile(background),
                                         fe.elems.foreach(fe.element, cfg)))
    timed("imposing Dirichlet BC", lambda: (fe.A.dirichlet(fe.bc0, fe.nodes.b, 0.0),
                                            fe.A.dirichlet(fe.bc1, fe.nodes.b, 1.0)))
    timed("relsim warm-up", lambda: fe.solve(max_iter=1, dots=a.dots))
    say("Starting CG solver ... ")
    timers: dict = {}
    t0 = time.perf_counter()
    with Progress(MAX_ITER, "iterations") as bar:
        info = fe.solve(MAX_ITER, timers=timers, callback=lambda k, *_: bar.update(k),
                        dots=a.dots)
    total = time.perf_counter() - t0
    # the reference's loop: iteration k starts while the residual norm before it (residuals[k-1])
    # is above the tolerance, and prints it every print_freq iterations and at max_iter
    iters = info.iterations if info.converged else MAX_ITER
    final = info.residuals[iters] if info.converged else info.residuals[MAX_ITER - 1]
    print_freq = max(1, min(MAX_ITER // 10, 50))
    say(f"Initial Residual = {_g(info.residuals[0])}")
    for k in range(1, iters + 1):
        if k % print_freq == 0 or k == MAX_ITER:
            say(f"Iteration = {k}   Residual = {_g(info.residuals[k - 1])}")
    say(f"Final Resid Norm: {_g(final)}")
    status = 0
    check = None
    if a.verify_solution:
        say("verifying solution at ~ (0.5, 0.5, 0.5) ...")
        check = verify(fe)
        ok, err, where, computed, want = check
        if ok:
            say("solution matches analytic solution to within 0.06 or better.")
        else:
            say(f"max absolute error is {_g(err)}:")
            say(f"   at position ({','.join(_g(c) for c in where)}), ")
            say(f"   computed solution: {_g(computed)},  analytic solution: {_g(want)}")
            status = 1
    if root:
        text = summary(a, fe, cfg, info, iters, final, times, timers, total)
        print(text, end="")
        if a.yaml:
            with open(a.yaml, "w") as fh:
                fh.write(text)
    return status


def summary(a, fe, cfg, info, iters, final, times, timers, total) -> str:
    """The reference's YAML document (its keys and layout; relsim's own keys marked)."""
    n = a.nx * a.ny * a.nz  # (the reference's "global_nrows" of its flop counts)
    flops = {"WAXPY": 3.0 * n * (3 * iters + 2), "DOT": 2.0 * n * (2 * iters),
             "MATVEC": 2.0 * fe.nnz * (iters + 1)}
    secs = {"WAXPY": timers.get("update", 0.0) + timers.get("direction", 0.0),
            "DOT": timers.get("dot", 0.0), "MATVEC": timers.get("operator", 0.0)}

    def mflops(f, t):
        return _g(1e-6 * f / t) if t > 1e-4 else "inf"

    lines = ["Mini-Application Name: miniFE", "Mini-Application Version: 2.0",
             "Global Run Parameters: ", "  dimensions: ", f"    nx: {a.nx}", f"    ny: {a.ny}",
             f"    nz: {a.nz}", "  load_imbalance: 0", "  mv_overlap_comm_comp: 0 (no)",
             f"  number of processors: {rs.ranks().size}", "  ScalarType: double",
             "  GlobalOrdinalType: int", "  LocalOrdinalType: int",
             f"  relsim target: {cfg.target}", f"  relsim threads: {cfg.thread_count()}",
             f"  relsim dots: {a.dots}",
             f"Run Date/Time: {datetime.datetime.now():%Y-%m-%d, %H-%M-%S}",
             "Matrix structure generation: ",
             f"  Mat-struc-gen Time: {_g(times['creating/filling mesh'])}",
             "FE assembly: ", f"  FE assembly Time: {_g(times['assembling FE data'])}",
             "Matrix attributes: ", f"  Global Nrows: {fe.nrows}", f"  Global NNZ: {fe.nnz}",
             "CG solve: ", f"  Iterations: {iters}", f"  Final Resid Norm: {_g(final)}"]
    for op in ("WAXPY", "DOT", "MATVEC"):
        lines += [f"  {op} Time: {_g(secs[op])}", f"  {op} Flops: {_g(flops[op])}",
                  f"  {op} Mflops: {mflops(flops[op], secs[op])}"]
    all_flops = sum(flops.values())
    lines += ["  Total: ", f"    Total CG Time: {_g(total)}",
              f"    Total CG Flops: {_g(all_flops)}",
              f"    Total CG Mflops: {mflops(all_flops, total)}",
              f"  Time per iteration: {_g(total / max(iters, 1))}",
              f"  relsim warm-up Time: {_g(times['relsim warm-up'])}"]
    return "\n".join(lines) + "\n"
