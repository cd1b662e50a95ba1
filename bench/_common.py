"""Helpers shared by the benchmarks: interleaved timing, tables, machine line, docs section.

Timing on a shared, noisy machine: every variant is timed in the same process, the variants
interleaved round-robin within each repeat, so slow phases of the machine hit all of them alike;
figures are the minimum (or median) over repeats, and comparisons are ratios within one run.
"""
from __future__ import annotations

import datetime
import importlib.util
import os
import pathlib
import platform
import re
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
if importlib.util.find_spec("relsim") is None:  # not on PYTHONPATH / installed: this checkout
    sys.path.insert(0, str(ROOT))


def interleaved(variants: dict, repeats: int, number: int) -> dict:
    """Per-call seconds for each variant: {name: [seconds per call, one per repeat]}.

    Each repeat times `number` back-to-back calls of every variant in turn (the order reversed
    on every other repeat, so no variant always runs right after the same one)."""
    out = {name: [] for name in variants}
    clock = time.perf_counter
    items = list(variants.items())
    for r in range(repeats):
        for name, fn in (items if r % 2 == 0 else items[::-1]):
            t0 = clock()
            for _ in range(number):
                fn()
            out[name].append((clock() - t0) / number)
    return out


def summary(samples: list) -> tuple:
    """(min, median) of a list of per-call times."""
    return min(samples), statistics.median(samples)


def paired_ratio(a: list, b: list) -> float:
    """Median over repeats of a[i] / b[i]: robust to the machine's load drifting between
    repeats, since both times of a pair were taken back to back."""
    return statistics.median(x / y for x, y in zip(a, b))


def cpu_model() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line() -> str:
    import numba
    import numpy
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{datetime.date.today().isoformat()}; {cpu_model()}, {cores} cores available "
            f"(shared, noisy machine); Python {platform.python_version()}, "
            f"NumPy {numpy.__version__}, Numba {numba.__version__}, "
            f"NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}")


def table(headers: list, rows: list) -> str:
    """A GitHub-markdown table (also readable as plain text)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def update_markdown(path, title: str, body: str) -> None:
    """Replace the `## title` section of the markdown file at `path` (or append it)."""
    path = pathlib.Path(path)
    text = path.read_text() if path.exists() else "# relsim benchmarks\n"
    section = f"## {title}\n\n{body.strip()}\n"
    pat = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pat.search(text):
        text = pat.sub(lambda _: section + "\n", text, count=1).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    path.write_text(text)
    print(f"updated section {title!r} of {path}")


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"
