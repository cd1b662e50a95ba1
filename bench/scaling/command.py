"""`python -m bench.scaling lulesh|airfoil [options]`: predicted strong and weak scaling to
thousands of MPI ranks from measured quantities (the model: `model`; the exact per-rank traffic:
`traffic`; its check against real runs: `validate`; each simulation's part: `lulesh`, `airfoil`).

Strong scaling keeps the global problem; weak scaling keeps the rows per rank (meshes of about
P times a rank's rows are built for the exact points). Partitions are computed exactly (the
runtime's own rule) up to --exact-max ranks; beyond, the slowest rank of each launch at the
largest exact P is extrapolated with the surface-to-volume law (see `model`)."""
from __future__ import annotations

import argparse

from relsim.report import machine_line, table, update_markdown

from . import model, traffic, validate


def options(sim) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m bench.scaling {sim.KEY}",
                                description=__doc__.splitlines()[0])
    p.add_argument("--size", default=None, help=f"strong scaling's global problem "
                   f"(default {validate.size_text(sim.STRONG)})")
    p.add_argument("--weak-size", default=None, help=f"weak scaling's problem per rank "
                   f"(default {validate.size_text(sim.WEAK)})")
    p.add_argument("--exact-max", type=int, default=64,
                   help="largest P whose partitions are computed exactly (default 64)")
    p.add_argument("--weak-exact-max", type=int, default=8,
                   help="largest P whose weak-scaling mesh is built (default 8)")
    p.add_argument("--max-ranks", type=int, default=4096, help="largest P (default 4096)")
    p.add_argument("--latency-us", type=float, default=model.ALPHA * 1e6,
                   help=f"alpha, us per message (default {model.ALPHA * 1e6:g}: {model.NETWORK})")
    p.add_argument("--bandwidth-gbs", type=float, default=model.BETA / 1e9,
                   help=f"beta, GB/s per rank (default {model.BETA / 1e9:g})")
    p.add_argument("--cycles", type=int, default=5, help="timed cycles (median; default 5)")
    p.add_argument("--validate-ranks", default="1,2,4,8",
                   help="mpiexec -n N runs that check the bytes ('' for none; default 1,2,4,8)")
    p.add_argument("--validate-size", default=None, help=f"their problem (default "
                   f"{validate.size_text(sim.VALIDATE)})")
    p.add_argument("--png", default=f"{sim.KEY}-scaling.png",
                   help="the chart ('' for none; needs matplotlib)")
    p.add_argument("--markdown", default=None, help="write the tables as a section of this "
                   "markdown file (e.g. docs/benchmarks/history.md)")
    return p


def powers(lo: int, hi: int) -> list:
    out, p = [], 1
    while p <= hi:
        if p >= lo:
            out.append(p)
        p *= 2
    return out


def strong(sim, size, timing, launches, start, net, a) -> tuple:
    """(predictions, (base, n0, P0)): exact up to --exact-max, then extrapolated."""
    n_total = sim.rows(size)
    out, q = [], None
    for P in powers(1, min(a.exact_max, a.max_ranks)):
        print(f"  strong: partitions for P={P}", flush=True)
        q = traffic.exact(launches, P, start)
        out.append(model.predict(launches, q, P, n_total / P, timing, net))
    P0 = out[-1].nranks
    base, n0 = model.slowest(launches, q, P0, timing, net), n_total / P0
    for P in powers(2 * P0, a.max_ranks):
        qx = model.extrapolate(base, n0, n_total / P, sim.DIM, P0, P)
        out.append(model.predict(launches, qx, P, n_total / P, timing, net, exact=False))
    return out, (base, n0, P0)


def weak(sim, per_rank, timing, net, calib, a) -> list:
    base, n0, P0 = calib
    n = sim.rows(per_rank)
    out = []
    for P in powers(1, min(a.weak_exact_max, a.max_ranks)):
        size = sim.weak_size(per_rank, P)
        print(f"  weak: {sim.describe(size)} on P={P}", flush=True)
        _, step, start = model.build(sim, size)
        launches, _, _ = model.record_cycles(step, 1)
        q = traffic.exact(launches, P, start)
        out.append(model.predict(launches, q, P, sim.rows(size) / P, timing, net))
        last = launches
    for P in powers(2 * out[-1].nranks, a.max_ranks):
        qx = model.extrapolate(base, n0, n, sim.DIM, P0, P)
        out.append(model.predict(last, qx, P, n, timing, net, exact=False))
    return out


