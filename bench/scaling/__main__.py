"""`python -m bench.scaling lulesh|airfoil [options]` from the repository root (or
`python bench/scaling ...` from anywhere): the scaling model (see `bench/scaling/__init__.py`)."""
from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # `python bench/scaling`: import bench.scaling from the repository instead
    sys.path[0] = str(Path(__file__).resolve().parents[2])

from bench.scaling import SIMULATIONS, simulation  # noqa: E402


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in SIMULATIONS:
        usage = (f"usage: python -m bench.scaling {{{','.join(SIMULATIONS)}}} [options]   "
                 "(NAME --help: the options)")
        if argv[:1] in (["-h"], ["--help"]):
            print(usage)
            return 0
        print(usage, file=sys.stderr)
        return 2
    from bench.scaling import command
    return command.run(simulation(argv[0]), argv[1:])


if __name__ == "__main__":
    sys.exit(main())
