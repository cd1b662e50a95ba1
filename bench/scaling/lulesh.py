"""LULESH's part of the scaling model (`bench.scaling`): the problem of size s (s^3
hexahedral elements, the reference's 11 regions and costs), one cycle (TimeIncrement and
LagrangeLeapFrog), and the weak-scaling rule (the global s grows as P^(1/3), as when each rank of
the reference runs its own s^3 domain)."""
from __future__ import annotations

NAME = "LULESH"
KEY = "lulesh"
DIM = 3
ROWS = "elements"
STRONG = 30  # strong scaling: the global problem (s=30, `relsim bench lulesh`'s default)
WEAK = 30  # weak scaling: elements per rank = WEAK^3 (the reference's default -s 30)
TINY = 4  # the per-launch fixed cost is timed on this size
VALIDATE = 10  # mpiexec runs that count the bytes exchanged
NOTE = ("The partition modelled is the runtime's (`partition.owners`): nodes and elements are "
        "bisected (RCB) on the mesh geometry the hexmesh domain registers (node coordinates, "
        "element centroids) as they are at the first launch, so ranks own 3-D blocks; the "
        "extrapolation beyond the exact points follows the 3-D surface law of such blocks.")


def parse(text: str) -> int:
    return int(text)


def describe(size: int) -> str:
    return f"s={size} ({size ** 3} elements)"


def rows(size: int) -> int:
    return size ** 3


def weak_size(per_rank: int, nranks: int) -> int:
    """The global s whose s^3 elements are nearest nranks * per_rank^3."""
    return max(1, round(per_rank * nranks ** (1.0 / 3.0)))


def make(size: int):
    """(elements, step): a fresh problem, and a function that runs one cycle of it."""
    from relsim_simulations.lulesh.problem import Lulesh
    L = Lulesh(size)

    def step():
        L.time_increment()
        L.lagrange_leapfrog()
    return size ** 3, step
