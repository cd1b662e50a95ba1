"""The gradient soak: random differentiable programs, their `rs.Tape` gradients (reverse mode)
and their `rs.Tangents` directional derivatives (forward mode) checked against central
differences (``python -m relsim.testing.gradient_soak --cases 1000``).

A program (a deterministic function of its seed) is a graph (``V`` vertices, ``E`` edges with
keys ``head`` and ``tail``, the grouping ``V.ein`` of edges by head), a few random f64 kernels and
a schedule: ``steps`` rounds of an edge kernel (reading through keys, reducing into vertex
fields and a Global, maybe a max into a Global and a min or max into the vertex field ``top``),
a vertex kernel (reading its own row and the reductions, a loop over a constant range, maybe
with a loop in it accumulating into the same local, and one over its grouping (reading its
edges' weights in half the programs: transposed), maybe a loop
carrying state (a range or a while loop), a branch, maybe vector arithmetic with a vec3 field,
storing its state),
then a loss kernel summing into the Global ``loss``. Expressions are smooth (polynomials, sin,
cos, tanh, exp of a square, rational and log functions with positive denominators and
arguments); branches make the loss piecewise smooth.

The check, per program: the tape's gradient with respect to every input (the vertex fields
``a``, ``s``, ``p``, ``top``, the edge field ``w``, the Global ``g``) along random directions ``u``
against the central differences ``(L(x + h u) - L(x - h u)) / 2h`` at ``h`` = 1e-5, 2.5e-6
and 6.25e-7, extrapolated pairwise (Richardson: the error of a central difference is ``c h^2``,
so the step is chosen per direction by the extrapolation); a direction whose two
extrapolations disagree crosses a branch's edge (or a change of the row a min or max chose)
and is drawn again (counted as skipped), as is one along which the loss overflows (a random
program can). It fails when, along a smooth direction, the tape's gradient dotted with the
direction or the forward mode's derivative disagrees with the central differences by more than
`TOLERANCE` (relative to ``max(1, |derivative|)``), or the two modes disagree with each other by
more than `AGREEMENT` (both are exact up to rounding: J^T w . u = w J u).

Then, per program without a min or max reduction into a float (reverse over forward refuses
those), the Hessian-vector product H u by reverse over forward mode (`rs.Tangents` inside a
recording `rs.Tape`), dotted with a random w, against central differences of the tape's w . g
along u, extrapolated the same way, at a point where one input is exactly 0 (a product's factor
or a subexpression's tangent exactly 0 there: a guard written as a branch once dropped terms of
H u at such points).
"""
from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import textwrap
import time

import numpy as np

import relsim as rs

from .soak import module_from_source

TOLERANCE = 1e-6
AGREEMENT = 1e-10
UNARY = ["math.sin({})", "math.cos({})", "math.tanh({})", "math.exp(-({0}) * ({0}))",
         "math.sqrt(1.0 + ({0}) * ({0}))", "math.log(1.0 + ({0}) * ({0}))", "({}) ** 2"]


class _Expr:
    """Random smooth f64 expressions over a list of leaves."""

    def __init__(self, r: random.Random, leaves: list):
        self.r, self.leaves = r, leaves

    def __call__(self, depth: int = 0) -> str:
        r = self.r
        if depth >= 3 or r.random() < 0.3:
            return r.choice(self.leaves) if r.random() < 0.85 else f"{r.uniform(-2, 2):.3f}"
        k = r.random()
        a, b = self(depth + 1), self(depth + 1)
        if k < 0.5:
            return f"({a} {r.choice(['+', '-', '*'])} {b})"
        if k < 0.65:
            return f"({a} / (1.5 + ({b}) * ({b})))"
        return r.choice(UNARY).format(a)