def rows_of(points, strong_scaling: bool) -> list:
    t1 = points[0].total
    out = []
    for p in points:
        eff = t1 / (p.nranks * p.total) if strong_scaling else t1 / p.total
        out.append([p.nranks, f"{p.per_rank:.0f}", f"{p.compute * 1e3:.3f}",
                    f"{p.ghost * 1e3:.3f}", f"{p.merge * 1e3:.3f}", f"{p.total * 1e3:.3f}",
                    f"{t1 / p.total:.1f}" if strong_scaling else "", f"{eff:.2f}",
                    f"{p.nbytes / 1e3:.1f}", f"{p.msgs:.0f}",
                    "exact" if p.exact else "surface law"])
    return out


HEADERS = ["P", "rows/rank", "compute ms", "ghosts ms", "merges ms", "cycle ms", "speedup",
           "efficiency", "KB recv/rank", "msgs/rank", "partitions"]


def chart(path, sim, s_points, w_points) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, pts, title in ((axes[0], s_points, "strong"), (axes[1], w_points, "weak")):
        P = [p.nranks for p in pts]
        ax.loglog(P, [p.total * 1e3 for p in pts], "o-", label="cycle")
        ax.loglog(P, [p.compute * 1e3 for p in pts], "s--", label="compute")
        ax.loglog(P, [max((p.ghost + p.merge) * 1e3, 1e-6) for p in pts], "^--",
                  label="communication")
        edge = max(p.nranks for p in pts if p.exact)
        ax.axvline(edge, color="grey", lw=0.8, ls=":")
        ax.text(edge, ax.get_ylim()[1], " extrapolated ->", va="top", fontsize=8)
        ax.set_title(f"{sim.NAME} {title} scaling (predicted)")
        ax.set_xlabel("MPI ranks P")
        ax.set_ylabel("ms per cycle")
        ax.legend(fontsize=8)
    ax = axes[2]
    for pts, label, strong_scaling in ((s_points, "strong", True), (w_points, "weak", False)):
        t1 = pts[0].total
        ax.semilogx([p.nranks for p in pts],
                    [t1 / (p.nranks * p.total) if strong_scaling else t1 / p.total for p in pts],
                    "o-", label=label)
    ax.set_ylim(0, 1.05)
    ax.set_title("parallel efficiency")
    ax.set_xlabel("MPI ranks P")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"wrote {path}"


def run(sim, argv=None) -> int:
    """The model of simulation `sim` (`lulesh`, `airfoil`) with options `argv`."""
    a = options(sim).parse_args(argv)
    size = sim.parse(a.size) if a.size else sim.STRONG
    per_rank = sim.parse(a.weak_size) if a.weak_size else sim.WEAK
    net = model.Network(a.latency_us * 1e-6, a.bandwidth_gbs * 1e9)
    print(f"{sim.NAME} scaling model: timing {sim.describe(size)} and {sim.describe(sim.TINY)} "
          f"on one process, one thread", flush=True)
    timing, launches, start = model.calibrate(sim, size, sim.TINY, a.cycles)
    s_points, calib = strong(sim, size, timing, launches, start, net, a)
    w_points = weak(sim, per_rank, timing, net, calib, a)
    checks = []
    if a.validate_ranks:
        vsize = sim.parse(a.validate_size) if a.validate_size else sim.VALIDATE
        ranks = [int(n) for n in a.validate_ranks.split(",")]
        print(f"  validation: mpiexec -n {','.join(map(str, ranks))} on {sim.describe(vsize)}",
              flush=True)
        checks = [vsize, validate.compare(sim.KEY, vsize, ranks)]
    body = report(sim, a, size, per_rank, net, timing, launches, s_points, w_points, checks)
    print()
    print(body)
    if a.png:
        done = chart(a.png, sim, s_points, w_points)
        print(done or "no chart: matplotlib is not installed")
    if a.markdown:
        update_markdown(a.markdown, f"{sim.NAME} scaling model (issue 15)", body)
    bad = checks and any(r[-1] != "yes" for r in checks[1])
    return 1 if bad else 0


