#!/usr/bin/env python
"""Launch overhead: per-call cost of ``R.foreach(k)`` on a 1-row relation (target cpu).

Each relsim kernel is timed next to a plain serial ``numba.njit`` function doing the same work
on the same arrays (the floor: what any Numba call costs from Python). Three kernels:

* trivial:        ``r.x += 1.0``
* Global read:    ``r.x += g``            (g a ``rs.Global``)
* Global reduce:  ``s += r.x``            (a ``+`` reduction into a ``rs.Global``)
* captured:       ``r.x += DX + DY + DZ``  (three captured Python floats: each launch checks
                  that they were not rebound since the kernel compiled)

Then launches inside a captured step (``rs.capture``): steps of 2 and 20 trivial launches
against a plain njit function calling the same compiled loop 2 and 20 times (goal: each launch
inside a step at most 0.1 us above its compiled loop), and the same launches from Python.

All variants are warmed up (compiled) first, then timed interleaved in batches of ``--number``
calls; the table shows the median and the minimum per-call time over ``--repeats`` batches.
``--breakdown`` also times the layers of the trivial launch (internal API; diagnostic only).
Goal: relsim under 3 us per launch.

Usage::

    python bench/launch_overhead.py [--repeats 200] [--number 2000]
                                    [--markdown docs/benchmarks/history.md]
                                    [--chart PATH]
"""
from __future__ import annotations

import argparse
import os
import tempfile

import _common as C

GOAL_US = 3.0
DX, DY, DZ = 0.25, 0.5, 0.25  # captured by the `captured` kernel


def build():
    import numba

    import relsim as rs

    R = rs.Relation("R", 1)
    R.new_field("x", rs.f64, init=0.0)
    g = rs.Global(rs.f64, 0.5)
    s = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def trivial(r):
        r.x += 1.0

    @rs.kernel
    def global_read(r):
        r.x += g

    @rs.kernel
    def global_reduce(r):
        s += r.x

    @rs.kernel
    def captured(r):
        r.x += DX + DY + DZ

    @numba.njit
    def nb_trivial(x):
        for i in range(x.shape[0]):
            x[i] += 1.0

    @numba.njit
    def nb_read(x, g):
        for i in range(x.shape[0]):
            x[i] += g[0]

    @numba.njit
    def nb_reduce(x, s):
        for i in range(x.shape[0]):
            s[0] += x[i]

    x = R.x.numpy()
    gd, sd = g.data.reshape(-1), s.data.reshape(-1)
    foreach = R.foreach
    cases = [
        ("trivial (r.x += 1.0)", lambda: foreach(trivial), lambda: nb_trivial(x)),
        ("Global read (r.x += g)", lambda: foreach(global_read), lambda: nb_read(x, gd)),
        ("Global += reduction (s += r.x)", lambda: foreach(global_reduce),
         lambda: nb_reduce(x, sd)),
        ("captured constants (r.x += DX + DY + DZ)", lambda: foreach(captured),
         lambda: nb_trivial(x)),
    ]
    return R, trivial, cases, nb_trivial


def captured_variants(rs, R, trivial, nb_trivial, many):
    """Steps of 2 and `many` trivial launches captured (`rs.capture`: each one compiled
    call), next to a plain njit function calling the same compiled loop 2 and `many` times:
    the difference of the two divided by many - 2 is the cost of one more launch inside a
    compiled step."""
    import numba

    @numba.njit
    def nb_calls(x, k):
        for _ in range(k):
            nb_trivial(x)

    x = R.x.numpy()
    steps = {}
    for k in (2, many):
        with rs.capture() as steps[k]:
            for _ in range(k):
                R.foreach(trivial)
        # compiled now (by default a step's segment compiles in the background while its
        # first replays run launch by launch: the warm-up would time those)
        steps[k].compile()

    def launches(k):
        def run():
            for _ in range(k):
                R.foreach(trivial)
        return run
    return {"captured|2": steps[2], f"captured|{many}": steps[many],
            "njit calls|2": lambda: nb_calls(x, 2),
            f"njit calls|{many}": lambda: nb_calls(x, many),
            "launches|2": launches(2), f"launches|{many}": launches(many)}


