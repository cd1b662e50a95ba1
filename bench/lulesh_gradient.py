#!/usr/bin/env python
"""Cost of differentiating LULESH (`simulations/lulesh_gradient.py`): ``--cycles`` cycles of the
Sedov problem at ``-s``, forward alone, forward recorded on a tape, and the tape's backward (the
derivative of the final origin energy with respect to the initial one, the time steps of the
unperturbed run held fixed), at each thread count; the tape's memory; the derivative against
central differences; the same bits at every thread count. Minimum over ``--repeats``
interleaved runs, after one run that compiles (or loads) every kernel and adjoint.
"""
from __future__ import annotations

import argparse
import sys
import time

import _common as C

import relsim as rs
from relsim_simulations import lulesh_gradient


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-s", type=int, default=10, help="elements per edge")
    ap.add_argument("--cycles", type=int, default=50)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    args = ap.parse_args(argv)
    rows, grads = [], {}
    for t in args.threads:
        rs.configure(target="cpu", threads=t)
        b = lulesh_gradient.Blast(args.s)
        b.run(b.einit, args.cycles)  # records the time steps; compiles
        tape = rs.Tape()
        b.run(b.einit, args.cycles, tape)
        tape.backward(b.loss)  # compiles the adjoints
        times = {"forward": [], "recorded": [], "backward": []}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            b.run(b.einit, args.cycles)
            t1 = time.perf_counter()
            b.run(b.einit, args.cycles, tape)
            t2 = time.perf_counter()
            tape.backward(b.loss)
            t3 = time.perf_counter()
            for name, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2)):
                times[name].append(dt)
            grads[t] = b.L.elems.e.grad.numpy()[0]
        f, r, bw = (min(times[k]) for k in times)
        rows.append([t, C.ms(f), C.ms(r), C.ms(bw), f"{bw / f:.2f}",
                     f"{tape.held_bytes() / 2 ** 20:.1f}"])
        print(f"  {t} thread(s): forward {C.ms(f)} ms, recorded {C.ms(r)} ms, backward "
              f"{C.ms(bw)} ms, backward / forward {bw / f:.2f}", flush=True)
    check = lulesh_gradient.gradient(args.s, args.cycles)
    same = len({g.tobytes() for g in grads.values()}) == 1
    headers = ["threads", "forward ms", "forward on a tape ms", "backward ms",
               "backward / forward", "tape holds MiB"]
    text = "\n".join([
        f"Command: `python bench/lulesh_gradient.py {' '.join(argv or sys.argv[1:])}`.",
        f"Machine: {C.machine_line()}.",
        f"LULESH s={args.s} ({args.s ** 3:,} elements), {args.cycles} cycles, then the origin "
        f"element's energy; backward gives its derivative with respect to every field at the "
        f"start (the initial origin energy's is checked). Min over {args.repeats} interleaved "
        f"repeats.", "",
        C.table(headers, rows), "",
        f"* d(final origin energy)/d(initial origin energy): tape {check['gradient']:.12e}, "
        f"central differences (Richardson) {check['differences']:.12e}, relative difference "
        f"{check['relative']:.1e}",
        f"* identical bits at {args.threads} threads: {'yes' if same else 'NO'}"])
    print()
    print(text)
    if args.markdown:
        C.update_markdown(args.markdown, "Gradients: LULESH's origin energy", text)
    return 0 if same and check["relative"] <= 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
