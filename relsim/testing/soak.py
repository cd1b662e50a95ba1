"""Differential soak: random kernels on random data, every target against `interp`, bit for bit.

    python -m relsim.testing.soak --cases 1000 [--kernels K] [--seed S] [--targets cpu,cpu-serial]
                                  [--threads T] [--only-kernel SEED [--only-data J]]

A *kernel* here is a random program (`random_kernels.program`: a module of one to three kernels
and a schedule of launches and host steps); a *case* is one random data set run through that
program on every target. Relations are built once per program and only their values are
reloaded per case (`field.load`), so each target compiles once per program. Each target runs on
a fresh load of the case's initial values; every field, every Global (value and arg row) and every
value the host read between launches must equal interp's bit for bit (NaN equals NaN whatever
its payload; -0.0 differs from 0.0). Exit status 1 if any case differs (or a generated kernel is
rejected, which is a generator or front-end bug), 0 otherwise.

A target named ``<target>+capture`` (``cpu+capture``, in the default list) runs each maximal
run of consecutive launches and control steps (`rs.assign`, `rs.while_loop` and `rs.cond` on
Globals: `random_control`) of the schedule as an `rs.capture` step: recorded at the program's
first case, replayed in every later one (the cpu's segments compiled at their first replay:
``segments="now"``); a case in which interp raised runs launch by launch instead.

Tests (and other harnesses) can inject a *runner* for a target, ``run(..., runners={name:
launch})`` with ``launch(kernel, space)`` running one launch (``space`` is a Relation or Subset);
the name need not be a registered target.
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import relsim as rs
from relsim import target_registry
from relsim.runtime.backends.cpu.scatter import SCHEMES as SCATTER_SCHEMES

from . import random_control as rc
from . import random_kernels as rk

_TYPES = {"f64": rs.f64, "f32": rs.f32, "i64": rs.i64, "i32": rs.i32, "bool": rs.bool_,
          "v3": rs.vec(3, rs.f64)}
_modules = itertools.count()


def default_targets() -> list:
    """Every registered target except interp (the oracle) and those that cannot run here (cuda
    without a GPU or its simulator), and the cpu target with each way of applying reductions
    through keys forced (``cpu:split``, ...; ``cpu`` alone chooses)."""
    names = [t for t in rs.targets() if t != "interp" and _runs_here(t)]
    if "cpu" in names:
        names += [f"cpu:{s}" for s in SCATTER_SCHEMES if s != "auto"] + ["cpu" + CAPTURE]
    return names


CAPTURE = "+capture"  # a target's runs of launches replayed as captured steps


def _runs_here(target: str) -> bool:
    check = getattr(target_registry.get(target), "unavailable", None)
    return check is None or check() is None


def kernel_seeds(seed: int, count: int) -> list:
    """The program seeds of a soak: a deterministic function of (seed, count)."""
    r = random.Random(seed)
    return [r.getrandbits(32) for _ in range(count)]


def module_from_source(source: str, name: str, workdir):
    """(module, path): `source` written to `workdir`/`name`.py and imported (kernels need a
    file their source can be read from, and a registered module)."""
    path = Path(workdir) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # inspect.getsource needs the module registered
    spec.loader.exec_module(mod)
    return mod, path


# -- one program, built once ---------------------------------------------------------------
class Env:
    """The relations, Globals and kernels of one program (built once, reloaded per case)."""

    def __init__(self, prog: rk.Program, workdir: Path):
        self.prog = prog
        self.modname = f"relsim_soak_{prog.seed:08x}_{next(_modules)}"
        mod, self.path = module_from_source(prog.source, self.modname, workdir)
        V, E = rs.Relation("V", prog.nv), rs.Relation("E", prog.ne)
        self.rels = {"V": V, "E": E}
        self.fields = {}
        for rel, table in (("V", rk.V_FIELDS), ("E", rk.E_FIELDS)):
            for name, (typ, _) in table.items():
                self.fields[f"{rel}.{name}"] = self.rels[rel].new_field(name, _TYPES[typ])
        self.keys = {}
        for (rel, name), (target, arity) in rk.KEY_FIELDS.items():
            self.keys[f"{rel}.{name}"] = self.rels[rel].new_key_field(name, self.rels[target],
                                                                      arity)
        if prog.grouping:
            E.group_by("head", rk.GROUPING)
        self.spaces = {"V": V, "E": E, "V.vsub": V.subset("vsub", prog.vsub),
                       "E.esub": E.subset("esub", prog.esub)}
        self.globals = {name: rs.Global(_TYPES[typ], (0.0,) * 3 if typ == "v3" else 0)
                        for name, (typ, _) in rk.GLOBALS.items()}
        self.kernels = mod.make(**self.globals)
        for q in prog.exposed:  # numpy() hands the storage out: never left pending from now on
            self.fields[q].numpy()

    def close(self) -> None:
        sys.modules.pop(self.modname, None)

    def load(self, data: rk.Data) -> None:
        for q, kf in self.keys.items():
            kf.load(data.keys[q])
        for q, f in self.fields.items():
            f.load(data.fields[q])
        for name, g in self.globals.items():
            g.value = data.globals[name]


def _derived(target: str, value):
    """What a `set` step assigns to Global `target` from another Global's value."""
    v = np.asarray(value).ravel()[0]
    if target == "gi":
        return int(v) % 97 if np.isfinite(v) else 5
    if target == "g32":
        return np.float32(v)
    return float(v) * 0.5


