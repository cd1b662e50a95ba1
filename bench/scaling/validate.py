"""The communication part of the scaling model against real runs: `mpiexec -n N` of a small
problem counts, on every rank, the ghost messages and bytes it received in each cycle
(`relsim.runtime.parallel.exchange.TRAFFIC`), and the model (`traffic.exact`) predicts the same
per-rank numbers from the partitions alone.

    python -m bench.scaling.validate lulesh 10 3 OUTDIR     # under mpiexec: one rank
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import simulation

ROOT = Path(__file__).resolve().parents[2]  # the repository: `bench.scaling` imports from there
COUNTERS = ("ghost_messages", "ghost_bytes", "gathers", "gather_bytes")


def size_text(size) -> str:
    return "x".join(map(str, size)) if isinstance(size, tuple) else str(size)


def mpiexec() -> str | None:
    return shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")


def measure(key: str, size, nranks: int, cycles: int = 3, timeout: float = 600) -> list:
    """Per rank (in rank order), per cycle, the TRAFFIC counters received in that cycle."""
    runner = mpiexec()
    if runner is None:
        raise RuntimeError('no mpiexec: pip install "relsim[mpi]"')
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PMI_SIZE", None)
    with tempfile.TemporaryDirectory() as out:
        cmd = [runner, "-n", str(nranks), sys.executable, "-m", "bench.scaling.validate", key,
               size_text(size), str(cycles), out]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=ROOT)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
        runs = [json.loads(f.read_text()) for f in Path(out).glob("rank*.json")]
    return [r["cycles"] for r in sorted(runs, key=lambda r: r["rank"])]


def model(key: str, size, nranks: int):
    """The model's (launches, ranks, QUANTITIES) for one cycle of `size` on `nranks` ranks."""
    from . import model as scaling_model
    from . import traffic
    _, step, start = scaling_model.build(simulation(key), size)
    launches, _, _ = scaling_model.record_cycles(step, 1)
    return traffic.exact(launches, nranks, start)


def compare(key: str, size, ranks=(1, 2, 4, 8), cycles: int = 3) -> list:
    """Rows [N, model bytes, measured bytes, model messages, measured messages, ranks equal]
    (bytes and messages received by all ranks in cycle `cycles`; "ranks equal": whether every
    rank's own model numbers equal its measured ones)."""
    from .traffic import Q
    rows = []
    for n in ranks:
        q = model(key, size, n).sum(axis=0)  # per rank
        got = [per_cycle[-1] for per_cycle in measure(key, size, n, cycles)]
        mb, mm = q[:, Q["recv_bytes"]], q[:, Q["recv_msgs"]]
        gb = [g["ghost_bytes"] for g in got]
        gm = [g["ghost_messages"] for g in got]
        same = list(mb) == gb and list(mm) == gm
        rows.append([n, int(mb.sum()), sum(gb), int(mm.sum()), sum(gm),
                     "yes" if same else "NO"])
    return rows


def _rank_main(key: str, size: str, cycles: int, out: str) -> None:
    """One rank of a measuring run: build, run `cycles` cycles, write what each received."""
    import relsim as rs
    from relsim.runtime.parallel import exchange
    sim = simulation(key)
    _, step = sim.make(sim.parse(size))
    per_cycle = []
    for _ in range(cycles):
        before = exchange.traffic()
        step()
        after = exchange.traffic()
        per_cycle.append({k: after[k] - before[k] for k in COUNTERS})
    r = rs.ranks()
    Path(out, f"rank{r.rank}.json").write_text(json.dumps(
        {"rank": r.rank, "size": r.size, "cycles": per_cycle}))


if __name__ == "__main__":
    _rank_main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