def breakdown_variants(R, kernel, cfg):
    """Layers of one trivial launch, outermost first (uses internals: diagnostic only)."""
    from relsim.runtime import execute
    exe = execute.executable(kernel, R, cfg)
    b = exe.bindings[None]
    # the serial variant: the kernel's part function run as one part, through `run_serial`'s
    # dispatcher with the wrapper's and the packed arguments' addresses (backends/cpu/parts)
    run, call_args, packed = exe.row_loops[False].bound(b.call_args)
    return {
        "R.foreach(k)": lambda: R.foreach(kernel),
        "execute.run(k, R, None, None)": lambda: execute.run(kernel, R, None, None),
        "CpuExecutable.launch(R, None)": lambda: exe.launch(R, None),
        "generated kernel, run_serial via Numba dispatcher": lambda _keep=packed: run(
            *call_args),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=200, help="timed batches per variant")
    ap.add_argument("--number", type=int, default=2000, help="calls per batch")
    ap.add_argument("--no-breakdown", dest="breakdown", action="store_false",
                    help="skip the per-layer breakdown of the trivial launch")
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    C.add_chart_argument(ap, "launch_overhead")
    args = ap.parse_args(argv)

    os.environ.setdefault("RELSIM_CACHE_DIR", tempfile.mkdtemp(prefix="relsim-bench-"))
    import relsim as rs
    cfg = rs.configure(target="cpu")
    R, trivial, cases, nb_trivial = build()
    variants = {}
    for name, rel, nb in cases:
        variants[name + "|relsim"] = rel
        variants[name + "|numba"] = nb
    for fn in variants.values():  # warm up: compile, bind
        for _ in range(100):
            fn()
    res = C.interleaved(variants, args.repeats, args.number)

    rows = []
    for name, _, _ in cases:
        rmin, rmed = C.summary(res[name + "|relsim"])
        nmin, nmed = C.summary(res[name + "|numba"])
        ratio = C.paired_ratio(res[name + "|relsim"], res[name + "|numba"])
        rows.append([name, C.us(rmed), C.us(nmed), C.us(rmed - nmed), f"{ratio:.1f}x",
                     C.us(rmin), C.us(nmin)])
    headers = ["kernel (1-row relation, target cpu)", "relsim median us", "njit floor median us",
               "relsim - floor us", "ratio (median of pairs)", "relsim min us", "floor min us"]
    out = [f"Machine: {C.machine_line()}.",
           f"Per-call time, median (and min) over {args.repeats} interleaved batches of "
           f"{args.number} calls, after warm-up. Floor: a plain serial `numba.njit` function "
           f"doing the same work on the same arrays. Goal: relsim under {GOAL_US:g} us.",
           "", C.table(headers, rows)]
    med0 = C.summary(res[cases[0][0] + "|relsim"])[1] * 1e6
    out += ["", f"Trivial launch: {med0:.2f} us median -> goal "
            f"{'met' if med0 < GOAL_US else 'NOT met'}."]

    many = 20
    cv = captured_variants(rs, R, trivial, nb_trivial, many)
    for fn in cv.values():
        for _ in range(100):
            fn()
    cres = C.interleaved(cv, max(args.repeats // 2, 1), max(args.number // 10, 1))
    crows = []
    for name in ("launches", "captured", "njit calls"):
        two, lots = (C.summary(cres[f"{name}|{k}"])[1] * 1e6 for k in (2, many))
        crows.append([name, f"{two:.2f}", f"{lots:.2f}", f"{(lots - two) / (many - 2):.3f}"])
    extra = float(crows[1][3]) - float(crows[2][3])
    out += ["", f"Launches inside a captured step (`rs.capture`): a step of 2 and of {many} "
            f"trivial launches, against a plain njit function calling the same compiled loop 2 "
            f"and {many} times, and against 2 and {many} launches from Python (median us per "
            f"call of the whole). Goal: a launch inside a step at most 0.1 us above its "
            f"compiled loop.",
            "", C.table(["variant", "2 launches us", f"{many} launches us",
                         "each launch more us"], crows), "",
            f"A captured launch costs {extra:+.3f} us beside a compiled call of its loop -> goal "
            f"{'met' if extra <= 0.1 else 'NOT met'}."]

    if args.breakdown:
        bv = breakdown_variants(R, trivial, cfg)
        bv["plain njit floor (1 array arg)"] = cases[0][2]
        for fn in bv.values():
            for _ in range(100):
                fn()
        bres = C.interleaved(bv, max(args.repeats // 2, 1), args.number)
        brows = [[k, C.us(C.summary(v)[1]), C.us(C.summary(v)[0])] for k, v in bres.items()]
        out += ["", "Breakdown of the trivial launch (each row includes the ones below it; "
                "internal API):", "", C.table(["layer", "median us", "min us"], brows)]

    text = "\n".join(out)
    print(text)
    C.chart(args.chart, "Launch overhead (1-row relation, target cpu)",
            [name.split(" (")[0] for name, _, _ in cases],
            {"relsim": [C.summary(res[name + "|relsim"])[1] * 1e6 for name, _, _ in cases],
             "njit floor": [C.summary(res[name + "|numba"])[1] * 1e6 for name, _, _ in cases]},
            "us per call (median)")
    if args.markdown:
        C.update_markdown(args.markdown, "Launch overhead", text)


if __name__ == "__main__":
    main()