def execute(env: Env, data: rk.Data, launch, captured: dict | None = None) -> list:
    """Run the program's schedule on `data` with `launch(kernel, space)`; the observations:
    a list of (label, array or exception text). With `captured` (a dict kept per program and
    target), each run of consecutive launches is an `rs.capture` step kept there: recorded the
    first time, replayed after."""
    prog, out = env.prog, []
    env.load(data)
    runs = _launch_runs(prog.schedule) if captured is not None else {}
    for i, step in enumerate(prog.schedule):
        kind = step[0]
        try:
            if i in runs:  # the first launch of a run: the whole run, captured
                _captured_run(env, prog.schedule[i:runs[i]], launch, captured, i)
            elif kind in _RECORDED and runs:
                pass  # (ran with its run)
            elif kind in _RECORDED:
                _run(env, step, launch)
            elif kind == "read":
                g = env.globals[step[1]]
                out.append((f"step {i}: {step[1]}.value", np.array(g.value)))
                if rk.GLOBALS[step[1]][1] in ("argmin", "argmax"):
                    out.append((f"step {i}: {step[1]}.row", np.array(g.row)))
            elif kind == "set":
                src = np.array(env.globals[step[2]].value)
                out.append((f"step {i}: {step[2]}.value", src))
                env.globals[step[1]].value = _derived(step[1], src)
            elif kind == "reset":
                env.globals[step[1]].value = data.globals[step[1]]
            elif kind == "peek":
                out.append((f"step {i}: {step[1]}.numpy(copy=True)",
                            env.fields[step[1]].numpy(copy=True)))
        except Exception as exc:  # noqa: BLE001 - an exception is an observation too
            out.append((f"step {i}: {rk.format_step(step)} raised", exc))
            return out
    try:
        for q, f in env.fields.items():
            out.append((q, f.numpy(copy=True)))
        for name, g in env.globals.items():
            out.append((f"{name}.value", np.array(g.value)))
            if rk.GLOBALS[name][1] in ("argmin", "argmax"):
                out.append((f"{name}.row", np.array(g.row)))
    except Exception as exc:  # noqa: BLE001
        out.append(("reading results raised", exc))
    return out


_RECORDED = rc.KINDS | {"launch"}  # the steps a capture records


def _run(env: Env, step, launch) -> None:
    """A launch or a control step (`random_control`), launches by `launch`."""
    kind = step[0]
    if kind == "launch":
        launch(env.kernels[step[1]], env.spaces[step[2]])
        return
    if kind == "assign":
        rs.assign(env.globals[step[1]], rc.expression(step[2], env.globals))
        return

    def body(steps):
        def run():
            for s in steps:
                _run(env, s, launch)
        return run

    if kind == "loop":
        _, cond, limit, count, steps = step
        rs.while_loop(None if cond is None else rc.expression(cond, env.globals), body(steps),
                      limit, count=None if count is None else env.globals[count])
        return
    _, cond, then, otherwise = step
    rs.cond(rc.expression(cond, env.globals), body(then),
            None if otherwise is None else body(otherwise))


def _launch_runs(schedule) -> dict:
    """{index of a run's first step: the index after its last} for every maximal run of
    consecutive launches and control steps (what a capture records)."""
    runs, i = {}, 0
    while i < len(schedule):
        if schedule[i][0] not in _RECORDED:
            i += 1
            continue
        j = i
        while j < len(schedule) and schedule[j][0] in _RECORDED:
            j += 1
        runs[i] = j
        i = j
    return runs


