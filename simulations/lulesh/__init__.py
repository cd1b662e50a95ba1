"""LULESH 2.0 (Sedov blast on a hex mesh), bit-exact with the LLNL serial reference.

`relsim run lulesh -s N -i K -r R -b B -c C -p -q` takes the reference's options and prints its
report; `relsim bench lulesh --reference PATH` compares with a reference binary;
`python -m bench.scaling lulesh` (a tool in the repository's bench/) predicts strong and weak
scaling on MPI ranks. The domain is `relsim.domains.hexmesh.box(s)`; every per-node and
per-element loop of the reference is a relsim kernel (`nodal`, `elements`), and only
TimeIncrement's scalar logic is Python (`problem`).
"""
from __future__ import annotations

import sys


def main(argv=None) -> int:
    from .command import main as _main
    return _main(argv)


def bench(argv=None) -> int:
    if argv and "--model" in argv:  # the scaling model moved to bench/scaling/
        print("relsim bench lulesh --model: the scaling model is a tool of the repository now: "
              "python -m bench.scaling lulesh [options]", file=sys.stderr)
        return 2
    from .benchmark import main as _main
    return _main(argv)


def kernels() -> list:
    """(name, kernel, relation) of each kernel, on s=2 (`relsim explain lulesh`)."""
    from .problem import Lulesh
    L = Lulesh(2, num_reg=1)
    nodal = ("zero_forces", "acceleration", "velocity", "position", "symmetry_x", "symmetry_y",
             "symmetry_z")
    return [(name, k, L.nodes if name in nodal else L.elems) for name, k in L.k.items()]
