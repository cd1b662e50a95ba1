#!/usr/bin/env python
"""The charts of docs/benchmarks/index.md, drawn from the page's own tables.

A table on the page whose last non-blank line before it is a comment

    <!-- chart: NAME.png; bars: COLUMN, COLUMN; y: AXIS LABEL; log; ref: 1 -->

becomes the bar chart NAME.png beside the page: one group of bars per row of the table, one bar
per column named in ``bars`` (default: every column whose cells are all numbers). Options,
separated by semicolons after the file name:

* ``bars: A, B``: the columns drawn, by their header text;
* ``label: A, B``: the columns naming each group (default: the first column), joined by
  commas; a column of numbers is followed by its header (``1 thread``, ``24,389 rows``);
* ``y: TEXT``: the value axis's label; ``title: TEXT``: the title (default: the heading above);
* ``log``: a logarithmic value axis; ``ref: X``: a line at X (e.g. 1 for ratios);
* ``horizontal``: horizontal bars (for long row labels).

A cell is read as its first number (``2,304`` is 2304, ``0.276 (0.269)`` is 0.276, ``1.29x`` is
1.29); an empty cell or ``-`` is no bar. Re-running the script redraws every chart, so the page's
tables are the one home of the figures; ``--check`` only parses the page (no matplotlib
needed) and exits 1 if a chart's table or column is missing.

    python bench/charts.py [--page docs/benchmarks/index.md] [--out DIR] [--check]
"""
from __future__ import annotations

import argparse
import math
import pathlib
import re
import sys
import textwrap
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks" / "index.md"
CHART = re.compile(r"^<!--\s*chart:\s*(.*?)\s*-->\s*$")
NUMBER = re.compile(r"^[-+]?(?:\d[\d,]*)?\.?\d+(?:[eE][-+]?\d+)?")


@dataclass
class Chart:
    name: str  # the PNG's file name
    line: int  # the comment's line on the page (1-based)
    heading: str  # the nearest heading above it
    header: list
    rows: list  # cells, as text
    options: dict = field(default_factory=dict)

    def column(self, name: str) -> int:
        try:
            return self.header.index(name)
        except ValueError:
            raise ValueError(f"line {self.line}: {self.name}: no column {name!r} in the table "
                             f"(columns: {', '.join(self.header)})") from None

    def labels(self) -> list:
        """Each row's label: its label columns' cells joined by commas, a column of numbers
        with its header after them (``1 thread``, ``24,389 rows``)."""
        names = _names(self.options.get("label")) or [self.header[0]]
        idx = [self.column(n) for n in names]
        numeric = {i for i in idx if all(NUMBER.fullmatch(_plain(r[i])) for r in self.rows)}

        def cell(r, i):
            text = _plain(r[i])
            if i not in numeric:
                return text
            unit = self.header[i]
            return f"{text} {unit[:-1] if text == '1' and unit.endswith('s') else unit}"
        return [", ".join(cell(r, i) for i in idx) for r in self.rows]

    def bars(self) -> list:
        """(column name, values) of each bar series."""
        names = _names(self.options.get("bars"))
        if not names:
            skip = set(_names(self.options.get("label")) or [self.header[0]])
            names = [h for i, h in enumerate(self.header) if h not in skip and
                     all(_number(r[i]) is not None or _plain(r[i]) in ("", "-")
                         for r in self.rows)]
        if not names:
            raise ValueError(f"line {self.line}: {self.name}: no numeric column to draw")
        out = []
        for n in names:
            i = self.column(n)
            values = [_number(r[i]) for r in self.rows]
            out.append((n, [math.nan if v is None else v for v in values]))
        return out


def _names(text):
    return [t.strip() for t in text.split(",") if t.strip()] if text else []


def _plain(cell: str) -> str:
    return cell.replace("`", "").replace("**", "").replace("\\", "").strip()


def _number(cell: str):
    m = NUMBER.match(_plain(cell))
    return float(m.group(0).replace(",", "")) if m else None


