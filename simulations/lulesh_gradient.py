"""LULESH's final origin energy: its derivative with respect to the initial blast energy.

`relsim run lulesh_gradient -s N -i K` runs K cycles of the Sedov problem (`lulesh`) on a tape,
differentiates the origin element's energy at the end with respect to the energy put there at
the start (`rs.Tape`: every kernel of a cycle gets its adjoint), and checks the derivative
against central differences (Richardson-extrapolated) of the same program. The time steps are
those of the unperturbed run, held fixed: the host computes each cycle's dt from Globals it reads
(`TimeIncrement`), and values the host computes and assigns are constants to a tape (see the
docs/guide/gradients.md), so the differences rerun the same dt sequence. Exit status 1 when
they disagree beyond 1e-6 relative.
"""
from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np

import relsim as rs

from .lulesh.problem import Lulesh

TOLERANCE = 1e-6


class Blast:
    """One LULESH domain whose initial origin energy is `einit`, advanced through a fixed
    sequence of time steps (`dts`; None: the problem's own, recorded in `dts` after a run)."""

    def __init__(self, s: int, num_reg: int = 1):
        self.L = Lulesh(s, num_reg=num_reg)
        self.start = {f: f.numpy(copy=True) for rel in (self.L.nodes, self.L.elems)
                      for f in rel.fields.values() if not f.is_key}
        self.einit = self.L.einit
        self.loss = rs.Global(rs.f64, 0.0)
        self.origin = self.L.elems.subset("origin", [0])
        loss = self.loss

        @rs.kernel
        def origin_energy(e):
            loss += e.e

        self.measure = origin_energy
        self.dts = None

    def run(self, einit: float, cycles: int, tape=None) -> float:
        L = self.L
        for f, values in self.start.items():
            f.load(values)
        e = self.start[L.elems.e].copy()
        e[0] = einit
        L.elems.e.load(e)
        L.time, L.cycle, L.dtcourant, L.dthydro = 0.0, 0, 1.0e20, 1.0e20
        L.deltatime = self.start_dt
        record = self.dts is None
        if record:
            self.dts = []
        with tape if tape is not None else contextlib.nullcontext():
            for c in range(cycles):
                if record:
                    L.time_increment()
                    self.dts.append(L.deltatime)
                else:
                    L.deltatime = self.dts[c]
                    L.time += L.deltatime
                    L.cycle += 1
                L.lagrange_leapfrog()
            self.loss.value = 0.0
            self.origin.foreach(self.measure)
        return self.loss.value

    @property
    def start_dt(self) -> float:
        L = self.L
        volo0 = float(self.start[L.elems.volo][0])
        return (0.5 * float(np.cbrt(volo0))) / float(np.sqrt(2.0 * self.L.einit))


def gradient(s: int, cycles: int, checkpoint_every: int | None = None) -> dict:
    """The tape's derivative and the central differences' (Richardson: steps h and h/2)."""
    b = Blast(s)
    t0 = time.perf_counter()
    final = b.run(b.einit, cycles)  # records the time steps
    t1 = time.perf_counter()
    tape = rs.Tape() if checkpoint_every is None else rs.Tape(checkpoint_every=checkpoint_every)
    again = b.run(b.einit, cycles, tape)
    t2 = time.perf_counter()
    tape.backward(b.loss)
    t3 = time.perf_counter()
    got = float(b.L.elems.e.grad.numpy(copy=True)[0])

    def central(h):
        return (b.run(b.einit + h, cycles) - b.run(b.einit - h, cycles)) / (2.0 * h)

    h = 1e-4 * b.einit
    fd = (4.0 * central(h / 2.0) - central(h)) / 3.0
    return dict(final=final, same=again == final, gradient=got, differences=fd,
                relative=abs(got - fd) / max(abs(fd), 1e-300), einit=b.einit,
                forward_s=t1 - t0, recorded_s=t2 - t1, backward_s=t3 - t2,
                held_mib=tape.held_bytes() / 2**20, dts=len(b.dts))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run lulesh_gradient",
                                description=__doc__.splitlines()[0])
    p.add_argument("-s", type=int, default=3, help="elements per edge (default 3)")
    p.add_argument("-i", type=int, default=5, help="cycles (default 5)")
    p.add_argument("--checkpoint-every", type=int, default=None)
    p.add_argument("--target", default=None)
    a = p.parse_args(argv)
    if a.target:
        rs.configure(target=a.target)
    r = gradient(a.s, a.i, a.checkpoint_every)
    print(f"LULESH s={a.s}, {a.i} cycles: origin energy {r['final']:.10e} from an initial "
          f"{r['einit']:.6e}")
    print(f"d(final origin energy)/d(initial origin energy): tape {r['gradient']:.12e}, "
          f"central differences {r['differences']:.12e} (relative difference "
          f"{r['relative']:.2e})")
    print(f"forward {r['forward_s']:.2f} s, recorded {r['recorded_s']:.2f} s, backward "
          f"{r['backward_s']:.2f} s (first runs include compiling); tape holds "
          f"{r['held_mib']:.2f} MiB")
    ok = r["same"] and r["relative"] <= TOLERANCE
    print("OK: the tape's derivative agrees with central differences" if ok else
          "FAILED: " + ("the recorded run differs from the first" if not r["same"] else
                        f"relative difference {r['relative']:.2e} > {TOLERANCE:g}"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
