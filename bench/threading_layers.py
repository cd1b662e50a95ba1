#!/usr/bin/env python
"""Numba threading layers and OpenMP wait policies, idle and with the cores busy.

Each configuration (threading layer and environment) runs in its own subprocess, since Numba
reads ``NUMBA_THREADING_LAYER`` and the OpenMP runtime reads ``OMP_WAIT_POLICY`` /
``GOMP_SPINCOUNT`` / ``KMP_BLOCKTIME`` once, when the threading layer first starts. In each, an
edge scatter (the kernel of the design sketch) over a random graph (V = E/4, uniform endpoints)
or a chain::

    d = e.k * (e.head.T - e.tail.T)
    e.tail.flux += d
    e.head.flux -= d

is timed per launch (kernel plus its fold into ``flux``, which is exposed so every launch folds)
on two targets, interleaved within one process:

* ``cpu``: all Numba threads, ``parallel_threshold=1`` so the parallel variant runs at every
  size (at sizes >= the default threshold of 2048 this is plain ``target="cpu"``); the column
  "cpu ran parallel" says whether the launch really ran a parallel variant (a lowering may
  choose a serial scheme whatever the threshold);
* ``cpu-serial``: the serial variant.

The configuration ``serial only`` is a process that never starts a parallel region (no worker
threads exist to spin): what ``RELSIM_TARGET=cpu-serial`` gives a user.

``--load N`` starts N busy-spinning processes (pure Python ``while True: pass``, or NumPy work
with ``--load-kind numpy``) before the measurements and kills them afterwards, to mimic other
users of a shared machine. Compile caches: fresh temporary ``RELSIM_CACHE_DIR`` and
``NUMBA_CACHE_DIR`` shared by the configurations of one run (unless set in the environment).

The ``tbb`` layer needs the ``tbb`` wheel (``pip install tbb``); a pip install puts libtbb.so.12
in ``<prefix>/lib``, which the loader does not search, so this script adds that folder to
``LD_LIBRARY_PATH`` for the tbb configuration only (with it set globally Numba's default layer
would become tbb, which it prefers over omp).

Usage::

    python bench/threading_layers.py [--load 0] [--sizes 3000 30000 300000]
        [--configs default omp-passive ...] [--repeats 30] [--rounds 1] [--graph random]
        [--markdown docs/benchmarks/history.md]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent

# name -> (description, NUMBA_THREADING_LAYER or None, extra environment)
CONFIGS = {
    "default": ("Numba's default layer, no env", None, {}),
    "omp": ("omp", "omp", {}),
    "omp-passive": ("omp, OMP_WAIT_POLICY=PASSIVE", "omp", {"OMP_WAIT_POLICY": "PASSIVE"}),
    "omp-active": ("omp, OMP_WAIT_POLICY=ACTIVE", "omp", {"OMP_WAIT_POLICY": "ACTIVE"}),
    "omp-spin10k": ("omp, GOMP_SPINCOUNT=10000", "omp", {"GOMP_SPINCOUNT": "10000"}),
    "omp-blocktime0": ("omp, KMP_BLOCKTIME=0", "omp", {"KMP_BLOCKTIME": "0"}),
    "tbb": ("tbb", "tbb", {}),
    "workqueue": ("workqueue", "workqueue", {}),
    "serial-only": ("serial only (no parallel region ever)", None, {}),
}
DEFAULT_CONFIGS = ["default", "omp", "omp-passive", "omp-active", "omp-spin10k",
                   "omp-blocktime0", "tbb", "workqueue", "serial-only"]
OMP_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "OMP_NUM_THREADS")


# -- the child: one configuration, all sizes --------------------------------------------------
def omp_runtime() -> str:
    """Which OpenMP runtime this process has loaded (from /proc/self/maps)."""
    try:
        maps = pathlib.Path("/proc/self/maps").read_text()
    except OSError:
        return "unknown"
    for lib, name in (("libiomp5", "Intel (libiomp5)"), ("libgomp", "GNU (libgomp)"),
                      ("libomp.so", "LLVM (libomp)")):
        if lib in maps:
            return name
    return "none loaded"


def graph(kind, ne, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    if kind == "chain":
        nv = ne + 1
        head, tail = np.arange(1, nv, dtype=np.int64), np.arange(0, nv - 1, dtype=np.int64)
    else:
        nv = max(ne // 4, 2)
        head = rng.integers(0, nv, ne, dtype=np.int64)
        tail = rng.integers(0, nv, ne, dtype=np.int64)
    return nv, head, tail, rng.random(nv), 0.5 + rng.random(ne)


def ran_parallel(kernel, relation, cfg):
    """Whether the launch under `cfg` ran a parallel variant: "yes", "no" or "?" (reads
    relsim internals, diagnostic only; a later lowering may decide differently from the
    threshold)."""
    if cfg is None:
        return "-"
    try:
        from relsim.runtime import execute
        b = execute.executable(kernel, relation, cfg).bindings[None]
        return "yes" if b.parallel else "no"
    except Exception:
        return "?"


def child(spec: dict) -> dict:
    sys.path.insert(0, str(HERE))
    import _common as C
    import numba

    import relsim as rs

    out = {"env": {k: os.environ[k] for k in ("NUMBA_THREADING_LAYER",) + OMP_VARS
                   if k in os.environ}}
    targets = {}
    if not spec["serial_only"]:
        targets["cpu"] = rs.Config(target="cpu", parallel_threshold=1)
    targets["cpu-serial"] = rs.Config(target="cpu-serial")

    @rs.kernel
    def conduct(e):
        d = e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux -= d

    res = {}
    for ne in spec["sizes"]:
        nv, head, tail, T, k = graph(spec["graph"], ne, spec["seed"])
        V, E = rs.Relation("V", nv), rs.Relation("E", ne)
        E.new_key_field("head", V).load(head)
        E.new_key_field("tail", V).load(tail)
        V.new_field("T", rs.f64).load(T)
        V.new_field("flux", rs.f64, init=0.0)
        E.new_field("k", rs.f64).load(k)
        V.flux.numpy()  # exposed: every launch folds its slots into flux at once
        variants = {t: (lambda c=c, E=E: E.foreach(conduct, config=c))
                    for t, c in targets.items()}
        fastest = float("inf")
        for fn in variants.values():  # compile (or load), bind, warm up
            try:
                fn()
            except ValueError as exc:  # "No threading layer could be loaded"
                return {**out, "error": str(exc).splitlines()[0]}
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            fastest = min(fastest, min(times))
        number = max(1, min(1000, round(spec["batch_s"] / fastest)))
        samples = C.interleaved(variants, spec["repeats"], number)
        res[ne] = {"number": number, "samples": samples, "parallel": ran_parallel(
            conduct, E, targets.get("cpu"))}
    try:
        out["layer"] = numba.threading_layer()
    except ValueError:
        out["layer"] = "(none started)"
    out["omp_runtime"] = omp_runtime()
    out["num_threads"] = numba.get_num_threads()
    out["relsim"] = str(pathlib.Path(rs.__file__).parent)
    out["results"] = res
    return out


# -- the parent ------------------------------------------------------------------------------
def tbb_lib_dir():
    """The folder holding a pip-installed libtbb.so.12, if any."""
    d = pathlib.Path(sys.prefix) / "lib"
    return str(d) if (d / "libtbb.so.12").exists() else None


def config_env(name, base):
    desc, layer, extra = CONFIGS[name]
    env = {k: v for k, v in base.items()
           if k not in ("NUMBA_THREADING_LAYER",) + OMP_VARS}
    if layer:
        env["NUMBA_THREADING_LAYER"] = layer
    env.update(extra)
    if layer == "tbb" and tbb_lib_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (tbb_lib_dir(), base.get("LD_LIBRARY_PATH")) if p)
    return env


def busy_seconds():
    """CPU seconds all cores have been busy since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def proc_seconds(pids):
    """CPU seconds used so far by these processes (utime + stime)."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def run_child(name, spec, base_env, load_pids=()):
    """Run one configuration; also measures the cores kept busy meanwhile by everything else
    on the machine (other users; not this child, not our own load processes)."""
    env = config_env(name, base_env)
    spec = dict(spec, serial_only=(name == "serial-only"))
    b0, l0, c0 = busy_seconds(), proc_seconds(load_pids), os.times()
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    b1, l1, c1 = busy_seconds(), proc_seconds(load_pids), os.times()
    own = (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system)
    other = None if b0 is None else max(0.0, (b1 - b0) - own - (l1 - l0)) / wall
    for line in p.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            return dict(json.loads(line), other_load=[other])
    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {p.returncode}: {err}"}


def probe(base_env):
    """Numba's default layer and the OpenMP runtime, from one tiny parallel call."""
    code = ("import numba, numpy as np\n"
            "from numba import njit, prange\n"
            "@njit(parallel=True)\n"
            "def f(a):\n"
            "    for i in prange(a.shape[0]):\n"
            "        a[i] += 1.0\n"
            "f(np.zeros(8))\n"
            "import json, sys\n"
            f"sys.path.insert(0, {str(HERE)!r})\n"
            "from threading_layers import omp_runtime\n"
            "print(json.dumps({'layer': numba.threading_layer(), 'omp': omp_runtime(), "
            "'threads': numba.get_num_threads()}))\n")
    env = {k: v for k, v in base_env.items() if k != "NUMBA_THREADING_LAYER"}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


