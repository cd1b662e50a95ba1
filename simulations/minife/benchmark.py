"""`relsim bench minife`: relsim's port against the miniFE 2.0 reference, side by side.

    relsim bench minife --reference PATH [--reference-omp PATH] [-nx 100] [-ny N] [-nz N]
                        [--threads 1,2] [--repeat 1] [--dots exact|ordered] [--markdown PATH]

The reference is built outside this repository from Mantevo/miniFE (``ref/src``:
``make -f Makefile.gnu.serial``; ``openmp/src``: ``make -f Makefile.gnu.openmp``). For each
thread count t, relsim runs ``relsim run minife ... --threads t`` (a fresh process, warm cache)
and the reference runs with OMP_NUM_THREADS=t (its OpenMP build, given with --reference-omp, for
t > 1; else the serial build), interleaved, `--repeat` times (best Total CG Mflops kept). Printed:
Nrows, NNZ, iterations, final residual of both, the Mflops of WAXPY / DOT / MATVEC / Total, the
ratio relsim / reference, and the printed residual lines side by side. ``--dots ordered``
runs relsim's CG with row-order dot products (`relsim run minife --dots ordered`): then its
residual lines are the serial reference's.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import relsim as rs

KEYS = ("Global Nrows", "Global NNZ", "Iterations", "Final Resid Norm", "WAXPY Mflops",
        "DOT Mflops", "MATVEC Mflops", "Total CG Mflops", "Total CG Time")


def parse_report(text: str) -> dict:
    """The summary keys and the 'Iteration = k   Residual = r' lines of a run's output."""
    out = {}
    for key in KEYS:
        m = re.search(rf"^\s*{re.escape(key)}: (\S+)", text, re.M)
        if m:
            out[key] = m.group(1)
    out["residuals"] = {int(k): float(r) for k, r in
                        re.findall(r"^Iteration = (\d+)\s+Residual = (\S+)", text, re.M)}
    m = re.search(r"^Initial Residual = (\S+)", text, re.M)
    if m:
        out["residuals"][0] = float(m.group(1))
    return out


def run_reference(binary: str, size, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as d:  # it writes its YAML file where it runs
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        p = subprocess.run([os.path.abspath(binary), "-nx", str(size[0]), "-ny", str(size[1]),
                            "-nz", str(size[2])], cwd=d, env=env, capture_output=True,
                           text=True, timeout=3600)
        if p.returncode != 0:
            raise SystemExit(f"the reference failed ({p.returncode}): {p.stderr[-2000:]}")
        yaml = "".join(f.read_text() for f in Path(d).glob("*.yaml"))
    return parse_report(p.stdout + yaml)


def run_relsim(size, threads: int, dots: str = "exact") -> dict:
    cmd = [sys.executable, "-m", "relsim.cli", "run", "minife", "-nx", str(size[0]),
           "-ny", str(size[1]), "-nz", str(size[2]), "--threads", str(threads), "--dots", dots]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"relsim run minife failed ({p.returncode}): {p.stderr[-2000:]}")
    return parse_report(p.stdout)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim bench minife", description=__doc__.split("\n")[0])
    p.add_argument("--reference", required=True, help="the serial reference binary")
    p.add_argument("--reference-omp", default=None, help="its OpenMP build (threads > 1)")
    p.add_argument("-nx", type=int, default=100)
    p.add_argument("-ny", type=int, default=None)
    p.add_argument("-nz", type=int, default=None)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--dots", default="exact", choices=rs.Global.SUMS,
                   help="relsim's CG dot products (relsim run minife --dots)")
    p.add_argument("--markdown", default=None, help="write the table as the 'miniFE' section of "
                   "this Markdown file (other sections are kept)")
    a = p.parse_args(argv)
    ny = a.nx if a.ny is None else a.ny
    size = (a.nx, ny, ny if a.nz is None else a.nz)
    threads = [int(t) for t in a.threads.split(",")]
    best: dict = {}
    for rep in range(a.repeat):
        for t in threads:
            binary = a.reference_omp if (t > 1 and a.reference_omp) else a.reference
            for who in ("relsim", "reference"):
                r = run_relsim(size, t, a.dots) if who == "relsim" else \
                    run_reference(binary, size, t)
                print(f"[{rep + 1}/{a.repeat}] {t} thread(s): {who} Total CG Mflops "
                      f"{r.get('Total CG Mflops')}", flush=True)
                old = best.get((who, t))
                if old is None or float(r["Total CG Mflops"]) > float(old["Total CG Mflops"]):
                    best[(who, t)] = r
    rows = [f"Command: `relsim bench minife --reference ... -nx {size[0]} -ny {size[1]} -nz "
            f"{size[2]} --threads {a.threads} --repeat {a.repeat} --dots {a.dots}` (best Total CG "
            f"Mflops of the repeats; the reference's OpenMP build for t > 1 where given).", "",
            "| threads | code | Nrows | NNZ | iterations | final resid | WAXPY Mflops | "
            "DOT Mflops | MATVEC Mflops | Total CG Mflops | relsim / reference |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in threads:
        rel, ref = best[("relsim", t)], best[("reference", t)]
        ratio = float(rel["Total CG Mflops"]) / float(ref["Total CG Mflops"])
        for who, r in (("relsim", rel), ("reference", ref)):
            rows.append(f"| {t} | {who} | " + " | ".join(r.get(k, "?") for k in KEYS[:8]) +
                        f" | {f'{ratio:.2f}' if who == 'relsim' else ''} |")
    lines = ["", "Printed residuals (iteration: relsim / reference, relative difference):"]
    for t in threads:
        rel, ref = best[("relsim", t)]["residuals"], best[("reference", t)]["residuals"]
        parts = [f"{k}: {rel[k]:.6g} / {ref[k]:.6g} ({abs(rel[k] - ref[k]) / ref[k]:.1e})"
                 for k in sorted(set(rel) & set(ref))]
        lines.append(f"- {t} thread(s): " + "; ".join(parts))
    text = "\n".join(rows + lines)
    print(text)
    if a.markdown:
        from relsim.report import update_markdown
        title = f"miniFE 2.0 ({size[0]}x{size[1]}x{size[2]})" + \
            (", ordered dots" if a.dots == "ordered" else "")
        update_markdown(a.markdown, title, text)
    return 0
