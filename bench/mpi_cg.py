#!/usr/bin/env python
"""`linalg.cg` on 1, 2 (and 3) MPI ranks: microseconds an iteration, and whether every rank
count gives the one-process iterate.

The system is P1 Poisson on `tetmesh.box(n)` (n=6: 343 rows), Dirichlet sides, assembled with an
element kernel (`tests/linalg/fem.poisson`). Each solve runs a fixed count of iterations
(`rtol=0`): `linalg.cg` records its loop as one captured step at the second solve and replays it
after that (one compiled call; on several ranks its ghost exchanges and the dot products'
merges are MPI calls made from that compiled call). An iteration's time is (t(hi) - t(lo)) /
(hi - lo) for solves of lo and hi iterations, the best of `--repeats` pairs; the digest is of x
after the last solve.

Usage::

    python bench/mpi_cg.py [--n 6] [--ranks 1 2] [--lo 20] [--hi 120] [--repeats 5]
                           [--markdown docs/benchmarks/history.md]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

from _common import ROOT, machine_line, table, update_markdown


def worker(n: int, lo: int, hi: int, repeats: int) -> None:
    import numpy as np

    import relsim as rs
    from relsim import linalg
    sys.path.insert(0, str(ROOT))
    from tests.linalg import fem
    _mesh, K, V, sides = fem.poisson(n, lambda P: np.sin(3.0 * P).sum(axis=1))
    K.dirichlet(sides, b=V.b, values=1.0)

    def solve(iterations: int) -> float:
        V.x.fill(0.0)
        t0 = time.perf_counter()
        info = linalg.cg(K, V.b, V.x, rtol=0.0, maxiter=iterations)
        seconds = time.perf_counter() - t0
        assert info.iterations == iterations, (info.iterations, iterations)
        return seconds

    for _ in range(3):  # (compiled, recorded, replayed)
        solve(lo)
        solve(hi)
    best = min((solve(hi) - solve(lo)) / (hi - lo) for _ in range(repeats))
    digest = hashlib.sha256(V.x.numpy().tobytes()).hexdigest()[:16]  # (collective)
    r = rs.ranks()
    if r.rank == 0:
        print("RESULT " + json.dumps({"seconds": best, "rows": V.size, "digest": digest,
                                      "threads": rs.configure().thread_count()}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--lo", type=int, default=20)
    ap.add_argument("--hi", type=int, default=120)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--markdown", metavar="PATH", default=None)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.n, a.lo, a.hi, a.repeats)
        return 0
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")
    rows, first = [], None
    for n in a.ranks:
        cmd = [sys.executable, __file__, "--worker", "--n", str(a.n), "--lo", str(a.lo),
               "--hi", str(a.hi), "--repeats", str(a.repeats)]
        if n > 1:
            if mpiexec is None:
                print(f"{n} ranks: skipped (no mpiexec: pip install 'relsim[mpi]')")
                continue
            cmd = [mpiexec, "-n", str(n), *cmd]
        p = subprocess.run(cmd, capture_output=True, text=True)
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode or not line:
            print(f"{n} ranks failed:\n{p.stderr[-2000:]}")
            return 1
        r = json.loads(line[0][len("RESULT "):])
        first = first or r
        rows.append([f"{n} x {r['threads']} thread(s)", f"{r['seconds'] * 1e6:.1f}",
                     "yes" if r["digest"] == first["digest"] else "NO"])
    body = (f"linalg.cg, P1 Poisson on tetmesh.box({a.n}) ({first['rows']} rows), iterations "
            f"{a.lo} and {a.hi}, best of {a.repeats}; {machine_line()}\n\n"
            + table(["ranks x threads", "us an iteration", "same x as 1"], rows))
    print(body)
    if a.markdown:
        update_markdown(a.markdown, "MPI ranks: cg", body)
    return 0 if all(r[-1] == "yes" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
