"""`print(...)` in kernels: what each print site stores per row, and the lines written after a
launch, one rule for every target.

A kernel's print statements (`ir.Print`, outside run-time loops) are its *sites*, numbered in
program order (`sites`). A compiled launch stores, per position of its iteration space and
site, a flag (the row reached the print) and the printed values: float components in a float64
array, integer, bool and key components in an int64 array, in item order (`layout`). After the
launch, `lines` formats them: for each row in ascending order, each site it reached in program
order, one line ``[<kernel> <relation> row <r>] <items separated by spaces>``, the values as
Python prints them (a float its repr, a bool True/False, a key its row, a vector a tuple).
`interp` formats what it computed with the same function, so every target prints the same text.
The lines go to `sys.stdout` (`emit`), after the launch, before its errors are raised; on
several ranks, to rank 0's, every rank's owned rows merged in row order
(`parallel/print_gather.py`).
"""
from __future__ import annotations

import sys

import numpy as np

from ...types import KeyType, elem_of
from .. import ir


def sites(body) -> list:
    """The print statements of a typed kernel body, in program order (their site numbers)."""
    return [s for s in ir.walk_stmts(body) if isinstance(s, ir.Print)]


def layout(stmt) -> tuple:
    """(float columns, int columns, [(item, kind, first column, components)]) of a print site:
    kind "s" for a literal string, "f" / "i" for a value stored in the float / int array."""
    nf = ni = 0
    items = []
    for x in stmt.items:
        if isinstance(x, str):
            items.append((x, "s", 0, 0))
            continue
        n = 1 if isinstance(x.type, KeyType) else x.type.ncomp
        if not isinstance(x.type, KeyType) and elem_of(x.type).is_float:
            items.append((x, "f", nf, n))
            nf += n
        else:
            items.append((x, "i", ni, n))
            ni += n
    return nf, ni, items


PART = {"f": 1, "i": 2}  # a PrintValues kind -> its place in `new_arrays`' triple


def new_arrays(stmts, n: int) -> tuple:
    """(flags, float values, int values) for `n` positions, one array per site each (None
    where a site has no such values): what a backend binds to PrintFlags and PrintValues."""
    cols = [layout(s)[:2] for s in stmts]
    return ([np.zeros(n, dtype=np.int8) for _ in stmts],
            [np.zeros((n, nf)) if nf else None for nf, _ in cols],
            [np.zeros((n, ni), dtype=np.int64) if ni else None for _, ni in cols])


def text(stmt, fvals, ivals) -> str:
    """The printed items of one row: `fvals`, `ivals` its stored float and int values."""
    out = []
    for x, kind, col, n in layout(stmt)[2]:
        if kind == "s":
            out.append(x)
            continue
        vals = (fvals if kind == "f" else ivals)[col:col + n]
        out.append(_value(x.type, vals))
    return " ".join(out)


def _value(t, vals) -> str:
    if isinstance(t, KeyType):
        return str(int(vals[0]))
    et = elem_of(t)
    conv = (lambda v: repr(float(v))) if et.is_float else \
        (lambda v: repr(bool(v))) if et.is_bool else (lambda v: str(int(v)))
    if t.shape == ():
        return conv(vals[0])
    flat = [conv(v) for v in vals]
    if len(t.shape) == 1:
        return "(" + ", ".join(flat) + ("," if len(flat) == 1 else "") + ")"
    rows = ["(" + ", ".join(flat[i * t.shape[1]:(i + 1) * t.shape[1]]) + ")"
            for i in range(t.shape[0])]
    return "(" + ", ".join(rows) + ")"


def prefix(kernel_name: str, relation, row: int) -> str:
    return f"[{kernel_name} {relation.name} row {row}]"


def lines(kernel_name, relation, stmts, flags, fvals, ivals, rows) -> list:
    """The lines of one launch as (row, site, line), in row order: `flags[k]`, `fvals[k]`,
    `ivals[k]` site k's arrays (per position), `rows` the launch's rows (None: position i is
    row i)."""
    hits = [(pos, k) for k in range(len(stmts)) for pos in np.flatnonzero(flags[k])]
    hits.sort(key=lambda h: (int(rows[h[0]]) if rows is not None else int(h[0]), h[1]))
    out = []
    for pos, k in hits:
        row = int(rows[pos]) if rows is not None else int(pos)
        f = fvals[k][pos] if fvals[k] is not None else ()
        i = ivals[k][pos] if ivals[k] is not None else ()
        out.append((row, k, f"{prefix(kernel_name, relation, row)} {text(stmts[k], f, i)}"))
    return out


def emit(entries, sink=None) -> None:
    """Write a launch's (row, site, line) entries, in row order, to stdout; or hand them to
    `sink` (the MPI layer's `Launch.print_sink`, which writes every rank's on rank 0)."""
    if sink is not None:
        sink.collect(entries)
    elif entries:
        sys.stdout.write("\n".join(line for _, _, line in entries) + "\n")
        sys.stdout.flush()
