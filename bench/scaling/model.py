"""The scaling model on paper: predicted time per cycle on P ranks from measured quantities.

* **compute**: each kind of launch (kernel over relation) costs c0 + c1 x rows on one core; c0
  (the fixed cost of a launch) is timed on a tiny problem, c1 (per row) on the full one, both
  on one process with one thread (`calibrate`). A rank runs its executed rows (owned + halo) of
  every launch; the Python between launches (`host`) runs on every rank;
* **ghost exchanges** (`traffic.exact`): per rank and launch, alpha per message plus
  bytes / beta, the larger of what it sends and receives (full duplex, no overlap with compute:
  the runtime receives before it launches);
* **Global merges**: one allgather per reduced Global, recursive doubling (MPICH's choice for
  short messages): ceil(log2 P) x alpha + (P - 1) x payload / beta;
* a launch ends when its slowest rank ends (bulk synchronous: the merges are global barriers,
  exchanges couple neighbours), so the cycle is host + sum over launches of the max over ranks;
* beyond the exact partitions, the slowest rank of each launch at the largest exact P is
  extrapolated with the surface-to-volume law of a d-dimensional mesh: owned rows as n (rows
  per rank), halo rows and ghost bytes as n^((d-1)/d), messages constant (neighbours saturate).

Not modelled: the distributed layer's own per-launch cost (plan lookups, packing rows), memory
and cache effects of smaller ranks (c1 is taken at the full problem's size), network contention
and topology, noise, plan construction (once per run), and host reads inside a cycle (none in
LULESH's and Airfoil's loops)."""
from __future__ import annotations

import math
import statistics
import time

import numpy as np

import relsim as rs

from . import traffic
from .traffic import Q

# InfiniBand HDR (200 Gb/s, NVIDIA ConnectX-6): the link carries 25 GB/s; MPI ping-pong latency
# on HDR is about 1 us (NVIDIA quotes under 0.6 us adapter latency; MPI adds the rest)
ALPHA = 1.0e-6
BETA = 25.0e9
NETWORK = "InfiniBand HDR (ConnectX-6, 200 Gb/s link = 25 GB/s; ~1 us MPI latency)"


class Timing:
    """Per kind of launch: (c0 seconds per launch, c1 seconds per row); `host` per cycle."""

    def __init__(self, per_kind: dict, host: float):
        self.per_kind, self.host = per_kind, host
        self.default_c0 = statistics.median(c0 for c0, _ in per_kind.values())

    def launch(self, ln, rows):
        c0, c1 = self.per_kind.get(ln.kind, (self.default_c0, 0.0))
        return c0 + c1 * rows


def build(sim, size):
    """(rows, step, start): the problem, its first cycle run (compilation or cache load), and the
    coordinates its relations were partitioned by (`traffic.first_coordinates`)."""
    with traffic.first_coordinates() as start:
        n, step = sim.make(size)
        step()
    return n, step, start


def record_cycles(step, cycles: int):
    """Launches of one cycle, and per launch and cycle its seconds; per cycle the rest
    (Python between launches)."""
    times, host, launches, seen = [], [], None, {}
    for _ in range(cycles):
        with traffic.record(seen) as rec:
            t0 = time.perf_counter()
            step()
            wall = time.perf_counter() - t0
        launches = [ln for ln, _ in rec] if launches is None else launches
        if len(rec) != len(launches):
            raise RuntimeError("the cycle's launches changed from one cycle to the next")
        times.append([t for _, t in rec])
        host.append(wall - rec.analysing - sum(t for _, t in rec))
    return launches, np.array(times), statistics.median(host)


def calibrate(sim, size, tiny, cycles: int = 5) -> tuple:
    """(Timing, launches of the full problem, its `start`): one thread, one process."""
    rs.configure(threads=1)
    _, tiny_step, _ = build(sim, tiny)
    small, small_t, _ = record_cycles(tiny_step, cycles)
    _, step, start = build(sim, size)
    launches, t, host = record_cycles(step, cycles)
    c0: dict = {}
    for ln, col in zip(small, np.median(small_t, axis=0)):
        c0.setdefault(ln.kind, []).append(col)
    c0 = {k: statistics.median(v) for k, v in c0.items()}
    fallback = statistics.median(c0.values())
    sums: dict = {}
    for ln, sec in zip(launches, np.median(t, axis=0)):
        s = sums.setdefault(ln.kind, [0.0, 0, 0])
        s[0] += sec
        s[1] += ln.rows
        s[2] += 1
    per_kind = {}
    for kind, (sec, rows, count) in sums.items():
        k0 = c0.get(kind, fallback)
        per_kind[kind] = (k0, max(sec - count * k0, 0.0) / max(rows, 1))
    return Timing(per_kind, host), launches, start


