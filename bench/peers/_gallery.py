"""What the gallery's peer benchmarks share (bench/peers/fem_beam.py, cloth_sheet.py, ...):
the command line, loading a peer, the answer check, the interleaved timing at each thread
count, kernel line counts, and the table.

A benchmark describes itself with a `Gallery`: its name, the sizes, and `case(n)`, which
returns a `Case`: relsim's variant (an object with ``load(*start)``, ``step()``, ``state()``),
the arrays every peer gets, the common start, the Numba variants (name -> class taking the
arrays), and the kernel line counts of relsim's and Numba's versions. Taichi's and Warp's
modules (``_taichi_<suffix>.py``, ``_warp_<suffix>.py``) define a class `cls_name` taking the
arrays (Taichi's also ``threads``) and functions ``forces``-like kernels listed in
`peer_kernels`, whose lines are counted.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import io
import pathlib
import sys
import time
import tokenize
from dataclasses import dataclass, field

import _common as C
import numba
import numpy as np

import relsim as rs

PEERS = ("numba", "taichi", "warp")


@dataclass
class Case:
    relsim: object
    arrays: dict
    start: tuple
    numba: dict  # name -> class(**arrays)
    header: str  # one line: the problem's size
    serial: tuple = ("numba serial", "warp")  # variants that run on one thread whatever t
    period: float | None = None  # positions wrap with this period (a periodic box)


@dataclass
class Gallery:
    name: str  # `relsim bench NAME`
    title: str  # the chart's title and the markdown section's
    suffix: str  # _taichi_<suffix>.py, _warp_<suffix>.py
    cls_name: str  # the peers' class
    sizes: list
    case: object  # n -> Case
    relsim_lines: object  # () -> int
    numba_lines: dict  # variant -> int
    peer_kernels: tuple  # names of the Taichi / Warp kernel functions to count
    what: str  # a sentence: what one step is
    number: int = 50
    check_steps: int = 200
    notes: list = field(default_factory=list)
    # relsim's step is a sequence of launches `rs.capture` replays: also timed captured
    capturable: bool = False


class Captured:
    """relsim's variant with its step captured (`rs.capture`) at the first step after each
    load, its segments compiled then (not in the background: the timing is of the compiled
    replay)."""

    def __init__(self, inner):
        self.inner, self.step_ = inner, None

    def load(self, *start):
        self.inner.load(*start)
        self.step_ = None  # (captured again under this thread count's configuration)

    def step(self):
        if self.step_ is None:
            with rs.capture() as self.step_:
                self.inner.step()
            self.step_.compile()
        else:
            self.step_()

    def state(self):
        return self.inner.state()


def kernel_lines(path, names) -> int:
    """Non-blank, non-comment lines of the functions called `names` (at any depth) in the
    source file `path`, from their ``def`` line to their end; docstrings count as comments."""
    src = pathlib.Path(path).read_text()
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
            code.update(range(tok.start[0], tok.end[0] + 1))
    total = 0
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            lines = set(range(node.lineno, node.end_lineno + 1)) & code
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value,
                                                                     ast.Constant):
                lines -= set(range(body[0].lineno, body[0].end_lineno + 1))
            total += len(lines)
    return total


def load_peer(name, suffix):
    """The peer's module, or None after one line saying why it is skipped."""
    if importlib.util.find_spec(name) is None:
        print(f"{name} not installed: skipped")
        return None
    try:
        return importlib.import_module(f"_{name}_{suffix}")
    except Exception as exc:  # installed but broken (e.g. no wheel for this platform's libs)
        print(f"{name} cannot be imported ({type(exc).__name__}: {exc}): skipped")
        return None


def bits(a):
    return np.ascontiguousarray(a).view(np.uint64)


def run_size(g: Gallery, n, args, taichi, warp):
    """Check and time every variant at size n: (results, checks, failed, header)."""
    rs.configure(target="cpu", threads=args.threads[0])
    t0 = time.perf_counter()
    case = g.case(n)
    header = f"{case.header}; set-up {time.perf_counter() - t0:.1f} s"
    print(header, flush=True)
    fixed = {}
    if "numba" in args.peers:
        fixed.update({name: cls(**case.arrays) for name, cls in case.numba.items()})
    if warp is not None:
        fixed["warp"] = getattr(warp, g.cls_name)(**case.arrays)
    results, checks, failed, first, scale = {}, [], False, None, None
    for t in args.threads:
        rs.configure(target="cpu", threads=t)  # also numba.set_num_threads(t)
        variants = {"relsim": case.relsim, **fixed}
        if g.capturable:
            variants["relsim captured"] = Captured(case.relsim)
        if taichi is not None:
            variants["taichi"] = getattr(taichi, g.cls_name)(threads=t, **case.arrays)
        states = {}
        for name, v in variants.items():  # the check, also the warm-up (compilation)
            v.load(*case.start)
            for _ in range(args.check_steps):
                v.step()
            states[name] = v.state()
        x_rel = states["relsim"][0]

        def apart(a, b):
            d = a - b
            return np.abs(d - case.period * np.round(d / case.period) if case.period else d)

        if first is None:
            first = bits(x_rel)
            scale = apart(x_rel, case.start[0]).max()
        else:
            same = np.array_equal(first, bits(x_rel))
            checks.append(f"n={n}, {t} threads: relsim identical to its {args.threads[0]}-thread "
                          f"answer bit for bit: {'yes' if same else 'NO'}")
            failed |= not same
        if g.capturable:
            same = np.array_equal(bits(states["relsim captured"][0]), bits(x_rel))
            checks.append(f"n={n}, {t} threads: relsim captured identical to relsim bit for "
                          f"bit: {'yes' if same else 'NO'}")
            failed |= not same
        for name, (x, *_) in states.items():
            if name.startswith("relsim"):
                continue
            dev = apart(x, x_rel).max() / scale
            ok = dev <= args.tolerance
            checks.append(f"n={n}, {t} thread(s): {name}: max |x - x_relsim| / largest "
                          f"displacement = {dev:.1e} after {args.check_steps} steps "
                          f"({'within' if ok else 'OUTSIDE'} {args.tolerance:g})")
            failed |= not ok
        res = C.interleaved({name: v.step for name, v in variants.items()},
                            args.repeats, args.number)
        for name, samples in res.items():
            results[(name, t)] = samples
            print(f"  n={n}, {t} thread(s): {name:13s} min {C.us(min(samples))} us/step, "
                  f"median {C.us(C.summary(samples)[1])}", flush=True)
    return results, checks, failed, header, case.serial