def report(sim, a, size, per_rank, net, timing, launches, s_points, w_points, checks) -> str:
    kinds: dict = {}
    for ln in launches:
        kinds[ln.kind] = kinds.get(ln.kind, 0) + 1
    calib = [[k, n, f"{timing.per_kind[k][0] * 1e6:.1f}", f"{timing.per_kind[k][1] * 1e9:.1f}"]
             for k, n in kinds.items()]
    merges = sum(len(ln.merges) for ln in launches)
    exact_s = max(p.nranks for p in s_points if p.exact)
    exact_w = max(p.nranks for p in w_points if p.exact)
    parts = [
        f"Command: `python -m bench.scaling {sim.KEY} --size {validate.size_text(size)} "
        f"--weak-size {validate.size_text(per_rank)} --exact-max {a.exact_max} "
        f"--weak-exact-max {a.weak_exact_max} --max-ranks {a.max_ranks} "
        f"--latency-us {a.latency_us:g} --bandwidth-gbs {a.bandwidth_gbs:g}`",
        f"Timed on: {machine_line()}.",
        "A model on paper, not a measurement at scale. Assumptions: one core per rank, each "
        "kind of launch costing c0 + c1 x rows (c0 timed on "
        f"{sim.describe(sim.TINY)}, c1 on {sim.describe(size)}, one process, one thread, "
        f"median of {a.cycles} cycles; the Python between launches, {timing.host * 1e3:.3f} ms "
        "per cycle, runs on every rank); a rank runs its owned and execution-halo rows; ghost "
        "exchanges as the runtime makes them (a field is received before a launch only if "
        "written since that launch's plan last received it; one message per field and "
        f"neighbour), costing alpha = {net.alpha * 1e6:g} us per message + bytes / beta = "
        f"{net.beta / 1e9:g} GB/s (defaults: {model.NETWORK}), the larger of sent and received, "
        f"not overlapped with compute; {merges} Global merges per cycle, each an allgather by "
        "recursive doubling (ceil(log2 P) alpha + (P-1) payload / beta); bulk synchronous: each "
        "launch ends with its slowest rank. Partitions (the runtime's rule) are exact up to "
        f"P={exact_s} (strong) and P={exact_w} (weak, meshes of about P x {sim.describe(per_rank)}"
        f" built); beyond, each launch's slowest rank at P={exact_s} is scaled by the "
        f"surface-to-volume law in {sim.DIM}-D (owned rows as n, halo rows and bytes as "
        f"n^({sim.DIM - 1}/{sim.DIM}), messages constant). Not modelled: the distributed "
        "layer's own per-launch cost, cache effects of smaller ranks, contention, topology, "
        "noise.",
        sim.NOTE,
        "Launch kinds of one cycle (c0: fixed cost per launch; c1: per row):",
        table(["kernel/relation", "launches/cycle", "c0 us", "c1 ns/row"], calib),
        f"Strong scaling, {sim.describe(size)} in all:",
        table(HEADERS, rows_of(s_points, True)),
        f"Weak scaling, {sim.describe(per_rank)} per rank:",
        table(HEADERS, rows_of(w_points, False)),
        "(ghosts ms: the exchanges of each launch's slowest rank; KB recv/rank and msgs/rank: "
        "the most any rank receives per cycle.)",
    ]
    if checks:
        vsize, rows = checks
        parts += [f"Validation of the communication model: `mpiexec -n N` on "
                  f"{sim.describe(vsize)}, ghost bytes and messages received in the third "
                  "cycle (`exchange.TRAFFIC`) against the model's, summed over ranks; "
                  "'per rank': every rank's own numbers equal:",
                  table(["N", "model bytes", "measured bytes", "model msgs", "measured msgs",
                         "per rank"], rows)]
    return "\n\n".join(parts)