def _captured_run(env: Env, steps, launch, captured: dict, first: int) -> None:
    step = captured.get(first)
    if step is not None:
        step()
        return
    with rs.capture() as step:
        for s in steps:
            _run(env, s, launch)
    captured[first] = step


# -- comparison ----------------------------------------------------------------------------
def _row_mask(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row (axis 0; one row for a scalar): does any component differ bitwise? NaN equals
    NaN, whatever its payload."""
    a2 = a.reshape(1, -1) if a.ndim == 0 else a.reshape(a.shape[0], -1)
    b2 = b.reshape(1, -1) if b.ndim == 0 else b.reshape(b.shape[0], -1)
    if a.dtype.kind == "f":
        u = np.dtype(f"u{a.dtype.itemsize}")
        neq = (a2.view(u) != b2.view(u)) & ~(np.isnan(a2) & np.isnan(b2))
    else:
        neq = a2 != b2
    return neq.any(axis=1)


def _fmt(x) -> str:
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        vals = [f"{float(v)!r} ({float(v).hex()})" for v in arr.ravel()]
        return vals[0] if arr.ndim == 0 else "[" + ", ".join(vals) + "]"
    return repr(arr.tolist())


def _exc_text(exc) -> str:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"


def first_difference(ref: list, got: list, target: str) -> str | None:
    """None if the observations agree; else a description of the first difference."""
    for n, (r, g) in enumerate(itertools.zip_longest(ref, got)):
        if r is None or g is None or r[0] != g[0]:
            return (f"observation {n}: interp has {r[0] if r else 'nothing'!s}, {target} has "
                    f"{g[0] if g else 'nothing'!s}" +
                    (f" ({_exc_text(g[1])})" if g and isinstance(g[1], BaseException) else "") +
                    (f" (interp: {_exc_text(r[1])})" if r and isinstance(r[1], BaseException)
                     else ""))
        (label, a), (_, b) = r, g
        if isinstance(a, BaseException) or isinstance(b, BaseException):
            if not (isinstance(a, BaseException) and isinstance(b, BaseException)
                    and type(a) is type(b)):
                return f"{label}: interp {a!r}, {target} {b!r}"
            continue
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{label}: interp {a.dtype}{a.shape}, {target} {b.dtype}{b.shape}"
        rows = np.flatnonzero(_row_mask(a, b))
        if len(rows):
            k = int(rows[0])
            where = f" row {k}" if a.ndim else ""
            return (f"{label}{where} ({len(rows)} row(s) differ): interp "
                    f"{_fmt(a[k] if a.ndim else a)}, {target} {_fmt(b[k] if b.ndim else b)}")
    return None


# -- the soak ------------------------------------------------------------------------------
@dataclass
class Mismatch:
    program_seed: int
    data_index: int
    target: str
    detail: str
    source: str
    schedule: str

    def report(self) -> str:
        return (f"MISMATCH: target {self.target}, program seed {self.program_seed}, data index "
                f"{self.data_index}\n  first difference: {self.detail}\n"
                f"  reproduce: python -m relsim.testing.soak --only-kernel {self.program_seed} "
                f"--only-data {self.data_index} --targets {self.target}\n"
                f"{self.schedule}\n  kernel module:\n" +
                "".join(f"    {ln}\n" for ln in self.source.splitlines()))


@dataclass
class SoakResult:
    cases: int = 0  # data sets run (each on every target)
    kernels: int = 0  # programs
    targets: list = field(default_factory=list)
    mismatch_count: int = 0  # (case, target) pairs that differ from interp
    mismatches: list = field(default_factory=list)  # the first few, in detail
    errors: list = field(default_factory=list)  # (program seed, text): rejected programs
    wall: float = 0.0

    @property
    def ok(self) -> bool:
        return self.mismatch_count == 0 and not self.errors

    def summary(self) -> str:
        return (f"soak: {self.cases} cases, {self.kernels} kernels, targets "
                f"{','.join(self.targets)} vs interp: {self.mismatch_count} mismatch(es), "
                f"{len(self.errors)} rejected kernel(s), {self.wall:.1f} s")


def launchers(targets, threads=None, runners=None) -> dict:
    """target name -> launch(kernel, space); runners override (or add) targets."""
    out = {}
    for t in targets:
        if runners and t in runners:
            out[t] = runners[t]
            continue
        base = t.removesuffix(CAPTURE)
        name, _, scheme = base.partition(":")  # "cpu:split": Config(target="cpu", scatter="split")
        opts = {"target": name}
        if scheme:
            opts["scatter"] = scheme
        if t != base and name.startswith("cpu"):
            opts["segments"] = "now"  # (compiled at the first replay: what the soak checks)
        if name == "cpu":
            opts["parallel_threshold"] = 1  # the parallel variants run even at small sizes
        if threads is not None and name != "interp":
            opts["threads"] = threads
        cfg = rs.Config(**opts)
        out[t] = (lambda c: lambda k, space: space.foreach(k, c))(cfg)
    return out


@dataclass
class _Settings:
    """What every part of one soak shares (picklable: worker processes get a copy)."""
    targets: list
    threads: int | None
    min_rows: int
    max_rows: int
    max_report: int
    progress: bool
    keep_dir: str | None
    total_cases: int
    total_kernels: int


def run(cases: int, kernels: int | None = None, seed: int = 0, targets=None, *,
        threads: int | None = None, runners: dict | None = None,
        only_kernel: int | None = None, only_data: int | None = None,
        min_rows: int = 20, max_rows: int = 300, max_report: int = 3, out=None,
        progress: bool = True, keep_dir: str | None = None,
        per_process: int = 0) -> SoakResult:
    """Run the soak: `cases` data sets spread over `kernels` random programs (default
    max(1, cases // 50)), every target in `targets` against interp. Prints progress and
    mismatch reports to `out` (default stdout); returns the counts.

    `runners` maps target names to ``launch(kernel, space)`` callables that replace (or add)
    targets. With ``per_process=N`` (and no runners) the programs run N at a time in fresh
    worker processes, which bounds memory (Numba never frees compiled code) and turns a crash
    of compiled code into a reported error instead of the end of the soak."""
    out = out or sys.stdout
    t0 = time.perf_counter()
    targets = list(targets) if targets is not None else default_targets()
    if runners:
        targets += [t for t in runners if t not in targets]
    if only_kernel is not None:
        plan = [(only_kernel, [only_data] if only_data is not None else list(range(cases)))]
    else:
        nk = max(1, min(cases, kernels if kernels is not None else max(1, cases // 50)))
        plan = [(s, list(range(cases // nk + (k < cases % nk))))
                for k, s in enumerate(kernel_seeds(seed, nk))]
    total = sum(len(ix) for _, ix in plan)
    st = _Settings(targets, threads, min_rows, max_rows, max_report, progress, keep_dir, total,
                   len(plan))
    res = SoakResult(targets=targets)
    if progress:
        print(f"soak: {total} cases over {len(plan)} kernel(s), seed {seed}, targets "
              f"{','.join(targets)} vs interp", file=out, flush=True)
    if not per_process or runners or len(plan) <= per_process:
        _run_plan(plan, 0, st, res, 0.0, out, runners)
    else:
        import concurrent.futures as cf
        import multiprocessing as mp
        for lo in range(0, len(plan), per_process):
            chunk = plan[lo:lo + per_process]
            with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
                fut = pool.submit(_run_in_worker, chunk, lo, st, res,
                                  time.perf_counter() - t0)
                try:
                    res = fut.result()
                except Exception as exc:  # noqa: BLE001 - a crashed worker is a finding
                    seeds = ", ".join(str(sd) for sd, _ in chunk)
                    res.errors.append((chunk[0][0], f"worker process failed: {exc!r}"))
                    print(f"ERROR: the worker running program seeds {seeds} failed: {exc!r}",
                          file=out, flush=True)
    res.wall = time.perf_counter() - t0
    return res


def _run_in_worker(plan, first, st, res, elapsed):
    return _run_plan(plan, first, st, res, elapsed, sys.stdout, None)


def _run_plan(plan, first: int, st: _Settings, res: SoakResult, elapsed: float, out,
              runners) -> SoakResult:
    """Run programs plan[...] (numbered from `first`), adding to `res`."""
    t0 = time.perf_counter() - elapsed
    launch = launchers(st.targets, st.threads, runners)
    reference = launchers(["interp"])["interp"]

    def say(msg):
        if st.progress:
            print(msg, file=out, flush=True)

    last_note = time.perf_counter()
    tmp = None if st.keep_dir else tempfile.TemporaryDirectory(prefix="relsim-soak-")
    workdir = Path(st.keep_dir or tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        for pk, (pseed, indices) in enumerate(plan, first):
            prog = rk.program(pseed, st.min_rows, st.max_rows)
            try:
                env = Env(prog, workdir)
            except Exception as exc:  # noqa: BLE001
                res.errors.append((pseed, f"building the program failed: {_exc_text(exc)}"))
                say(f"ERROR: program seed {pseed} could not be built: {_exc_text(exc)}\n"
                    f"{prog.source}")
                continue
            res.kernels += 1
            steps = {}  # target -> its captured runs of launches (`execute`)
            try:
                for j in indices:
                    d = rk.data(prog, j)
                    ref = execute(env, d, reference)
                    bad = next((o for o in ref if isinstance(o[1], rs.KernelError)), None)
                    if bad is not None:
                        res.errors.append((pseed, f"{bad[0]}: {bad[1]}"))
                        say(f"ERROR: program seed {pseed}: interp rejected a generated kernel "
                            f"({bad[0]}):\n{bad[1]}\n{prog.source}")
                        break
                    res.cases += 1
                    raised = any(isinstance(o[1], Exception) for o in ref)
                    for t in st.targets:
                        captured = None if not t.endswith(CAPTURE) or raised else \
                            steps.setdefault(t, {})
                        diff = first_difference(ref, execute(env, d, launch[t], captured), t)
                        if diff is None:
                            continue
                        res.mismatch_count += 1
                        if len(res.mismatches) < st.max_report:
                            m = Mismatch(pseed, j, t, diff, prog.source, prog.describe())
                            res.mismatches.append(m)
                            say(m.report())
                    now = time.perf_counter()
                    if now - last_note > 60:
                        last_note = now
                        say(f"soak: kernel {pk + 1}/{st.total_kernels}, {res.cases}/"
                            f"{st.total_cases} cases, {res.mismatch_count} mismatch(es), "
                            f"{now - t0:.0f} s")
            finally:
                env.close()
            n = st.total_kernels
            if n >= 10 and (pk + 1) % max(1, n // 10) == 0:
                last_note = time.perf_counter()
                say(f"soak: {pk + 1}/{n} kernels, {res.cases}/{st.total_cases} cases, "
                    f"{res.mismatch_count} mismatch(es), {last_note - t0:.0f} s")
    finally:
        if tmp is not None:
            tmp.cleanup()
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m relsim.testing.soak", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=100, help="data sets in all (default 100)")
    p.add_argument("--kernels", type=int, default=None,
                   help="distinct random programs (default max(1, cases // 50))")
    p.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    p.add_argument("--targets", default=None,
                   help="comma-separated targets to compare with interp (default: every "
                        "registered target but interp)")
    p.add_argument("--threads", type=int, default=None, help="threads for compiled targets")
    p.add_argument("--only-kernel", type=int, default=None, metavar="SEED",
                   help="run only the program with this seed (as printed for a mismatch)")
    p.add_argument("--only-data", type=int, default=None, metavar="J",
                   help="with --only-kernel: only data set J (else data sets 0..cases-1)")
    p.add_argument("--min-rows", type=int, default=20)
    p.add_argument("--max-rows", type=int, default=300)
    p.add_argument("--max-report", type=int, default=3,
                   help="mismatches reported in full (default 3)")
    p.add_argument("--per-process", type=int, default=20, metavar="N",
                   help="run N programs per fresh worker process (bounds memory; 0: all in "
                        "this process; default 20)")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="write the generated kernel modules to DIR and keep them")
    p.add_argument("--show", type=int, default=None, metavar="SEED",
                   help="print the program with this seed and exit")
    a = p.parse_args(argv)
    if a.show is not None:
        prog = rk.program(a.show, a.min_rows, a.max_rows)
        print(prog.describe())
        print(prog.source)
        return 0
    targets = [t for t in a.targets.split(",") if t] if a.targets else None
    res = run(a.cases, a.kernels, a.seed, targets, threads=a.threads,
              only_kernel=a.only_kernel, only_data=a.only_data, min_rows=a.min_rows,
              max_rows=a.max_rows, max_report=a.max_report, keep_dir=a.keep,
              per_process=a.per_process)
    print(res.summary(), flush=True)
    if res.mismatch_count > len(res.mismatches):
        print(f"(only the first {len(res.mismatches)} mismatches are shown)")
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
