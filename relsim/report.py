"""Benchmark reports (`relsim bench`, bench/): markdown tables, a line describing the machine,
and replacing one section of a markdown file such as docs/benchmarks/history.md."""
from __future__ import annotations

import datetime
import os
import pathlib
import platform
import re


def table(headers: list, rows: list) -> str:
    """A GitHub-markdown table (also readable as plain text)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def cpu_model() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line() -> str:
    """Date, CPU, usable cores, load average now, and the Python / NumPy / Numba versions."""
    import numba
    import numpy
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        load = f"load average {os.getloadavg()[0]:.1f}"
    except OSError:
        load = "load unknown"
    try:
        layer = f"{numba.threading_layer()} threading layer, "
    except ValueError:  # no parallel region has run in this process
        layer = ""
    return (f"{datetime.date.today().isoformat()}; {cpu_model()}, {cores} cores available "
            f"(shared machine, {load}); Python {platform.python_version()}, "
            f"NumPy {numpy.__version__}, Numba {numba.__version__} "
            f"({layer}NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS})")


def update_markdown(path, title: str, body: str) -> None:
    """Replace the `## title` section of the markdown file at `path` (or append it); the other
    sections are left as they are."""
    path = pathlib.Path(path)
    text = path.read_text() if path.exists() else "# relsim benchmarks\n"
    section = f"## {title}\n\n{body.strip()}\n"
    pat = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pat.search(text):
        text = pat.sub(lambda _: section + "\n", text, count=1).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"updated section {title!r} of {path}")


def chart(path, title: str, labels: list, series: dict, ylabel: str = "") -> str | None:
    """Draw a grouped bar chart as a PNG at `path`: one group of bars per label, one bar per
    series in each (`series` maps a name to one value per label; None leaves a gap). Returns
    "wrote PATH", or None without drawing when matplotlib is not installed (it is optional:
    ``pip install relsim[bench]``) or `path` is empty."""
    if not path:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = list(series)
    width = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 + 0.5 * len(labels) * max(len(names), 1)),
                                    3.8))
    for k, name in enumerate(names):
        xs = [i + (k - (len(names) - 1) / 2) * width for i, v in enumerate(series[name])
              if v is not None]
        ys = [v for v in series[name] if v is not None]
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks(range(len(labels)), [str(s) for s in labels])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(names) > 1:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"wrote {path}"
