"""Minimising a scalar energy computed by the user's kernels: L-BFGS, or Newton-CG with
Hessian-vector products.

The energy is an f64 Global the program reduces into; its gradient with respect to the unknowns
(f64 fields and Globals) is the tape's (`rs.Tape`: the program recorded, `backward(energy)`).
Each iteration takes the L-BFGS direction (the two-loop recursion over the last `memory` pairs
s = x_new - x, y = g_new - g, the initial Hessian scaled by s.y / y.y; pairs with s.y <= 0 are
not kept), then a backtracking line search from step 1 (the first iteration: 1 / max|g|) until
Armijo's sufficient decrease ``E(x + t d) <= E(x) + 1e-4 t g.d`` holds, halving t. Vectors are
host NumPy arrays; dot products are exactly rounded (`rs.exact_sum`), so the iterates are the same
bits on every target, thread count and rank count, as the gradients are. Stopping: ``max |g| <=
gtol``, a relative energy reduction ``<= ftol``, `max_iterations`, or a line search that finds
no decrease in 40 halvings.

Newton-CG (``method="newton-cg"``) takes the direction from conjugate gradients on H d = -g, H
the energy's Hessian applied by reverse over forward mode (`hessian_times`: the program run
inside `rs.Tangents` seeded with the vector, inside a recording `rs.Tape`, whose `backward` of
the energy's tangent is H v), truncated where the curvature turns non-positive (the direction so
far, or -g at the first step) or at the inexact-Newton tolerance min(0.5, sqrt(|g| / |g_0|))
|g| (g_0 the gradient at the start: the forcing term is relative, so scaling the energy does
not change the iterations);
then the same line search from step 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import relsim as rs

from .problem import Problem, dot, norm


@dataclass
class MinimizeInfo:
    """What a minimisation did: `iterations`, `energy` (at the result), `energies` (at the start
    and after each iteration), `converged` and `reason` (``"gradient"``, ``"ftol"``,
    ``"max_iterations"`` or ``"line search"``), `gradient` (max |g| at the result),
    `evaluations` (program runs for the energy), `gradients` (tape recordings with a backward)
    and `hessian_products` (Newton-CG's)."""
    iterations: int = 0
    energy: float = math.inf
    energies: list = field(default_factory=list)
    converged: bool = False
    reason: str = ""
    gradient: float = math.inf
    evaluations: int = 0
    gradients: int = 0
    hessian_products: int = 0


class _Energy:
    """E(x) and its gradient by the tape, over `problem`'s unknowns."""

    def __init__(self, program, energy, unknowns):
        if not isinstance(energy, rs.Global) or energy.type != rs.f64:
            raise rs.DataError(f"minimize: the energy must be an f64 scalar Global the program "
                               f"reduces into, got {energy!r}")
        self.p = Problem(program, [], unknowns)
        self.energy = energy
        self.evaluations = self.gradients = self.hessian_products = 0

    def value(self, x) -> float:
        self.p.set(x)
        self.p.program()
        self.evaluations += 1
        e = float(self.energy.value)
        if not math.isfinite(e):
            raise rs.DataError(f"minimize: the energy {self.energy.name!r} is {e} (run the "
                               f"program with rs.Config(debug=True) to find the kernel and "
                               f"row that made it)")
        return e

    def hessian_times(self, x, v) -> np.ndarray:
        """H(x) v: the program inside rs.Tangents (seeded with v) inside a recording rs.Tape,
        the tape's backward of the energy's tangent."""
        self.p.set(x)
        with rs.Tape() as tape:
            with rs.Tangents(self.p.seeds(v)) as tan:
                self.p.program()
        self.hessian_products += 1
        tape.backward(tan.tangent_of(self.energy))
        return self._grads()

    def gradient(self, x) -> tuple:
        self.p.set(x)
        with rs.Tape() as tape:
            self.p.program()
        self.evaluations += 1
        self.gradients += 1
        e = float(self.energy.value)
        tape.backward(self.energy)
        return e, self._grads()

    def _grads(self) -> np.ndarray:
        """The unknowns' gradients after a backward, flattened."""
        parts = []
        for t in self.p.unknowns:
            if isinstance(t, rs.Field):
                g = t.grad.numpy() if t.relation.has_field(t.grad_name) else \
                    np.zeros((t.relation.size,) + t.type.shape)
            else:
                g = t.grad if getattr(t, "_adjoint", None) is not None else \
                    np.zeros(t.type.shape)
            parts.append(np.asarray(g, dtype=np.float64).ravel())
        return np.concatenate(parts)


def minimize(program, energy, unknowns, *, method: str = "lbfgs", max_iterations: int = 200,
             gtol: float = 1e-8, ftol: float = 1e-15, memory: int = 10) -> MinimizeInfo:
    """Minimise the f64 Global `energy`, which `program` (a callable running launches, no
    arguments) reduces into, over `unknowns` (f64 fields and Globals: one or a list), left at
    the result. `method`: ``"lbfgs"`` or ``"newton-cg"`` (Hessian-vector products by reverse
    over forward mode). See the module for the iterations and stopping rules."""
    if method not in ("lbfgs", "newton-cg"):
        raise ValueError(f"minimize: method must be 'lbfgs' or 'newton-cg', got {method!r}")
    if not isinstance(memory, int) or memory < 1:
        raise ValueError(f"minimize: memory must be an int >= 1, got {memory!r}")
    f = _Energy(program, energy, unknowns)
    p = f.p
    info = MinimizeInfo()
    x = p.get()
    e, g = f.gradient(x)
    info.energies.append(e)
    pairs: list = []
    g0 = norm(g)
    try:
        while True:
            info.gradient = float(np.abs(g).max()) if g.size else 0.0
            if info.gradient <= gtol:
                info.converged, info.reason = True, "gradient"
                break
            if info.iterations >= max_iterations:
                info.reason = "max_iterations"
                break
            d = -_two_loop(g, pairs) if method == "lbfgs" else _newton_direction(f, x, g, g0)
            slope = dot(g, d)
            if slope >= 0.0:  # (not a descent direction: start again from the gradient)
                pairs, d = [], -g
                slope = dot(g, d)
            t = 1.0 if method == "newton-cg" or pairs or info.iterations else \
                1.0 / max(info.gradient, 1e-300)
            for _ in range(40):
                e_new = f.value(x + t * d)
                if e_new <= e + 1e-4 * t * slope:
                    break
                t *= 0.5
            else:
                info.reason = "line search"
                break
            info.iterations += 1
            x_new = x + t * d
            e_new, g_new = f.gradient(x_new)
            s, y = x_new - x, g_new - g
            sy = dot(s, y)
            if sy > 0.0:
                pairs.append((s, y, sy))
                if len(pairs) > memory:
                    pairs.pop(0)
            reduced = e - e_new <= ftol * max(abs(e), 1.0)
            x, e, g = x_new, e_new, g_new
            info.energies.append(e)
            if reduced:
                info.gradient = float(np.abs(g).max())
                info.converged, info.reason = True, "ftol"
                break
    finally:
        p.set(x)
    info.energy = e
    info.evaluations, info.gradients = f.evaluations, f.gradients
    info.hessian_products = f.hessian_products
    p.program()  # (the program's fields at the result)
    return info


def _newton_direction(f, x, g, g0: float, maxiter: int = 200) -> np.ndarray:
    """Truncated conjugate gradients on H d = -g (`hessian_times`), from d = 0, to the
    forcing term relative to the first gradient's norm `g0`."""
    d = np.zeros(len(g))
    r = -g
    q = r.copy()
    rr = dot(r, r)
    stop = min(0.5, math.sqrt(math.sqrt(rr) / g0)) * math.sqrt(rr)
    for _ in range(maxiter):
        Hq = f.hessian_times(x, q)
        curvature = dot(q, Hq)
        if curvature <= 0.0:  # (non-convex here: what we have, or steepest descent)
            return d if d.any() else -g
        alpha = rr / curvature
        d = d + alpha * q
        r = r - alpha * Hq
        rr_new = dot(r, r)
        if math.sqrt(rr_new) <= stop:
            break
        q = r + (rr_new / rr) * q
        rr = rr_new
    return d


def _two_loop(g, pairs) -> np.ndarray:
    """The L-BFGS product H g by the two-loop recursion."""
    q = np.array(g, copy=True)
    alphas = []
    for s, y, sy in reversed(pairs):
        a = dot(s, q) / sy
        alphas.append(a)
        q = q - a * y
    if pairs:
        s, y, sy = pairs[-1]
        q = q * (sy / dot(y, y))
    for (s, y, sy), a in zip(pairs, reversed(alphas)):
        b = dot(y, q) / sy
        q = q + (a - b) * s
    return q
