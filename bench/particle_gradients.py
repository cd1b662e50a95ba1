#!/usr/bin/env python
"""Cost of gradients through cell lists (`rs.Tape`, transposed neighbour loops): the gallery's
Lennard-Jones gas (`simulations/md.py`), forward alone, forward recorded on a tape, and the
tape's backward, at each thread count; the memory the tape holds.

The program: ``--steps`` velocity-Verlet steps (``kick_drift``, ``forces`` over the 27 neighbour
cells, ``kick``), then a loss ``sum w . pos`` (``w`` fixed random weights) over the final
positions. `backward(loss)` gives dloss/dpos and dloss/dvel at the start; the forces kernel's
neighbour loop reads the other atoms' positions, so its reverse is the adjoint kernel plus the
transposed kernel (`relsim/runtime/adjoint/transpose.py`). Timed as the minimum over
``--repeats`` interleaved runs; the gradients are checked equal, bit for bit, across thread
counts, and one entry against a central difference.
"""
from __future__ import annotations

import argparse
import sys
import time

import _common as C
import numpy as np

import relsim as rs
from relsim_simulations import md


def build(m, seed=0):
    pos, vel, box = md.lattice(m, density=0.6)
    g, atoms, setup, step, _energies, kernels = md.build(pos, vel, box)
    A = atoms.rel
    setup()
    start = (A.pos.numpy(copy=True), A.vel.numpy(copy=True), A.f.numpy(copy=True))
    A.new_field("w", rs.vec(3)).load(np.random.default_rng(seed).standard_normal((A.size, 3)))
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def measure(p):
        loss += rs.dot(p.w, p.pos)

    def program(steps):
        for _ in range(steps):
            step()
        loss.value = 0.0
        A.foreach(measure)

    def reset(pos=None):
        A.pos.load(start[0] if pos is None else pos)
        A.vel.load(start[1])
        A.f.load(start[2])

    return A, program, reset, loss


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=10, help="lattice cells a side (4 atoms each)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    args = ap.parse_args(argv)
    A, program, reset, loss = build(args.m)
    rows, grads = [], {}
    for t in args.threads:
        rs.configure(target="cpu", threads=t)
        tape = rs.Tape()

        def forward():
            reset()
            program(args.steps)

        def recorded(tape=tape):
            reset()
            with tape:
                program(args.steps)

        def backward(tape=tape):
            tape.backward(loss)

        recorded()
        backward()  # compile, and make the adjoint fields
        times = {"forward": [], "recorded": [], "backward": []}
        for _ in range(args.repeats):
            for name, fn in (("forward", forward), ("recorded", recorded),
                             ("backward", backward)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        grads[t] = (A.pos.grad.numpy(copy=True), A.vel.grad.numpy(copy=True))
        f, r, b = (min(times[k]) for k in ("forward", "recorded", "backward"))
        rows.append([t, C.ms(f), C.ms(r), C.ms(b), f"{b / f:.2f}", f"{(r + b) / f:.2f}",
                     f"{tape.held_bytes() / 2 ** 20:.1f}"])
        print(f"  {t} thread(s): forward {C.ms(f)} ms, recorded {C.ms(r)} ms, backward "
              f"{C.ms(b)} ms, backward / forward {b / f:.2f}", flush=True)
    first = next(iter(grads.values()))
    same = all(all(np.array_equal(a, b) for a, b in zip(g, first)) for g in grads.values())
    reset()
    x0 = A.pos.numpy(copy=True)
    h, i = 1e-6, (7, 1)

    def loss_at(x):
        reset(x)
        program(args.steps)
        return loss.value

    xp, xm = x0.copy(), x0.copy()
    xp[i] += h
    xm[i] -= h
    fd = (loss_at(xp) - loss_at(xm)) / (2 * h)
    got = first[0][i]
    headers = ["threads", "forward ms", "forward on a tape ms", "backward ms",
               "backward / forward", "(recorded + backward) / forward", "tape holds MiB"]
    text = "\n".join([
        f"Command: `python bench/particle_gradients.py {' '.join(argv or sys.argv[1:])}`.",
        f"Machine: {C.machine_line()}.",
        f"md (Lennard-Jones, cell lists over the 27 neighbour cells) with {A.size:,} atoms; "
        f"{args.steps} velocity-Verlet steps, then loss = sum w . pos (w fixed, random); "
        f"backward gives dloss/dpos and dloss/dvel at the start (the forces' neighbour loop "
        f"reversed by its adjoint and its transposed kernel). Min over {args.repeats} "
        f"interleaved repeats.", "",
        C.table(headers, rows), "",
        f"* gradients identical bit for bit at {args.threads} threads: "
        f"{'yes' if same else 'NO'}",
        f"* dloss/dpos[{i[0]}, {i[1]}] = {got:.12e}, central difference (h = {h:g}) "
        f"{fd:.12e}: relative difference {abs(got - fd) / max(1.0, abs(fd)):.1e}"])
    print()
    print(text)
    if args.markdown:
        C.update_markdown(args.markdown, "Gradients: molecular dynamics (cell lists)", text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