def main(g: Gallery, argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"relsim bench {g.name}",
                                 description=f"{g.title}: relsim against its peers")
    ap.add_argument("--n", type=int, nargs="+", default=list(g.sizes),
                    help=f"problem sizes (default {' '.join(map(str, g.sizes))}: the "
                    f"gallery's, and about a tenth of it)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=15, help="timed samples per variant")
    ap.add_argument("--number", type=int, default=g.number, help="steps per timed sample")
    ap.add_argument("--check-steps", type=int, default=g.check_steps,
                    help="steps from the common start for the answer check")
    ap.add_argument("--tolerance", type=float, default=1e-8,
                    help="max |x - x_relsim| / largest displacement allowed for the peers")
    ap.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS,
                    help="peers to time besides relsim (default: all)")
    ap.add_argument("--markdown", metavar="PATH",
                    help="update this benchmark's section of a markdown file")
    C.add_chart_argument(ap, f"peers_{g.name}")
    args = ap.parse_args(argv)
    nmax = numba.config.NUMBA_NUM_THREADS
    if max(args.threads) > nmax or min(args.threads) < 1:
        raise SystemExit(f"--threads must lie in 1..NUMBA_NUM_THREADS={nmax}")
    taichi = load_peer("taichi", g.suffix) if "taichi" in args.peers else None
    warp = load_peer("warp", g.suffix) if "warp" in args.peers else None
    lines = {"relsim": g.relsim_lines(), **g.numba_lines}
    for name, mod in (("taichi", taichi), ("warp", warp)):
        if mod is not None:
            lines[name] = kernel_lines(mod.__file__, g.peer_kernels)

    results, checks, failed, heads, serial = {}, [], False, [], ()
    try:
        for n in args.n:
            r, c, f, head, serial = run_size(g, n, args, taichi, warp)
            results.update({(n,) + k: v for k, v in r.items()})
            checks += c
            failed |= f
            heads.append(head)
    finally:
        rs.configure(threads=None)

    names = list(dict.fromkeys(name for _, name, _ in results))
    rows = []
    for n in args.n:
        for t in args.threads:
            base = results[(n, "relsim", t)]
            for name in names:
                s = results[(n, name, t)]
                lo, med = C.summary(s)
                threads = "1 (serial)" if name in serial else str(t)
                rows.append([n, t, name, threads, C.us(lo), C.us(med),
                             f"{lo / min(base):.2f}", f"{C.paired_ratio(s, base):.2f}",
                             lines.get(name, "")])
    versions = [f"Numba {numba.__version__}"]
    if taichi is not None:
        versions.append(f"Taichi {taichi.VERSION}")
    if warp is not None:
        versions.append(f"Warp {warp.VERSION}")
    headers = ["n", "--threads", "variant", "threads used", "min us/step", "median us/step",
               "/ relsim (of mins)", "/ relsim (median of pairs)", "kernel lines"]
    tab = C.table(headers, rows)
    cmd = " ".join([f"relsim bench {g.name}", *(argv if argv is not None else sys.argv[1:])])
    out = [f"Command: `{cmd}`.", f"Machine: {C.machine_line()}; {', '.join(versions)}.",
           *[f"{h.split('; set-up')[0]}." for h in heads],
           f"One step = {g.what} (f64). Time per step: min and median over {args.repeats} "
           f"interleaved samples of {args.number} steps; the ratios are to relsim at the same "
           f"--threads (> 1: slower than relsim). Kernel lines: non-blank, non-comment lines of "
           f"the step's kernels (and helpers).", "", tab, "",
           "\n".join(f"* {c}" for c in checks), *[f"* {note}" for note in g.notes]]
    text = "\n".join(out)
    print()
    print(text)
    C.chart(args.chart, g.title,
            [f"n={n}, {t} thread{'s' if t > 1 else ''}" for n in args.n for t in args.threads],
            {name: [min(results[(n, name, t)]) * 1e6 for n in args.n for t in args.threads]
             for name in names}, "us per step (min)")
    if args.markdown:
        C.update_markdown(args.markdown, f"Gallery: {g.name} against its peers", text)
    return 1 if failed else 0
