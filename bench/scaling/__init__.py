"""The scaling model on paper: predicted strong and weak scaling of LULESH and Airfoil on MPI
ranks, from one process's measured launch costs and the exact per-rank ghost traffic of the
runtime's own partitions. A tool, not a simulation; from the repository root:

    python -m bench.scaling lulesh [--size 30 --markdown docs/benchmarks/history.md ...]
    python -m bench.scaling airfoil [--size 400x600 ...]      (--help: the options)

`command` (the command and its report), `model` (the cost model), `traffic` (per-rank work and
ghost traffic from the partitions, without MPI), `validate` (that traffic against `mpiexec -n N`
runs); `lulesh` and `airfoil`: each simulation's part (its problem, one cycle, weak scaling)."""
from __future__ import annotations

import importlib

SIMULATIONS = ("lulesh", "airfoil")


def simulation(key: str):
    """The module of simulation `key`'s part of the model (`lulesh`, `airfoil`)."""
    if key not in SIMULATIONS:
        raise ValueError(f"no scaling model for {key!r}; there is one for "
                         f"{', '.join(SIMULATIONS)}")
    return importlib.import_module(f"{__name__}.{key}")
