#!/usr/bin/env python
"""Cost of gradients (`rs.Tape`): tetheat's heat steps on a tet box, forward alone, forward
recorded on a tape, and the tape's backward, at each thread count; the memory the tape holds.

The program: ``--steps`` steps of `simulations/tetheat.py`'s ``conduct`` (over edges) and
``update`` (over vertices, with the heat summed into a Global), then a loss ``sum T^2`` over the
vertices. `backward(loss)` gives dloss/dT and dloss/dQ at the start, dloss/dk per edge, dloss/dc
per vertex and dloss/ddt. Timed as the minimum over ``--repeats`` runs (interleaved: forward,
recorded forward, backward); the gradients are checked equal, bit for bit, across thread counts.
"""
from __future__ import annotations

import argparse
import sys
import time

import _common as C

import relsim as rs
from relsim.domains import tetmesh
from relsim_simulations import tetheat


def build(n):
    mesh = tetmesh.box(n)
    setup, conduct, update, dt, heat = tetheat.build(mesh)
    V, E = mesh.vertices, mesh.edges
    V.T.load(tetheat.initial_temperature(mesh))
    setup()
    start = (V.T.numpy(copy=True), V.Q.numpy(copy=True))
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def energy(v):
        loss += v.T * v.T

    def program(steps):
        for _ in range(steps):
            heat.value = 0.0
            E.foreach(conduct)
            V.foreach(update)
        loss.value = 0.0
        V.foreach(energy)

    def reset():
        V.T.load(start[0])
        V.Q.load(start[1])
        V.flux.load(0.0)

    return mesh, program, reset, loss


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="box cells a side (6 tets each)")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    ap.add_argument("--checkpoint", type=int, default=20,
                    help="also with rs.Tape(checkpoint_every=K) (launches per segment)")
    args = ap.parse_args(argv)
    mesh, program, reset, loss = build(args.n)
    V, E = mesh.vertices, mesh.edges
    rows, grads = [], {}
    for t in args.threads:
        rs.configure(target="cpu", threads=t)
        tapes = {"every launch": rs.Tape(),
                 f"checkpoint_every={args.checkpoint}": rs.Tape(args.checkpoint)}

        def forward():
            reset()
            program(args.steps)

        variants = {"forward": forward}
        for mode, tape in tapes.items():
            def recorded(tape=tape):
                reset()
                with tape:
                    program(args.steps)

            def backward(tape=tape):
                tape.backward(loss)

            recorded()
            backward()  # compile, and make the adjoint fields
            variants[("recorded", mode)] = recorded
            variants[("backward", mode)] = backward
        times = {name: [] for name in variants}
        for _ in range(args.repeats):
            for name, fn in variants.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
                if name[0] == "backward":
                    grads[(t, name[1])] = (V.T.grad.numpy().tobytes(),
                                           E.k.grad.numpy().tobytes(),
                                           V.c.grad.numpy().tobytes())
        f = min(times["forward"])
        for mode, tape in tapes.items():
            r, b = min(times[("recorded", mode)]), min(times[("backward", mode)])
            rows.append([t, mode, C.ms(f), C.ms(r), C.ms(b), f"{b / f:.2f}",
                         f"{(r + b) / f:.2f}", f"{tape.held_bytes() / 2 ** 20:.1f}"])
            print(f"  {t} thread(s), {mode}: forward {C.ms(f)} ms, recorded {C.ms(r)} ms, "
                  f"backward {C.ms(b)} ms, backward / forward {b / f:.2f}", flush=True)
    first = next(iter(grads.values()))
    same = all(g == first for g in grads.values())
    headers = ["threads", "tape keeps", "forward ms", "forward on a tape ms", "backward ms",
               "backward / forward", "(recorded + backward) / forward", "tape holds MiB"]
    text = "\n".join([
        f"Command: `python bench/gradients.py {' '.join(argv or sys.argv[1:])}`.",
        f"Machine: {C.machine_line()}.",
        f"tetheat on a {args.n}^3 box: {mesh.tets.size:,} tets, {E.size:,} edges, {V.size:,} "
        f"vertices; {args.steps} steps (conduct over edges, update over vertices with a Global "
        f"sum), then loss = sum T^2. Min over {args.repeats} interleaved repeats. The tape "
        f"keeps what every launch overwrites, or (checkpoint_every=K) what segments of K "
        f"launches overwrite, as at their start: backward recomputes each segment first.", "",
        C.table(headers, rows), "",
        f"* gradients (dT, dk, dc) identical bit for bit at {args.threads} threads, with and "
        f"without checkpoints: {'yes' if same else 'NO'}"])
    print()
    print(text)
    if args.markdown:
        C.update_markdown(args.markdown, "Gradients: backward against forward", text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
