"""A hint at a loop that should be static: ``for i in range(9):`` whose trip count is a
compile-time constant and whose body indexes a constant tuple captured from the script by the
loop variable (``EX[i]``, a lattice's velocities). As a run-time loop each ``EX[i]`` is looked
up while the kernel runs, so a grid offset ``c(-EX[i], -EY[i])`` is not a constant: the loop
runs 18-24x slower than the same loop unrolled (the same bits), and under MPI the kernel reads
rows at unknown offsets. ``for i in rs.static(range(9)):`` unrolls it; relsim says so at the
line, once (a `RelsimWarning`), rather than unrolling on its own: a static loop variable is a
constant, so arithmetic with it may take other types than with a run-time i64.
"""
from __future__ import annotations

import ast
import warnings

import numpy as np

from ...errors import KernelError, RelsimWarning
from . import static

_SAID: dict = {}  # warnings' registry: each line's hint is given once per process


def check(fe, loop: ast.For, scope) -> None:
    """Warn if `loop` (a ``for <name> in range(...)``) is one to write with rs.static."""
    var = loop.target.id
    bounds = [static.constant(fe, a, scope) for a in loop.iter.args]
    if any(b is static.NOT_STATIC or not isinstance(b, int | np.integer) for b in bounds):
        return
    try:
        trips = len(range(*bounds))
    except (TypeError, ValueError):
        return
    if not 0 < trips <= static.MAX_UNROLL:
        return
    table = _indexed_constant(fe, loop.body, var, scope)
    if table is None:
        return
    loc = scope.src.loc(loop)
    args = ", ".join(ast.unparse(a) for a in loop.iter.args)
    warnings.warn_explicit(
        f"in kernel '{fe.kernel_name}': this loop runs at run time although its trip count is "
        f"a constant and it indexes the constant {table}[{var}]; write `for {var} in "
        f"rs.static(range({args})):` to unroll it (the same results, each {table}[{var}] a "
        f"constant: much faster, and grid offsets MPI can exchange halos for)\n{loc.render()}",
        RelsimWarning, loc.filename, loc.line, registry=_SAID)


def _indexed_constant(fe, body, var, scope) -> str | None:
    """The name of a captured constant tuple / list / array the body subscripts by `var`."""
    for stmt in body:
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                    and any(isinstance(n, ast.Name) and n.id == var
                            for n in ast.walk(node.slice))):
                continue
            name = node.value.id
            if not scope.is_static(name):
                continue
            try:
                value = static.constant(fe, node.value, scope)
            except KernelError:
                continue
            if isinstance(value, tuple | list) or \
                    isinstance(value, np.ndarray) and value.ndim >= 1:
                return name
    return None
