"""Airfoil's part of the scaling model (`bench.scaling`): the NACA0012 mesh of I x J
(3 I J cells), one iteration of a one-iteration run (save_soln and adt_calc, then twice
res_calc, bres_calc and update with its Global rms sum, the first update fused with the second
stage's adt_calc), and the weak-scaling rule (I and J grow as sqrt(P): a 2-D mesh)."""
from __future__ import annotations

NAME = "Airfoil"
KEY = "airfoil"
DIM = 2
ROWS = "cells"
STRONG = (400, 600)  # the standard 720 000-cell mesh
WEAK = (100, 150)  # weak scaling: 45 000 cells per rank
TINY = (4, 6)  # the per-launch fixed cost is timed on this size
VALIDATE = (60, 40)  # mpiexec runs that count the bytes exchanged
NOTE = ("The partition modelled is the runtime's: nodes by RCB on their coordinates x; cells, "
        "edges and boundary edges with the node their first key names.")


def parse(text: str) -> tuple:
    i, j = text.lower().replace(",", "x").split("x")
    return int(i), int(j)


def describe(size) -> str:
    return f"I={size[0]} J={size[1]} ({rows(size)} cells)"


def rows(size) -> int:
    return 3 * size[0] * size[1]


def weak_size(per_rank, nranks: int) -> tuple:
    """I and J times sqrt(nranks): about nranks times the cells of `per_rank`."""
    f = nranks ** 0.5
    return max(1, round(per_rank[0] * f)), max(2, round(per_rank[1] * f))


def make(size):
    """(cells, step): a fresh Airfoil on the generated mesh, and a function that runs one
    iteration of it."""
    from relsim_simulations.airfoil import solver
    af = solver.build(solver.op2mesh.naca_mesh(*size))
    return af.cells.size, lambda: solver.solve(af, 1)