def program_source(seed: int) -> tuple[str, int]:
    """(the kernels' module source, the number of rounds) of program `seed`."""
    r = random.Random(seed)
    e = _Expr(r, ["e.w", "e.head.a", "e.tail.a", "e.head.s", "e.tail.s", "g"])
    edge = [f"x = {e()}"]
    edge.append(f"e.head.acc += {e()} * x" if r.random() < 0.7 else f"e.head.acc += {e()}")
    edge.append(f"e.tail.acc -= {_Expr(r, ['x', 'e.w', 'e.tail.a'])()}")
    if r.random() < 0.5:
        edge.append(f"total += {_Expr(r, ['x', 'e.w', 'g'])()}")
    peaks = r.random() < 0.5
    if peaks:  # a max into a Global: the derivative goes to the row chosen
        edge.append(f"peak = max(peak, {_Expr(r, ['x', 'e.w', 'e.head.s'])()})")
    tops = r.random() < 0.4
    if tops:  # a min or max into a field through a key: to the contribution chosen per row
        op = r.choice(["min", "max"])
        edge.append(f"e.tail.top = {op}(e.tail.top, {_Expr(r, ['x', 'e.w', 'e.head.s'])()})")
    v = _Expr(r, ["v.a", "v.s", "v.acc", "g", "y"])
    vertex = [f"y = {_Expr(r, ['v.a', 'v.s', 'v.acc'])()}",
              "z = 0.0",
              "z0 = y * y",
              f"for i in range({r.randint(1, 3)}):",
              f"    z += {_Expr(r, ['v.a', 'v.s', 'y', 'g'])()} * (i + 1)"]
    if r.random() < 0.4:  # a loop in the loop, accumulating into the same local
        vertex += [f"    for j in range({r.randint(1, 2)}):",
                   f"        z += {_Expr(r, ['v.a', 'y', 'z0'])()} * (j + 0.5)"]
    vertex += ["n = 0",
              "for k in v.ein:",
              "    n += 1",
              f"    z += 0.1 * {_Expr(r, ['v.a', 'y'])()}"
              + (f" * {_Expr(r, ['k.w', 'y'])()}" if r.random() < 0.5 else "")]
    if r.random() < 0.4:  # a loop carrying state: a range or a while loop
        step = f"w = 0.5 * w + 0.2 * {_Expr(r, ['v.a', 'w', 'y'])()}"
        vertex += ["w = y"] + ([f"for i in range({r.randint(1, 3)}):", "    " + step]
                               if r.random() < 0.5 else
                               ["m = 0", f"while m < {r.randint(1, 3)}:", "    " + step,
                                "    m += 1"])
        vertex.append(f"y = y + {r.uniform(0.1, 0.5):.3f} * w")
    if r.random() < 0.6:
        vertex += [f"if {v()} > {r.uniform(-0.5, 0.5):.3f}:",
                   f"    y = {v()}",
                   "else:",
                   f"    y = y * {r.uniform(0.5, 1.5):.3f}"]
    if r.random() < 0.6:  # vectors: a vector field, dot, norm, cross, a vector store
        vertex += ["q = rs.vec(3)(v.a, y, 1.0 + v.s * v.s)",
                   f"y = y + 0.2 * rs.dot(q, v.p) + 0.1 * rs.norm(q) + "
                   f"{r.uniform(-0.3, 0.3):.3f} * rs.cross(q, v.p)[{r.randint(0, 2)}]",
                   "v.p = 0.9 * v.p + 0.05 * q"]
    if tops:
        vertex.append(f"y = y + {r.uniform(0.1, 0.5):.3f} * v.top")
    vertex += [f"v.s = 0.5 * v.s + 0.1 * ({_Expr(r, ['y', 'z', 'v.acc', 'v.a'])()})",
               "v.acc = 0.0"]
    loss = [f"loss += {_Expr(r, ['v.s', 'v.a', 'v.s * v.a'])()} + 0.1 * v.s * v.a"]
    if r.random() < 0.5:
        loss.append("loss += 0.5 * total")
    if peaks:
        loss.append("loss += 0.3 * peak")
    loss.append("loss += 0.1 * rs.dot(v.p, v.p)")

    def kernel(name, param, lines):
        return f"@rs.kernel\ndef {name}({param}):\n" + textwrap.indent("\n".join(lines), "    ")

    src = "\n\n".join(["import math", "import relsim as rs", "",
                       "def make(g, total, loss, peak):",
                       textwrap.indent("\n\n".join([kernel("edge", "e", edge),
                                                    kernel("vertex", "v", vertex),
                                                    kernel("score", "v", loss),
                                                    "return edge, vertex, score"]), "    ")])
    return src, r.randint(1, 3)


