"""The `relsim` command: `relsim run NAME [args]`, `relsim list`, `relsim explain NAME`,
`relsim bench NAME [args]`, `relsim --version`."""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from importlib import metadata


def simulations() -> dict:
    """name -> module path, from the bundled `relsim_simulations` package (the repository's
    simulations/ folder, installed under a name no user's package has) and the entry-point
    group `relsim.simulations` (third-party simulations)."""
    found = {}
    try:
        import relsim_simulations as pkg
        for info in pkgutil.iter_modules(pkg.__path__):
            if not info.name.startswith("_"):
                found[info.name] = f"relsim_simulations.{info.name}"
    except ImportError:
        pass
    for ep in metadata.entry_points(group="relsim.simulations"):
        found[ep.name] = ep.value.split(":")[0]
    return found


def _load(name: str):
    sims = simulations()
    if name not in sims:
        raise SystemExit(f"relsim: no simulation {name!r}; available: "
                         f"{', '.join(sorted(sims)) or 'none'}")
    return importlib.import_module(sims[name])


def simulation_lines() -> list:
    """One line per simulation: its name and the first paragraph of its docstring."""
    found = sorted(simulations().items())
    width = max((len(name) for name, _ in found), default=0)
    lines = []
    for name, path in found:
        try:
            text = (importlib.import_module(path).__doc__ or "").strip()
            doc = " ".join(text.split("\n\n")[0].split())  # the first paragraph, one line
        except Exception as exc:  # a broken simulation must not hide the others
            doc = f"(cannot import: {exc})"
        lines.append(f"  {name:{width}s} {doc}")
    return lines


def cmd_list(_args) -> int:
    import relsim as rs
    print("simulations:")
    print("\n".join(simulation_lines()))
    print("targets:")
    for t in rs.targets():
        check = getattr(rs.target_registry.get(t), "unavailable", None)
        why = check() if check is not None else None
        print(f"  {t}" + (f"  (cannot run here: {why})" if why else ""))
    from .runtime.backends.cpu import threading_layer
    print(f"cpu threading layer: {threading_layer.report()}")
    from relsim import domains
    print("domains:")
    broken = domains.failures()
    for d in domains.available():
        print(f"  {d}" + (f"  (broken: it fails to import: {broken[d]})" if d in broken else ""))
    return 0


def cmd_run(args) -> int:
    from .errors import ConfigError, RelsimError, full_traceback
    from .runtime.parallel import world
    w = world.current()  # under mpiexec -n N: rank 0 prints, a failing rank ends them all
    if w is not None and w.rank != 0:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    elif w is not None:
        print(f"relsim run {args.name}: on {w.size} MPI ranks (rank 0 prints)", file=sys.stderr)
    mod = _load(args.name)
    where = "" if w is None else f" (rank {w.rank} of {w.size})"
    try:
        status = int(mod.main(args.args) or 0)
    except RelsimError as exc:  # bad input or a failed run: relsim's message, not its frames
        if full_traceback() or isinstance(exc, ConfigError):  # (a bad option: main says it)
            raise
        print(f"relsim run {args.name}{where}: {type(exc).__name__}: {exc}", file=sys.stderr)
        status = 1
    if w is not None and status != 0:
        world.abort(w, status)
    return status


def cmd_explain(args) -> int:
    import relsim as rs
    mod = _load(args.name)
    if not hasattr(mod, "kernels"):
        raise SystemExit(f"relsim: simulation {args.name!r} has no kernels() to explain")
    kernels = mod.kernels()  # [(name, kernel, relation)], on a small instance
    names = [n for n, _, _ in kernels]
    if args.kernel is not None and args.kernel not in names:
        print(f"relsim explain {args.name}: no kernel {args.kernel!r}; its kernels are "
              f"{', '.join(names)}", file=sys.stderr)
        return 2
    for name, kernel, relation in kernels:
        if args.kernel in (None, name):
            print(rs.explain(kernel, relation, full=args.full))
    return 0


def cmd_bench(args) -> int:
    # benchmarks time the parallel code from their first timed step: a launch compiles its
    # parallel variant before it runs (tiered start-up would run the serial one meanwhile)
    os.environ.setdefault("RELSIM_STARTUP", "wait")
    mod = _load(args.name)
    if not hasattr(mod, "bench"):
        raise SystemExit(f"relsim: simulation {args.name!r} has no benchmark (bench())")
    return int(mod.bench(args.args) or 0)


def _version() -> str:
    """relsim.__version__ (the installed distribution's version is read from it)."""
    import relsim
    return relsim.__version__


def run_help() -> str:
    """`relsim run --help`: the usage and the simulations one can run."""
    return "\n".join(["usage: relsim run NAME [options]   (relsim run NAME --help: NAME's options)",
                      "", "simulations:", *simulation_lines()])


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["run"] and (len(argv) == 1 or argv[1] in ("-h", "--help")):
        print(run_help())
        return 0 if len(argv) > 1 else 2
    p = argparse.ArgumentParser(prog="relsim", description="kernels over relations")
    p.add_argument("--version", action="version", version=f"relsim {_version()}")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a simulation", add_help=False)
    r.add_argument("name")
    r.add_argument("args", nargs=argparse.REMAINDER)
    r.set_defaults(fn=cmd_run)
    sub.add_parser("list", help="list simulations, targets and domains").set_defaults(
        fn=cmd_list)
    e = sub.add_parser("explain", help="say what a simulation's kernels do and how they run "
                       "(--full: every pipeline stage)")
    e.add_argument("name")
    e.add_argument("--kernel", metavar="NAME", help="only this kernel (an unknown name lists "
                   "the simulation's kernels)")
    e.add_argument("--full", action="store_true", help="also the typed IR, the locals and the "
                   "generated code")
    e.set_defaults(fn=cmd_explain)
    b = sub.add_parser("bench", help="benchmark a simulation against its peers", add_help=False)
    b.add_argument("name")
    b.add_argument("args", nargs=argparse.REMAINDER)
    b.set_defaults(fn=cmd_bench)
    args = p.parse_args(argv)
    import relsim as rs
    try:
        return args.fn(args)
    except rs.ConfigError as exc:  # a bad option (target, threads): one line, not a traceback
        print(f"relsim {args.cmd}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
