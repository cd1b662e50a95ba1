"""Minimising a scalar energy computed by the user's kernels: L-BFGS.

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
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import relsim as rs

from .problem import Problem, dot


@dataclass
class MinimizeInfo:
    """What a minimisation did: `iterations`, `energy` (at the result), `energies` (at the start
    and after each iteration), `converged` and `reason` (``"gradient"``, ``"ftol"``,
    ``"max_iterations"`` or ``"line search"``), `gradient` (max |g| at the result),
    `evaluations` (program runs for the energy) and `gradients` (tape recordings with a
    backward)."""
    iterations: int = 0
    energy: float = math.inf
    energies: list = field(default_factory=list)
    converged: bool = False
    reason: str = ""
    gradient: float = math.inf
    evaluations: int = 0
    gradients: int = 0


class _Energy:
    """E(x) and its gradient by the tape, over `problem`'s unknowns."""

    def __init__(self, program, energy, unknowns):
        if not isinstance(energy, rs.Global) or energy.type != rs.f64:
            raise rs.DataError(f"minimize: the energy must be an f64 scalar Global the program "
                               f"reduces into, got {energy!r}")
        self.p = Problem(program, [], unknowns)
        self.energy = energy
        self.evaluations = self.gradients = 0

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

    def gradient(self, x) -> tuple:
        self.p.set(x)
        with rs.Tape() as tape:
            self.p.program()
        self.evaluations += 1
        self.gradients += 1
        e = float(self.energy.value)
        tape.backward(self.energy)
        parts = []
        for t in self.p.unknowns:
            if isinstance(t, rs.Field):
                g = t.grad.numpy() if t.relation.has_field(t.grad_name) else \
                    np.zeros((t.relation.size,) + t.type.shape)
            else:
                g = t.grad if getattr(t, "_adjoint", None) is not None else \
                    np.zeros(t.type.shape)
            parts.append(np.asarray(g, dtype=np.float64).ravel())
        return e, np.concatenate(parts)


def minimize(program, energy, unknowns, *, method: str = "lbfgs", max_iterations: int = 200,
             gtol: float = 1e-8, ftol: float = 1e-15, memory: int = 10) -> MinimizeInfo:
    """Minimise the f64 Global `energy`, which `program` (a callable running launches, no
    arguments) reduces into, over `unknowns` (f64 fields and Globals: one or a list), left at
    the result. `method`: ``"lbfgs"``. See the module for the iteration and stopping rules."""
    if method != "lbfgs":
        raise ValueError(f"minimize: method must be 'lbfgs', got {method!r} (Newton-CG with "
                         f"Hessian-vector products is not there yet)")
    if not isinstance(memory, int) or memory < 1:
        raise ValueError(f"minimize: memory must be an int >= 1, got {memory!r}")
    f = _Energy(program, energy, unknowns)
    p = f.p
    info = MinimizeInfo()
    x = p.get()
    e, g = f.gradient(x)
    info.energies.append(e)
    pairs: list = []
    try:
        while True:
            info.gradient = float(np.abs(g).max()) if g.size else 0.0
            if info.gradient <= gtol:
                info.converged, info.reason = True, "gradient"
                break
            if info.iterations >= max_iterations:
                info.reason = "max_iterations"
                break
            d = -_two_loop(g, pairs)
            slope = dot(g, d)
            if slope >= 0.0:  # (not a descent direction: start again from the gradient)
                pairs, d = [], -g
                slope = dot(g, d)
            t = 1.0 if pairs or info.iterations else 1.0 / max(info.gradient, 1e-300)
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
    p.program()  # (the program's fields at the result)
    return info


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