LOADERS = {
    "python": "while True: pass",
    "numpy": ("import numpy as np\na = np.random.rand(512, 512)\n"
              "while True: a = (a @ a) / 512.0"),
}


def start_load(n, kind):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", LOADERS[kind]], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(n)]
    time.sleep(0.5 if n else 0)
    return procs


def stop_load(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--load", type=int, default=0, help="busy background processes")
    ap.add_argument("--load-kind", choices=sorted(LOADERS), default="python")
    ap.add_argument("--sizes", type=int, nargs="+", default=[3000, 30000, 300000],
                    help="edge counts")
    ap.add_argument("--graph", choices=["random", "chain"], default="random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=DEFAULT_CONFIGS)
    ap.add_argument("--repeats", type=int, default=30, help="timed batches per variant")
    ap.add_argument("--batch-ms", type=float, default=5.0,
                    help="about this long per batch (idle speed of the faster variant)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every configuration this often (order reversed every other "
                         "round); samples are pooled")
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    args = ap.parse_args(argv)

    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return

    sys.path.insert(0, str(HERE))
    import _common as C

    base_env = dict(os.environ)
    base_env.setdefault("RELSIM_CACHE_DIR", tempfile.mkdtemp(prefix="relsim-thr-"))
    base_env.setdefault("NUMBA_CACHE_DIR", tempfile.mkdtemp(prefix="numba-thr-"))
    info = probe(base_env)
    configs = list(args.configs)
    notes = [f"Numba's default threading layer here: **{info['layer']}** "
             f"(OpenMP runtime: {info['omp']}), {info['threads']} threads."]
    if info["layer"] == "omp" and "default" in configs and "omp" in configs:
        configs.remove("omp")  # the same thing twice
    if "omp-blocktime0" in configs and "Intel" not in info["omp"] and "LLVM" not in info["omp"]:
        configs.remove("omp-blocktime0")
        notes.append("KMP_BLOCKTIME skipped: the OpenMP runtime is not Intel's or LLVM's.")
    if "omp-spin10k" in configs and "GNU" not in info["omp"]:
        configs.remove("omp-spin10k")
    spec = {"sizes": args.sizes, "graph": args.graph, "seed": args.seed,
            "repeats": args.repeats, "batch_s": args.batch_ms * 1e-3}

    # compile once (fills the shared caches) before any load and timing
    run_child("serial-only", dict(spec, repeats=1), base_env)
    run_child("default", dict(spec, repeats=1), base_env)

    results = {c: None for c in configs}
    load = start_load(args.load, args.load_kind)
    t_start = time.perf_counter()
    try:
        load_avg = []
        for r in range(args.rounds):
            for c in (configs if r % 2 == 0 else configs[::-1]):
                got = run_child(c, spec, base_env, [p.pid for p in load])
                load_avg.append(os.getloadavg()[0])
                prev = results[c]
                if prev is None or "error" in got or "error" in prev:
                    results[c] = got
                    continue
                prev["other_load"] += got["other_load"]
                for ne, v in got["results"].items():
                    for t, s in v["samples"].items():
                        prev["results"][ne]["samples"][t] += s
    finally:
        stop_load(load)
    wall = time.perf_counter() - t_start
    where = sorted({r["relsim"] for r in results.values() if "relsim" in r})

    headers = ["configuration", "layer", "other users' load (cores)", "edges",
               "cpu ran parallel", "cpu min us", "cpu median us",
               "cpu-serial min us", "cpu-serial median us", "cpu / serial (median of pairs)"]
    rows = []
    for c in configs:
        got = results[c]
        desc = CONFIGS[c][0]
        if "error" in got:
            rows.append([desc, "unavailable", "", "", "", "", "", "", "", got["error"][:60]])
            continue
        other = [x for x in got["other_load"] if x is not None]
        other = "/".join(f"{x:.1f}" for x in other) if other else "?"
        for ne in args.sizes:
            r = got["results"][str(ne)]
            s = r["samples"]
            smin, smed = C.summary(s["cpu-serial"])
            if "cpu" in s:
                pmin, pmed = C.summary(s["cpu"])
                ratio = C.paired_ratio(s["cpu"], s["cpu-serial"])
                cells = [C.us(pmin), C.us(pmed)]
                rat = f"{ratio:.2f}"
            else:
                cells, rat = ["-", "-"], "-"
            rows.append([desc, got["layer"] if "cpu" in s else "-", other, f"{ne:,}",
                         r.get("parallel", "?")] + cells +
                        [C.us(smin), C.us(smed), rat])

    # where the parallel variant starts paying off: the smallest size from which on the
    # median cpu time stays below the median serial time (per configuration)
    cross = []
    for c in configs:
        got = results[c]
        if "error" in got or c == "serial-only":
            continue
        wins = [statistics.median(got["results"][str(ne)]["samples"]["cpu"]) <
                statistics.median(got["results"][str(ne)]["samples"]["cpu-serial"])
                for ne in args.sizes]
        first = None
        for i in range(len(wins)):
            if all(wins[i:]):
                first = args.sizes[i]
                break
        cross.append(f"{CONFIGS[c][0]}: "
                     + (f"from {first:,} edges" if first is not None else "never (sizes run)"))

    load_line = (f"{args.load} busy {args.load_kind} process(es) running throughout "
                 f"(load average during the run {min(load_avg):.1f}-{max(load_avg):.1f})"
                 if args.load else "no added load (idle apart from other users: load average "
                 f"{min(load_avg):.1f}-{max(load_avg):.1f})")
    out = [f"Machine: {C.machine_line()}.",
           f"Edge scatter `d = e.k*(e.head.T - e.tail.T); e.tail.flux += d; "
           f"e.head.flux -= d` over a {args.graph} graph"
           + (" (V = E/4, uniform endpoints)" if args.graph == "random" else "")
           + f"; per launch (kernel + fold into the exposed field). {load_line}. "
           f"One subprocess per configuration, {args.rounds} round(s); in each, `cpu` "
           f"(parallel variant forced: parallel_threshold=1) and `cpu-serial` interleaved, "
           f"{args.repeats} batches of ~{args.batch_ms:g} ms each. {wall:.0f} s in all. "
           f"relsim from {', '.join(where)}. \"Other users' load\": cores kept busy by "
           f"processes other than the benchmark and its load, per round (from /proc/stat).",
           "", *notes, "", C.table(headers, rows), "",
           "Parallel variant faster (median) than serial: " + "; ".join(cross) + "."]
    text = "\n".join(out)
    print(text)
    if args.markdown:
        title = f"Threading layers ({'idle' if not args.load else f'load {args.load}'})"
        C.update_markdown(args.markdown, title, text)


if __name__ == "__main__":
    main()
