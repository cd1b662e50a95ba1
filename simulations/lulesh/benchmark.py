"""`relsim bench lulesh`: relsim's port against a LULESH 2.0 reference binary, interleaved.

    relsim bench lulesh --reference /path/to/lulesh2.0 [-s 30] [--threads 1,2] [--repeat 3]
                        [--markdown docs/benchmarks/history.md] [--plot lulesh.png]

Each repeat runs, for each thread count, the port (`relsim run lulesh -s S --threads T` in a
fresh process, `--json` for the answers in full precision) and then the reference
(`OMP_NUM_THREADS=T lulesh2.0 -s S`), both with default options (11 regions, EOS cost 1), and
keeps the best FOM of each (FOM = s^3 cycles / (1000 elapsed), the time loop only). Both answers
are checked: iteration counts and printed e(0) equal, each other's and the published values;
relsim's e(0), time, dt and checksums bit for bit against the reference's serial values where
known (s = 5, 10, 20, 30, 45), and identical on every thread count. Without --reference only
relsim is measured and verified. Also reported: the cold start (empty kernel cache) and the warm
start (cached) of the port, and its lines of code next to the reference's.

    relsim bench lulesh --ranks 1,8 [--reference-mpi /path/to/mpi/lulesh2.0] [-s 20]
                        [--reference /path/to/lulesh2.0] [--repeat 2] [--markdown PATH]

With --ranks (or --reference-mpi) the same global problem of size S runs on each rank count N
instead: the port as `mpiexec -n N relsim run lulesh -s S` (one thread per rank, the first of
--threads), the reference's MPI build (`-DUSE_MPI=1`) as `mpiexec -n N lulesh2.0 -s S/cbrt(N)`
(its -s is per rank and it needs a cube number of ranks). Both FOMs are global zones * cycles /
(1000 * the slowest rank's elapsed time), as the reference prints it (checked against its
printed elapsed time). Checked: relsim's end state (iterations, time, dt, e(0), symmetry
figures, checksums) bit-identical on every N and, where known, the reference's serial values;
the reference MPI runs' iterations and printed e(0) against the serial reference (--reference,
run once, else the published values), with any difference reported; in full precision when the
binary's report also has a line `e0 <e(0) as %.17e>` (a print-only build: one printf after the FOM
line of VerifyAndWriteFinalOutput), against the serial reference's own such line or its known
serial value. Rank counts above the
cores available are marked oversubscribed. mpiexec is the one next to the Python interpreter,
else the one on PATH; without one the comparison is skipped with a message.
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize

from relsim.report import machine_line, table, update_markdown

HERE = pathlib.Path(__file__).resolve().parent
SECTION = "LULESH 2.0 (Sedov, s={s})"
RANKS_SECTION = "LULESH 2.0 on MPI ranks (Sedov, s={s})"

# published (cycles, printed e(0)) of the reference, LULESH 2.0 paper / reference runs
SPEC = {1: (1, "4.333329e+02"), 2: (5, "2.746125e+03"), 3: (23, "4.001338e+03"),
        5: (72, "7.853665e+03"), 10: (231, "2.720531e+04"), 30: (932, "2.025075e+05"),
        45: (1477, "4.234875e+05"), 50: (1662, "5.124778e+05"), 70: (2402, "9.417145e+05"),
        90: (3145, "1.482403e+06")}
# the reference's serial (1-thread) end state, %.17e: e(0), time, dt, checksums (s = 10, 30: the
# reference description; s = 5, 20, 45: a print-only instrumented build of the reference)
SERIAL = {
    5: {"e0": 7.85366510214584468e+03, "time": 1.00000000000000002e-02,
        "dt": 1.19333789843823271e-04,
        "sums": {"e": 2.90383634164630748e+04, "p": 2.28962075780293853e+04,
                 "q": 1.66420533063096518e+04, "v": 1.25130994864841583e+02,
                 "ss": 1.14272026955682713e+03, "x+y+z": 3.84623526927565479e+02,
                 "xd+yd+zd": 3.02505965051544081e+03}},
    10: {"e0": 2.72053116847034689e+04, "time": 1.00000000000000002e-02,
         "dt": 3.74456628753107312e-05,
         "sums": {"e": 2.41746210522627283e+05, "p": 1.99835529710225819e+05,
                  "q": 7.19789109109516576e+04, "v": 1.00007327285680879e+03,
                  "ss": 9.39528236629980347e+03, "x+y+z": 2.37081943684690032e+03,
                  "xd+yd+zd": 1.80193487927359529e+04}},
    20: {"e0": 9.66885598157783534e+04, "time": 1.00000000000000002e-02,
         "dt": 2.46865415093680540e-05,
         "sums": {"e": 1.93071440003941045e+06, "p": 1.67681896489686170e+06,
                  "q": 3.02280878502624342e+05, "v": 8.00000000023252414e+03,
                  "ss": 7.22848603800917917e+04, "x+y+z": 1.64142908068260840e+04,
                  "xd+yd+zd": 1.16866733460705727e+05}},
    30: {"e0": 2.02507478507199383e+05, "time": 1.00000000000000002e-02,
         "dt": 1.34466478459872169e-05,
         "sums": {"e": 6.46286984918591008e+06, "p": 5.76028581373953354e+06,
                  "q": 6.94968778793708654e+05, "v": 2.70000000000002437e+04,
                  "ss": 2.38363389068770222e+05, "x+y+z": 5.26759698799868493e+04,
                  "xd+yd+zd": 3.64297902836048917e+05}},
    45: {"e0": 4.23487511340056430e+05, "time": 1.00000000000000002e-02,
         "dt": 1.29678660833569548e-05,
         "sums": {"e": 2.15749945688235052e+07, "p": 1.95662198408969343e+07,
                  "q": 1.58782647688152408e+06, "v": 9.11250000000030705e+04,
                  "ss": 7.88468912640264141e+05, "x+y+z": 1.71800677117900166e+05,
                  "xd+yd+zd": 1.16152306990031549e+06}},
}


def _env(threads: int, cache: str | None = None) -> dict:
    env = dict(os.environ)
    root = str(HERE.parents[1])  # the repository: the checkout's relsim and simulations
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env["NUMBA_NUM_THREADS"] = str(max(threads, int(env.get("NUMBA_NUM_THREADS", "0") or 0)))
    env["OMP_NUM_THREADS"] = str(threads)
    if cache is not None:
        env["RELSIM_CACHE_DIR"] = cache
    return env


def run_relsim(s: int, threads: int, target: str, extra=(), cache=None, launcher=()) -> dict:
    """One `relsim run lulesh` in a fresh process (or `launcher`, e.g. `mpiexec -n N`, starting
    it): its JSON end state plus the process wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "end.json")
        cmd = [*launcher, sys.executable, "-m", "relsim.cli", "run", "lulesh", "-s", str(s), "-q",
               "--target", target, "--threads", str(threads), "--json", out, *extra]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=_env(threads, cache), capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"relsim run lulesh failed ({proc.returncode}):\n{proc.stdout}"
                             f"{proc.stderr}")
        with open(out) as fh:
            state = json.load(fh)
    state["wall_s"] = wall
    return state


