#!/usr/bin/env python
"""Start-up time: a small relsim script run cold (nothing cached) and warm (second run).

Each repeat makes fresh cache directories and runs the script in a subprocess three times:
cold: ``RELSIM_CACHE_DIR`` (relsim's generated modules) and ``NUMBA_CACHE_DIR`` (Numba's machine
code, also for relsim's own compiled helpers) both empty; warm: the same directories again;
new script: a fresh ``RELSIM_CACHE_DIR`` with the now-filled ``NUMBA_CACHE_DIR``, i.e. kernels not
compiled yet on an installation whose own helpers (the reduction folds) are cached. Wall time is
measured around the subprocess; the script also reports its own phases (``import relsim``, first
launch of each kernel, the time loop).
For context: ``python -c pass``, ``import numpy``, ``import numba`` and ``import relsim`` alone,
each in a fresh subprocess (the import timed inside it).

Python's own bytecode is not part of "cold": the subprocesses write and read ``.pyc`` files under
a private ``PYTHONPYCACHEPREFIX`` (even where ``PYTHONDONTWRITEBYTECODE`` is set), primed by one
``import relsim`` first, as an installed package would have them.

The default script is the heat example of the design sketch on a 1-D chain (built with the
public API only); ``--script`` runs another one (then only wall times are reported).

``--relsim ARGS`` times a `relsim` command instead (``python -m relsim.cli ARGS``, e.g.
``--relsim "run lulesh -s 30 -i 1 --threads 2"``): per repeat, one cold run on fresh cache
directories, then (once a background compile worker the cold run left, `rs.precompile(...,
background=True)`, has finished: Linux only, else the warm runs may overlap it) ``--warm``
warm runs on the same directories.

``--gallery NAMES`` (comma-separated, or ``all``) times each gallery simulation's ``relsim run``
and LULESH's and miniFE's (the commands of `GALLERY`) once cold and ``--warm`` times warm, to
the end of the first step and to the end, beside the figures from before issue 40's start-up
work.

Usage::

    python bench/startup.py [--repeats 3] [--script PATH] [--markdown docs/benchmarks/history.md]
                            [--chart PATH]
    python bench/startup.py --relsim "run lulesh -s 30 -i 1 --threads 2" [--repeats 2]
                            [--warm 5] [--markdown docs/benchmarks/history.md]
    python bench/startup.py --gallery all [--warm 1] [--markdown docs/benchmarks/history.md]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import _common as C

HEAT = textwrap.dedent('''
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    import relsim as rs
    t_import = time.perf_counter() - t0

    n = 1000
    V, E = rs.Relation("V", n), rs.Relation("E", n - 1)
    E.new_key_field("head", V).load(np.arange(1, n))
    E.new_key_field("tail", V).load(np.arange(0, n - 1))
    V.new_field("T", rs.f64, init=0.0)
    V.new_field("flux", rs.f64, init=0.0)
    E.new_field("k", rs.f64, init=1.0)
    V.T.load(np.where(np.arange(n) % 97 == 0, 1.0, 0.0))
    dt = rs.Global(rs.f64, 0.1)
    heat = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def conduct(e):
        d = e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux -= d

    @rs.kernel
    def update(v):
        v.T += dt * v.flux
        v.flux = 0.0
        heat += v.T

    t1 = time.perf_counter()
    E.foreach(conduct)
    t2 = time.perf_counter()
    V.foreach(update)
    t3 = time.perf_counter()
    for step in range(200):
        heat.value = 0.0
        E.foreach(conduct)
        V.foreach(update)
    t4 = time.perf_counter()
    print(json.dumps({"import relsim": t_import, "first conduct": t2 - t1,
                      "first update": t3 - t2, "200 steps": t4 - t3,
                      "script total": t4 - t0, "heat": heat.value}))
''')

IMPORTS = {
    "python -c pass": "pass",
    "import numpy": "import numpy",
    "import numba": "import numba",
    "import relsim": "import relsim",
}


def run(cmd, env):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
    phases = {}
    for line in p.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            phases = json.loads(line)
            break
    return wall, phases


def import_time(stmt, env):
    """Wall time of a subprocess doing `stmt`, and the time of `stmt` measured inside it."""
    code = (f"import time; t0 = time.perf_counter(); {stmt}; dt = time.perf_counter() - t0; "
            f"import json; print(json.dumps({{'inside': dt}}))")
    wall, phases = run([sys.executable, "-c", code], env)
    return wall, phases["inside"]


def background_workers() -> int:
    """How many background compile workers (`compile_jobs --background`) are running (Linux:
    read from /proc; elsewhere 0)."""
    n = 0
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        n += b"relsim.runtime.host.compile_jobs" in cmd and b"--background" in cmd
    return n


def relsim_command(args, env0, work) -> str:
    """Cold and warm wall times of ``python -m relsim.cli ARGS`` (see the module docstring)."""
    cmd = [sys.executable, "-m", "relsim.cli"] + args.relsim.split()
    cold, warm = [], []
    for r in range(args.repeats):
        d = os.path.join(work, f"cache{r}")
        env = dict(env0, RELSIM_CACHE_DIR=os.path.join(d, "relsim"),
                   NUMBA_CACHE_DIR=os.path.join(d, "numba"))
        cold.append(run(cmd, env)[0])
        while background_workers():  # the cold run's worker compiles on: let it finish
            time.sleep(0.5)
        warm += [run(cmd, env)[0] for _ in range(args.warm)]

    def s(x):
        return f"{x:.2f}"

    rows = [["cold (empty RELSIM_CACHE_DIR and NUMBA_CACHE_DIR)", s(min(cold)),
             s(sorted(cold)[len(cold) // 2]), " ".join(s(x) for x in cold)],
            ["warm (the same directories, every compilation done)", s(min(warm)),
             s(sorted(warm)[len(warm) // 2]), " ".join(s(x) for x in warm)]]
    C.chart(args.chart, f"Start-up of relsim {args.relsim}", ["cold", "warm"],
            {"min s": [min(cold), min(warm)],
             "median s": [sorted(xs)[len(xs) // 2] for xs in (cold, warm)]},
            "subprocess wall time, s")
    return "\n".join([f"Machine: {C.machine_line()}.",
                      f"Command: `relsim {args.relsim}`; {args.repeats} cold run(s), each on "
                      f"fresh cache directories, then {args.warm} warm run(s) on them. Wall "
                      "time of the whole subprocess, seconds.", "",
                      C.table(["run", "min s", "median s", "each"], rows)])


# `relsim run` commands timed by --gallery, and their figures before issue 40's start-up work
# (2026-12-05, this 2-core machine, 2 threads, quiet; wall to the end, s: cold, warm; from the
# issue, but miniFE's cold run, measured at commit 4122c5d: the 47 s was a first run at
# a new size with everything else cached)
GALLERY = {
    "heat": ("run heat", (3.2, 0.8)),
    "tetheat": ("run tetheat", (7.2, 0.9)),
    "fem": ("run fem", (13.4, 1.1)),
    "cloth": ("run cloth", (3.5, 1.2)),
    "sph": ("run sph", (21.7, 16.3)),
    "smoke": ("run smoke", (46.0, 4.1)),
    "md": ("run md", (15.4, 3.2)),
    "lulesh": ("run lulesh -s 30 -i 10", (11.0, None)),
    "minife": ("run minife -nx 80 -ny 80 -nz 80", (236.7, 9.6)),
}

# runs `relsim ARGS`, writing the wall-clock time of the first step's end (the first progress
# update of the run: a time step, a LULESH cycle, a CG iteration) to $RELSIM_BENCH_FIRST_STEP
FIRST_STEP_HOOK = textwrap.dedent('''
    import os, runpy, sys, time
    from relsim_simulations import _progress
    _update = _progress.Progress.update
    def update(self, done, note=""):
        if not os.path.exists(os.environ["RELSIM_BENCH_FIRST_STEP"]):
            with open(os.environ["RELSIM_BENCH_FIRST_STEP"], "w") as f:
                f.write(repr(time.time()))
        return _update(self, done, note)
    _progress.Progress.update = update
    sys.argv = ["relsim"] + sys.argv[1:]
    runpy.run_module("relsim.cli", run_name="__main__")
''')


def timed_command(args, env, work) -> tuple:
    """(wall s to the first step's end, wall s to the end) of `relsim ARGS` in a subprocess."""
    mark = os.path.join(work, "first-step")
    if os.path.exists(mark):
        os.remove(mark)
    t0 = time.time()
    wall, _ = run([sys.executable, "-c", FIRST_STEP_HOOK] + args.split(),
                  dict(env, RELSIM_BENCH_FIRST_STEP=mark))
    first = float(open(mark).read()) - t0 if os.path.exists(mark) else float("nan")
    return first, wall


def gallery(args, env0, work) -> str:
    """Cold and warm times of each `relsim run` of GALLERY (see the module docstring)."""
    names = args.gallery.split(",") if args.gallery != "all" else list(GALLERY)
    rows = []
    for name in names:
        cmd, (before_cold, before_warm) = GALLERY[name]
        d = os.path.join(work, f"gallery-{name}")
        env = dict(env0, RELSIM_CACHE_DIR=os.path.join(d, "relsim"),
                   NUMBA_CACHE_DIR=os.path.join(d, "numba"))
        cold = timed_command(cmd, env, work)
        while background_workers():  # the cold run's worker compiles on: let it finish
            time.sleep(0.5)
        warm = min((timed_command(cmd, env, work) for _ in range(args.warm)),
                   key=lambda fw: fw[1])

        def s(x):
            return "-" if x is None else f"{x:.1f}"

        rows.append([f"`relsim {cmd}`", s(cold[0]), s(cold[1]), s(warm[0]), s(warm[1]),
                     s(cold[1] - warm[1]), s(before_cold), s(before_warm)])
        print(" | ".join(rows[-1]), flush=True)
    return "\n".join([
        f"Machine: {C.machine_line()}.",
        "Each command once cold (empty RELSIM_CACHE_DIR and NUMBA_CACHE_DIR), then, once a "
        f"background compile worker it left has finished, warm (best of {args.warm}). Wall "
        "time of the subprocess, seconds: to the end of the first step (the run's first "
        "progress update: a time step, a LULESH cycle, a CG iteration) and to the end. "
        "`before`: the same measurements before issue 40's start-up work (2026-12-05).", "",
        C.table(["command", "cold: first step", "cold: end", "warm: first step", "warm: end",
                 "cold - warm", "before: cold", "before: warm"], rows)])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3,
                    help="cold/new-script/warm triples (fresh caches each)")
    ap.add_argument("--script", help="run this script instead of the built-in heat example")
    ap.add_argument("--relsim", metavar="ARGS",
                    help="time `relsim ARGS` (e.g. \"run lulesh -s 30 -i 1\") instead")
    ap.add_argument("--gallery", metavar="NAMES",
                    help="time these `relsim run` commands (comma-separated, or all: "
                         f"{', '.join(GALLERY)}) cold and warm, to the first step and the end")
    ap.add_argument("--warm", type=int, default=5,
                    help="warm runs per cold one (--relsim, --gallery)")
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    C.add_chart_argument(ap, "startup")
    args = ap.parse_args(argv)

    work = tempfile.mkdtemp(prefix="relsim-startup-")
    script = args.script
    if script is None:
        script = os.path.join(work, "heat.py")
        with open(script, "w") as f:
            f.write(HEAT)
    env0 = dict(os.environ)
    env0["PYTHONPATH"] = os.pathsep.join([str(C.ROOT)] + ([env0["PYTHONPATH"]]
                                                           if env0.get("PYTHONPATH") else []))
    env0.pop("RELSIM_TARGET", None)
    env0.pop("RELSIM_STARTUP", None)  # (set by `_common` for the benchmarks)
    if C.USER_STARTUP is not None:  # start-up as the user has it
        env0["RELSIM_STARTUP"] = C.USER_STARTUP
    env0.pop("PYTHONDONTWRITEBYTECODE", None)
    env0["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pyc")
    prime = dict(env0, RELSIM_CACHE_DIR=os.path.join(work, "prime", "relsim"),
                 NUMBA_CACHE_DIR=os.path.join(work, "prime", "numba"))
    run([sys.executable, "-c", "import relsim, json, numpy"], prime)  # write the .pyc files
    mode = (gallery, "Start-up: the gallery, LULESH and miniFE") if args.gallery else \
        (relsim_command, f"Start-up: relsim {args.relsim}") if args.relsim else None
    if mode is not None:
        measure, section = mode
        try:
            text = measure(args, env0, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(text)
        if args.markdown:
            C.update_markdown(args.markdown, section, text)
        return

    cold, warm, helpers, imports = [], [], [], {k: [] for k in IMPORTS}
    try:
        for r in range(args.repeats):
            d = os.path.join(work, f"cache{r}")
            env = dict(env0, RELSIM_CACHE_DIR=os.path.join(d, "relsim"),
                       NUMBA_CACHE_DIR=os.path.join(d, "numba"))
            cold.append(run([sys.executable, script], env))
            warm.append(run([sys.executable, script], env))
            # a new script (its kernels uncompiled) once relsim's own helpers are cached
            env2 = dict(env, RELSIM_CACHE_DIR=os.path.join(d, "relsim2"))
            helpers.append(run([sys.executable, script], env2))
            for name, stmt in IMPORTS.items():  # relsim's helpers warm in these caches now
                imports[name].append(import_time(stmt, env))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med(xs):
        return sorted(xs)[len(xs) // 2]

    def s(x):
        return f"{x:.2f}"

    rows = [["cold (empty RELSIM_CACHE_DIR and NUMBA_CACHE_DIR)", s(min(w for w, _ in cold)),
             s(med([w for w, _ in cold]))],
            ["cold kernels, relsim's own helpers cached (fresh RELSIM_CACHE_DIR only)",
             s(min(w for w, _ in helpers)), s(med([w for w, _ in helpers]))],
            ["warm (same cache directories again)", s(min(w for w, _ in warm)),
             s(med([w for w, _ in warm]))]]
    what = args.script or "heat example (1-D chain, 1000 vertices, conduct + update, 200 steps)"
    out = [f"Machine: {C.machine_line()}.",
           f"Script: {what}; "
           f"{args.repeats} repeats of (cold, new script, warm), each with fresh cache "
           "directories. "
           "Wall time of the whole subprocess, seconds.", "",
           C.table(["run", "min s", "median s"], rows)]
    if cold[0][1]:
        keys = [k for k in cold[0][1] if k != "heat"]
        prow = [[k] + [s(min(p[k] for _, p in runs)) for runs in (cold, helpers, warm)]
                for k in keys]
        out += ["", "Phases inside the script (min over repeats, seconds):", "",
                C.table(["phase", "cold", "cold kernels, helpers cached", "warm"], prow)]
    irows = [[name, s(min(w for w, _ in v)), s(min(i for _, i in v))]
             for name, v in imports.items()]
    out += ["", "Imports alone, each in a fresh subprocess (min over repeats, seconds):", "",
            C.table(["command", "subprocess wall", "statement alone"], irows)]
    text = "\n".join(out)
    print(text)
    C.chart(args.chart, "Start-up of a small relsim script",
            ["cold", "cold kernels,\nhelpers cached", "warm"],
            {"min s": [min(w for w, _ in runs) for runs in (cold, helpers, warm)],
             "median s": [med([w for w, _ in runs]) for runs in (cold, helpers, warm)]},
            "subprocess wall time, s")
    if args.markdown:
        C.update_markdown(args.markdown, "Start-up (cold and warm cache)", text)


if __name__ == "__main__":
    main()