class Program:
    """Program `seed` built on relations of random sizes, ready to run."""

    def __init__(self, seed: int, workdir):
        self.seed = seed
        rng = np.random.default_rng(seed)
        nv, ne = int(rng.integers(4, 12)), int(rng.integers(6, 24))
        V = self.V = rs.Relation("V", nv)
        for f in ("a", "s", "acc", "top"):
            V.new_field(f, rs.f64)
        V.new_field("p", rs.vec(3))
        E = self.E = rs.Relation("E", ne)
        E.new_key_field("head", V, values=rng.integers(0, nv, ne))
        E.new_key_field("tail", V, values=rng.integers(0, nv, ne))
        E.new_field("w", rs.f64)
        E.group_by("head", "ein")
        self.g = rs.Global(rs.f64, 0.0)
        self.total, self.loss = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
        self.peak = rs.Global(rs.f64, 0.0)
        self.x0 = {"a": rng.uniform(-1, 1, nv), "s": rng.uniform(-1, 1, nv),
                   "w": rng.uniform(-1, 1, ne), "g": float(rng.uniform(-1, 1)),
                   "p": rng.uniform(-1, 1, (nv, 3)), "top": rng.uniform(-1, 1, nv)}
        self.source, self.rounds = program_source(seed)
        self.kernels = _module(self.source, seed, workdir).make(self.g, self.total, self.loss,
                                                                self.peak)

    def set(self, x) -> None:
        self.V.a.load(x["a"])
        self.V.s.load(x["s"])
        self.V.p.load(x["p"])
        self.V.top.load(x["top"])
        self.V.acc.load(0.0)
        self.E.w.load(x["w"])
        self.g.value = float(x["g"])

    def run(self) -> float:
        edge, vertex, score = self.kernels
        self.total.value = 0.0
        self.peak.value = -10.0
        for _ in range(self.rounds):
            self.E.foreach(edge)
            self.V.foreach(vertex)
        self.loss.value = 0.0
        self.V.foreach(score)
        return self.loss.value

    def loss_at(self, x) -> float:
        self.set(x)
        return self.run()

    def gradient(self, x) -> dict:
        self.set(x)
        with rs.Tape() as tape:
            self.run()
        tape.backward(self.loss)
        return self._grads()

    def _grads(self) -> dict:
        """The inputs' gradients after a backward."""
        g = self.g.grad if getattr(self.g, "_adjoint", None) is not None else 0.0

        def grad(f):  # (a field the program never read has no adjoint field: zero)
            return f.grad.numpy(copy=True) if f.relation.has_field(f.grad_name) else \
                np.zeros((f.relation.size,) + f.type.shape)

        return {"a": grad(self.V.a), "s": grad(self.V.s), "w": grad(self.E.w), "g": g,
                "p": grad(self.V.p), "top": grad(self.V.top)}

    def inputs(self) -> dict:
        return {"a": self.V.a, "s": self.V.s, "w": self.E.w, "g": self.g, "p": self.V.p,
                "top": self.V.top}

    def hessian_times(self, x, u) -> dict:
        """H u at `x` by reverse over forward mode: the program inside `rs.Tangents` (seeded
        with `u`) inside a recording `rs.Tape`, whose backward of the loss's tangent gives H u
        in the inputs' gradients."""
        self.set(x)
        with rs.Tape() as tape:
            with rs.Tangents({t: u[k] for k, t in self.inputs().items()}) as tan:
                self.run()
        tape.backward(tan.tangent_of(self.loss))
        return self._grads()

    def tangent(self, x, u) -> float:
        """The loss's derivative at `x` along `u` by forward mode (`rs.Tangents`)."""
        self.set(x)
        with rs.Tangents({t: u[k] for k, t in self.inputs().items()}) as tan:
            self.run()
        return tan.of(self.loss)


def _module(source: str, seed: int, workdir):
    """The program's kernel module, written to a file in `workdir` (kernels need source)."""
    return module_from_source(source, f"relsim_gradient_soak_{seed}_{next(_count)}",
                              workdir)[0]


_count = itertools.count()


