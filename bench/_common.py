"""Helpers shared by the benchmarks: interleaved timing, number formats and the bar chart each
script draws (``--chart PATH``, default ``bench/out/<script>.png``, git-ignored; drawn only when
matplotlib is installed: ``pip install -e .[bench]``); tables, the machine line, the docs section
and the chart itself come from `relsim.report`.

Timing on a shared, noisy machine: every variant is timed in the same process, the variants
interleaved round-robin within each repeat, so slow phases of the machine hit all of them alike;
figures are the minimum (or median) over repeats, and comparisons are ratios within one run.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import statistics
import sys
import time

# benchmarks time the parallel code from their first timed step: a launch compiles its
# parallel variant before it runs (tiered start-up, the default, would run the serial one while
# a background process compiles it); `startup.py` gives its runs the user's setting instead
USER_STARTUP = os.environ.get("RELSIM_STARTUP")
os.environ.setdefault("RELSIM_STARTUP", "wait")

ROOT = pathlib.Path(__file__).resolve().parents[1]
if importlib.util.find_spec("relsim") is None:  # not on PYTHONPATH / installed: this checkout
    sys.path.insert(0, str(ROOT))

from relsim import report  # noqa: E402
from relsim.report import machine_line, table, update_markdown  # noqa: E402,F401 (re-exported)

OUT = ROOT / "bench" / "out"


def add_chart_argument(ap, name: str) -> None:
    """``--chart PATH`` on an argparse parser: where the script's PNG goes (default
    bench/out/NAME.png; '' for none)."""
    ap.add_argument("--chart", metavar="PATH", default=str(OUT / f"{name}.png"),
                    help="bar chart PNG of the figures, drawn when matplotlib is installed "
                         "('' = none; default: %(default)s)")


def chart(path, title: str, labels: list, series: dict, ylabel: str = "") -> None:
    """Draw the grouped bar chart (`relsim.report.chart`) and say where it went; silently
    nothing without matplotlib or with an empty path."""
    msg = report.chart(path, title, labels, series, ylabel)
    if msg:
        print(msg)


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


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"