def run_reference(binary: str, s: int, threads: int, launcher=()) -> dict:
    """One run of a reference binary (started by `launcher`, e.g. `mpiexec -n N`, for its MPI
    build): the figures of its report."""
    proc = subprocess.run([*launcher, binary, "-s", str(s)], env=_env(threads),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{binary} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    text = proc.stdout

    def grab(label, conv=float):
        m = re.search(rf"{re.escape(label)}\s*=\s*(\S+)", text)
        if not m:
            raise SystemExit(f"{binary}: no '{label}' in its output:\n{text}")
        return conv(m.group(1))
    overall = re.search(r"\(\s*(\S+) overall\)", text)  # the elapsed time in 8 digits
    full = re.search(r"^e0\s+(\S+)\s*$", text, re.M)  # a print-only build's e(0) as %.17e
    return {"iterations": grab("Iteration count", int), "e0_printed": grab("Final Origin Energy",
                                                                            str),
            "size": grab("Problem size", int), "tasks": grab("MPI tasks", int),
            "elapsed_s": float(overall.group(1)) if overall else grab("Elapsed time"),
            "fom": grab("FOM"), "e0_full": float(full.group(1)) if full else None,
            "openmp": re.search(r"^Num threads:", text, re.M) is not None,  # printed if _OPENMP
            "grind": grab("Grind time (us/z/c)"),
            "symmetry": [grab("MaxAbsDiff"), grab("TotalAbsDiff"), grab("MaxRelDiff")]}


# -- lines of code -----------------------------------------------------------------------------

def python_loc(path) -> int:
    """Lines holding code: no blank lines, comments or docstrings."""
    src = pathlib.Path(path).read_text()
    skip = set()
    for node in ast.walk(ast.parse(src)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip.update(range(body[0].lineno, body[0].end_lineno + 1))
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
            code.update(range(tok.start[0], tok.end[0] + 1))
    return len(code - skip)


def c_loc(path) -> int:
    """Lines holding code in C/C++: no blank lines or comments."""
    src = pathlib.Path(path).read_text(errors="replace")
    src = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), src, flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    return sum(1 for line in src.splitlines() if line.strip())


def lines_of_code(reference_src) -> list:
    port = {p.name: python_loc(p) for p in sorted(HERE.glob("*.py"))}
    kernels = sum(port[n] for n in ("constants.py", "geometry.py", "nodal.py", "elements.py"))
    sim = sum(v for n, v in port.items() if n not in ("benchmark.py", "command.py", "__init__.py"))
    rows = [("relsim kernels (constants, geometry, nodal, elements)", kernels),
            ("relsim simulation (+ regions, problem: setup and time loop)", sim),
            ("relsim with its command line (+ command.py, __init__.py)",
             sim + port["command.py"] + port["__init__.py"])]
    if reference_src and (pathlib.Path(reference_src) / "lulesh.cc").exists():
        d = pathlib.Path(reference_src)
        ref = {n: c_loc(d / n) for n in ("lulesh.cc", "lulesh.h", "lulesh-init.cc",
                                           "lulesh-util.cc") if (d / n).exists()}
        rows += [("reference lulesh.cc (the timed physics)", ref.get("lulesh.cc", 0)),
                 ("reference lulesh.cc + lulesh.h + lulesh-init.cc (simulation)",
                  sum(ref.get(n, 0) for n in ("lulesh.cc", "lulesh.h", "lulesh-init.cc"))),
                 ("reference with its command line (+ lulesh-util.cc; no MPI/viz files)",
                  sum(ref.values()))]
    return rows


# -- report ------------------------------------------------------------------------------------

def draw_png(path, s, threads, best_relsim, best_ref) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no PNG drawn (pip install matplotlib for one)"
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = range(len(threads))
    ax.bar([x - 0.2 for x in xs], [best_relsim[t] for t in threads], 0.4, label="relsim")
    if best_ref:
        ax.bar([x + 0.2 for x in xs], [best_ref[t] for t in threads], 0.4,
               label="reference (g++ -O3 -fopenmp)")
    ax.set_xticks(list(xs), [f"{t} thread{'s' if t > 1 else ''}" for t in threads])
    ax.set_ylabel("FOM (1000 zone-cycles/s), best of repeats")
    ax.set_title(f"LULESH 2.0, s={s}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return f"wrote {path}"


# -- the benchmark -----------------------------------------------------------------------------

def verify(s, runs, refs) -> list:
    """Problems found in the answers (empty: all checks passed)."""
    bad = []
    spec = SPEC.get(s)
    first = runs[0]
    for r in runs:
        if (r["iterations"], r["e0"], r["dt"], r["sums"]) != \
                (first["iterations"], first["e0"], first["dt"], first["sums"]):
            bad.append(f"relsim differs between runs ({r['threads']} threads): e0 {r['e0']!r} "
                       f"vs {first['e0']!r}")
        if max(r["symmetry"].values()) >= 1e-8:
            bad.append(f"relsim symmetry figures {r['symmetry']} not < 1e-8")
    if spec and (first["iterations"], f"{first['e0']:e}") != spec:
        bad.append(f"relsim: {first['iterations']} cycles, e(0) {first['e0']:e}; the "
                   f"reference's published values are {spec}")
    want = SERIAL.get(s)
    if want:
        for key in ("e0", "time", "dt", "sums"):
            if key in want and first[key] != want[key]:
                bad.append(f"relsim {key} {first[key]!r} is not the reference's serial "
                           f"{want[key]!r} bit for bit")
    for r in refs:
        if (r["iterations"], r["e0_printed"]) != (first["iterations"], f"{first['e0']:e}"):
            bad.append(f"reference ({r['threads']} threads): {r['iterations']} cycles, e(0) "
                       f"{r['e0_printed']}; relsim: {first['iterations']}, {first['e0']:e}")
        if max(r["symmetry"]) >= 1e-8:
            bad.append(f"reference symmetry figures {r['symmetry']} not < 1e-8")
    return bad


# -- on MPI ranks ------------------------------------------------------------------------------

def find_mpiexec() -> str | None:
    """The mpiexec next to the running Python (a virtual environment's, from MPICH's wheel),
    else the one on PATH, else None."""
    return shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")


def parse_ranks(text: str) -> list:
    """`--ranks 1,8`: positive rank counts, in order, without repeats (ValueError otherwise)."""
    try:
        ranks = [int(r) for r in text.split(",") if r.strip()]
    except ValueError:
        raise ValueError(f"--ranks takes comma-separated integers, got {text!r}") from None
    if not ranks or min(ranks) < 1 or len(set(ranks)) != len(ranks):
        raise ValueError(f"--ranks takes distinct positive integers, got {text!r}")
    return ranks


def reference_size(s: int, ranks: int) -> int:
    """The reference MPI build's -s for the global size `s` on `ranks` ranks: it lays the ranks
    out as a k x k x k cube of domains of (-s)^3 elements each, so -s = s / k with k = cbrt(ranks).
    ValueError when `ranks` is not a cube or `s` is not a multiple of k."""
    k = round(ranks ** (1.0 / 3.0))
    if k ** 3 != ranks:
        raise ValueError(f"the reference's MPI build needs a cube number of ranks (1, 8, 27, "
                         f"64, ...), not {ranks}")
    if s % k:
        raise ValueError(f"-s {s} on {ranks} ranks: the reference's -s is the size of one rank's "
                         f"domain, s / cbrt({ranks}) = {s} / {k}, which must be an integer")
    return s // k


def _short(path: str) -> str:
    """A binary's directory and name (the two references are both called lulesh2.0)."""
    parts = pathlib.Path(path).resolve().parts
    return "/".join(parts[-2:])


def _relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b) if b else abs(a - b)


def verify_ranks(s, runs, refs, serial, serial_e0=None) -> tuple:
    """(problems, notes) of the rank comparison: relsim bit-identical on every rank count (and
    with the reference's serial end state where known); the reference MPI runs' iterations equal
    the serial reference's (`serial`: iterations, printed e(0)) and their e(0) compared with it,
    printed and, where both are known, in full precision (`serial_e0`, the runs' `e0_full`): a
    difference in the last digits is a note (the reference sums nodal forces across domains in
    another order), as is full-precision equality."""
    bad, notes = [], []
    first = runs[0]
    keys = ("iterations", "time", "dt", "e0", "symmetry", "sums")
    for r in runs:
        diff = [k for k in keys if r[k] != first[k]]
        if diff:
            bad.append(f"relsim on {r['ranks']} rank(s) differs from {first['ranks']} in "
                       f"{', '.join(diff)} (e0 {r['e0']!r} vs {first['e0']!r})")
        if max(r["symmetry"].values()) >= 1e-8:
            bad.append(f"relsim symmetry figures {r['symmetry']} not < 1e-8")
    spec = SPEC.get(s)
    if spec and (first["iterations"], f"{first['e0']:e}") != spec:
        bad.append(f"relsim: {first['iterations']} cycles, e(0) {first['e0']:e}; the "
                   f"reference's published values are {spec}")
    want = SERIAL.get(s, {})
    for key in ("e0", "time", "dt", "sums"):
        if key in want and first[key] != want[key]:
            bad.append(f"relsim {key} {first[key]!r} is not the reference's serial "
                       f"{want[key]!r} bit for bit")
    for x in refs:
        if serial is not None:
            its, e0 = serial
            if x["iterations"] != its:
                bad.append(f"reference MPI on {x['ranks']} rank(s): {x['iterations']} cycles, "
                           f"the serial reference {its}")
            if x["e0_printed"] != e0:
                d = float(x["e0_printed"]) - float(e0)
                notes.append(f"reference MPI on {x['ranks']} rank(s) prints e(0) "
                             f"{x['e0_printed']}, the serial reference {e0} (difference {d:+.6e}, "
                             f"relative {_relative(float(x['e0_printed']), float(e0)):.1e})")
        if serial_e0 is not None and x["e0_full"] is not None:
            d = x["e0_full"] - serial_e0
            rel = _relative(x["e0_full"], serial_e0)
            notes.append(f"reference MPI on {x['ranks']} rank(s): e(0) {x['e0_full']:.17e}, the "
                         f"serial reference {serial_e0:.17e}: "
                         + (f"difference {d:+.3e} (relative {rel:.1e}, "
                            f"{abs(d) / math.ulp(serial_e0):.0f} ulp)" if d else "bit-identical"))
        if x["tasks"] != x["ranks"] or x["size"] * round(x["ranks"] ** (1 / 3)) != s:
            bad.append(f"reference MPI reports {x['tasks']} task(s) of size {x['size']}, not "
                       f"{x['ranks']} of the global size {s}")
        fom = s ** 3 * x["iterations"] / (1000.0 * x["elapsed_s"])
        if _relative(fom, x["fom"]) > 1e-6:
            bad.append(f"reference MPI on {x['ranks']} rank(s) prints FOM {x['fom']}, not the "
                       f"global zones * cycles / (1000 elapsed) = {fom:.8g}")
        if max(x["symmetry"]) >= 1e-8:
            bad.append(f"reference MPI symmetry figures {x['symmetry']} not < 1e-8")
    return list(dict.fromkeys(bad)), list(dict.fromkeys(notes))  # once each, not per repeat


def main_ranks(a, p, threads) -> int:
    """`relsim bench lulesh --ranks ...`: relsim and the reference MPI build on each rank count,
    the same global problem."""
    try:
        ranks = parse_ranks(a.ranks or "1,8")
        sizes = {n: reference_size(a.s, n) for n in ranks} if a.reference_mpi else {}
    except ValueError as exc:
        p.error(str(exc))
    for opt, path in (("--reference-mpi", a.reference_mpi), ("--reference", a.reference)):
        if path is not None and not (os.path.isfile(path) and os.access(path, os.X_OK)):
            p.error(f"{opt} {path!r} is not an executable file")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        print("relsim bench lulesh --ranks: skipped, no mpiexec next to Python or on PATH "
              "(pip install 'relsim[mpi]')")
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    t = threads[0]
    ref = a.reference_mpi
    print(f"relsim bench lulesh: s={a.s} on {ranks} rank(s), {t} thread(s) per rank, {a.repeat} "
          f"interleaved repeat(s), target {a.target}; reference MPI: {ref or 'none'}; "
          f"{mpiexec}")
    print(machine_line())
    serial, serial_e0 = None, SERIAL.get(a.s, {}).get("e0")
    if a.reference:
        x = run_reference(a.reference, a.s, 1)
        serial = (x["iterations"], x["e0_printed"])
        serial_e0 = x["e0_full"] if x["e0_full"] is not None else serial_e0
        print(f"serial reference {a.reference} -s {a.s}: {x['iterations']} cycles, e(0) "
              f"{x['e0_printed']}, FOM {x['fom']:.1f}")
    elif a.s in SPEC:
        serial = SPEC[a.s]
    runs, refs = [], []
    for rep in range(a.repeat):
        for n in ranks:
            launch = (mpiexec, "-n", str(n))
            r = run_relsim(a.s, t, a.target, ("--wait-compile",), launcher=launch)
            r["ranks"] = n
            runs.append(r)
            line = f"[{rep + 1}/{a.repeat}] {n} rank(s)" \
                   f"{' (oversubscribed)' if n > cores else ''}: relsim FOM {r['fom']:8.1f} " \
                   f"({r['elapsed_s']:.2f} s, setup {r['setup_s']:.1f} s)"
            if ref:
                x = run_reference(ref, sizes[n], t, launcher=launch)
                x["ranks"] = n
                refs.append(x)
                line += f", reference MPI -s {sizes[n]} FOM {x['fom']:8.1f} " \
                        f"({x['elapsed_s']:.2f} s)"
            print(line, flush=True)
    bad, notes = verify_ranks(a.s, runs, refs, serial, serial_e0)
    first = runs[0]
    rows = []
    for n in ranks:
        mine = [r for r in runs if r["ranks"] == n]
        best = max(r["fom"] for r in mine)
        same = all(all(r[k] == first[k] for k in ("iterations", "time", "dt", "e0", "symmetry",
                                                    "sums")) for r in mine)
        row = [f"{n}{' (oversubscribed)' if n > cores else ''}", f"{best:.1f}"]
        if ref:
            theirs = [x for x in refs if x["ranks"] == n]
            best_ref = max(x["fom"] for x in theirs)
            row += [f"{best_ref:.1f}", f"{best / best_ref:.2f}", sizes[n],
                    f"{first['iterations']} / {theirs[0]['iterations']}",
                    f"{first['e0']:e} / {theirs[0]['e0_printed']}"]
        else:
            row += [first["iterations"], f"{first['e0']:e}"]
        row += ["yes" if same else "NO", f"{min(r['setup_s'] for r in mine):.1f}"]
        rows.append(row)
    headers = ["ranks", "relsim FOM"] + (
        ["reference MPI FOM", "relsim / reference", "reference -s (per rank)",
         "iterations relsim / ref", "e(0) relsim / ref MPI (printed)"] if ref
        else ["iterations", "e(0)"]) + [f"relsim bits as on {ranks[0]} rank(s)", "relsim setup s"]
    cmd = f"relsim bench lulesh -s {a.s} --ranks {','.join(map(str, ranks))}" \
          f"{' --reference-mpi ' + _short(ref) if ref else ''}" \
          f"{' --reference ' + _short(a.reference) if a.reference else ''} --repeat {a.repeat}"
    over = [n for n in ranks if n > cores]
    lines = [f"Command: `{cmd}`. Machine: {machine_line()}.",
             f"The same global problem (s={a.s}, {a.s ** 3} elements; default options) on each "
             f"rank count: relsim as `{os.path.basename(mpiexec)} -n N relsim run lulesh -s "
             f"{a.s} --threads {t}`"
             + (f", the reference's MPI build (-DUSE_MPI=1, "
                f"{'with OpenMP' if refs[0]['openmp'] else 'without OpenMP'}) as `mpiexec -n N "
                f"lulesh2.0 -s {a.s}/cbrt(N)` (its -s is per rank), OMP_NUM_THREADS={t}"
                if ref else "")
             + f". FOM = global zones * cycles / (1000 * elapsed), elapsed = the slowest rank's "
               f"time loop (the reference's own FOM, checked against its printed elapsed time); "
               f"best of {a.repeat} interleaved runs per rank count."
             + (f" {', '.join(map(str, over))} ranks on {cores} cores are oversubscribed: "
                f"ranks wait for a core, and MPI's busy-polling waits spend the cores the "
                f"others need, so those rows measure the oversubscription more than the code."
                if over else ""), "",
             table(headers, rows), ""]
    lines.append(f"Answers: {'all checks passed' if not bad else 'PROBLEMS: ' + '; '.join(bad)}."
                 + (f" relsim's iterations, time, dt, e(0), symmetry figures and checksums are "
                    f"bit-identical on {', '.join(map(str, ranks))} rank(s)"
                    + (" and equal the reference's serial values" if a.s in SERIAL else "")
                    + "." if not bad else ""))
    if ref:
        full = any(x["e0_full"] is not None for x in refs)
        lines.append(
            "\nReference MPI against the serial reference "
            + (f"(`{_short(a.reference)} -s {a.s}`, run once): " if a.reference else
               "(published values): " if serial else "(none known for this size): ")
            + ("iteration counts " + ("equal" if all(x["iterations"] == serial[0] for x in refs)
                                      else "DIFFER")
               + "; printed e(0) (7 digits) "
               + ("identical" if all(x["e0_printed"] == serial[1] for x in refs) else "differs")
               if serial else "not compared")
            + ("; " + "; ".join(notes) if notes else "")
            + ("" if full else "; this build prints e(0) to 7 digits only (a print-only build "
               "with an `e0 %.17e` line is compared in full precision)") + ".")
    for n in ranks:
        mine = ", ".join(f"{r['fom']:.1f}" for r in runs if r["ranks"] == n)
        theirs = ", ".join(f"{x['fom']:.1f}" for x in refs if x["ranks"] == n)
        lines.append(f"\nEvery run, {n} rank(s), in order: relsim FOM {mine}"
                     + (f"; reference MPI FOM {theirs}." if ref else "."))
    body = "\n".join(lines)
    print()
    print(body)
    if a.markdown:
        print()
        update_markdown(a.markdown, RANKS_SECTION.format(s=a.s), body)
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim bench lulesh", description=__doc__.splitlines()[0])
    p.add_argument("--reference", default=None, help="a lulesh2.0 binary (built from LLNL/LULESH)")
    p.add_argument("--reference-src", default=None,
                   help="its source directory, for lines of code (default: the binary's)")
    p.add_argument("-s", type=int, default=30, help="problem size (default 30)")
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated (1,2)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved repeats (best of N)")
    p.add_argument("--target", default="cpu", help="relsim backend (default cpu)")
    p.add_argument("--markdown", default=None,
                   help="write the table as the LULESH section of this Markdown file "
                        "(e.g. docs/benchmarks/history.md; other sections are kept)")
    p.add_argument("--plot", default=None, help="write a bar chart PNG (needs matplotlib)")
    p.add_argument("--no-startup", action="store_true",
                   help="skip the cold/warm start-up measurement")
    p.add_argument("--ranks", default=None,
                   help="compare on MPI rank counts instead, comma-separated (e.g. 1,8): "
                        "mpiexec -n N relsim run lulesh -s S, one thread per rank (the first "
                        "of --threads), and --reference-mpi's -s S/cbrt(N); --reference is "
                        "then run once, for the serial answers")
    p.add_argument("--reference-mpi", default=None,
                   help="a lulesh2.0 built with -DUSE_MPI=1, run as mpiexec -n N lulesh2.0 "
                        "-s S/cbrt(N) (N must be a cube; implies --ranks, default 1,8)")
    a = p.parse_args(argv)
    try:
        threads = [int(t) for t in a.threads.split(",") if t.strip()]
    except ValueError:
        p.error(f"--threads takes comma-separated integers, got {a.threads!r}")
    if not threads or min(threads) < 1 or a.repeat < 1 or a.s < 1:
        p.error("thread counts, --repeat and -s must be positive")
    if a.ranks is not None or a.reference_mpi is not None:
        return main_ranks(a, p, threads)
    ref = a.reference
    if ref is not None and not (os.path.isfile(ref) and os.access(ref, os.X_OK)):
        p.error(f"--reference {ref!r} is not an executable file")
    print(f"relsim bench lulesh: s={a.s}, threads {threads}, {a.repeat} interleaved repeat(s), "
          f"target {a.target}; reference: {ref or 'none'}")
    print(machine_line())
    startup = None
    if not a.no_startup:
        with tempfile.TemporaryDirectory() as cache:
            cold = run_relsim(a.s, threads[0], a.target, ("-i", "1"), cache=cache)
            warm = run_relsim(a.s, threads[0], a.target, ("-i", "1"), cache=cache)
        startup = (cold, warm)
        print(f"start-up ({threads[0]} thread(s), 1 cycle): cold {cold['wall_s']:.1f} s "
              f"(setup + compilation {cold['setup_s']:.1f} s), warm {warm['wall_s']:.1f} s "
              f"(setup {warm['setup_s']:.1f} s)")
    else:
        # fill the cache (every parallel variant: --wait-compile)
        run_relsim(min(a.s, 5), threads[0], a.target, ("-i", "1", "--wait-compile"))
    runs, refs = [], []
    for rep in range(a.repeat):
        for t in threads:
            r = run_relsim(a.s, t, a.target, ("--wait-compile",))
            runs.append(r)
            line = f"[{rep + 1}/{a.repeat}] {t} thread(s): relsim FOM {r['fom']:8.1f} " \
                   f"({r['elapsed_s']:.2f} s)"
            if ref:
                x = run_reference(ref, a.s, t)
                x["threads"] = t
                refs.append(x)
                line += f", reference FOM {x['fom']:8.1f} ({x['elapsed_s']:.2f} s)"
            print(line, flush=True)
    bad = verify(a.s, runs, refs)
    best = {t: max(r["fom"] for r in runs if r["threads"] == t) for t in threads}
    best_ref = {t: max(x["fom"] for x in refs if x["threads"] == t) for t in threads} if ref \
        else {}
    first = runs[0]
    rows = []
    for t in threads:
        row = [t, f"{best[t]:.1f}"]
        if ref:
            rr = [x for x in refs if x["threads"] == t][0]
            row += [f"{best_ref[t]:.1f}", f"{best[t] / best_ref[t]:.2f}",
                    f"{first['iterations']} / {rr['iterations']}",
                    f"{first['e0']:e} / {rr['e0_printed']}"]
        else:
            row += [str(first["iterations"]), f"{first['e0']:e}"]
        rows.append(row)
    headers = ["threads", "relsim FOM"] + (
        ["reference FOM", "relsim / reference", "iterations relsim / ref",
         "e(0) relsim / ref (printed)"] if ref else ["iterations", "e(0)"])
    want = SERIAL.get(a.s, {})
    exact = [k for k in ("e0", "time", "dt", "sums") if k in want]
    cmd = f"relsim bench lulesh{' --reference ' + os.path.basename(ref) if ref else ''} " \
          f"-s {a.s} --threads {a.threads} --repeat {a.repeat}"
    lines = [f"Command: `{cmd}`. Machine: {machine_line()}.",
             f"Default options (11 regions, balance 1, cost 1: the EOS runs `rep` times per "
             f"region as in the reference); FOM = s^3 cycles / (1000 elapsed), time loop only; "
             f"best of {a.repeat} interleaved runs per thread count"
             + (f"; reference: `{os.path.basename(ref)}` built from LLNL/LULESH with g++ -O3 "
                f"-fopenmp, OMP_NUM_THREADS = threads." if ref else "."), "",
             table(headers, rows), ""]
    lines.append(f"Answers: {'all checks passed' if not bad else 'PROBLEMS: ' + '; '.join(bad)}."
                 + (f" relsim's {', '.join(exact)} are bit-exact with the reference's serial "
                    f"(1-thread) values and identical on {', '.join(map(str, threads))} "
                    f"thread(s)." if exact and not bad else ""))
    for t in threads:
        mine = ", ".join(f"{r['fom']:.0f}" for r in runs if r["threads"] == t)
        theirs = ", ".join(f"{x['fom']:.0f}" for x in refs if x["threads"] == t)
        lines.append(f"\nEvery run, {t} thread(s), in order: relsim FOM {mine}"
                     + (f"; reference FOM {theirs}." if ref else "."))
    if ref and len(threads) > 1 and best_ref[max(threads)] < best_ref[min(threads)]:
        lines.append(f"\nThe reference ran slower on {max(threads)} threads than on "
                     f"{min(threads)}: its OpenMP build opens about 500 parallel regions per "
                     f"cycle, and each one waits for a thread the operating system has "
                     f"descheduled when other jobs load the cores. relsim opens about 40 per "
                     f"cycle (one per kernel launch over more rows than its parallel threshold).")
    if startup:
        cold, warm = startup
        lines.append(f"\nStart-up of `relsim run lulesh -s {a.s} -i 1` ({threads[0]} thread(s)): "
                     f"cold (empty kernel cache) {cold['wall_s']:.1f} s, of which setup and "
                     f"compilation {cold['setup_s']:.1f} s; warm (cached kernels) "
                     f"{warm['wall_s']:.1f} s, setup {warm['setup_s']:.1f} s.")
    src = a.reference_src or (os.path.dirname(os.path.realpath(ref)) if ref else None)
    lines += ["", "Lines of code (no blank lines, comments or docstrings):", "",
              table(["code", "lines"], lines_of_code(src))]
    body = "\n".join(lines)
    print()
    print(body)
    if a.markdown:
        print()
        update_markdown(a.markdown, SECTION.format(s=a.s), body)
    if a.plot:
        print(draw_png(a.plot, a.s, threads, best, best_ref))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
