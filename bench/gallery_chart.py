#!/usr/bin/env python
"""The gallery's summary chart: each peer's time per step relative to relsim's, per simulation,
size and thread count, read from the ``Gallery: NAME against its peers`` sections that
`relsim bench NAME --markdown docs/benchmarks/history.md` wrote (so the chart shows exactly the
measured tables); draws a PNG (default docs/gallery/peers.png) and prints the ratios.

    python bench/gallery_chart.py [--markdown docs/benchmarks/history.md] [--chart PATH]
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
GALLERY = ("fem", "cloth", "sph", "smoke", "md")
PEERS = ("numba serial", "numba prange", "warp", "taichi")


def tables(text: str) -> dict:
    """{(simulation, n, threads): {variant: min us per step}} from the sections' tables."""
    out = {}
    for name in GALLERY:
        m = re.search(rf"^## Gallery: {name} against its peers\n(.*?)(?=^## )", text,
                      re.S | re.M)
        if m is None:
            continue
        for row in re.finditer(r"^\| *(\d+) *\| *(\d+) *\| *([a-z ]+?) *\| [^|]*\| *([\d.]+) *\|",
                               m.group(1), re.M):
            n, t, variant, us = row.groups()
            out.setdefault((name, int(n), int(t)), {})[variant] = float(us)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", default=str(ROOT / "docs" / "benchmarks" / "history.md"))
    ap.add_argument("--chart", default=str(ROOT / "docs" / "gallery" / "peers.png"))
    a = ap.parse_args(argv)
    found = tables(pathlib.Path(a.markdown).read_text())
    if not found:
        raise SystemExit(f"no 'Gallery: NAME against its peers' table in {a.markdown}")
    labels, ratios = [], {p: [] for p in PEERS}
    for (name, n, t), row in found.items():
        labels.append(f"{name} {n}\n{t} thr")
        for p in PEERS:
            ratios[p].append(row[p] / row["relsim"] if p in row else float("nan"))
        best = min((v / row["relsim"], p) for p, v in row.items() if p != "relsim")
        print(f"{name:6s} n={n:<4d} {t} thread(s): fastest peer {best[1]} at {best[0]:.2f}x "
              f"relsim's time")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        print("matplotlib not installed: no chart")
        return 0
    fig, ax = plt.subplots(figsize=(11, 3.6), dpi=100)
    x = np.arange(len(labels))
    width = 0.8 / len(PEERS)
    for i, p in enumerate(PEERS):
        ax.bar(x + (i - 1.5) * width, ratios[p], width, label=p)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("peer time / relsim time\n(> 1: relsim faster)")
    ax.set_title("Gallery: each peer's time per step relative to relsim (this 2-core machine)",
                 fontsize=9)
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    pathlib.Path(a.chart).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.chart)
    print(f"wrote {a.chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