class Network:
    def __init__(self, alpha=ALPHA, beta=BETA):
        self.alpha, self.beta = alpha, beta

    def ghosts(self, q):
        """Seconds of the exchanges of one launch on each rank (q: [..., QUANTITIES])."""
        msgs = np.maximum(q[..., Q["recv_msgs"]], q[..., Q["send_msgs"]])
        nbytes = np.maximum(q[..., Q["recv_bytes"]], q[..., Q["send_bytes"]])
        return msgs * self.alpha + nbytes / self.beta

    def collective(self, nranks, payload) -> float:
        """An allgather of `payload` bytes per rank (recursive doubling)."""
        if nranks <= 1:
            return 0.0
        return math.ceil(math.log2(nranks)) * self.alpha + (nranks - 1) * payload / self.beta

    def gathers(self, nranks, q):
        g = q[..., Q["gather_bytes"]]
        steps = math.ceil(math.log2(nranks)) if nranks > 1 else 0
        return np.where(g > 0, steps * self.alpha + g / self.beta, 0.0)


class Prediction:
    """One predicted point: P, rows per rank, seconds per cycle (compute incl. host, ghost
    exchanges, merges), the slowest ranks' bytes and messages received, exact or not."""

    def __init__(self, nranks, per_rank, compute, ghost, merge, nbytes, msgs, exact):
        self.nranks, self.per_rank = nranks, per_rank
        self.compute, self.ghost, self.merge = compute, ghost, merge
        self.nbytes, self.msgs, self.exact = nbytes, msgs, exact

    @property
    def total(self) -> float:
        return self.compute + self.ghost + self.merge


def predict(launches, q, nranks, per_rank, timing, net, exact=True) -> Prediction:
    """q: (launches, ranks, QUANTITIES) of one cycle (exact, or one extrapolated rank)."""
    comp = np.array([[timing.launch(ln, r) for r in q[i, :, Q["rows"]]]
                     for i, ln in enumerate(launches)])
    comm = net.ghosts(q) + net.gathers(nranks, q)
    crit = np.argmax(comp + comm, axis=1)  # the slowest rank of each launch
    idx = np.arange(len(launches))
    merge = sum(net.collective(nranks, pay) for ln in launches for _, pay in ln.merges)
    worst = q.sum(axis=0)  # per rank, the cycle's traffic
    return Prediction(nranks, per_rank, timing.host + comp[idx, crit].sum(),
                      comm[idx, crit].sum(), merge, int(worst[:, Q["recv_bytes"]].max()),
                      int(worst[:, Q["recv_msgs"]].max()), exact)


def slowest(launches, q, nranks, timing, net) -> np.ndarray:
    """(launches, QUANTITIES): each launch's slowest rank at an exact P (what is
    extrapolated)."""
    comp = np.array([[timing.launch(ln, r) for r in q[i, :, Q["rows"]]]
                     for i, ln in enumerate(launches)])
    crit = np.argmax(comp + net.ghosts(q) + net.gathers(nranks, q), axis=1)
    return q[np.arange(len(launches)), crit].astype(np.float64)


def extrapolate(base, n0, n, dim, nranks0, nranks) -> np.ndarray:
    """`base` (launches, QUANTITIES), measured at n0 rows per rank on nranks0 ranks, at n rows
    per rank on nranks ranks: owned rows as n, halo rows and ghost bytes as n^((d-1)/d),
    messages kept; gathered bytes as the global size times (1 - 1/P)."""
    vol = n / n0
    surf = vol ** ((dim - 1) / dim)
    out = base.copy()
    halo = base[:, Q["rows"]] - base[:, Q["owned"]]
    out[:, Q["owned"]] = base[:, Q["owned"]] * vol
    out[:, Q["rows"]] = out[:, Q["owned"]] + halo * surf
    for name in ("recv_bytes", "send_bytes"):
        out[:, Q[name]] = base[:, Q[name]] * surf
    if nranks0 > 1:
        out[:, Q["gather_bytes"]] *= (n * nranks * (1 - 1 / nranks)) / \
            (n0 * nranks0 * (1 - 1 / nranks0))
    return out[:, None, :]