def check(seed: int, workdir, directions: int = 2, tries: int = 4) -> tuple[int, int, str, int]:
    """(directions checked, directions skipped at a branch's edge, failure text or '',
    Hessian-vector products checked: 0 or 1)."""
    p = Program(seed, workdir)
    rng = np.random.default_rng(seed + 7919)
    grad = p.gradient(p.x0)
    checked = skipped = 0
    for _ in range(directions):
        for _ in range(tries):
            u = {k: rng.standard_normal(np.shape(v)) for k, v in p.x0.items()}
            slope = sum(float(np.sum(grad[k] * u[k])) for k in u)

            def central(h, u=u):
                up = {k: p.x0[k] + h * u[k] for k in u}
                down = {k: p.x0[k] - h * u[k] for k in u}
                return (p.loss_at(up) - p.loss_at(down)) / (2 * h)

            # central differences at h, h/4, h/16, each pair extrapolated (Richardson: their
            # error is c h^2); on a smooth direction the two extrapolations agree
            f1, f2, f3 = central(1e-5), central(2.5e-6), central(6.25e-7)
            r12, fd = (16.0 * f2 - f1) / 15.0, (16.0 * f3 - f2) / 15.0
            scale = max(1.0, abs(fd))
            if not np.isfinite(fd):  # the program overflows near x0: no derivative to check
                skipped += 1
                continue
            if abs(r12 - fd) > TOLERANCE * scale:  # a branch's edge between the samples
                skipped += 1
                continue
            checked += 1
            if not abs(slope - fd) <= TOLERANCE * scale:
                return checked, skipped, (f"program seed {seed}: along a random direction the "
                                          f"tape gives {slope!r}, central differences {fd!r}"
                                          f"\n{p.source}"), 0
            forward = p.tangent(p.x0, u)
            if not abs(forward - fd) <= TOLERANCE * scale or \
                    not abs(forward - slope) <= AGREEMENT * max(1.0, abs(slope)):
                return checked, skipped, (f"program seed {seed}: along a random direction "
                                          f"forward mode gives {forward!r}, the tape {slope!r}, "
                                          f"central differences {fd!r}\n{p.source}"), 0
            break
    hessians, failure = _check_hessian(p, rng)
    return checked, skipped, failure, hessians


def _dot(a: dict, b: dict) -> float:
    return sum(float(np.sum(np.asarray(a[k]) * np.asarray(b[k]))) for k in a)


def _check_hessian(p, rng, tries: int = 4) -> tuple[int, str]:
    """w . H u by reverse over forward mode against central differences of the tape's w . g
    along u (extrapolated as for the gradients), at a point where one input is exactly 0: there
    a product's factor or a subexpression's tangent is exactly 0, where a guard written as a
    branch once dropped terms of H u. Programs with a min or max reduction into a float are
    refused there (documented): no check. (1 if checked else 0, a failure's text or '')."""
    x = dict(p.x0)
    zeroed = ("a", "s", "top", "w")[int(rng.integers(4))]
    x[zeroed] = np.zeros_like(x[zeroed])
    for _ in range(tries):
        u = {k: rng.standard_normal(np.shape(v)) for k, v in x.items()}
        w = {k: rng.standard_normal(np.shape(v)) for k, v in x.items()}
        try:
            hu = p.hessian_times(x, u)
        except rs.GradientError as e:
            if "min/max reduction" in str(e):
                return 0, ""
            raise

        def central(h, u=u, w=w):
            up = p.gradient({k: x[k] + h * u[k] for k in x})
            down = p.gradient({k: x[k] - h * u[k] for k in x})
            return (_dot(w, up) - _dot(w, down)) / (2 * h)

        f1, f2, f3 = central(1e-5), central(2.5e-6), central(6.25e-7)
        r12, fd = (16.0 * f2 - f1) / 15.0, (16.0 * f3 - f2) / 15.0
        scale = max(1.0, abs(fd))
        if not np.isfinite(fd) or abs(r12 - fd) > TOLERANCE * scale:
            continue  # (a branch's edge, or an overflow, near x: another direction)
        got = _dot(w, hu)
        if not abs(got - fd) <= TOLERANCE * scale:
            return 1, (f"program seed {p.seed}: at a point with {zeroed!r} = 0, w . H u by "
                       f"reverse over forward mode is {got!r}, by central differences of the "
                       f"tape's gradient {fd!r}\n{p.source}")
        return 1, ""
    return 0, ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m relsim.testing.gradient_soak",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0, help="the first program seed")
    ap.add_argument("--target", default="interp")
    a = ap.parse_args(argv)
    rs.configure(target=a.target)
    t0, checked, skipped, hessians, failures = time.perf_counter(), 0, 0, 0, []
    workdir = tempfile.mkdtemp(prefix="relsim_gradient_soak_")
    for seed in range(a.first, a.first + a.cases):
        c, s, failure, h = check(seed, workdir)
        checked, skipped, hessians = checked + c, skipped + s, hessians + h
        if failure:
            failures.append(failure)
            print(failure, file=sys.stderr)
    print(f"gradient soak: {a.cases} programs (seeds {a.first}..{a.first + a.cases - 1}) on "
          f"{a.target}: {checked} directions checked, {skipped} skipped at a branch's edge, "
          f"{hessians} Hessian-vector products checked, {len(failures)} failures; "
          f"{time.perf_counter() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
