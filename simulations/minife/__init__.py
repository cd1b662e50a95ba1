"""miniFE 2.0 (Mantevo's implicit finite-element proxy app): hex8 diffusion on a brick, by CG.

`relsim run minife -nx N [-ny N] [-nz N] [-verify_solution 1]` assembles the reference's linear
system (a brick of nx x ny x nz hex8 elements, the 27-point matrix structure, diffusion element
matrices and source vectors, Dirichlet faces) into a `relsim.linalg.SparseMatrix` by an element
kernel and solves it with `relsim.linalg.cg` as the reference does (200 iterations at most,
tolerance machine epsilon), printing the reference's progress lines and its YAML summary.
relsim's options: ``--target``, ``--threads``, ``--yaml PATH`` (also write the summary there).
`relsim bench minife --reference PATH` runs the reference side by side (see `benchmark.py`).

CG's dot products are exact sums here (the reference sums in row order): the iterates are the
same on every target, thread count and rank count, and they differ from the reference's in the
last bits, which on this very symmetric problem can change the residual history visibly (see
docs/benchmarks/history.md, "miniFE").
"""
from __future__ import annotations


def main(argv=None) -> int:
    from .command import main as _main
    return _main(argv)


def bench(argv=None) -> int:
    from .benchmark import main as _main
    return _main(argv)


def kernels() -> list:
    """(name, kernel, relation) of the element kernel, on a 2 x 2 x 2 brick."""
    from .problem import MiniFE
    fe = MiniFE(2, 2, 2)
    return [("element", fe.element, fe.elems)]