def _cells(line: str) -> list:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse(text: str) -> list:
    """Every chart comment of a page, with the table that follows it."""
    lines = text.splitlines()
    charts, heading = [], ""
    for i, line in enumerate(lines):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        m = CHART.match(line.strip())
        if not m:
            continue
        parts = [p.strip() for p in m.group(1).split(";")]
        name, options = parts[0], {}
        for p in parts[1:]:
            key, _, value = p.partition(":")
            options[key.strip()] = value.strip() if _ else True
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j + 1 >= len(lines) or not lines[j].lstrip().startswith("|") or \
                not re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[j + 1]):
            raise ValueError(f"line {i + 1}: the chart {name} is not followed by a table")
        header = _cells(lines[j])
        rows = []
        k = j + 2
        while k < len(lines) and lines[k].lstrip().startswith("|"):
            rows.append(_cells(lines[k]))
            k += 1
        charts.append(Chart(name, i + 1, heading, header, rows, options))
    return charts


def draw(chart: Chart, path: pathlib.Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels, series = chart.labels(), chart.bars()
    horizontal = bool(chart.options.get("horizontal"))
    n, k = len(labels), len(series)
    if horizontal:
        size = (8.0, 0.9 + 0.28 * n * max(1, k) ** 0.5 + 0.3)
    else:
        text = max(len(w) for t in labels for w in textwrap.wrap(t, 18) or [""])
        group = max(0.35 + 0.22 * k, 0.1 + 0.06 * text)  # inches: the bars, or the label
        size = (max(6.0, min(12.0, 1.2 + n * group)), 3.4)
    fig, ax = plt.subplots(figsize=size, dpi=100)
    pos = np.arange(n)
    width = 0.8 / k
    for s, (name, values) in enumerate(series):
        at = pos + (s - (k - 1) / 2) * width
        if horizontal:
            ax.barh(at, values, width, label=name)
        else:
            ax.bar(at, values, width, label=name)
    value_axis = ax.xaxis if horizontal else ax.yaxis
    if chart.options.get("log"):
        (ax.set_xscale if horizontal else ax.set_yscale)("log")
    if "ref" in chart.options:
        ref = float(chart.options["ref"])
        (ax.axvline if horizontal else ax.axhline)(ref, color="black", linewidth=0.8)
    if horizontal:
        ax.set_yticks(pos, labels, fontsize=7)
        ax.invert_yaxis()
    else:
        ax.set_xticks(pos, [textwrap.fill(t, 18) for t in labels], fontsize=7)
    value_axis.set_label_text(chart.options.get("y", ""), fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(axis="x" if horizontal else "y", linewidth=0.3, alpha=0.6)
    ax.set_axisbelow(True)
    ax.set_title(chart.options.get("title", chart.heading), fontsize=9)
    if k > 1:
        ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", default=str(PAGE), help="the markdown page (default: %(default)s)")
    ap.add_argument("--out", default=None, help="folder for the PNGs (default: the page's)")
    ap.add_argument("--check", action="store_true", help="parse only: every chart's table and "
                    "columns exist")
    a = ap.parse_args(argv)
    page = pathlib.Path(a.page)
    try:
        charts = parse(page.read_text())
        for c in charts:  # every option refers to real columns
            c.labels()
            c.bars()
    except ValueError as exc:
        print(f"{page}: {exc}", file=sys.stderr)
        return 1
    names = [c.name for c in charts]
    if len(set(names)) != len(names):
        print(f"{page}: a chart name is used twice: {names}", file=sys.stderr)
        return 1
    if a.check:
        print(f"{page}: {len(charts)} chart(s): {', '.join(names)}")
        return 0
    out = pathlib.Path(a.out) if a.out else page.parent
    out.mkdir(parents=True, exist_ok=True)
    for c in charts:
        draw(c, out / c.name)
        print(f"wrote {out / c.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
