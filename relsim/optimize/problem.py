"""A least-squares problem as relsim programs: the unknowns (float fields and Globals) as one
vector, the residuals (float fields) as another, and the products with the Jacobian J of the
residuals with respect to the unknowns, each a run of the user's program:

* ``r(x)``: load x into the unknowns, run the program, read the residuals;
* ``J v``: the same inside `rs.Tangents` seeded with v (forward mode: one run);
* ``J^T w``: the run recorded on an `rs.Tape` at the current x, its `backward` seeded with w
  (reverse mode: one adjoint run per product; the tape is recorded once per point).

Vectors here are NumPy arrays on the host, in the order of `unknowns` (each flattened row by
row); dot products are exactly rounded sums (`rs.exact_sum`), so a solve's iterates do not
depend on the order of anything: the same bits on every target, thread count and device, as the
products themselves are. Built on the public API only (like `relsim.linalg`).
"""
from __future__ import annotations

import math

import numpy as np

import relsim as rs


def dot(a, b) -> float:
    """a . b, the products summed exactly and rounded once (`rs.exact_sum`): the same bits
    whatever the summation order, on every process."""
    return rs.exact_sum(np.asarray(a) * np.asarray(b))


def norm(a) -> float:
    return math.sqrt(dot(a, a))


def _size(t) -> int:
    shape = (t.relation.size,) + t.type.shape if isinstance(t, rs.Field) else t.type.shape
    return int(np.prod(shape, dtype=np.int64))


def _shape(t) -> tuple:
    return (t.relation.size,) + t.type.shape if isinstance(t, rs.Field) else t.type.shape


def _name(t) -> str:
    return t.qualname if isinstance(t, rs.Field) else f"Global {t.name!r}"


def _float(t, what: str, globals_ok: bool):
    kinds = (rs.Field, rs.Global) if globals_ok else (rs.Field,)
    if not isinstance(t, kinds) or getattr(t, "is_key", False) or \
            getattr(t.type, "elem", t.type) != rs.f64:
        allowed = "f64 fields and Globals" if globals_ok else "f64 fields"
        raise rs.DataError(f"least_squares: {what} must be {allowed} (scalars, vectors or "
                           f"matrices), got {getattr(t, 'qualname', None) or t!r}")
    return t


class Problem:
    """`program` (a callable running the launches that compute `residuals` from `unknowns`),
    with optional `weights` (per residual field: one number or one per value; the cost is
    0.5 sum w r^2)."""

    def __init__(self, program, residuals, unknowns, weights=None):
        if not callable(program):
            raise TypeError(f"least_squares needs the program computing the residuals (a "
                            f"callable), got {program!r}")
        self.program = program
        self.residuals = [_float(t, "residuals", False) for t in _listed(residuals)]
        self.unknowns = [_float(t, "unknowns", True) for t in _listed(unknowns)]
        for t in self.residuals:
            if any(t is u for u in self.unknowns):
                raise rs.DataError(f"least_squares: {_name(t)} is both a residual and an "
                                   f"unknown")
        self.sizes = [_size(t) for t in self.unknowns]
        self.m = sum(_size(t) for t in self.residuals)
        self.n = sum(self.sizes)
        self.sqrt_w = []
        weights = weights or {}
        for t in self.residuals:
            w = np.broadcast_to(np.asarray(weights.get(t, 1.0), dtype=np.float64),
                                _shape(t)) if t in weights else None
            if w is not None and (not np.all(np.isfinite(w)) or np.any(w < 0.0)):
                raise rs.DataError(f"least_squares: the weights of {_name(t)} must be finite "
                                   f"and >= 0")
            self.sqrt_w.append(None if w is None else np.sqrt(w).ravel())
        unknown_weights = [t for t in weights if not any(t is r for r in self.residuals)]
        if unknown_weights:
            raise rs.DataError(f"least_squares: weights are for residual fields; "
                               f"{_name(unknown_weights[0])} is not one")
        self.tape = None
        self.x_taped = None
        self.evaluations = self.jv = self.jtw = 0

    # -- the unknowns -------------------------------------------------------------------------
    def get(self) -> np.ndarray:
        parts = [np.asarray(t.numpy() if isinstance(t, rs.Field) else t.value,
                            dtype=np.float64).ravel() for t in self.unknowns]
        return np.concatenate(parts) if parts else np.zeros(0)

    def set(self, x) -> None:
        for t, part in zip(self.unknowns, self._split(x)):
            if isinstance(t, rs.Field):
                t.load(part.reshape(_shape(t)))
            else:
                t.value = part.reshape(_shape(t)) if _shape(t) else float(part[0])

    def _split(self, x) -> list:
        out, at = [], 0
        for size in self.sizes:
            out.append(np.asarray(x[at:at + size]))
            at += size
        return out

    def seeds(self, v) -> dict:
        return {t: part.reshape(_shape(t)) if _shape(t) else float(part[0])
                for t, part in zip(self.unknowns, self._split(v))}

    # -- the residuals ------------------------------------------------------------------------
    def _weighted(self, parts) -> np.ndarray:
        out = [p.ravel() if w is None else p.ravel() * w for p, w in zip(parts, self.sqrt_w)]
        return np.concatenate(out) if out else np.zeros(0)

    def residual(self, x) -> np.ndarray:
        """r(x) (weighted), with the unknowns left at x."""
        self.set(x)
        self.program()
        self.evaluations += 1
        return self._weighted([t.numpy(copy=True) for t in self.residuals])

    def diagonal(self, x):
        """diag(J^T J) at x by kernels generated from the residual kernels
        (`rs.Tangents.jacobian_diagonal`), or None where the program is not of their form or
        a residual's weights differ from value to value."""
        weights = {}
        for t, sw in zip(self.residuals, self.sqrt_w):
            if sw is not None:
                if sw.size and not np.all(sw == sw[0]):
                    return None
                weights[t] = float(sw[0]) ** 2 if sw.size else 1.0
        self.set(x)
        parts = rs.Tangents.jacobian_diagonal(self.program, self.residuals, self.unknowns,
                                              weights)
        self.evaluations += 1
        if parts is None:
            return None
        return np.concatenate([np.asarray(d, dtype=np.float64).ravel() for d in parts])

    def jacobian(self, x):
        """J(x) (weighted) as a SciPy CSR matrix, from kernels generated from the residual
        kernels (`rs.Tangents.jacobian`), or None where the program is not of their form."""
        import scipy.sparse as sp
        self.set(x)
        trip = rs.Tangents.jacobian(self.program, self.residuals, self.unknowns)
        self.evaluations += 1
        if trip is None:
            return None
        rows, cols, vals, shape = trip
        if any(w is not None for w in self.sqrt_w):
            sw = np.concatenate([np.ones(_size(t)) if w is None else w
                                 for t, w in zip(self.residuals, self.sqrt_w)])
            vals = vals * sw[rows]
        J = sp.csr_matrix((vals, (rows, cols)), shape=shape)
        J.sum_duplicates()
        return J

    def jacobian_times(self, x, v) -> np.ndarray:
        """J(x) v by forward mode."""
        self.set(x)
        with rs.Tangents(self.seeds(v)) as tan:
            self.program()
        self.jv += 1
        return self._weighted([np.asarray(tan.of(t)) for t in self.residuals])

    def transpose_times(self, x, w) -> np.ndarray:
        """J(x)^T w by reverse mode (the tape recorded at x once, then one backward each)."""
        if self.x_taped is None or not np.array_equal(self.x_taped, x):
            self.set(x)
            with rs.Tape() as tape:
                self.program()
            self.tape, self.x_taped = tape, np.array(x, copy=True)
        seeds = {}
        at = 0
        for t, sw in zip(self.residuals, self.sqrt_w):
            size = _size(t)
            part = w[at:at + size] if sw is None else w[at:at + size] * sw
            seeds[t] = part.reshape(_shape(t))
            at += size
        self.tape.backward(seeds)
        self.jtw += 1
        parts = []
        for t in self.unknowns:
            if isinstance(t, rs.Field):
                has = t.relation.has_field(t.grad_name)
                g = t.grad.numpy() if has else np.zeros(_shape(t))
            else:
                g = t.grad if getattr(t, "_adjoint", None) is not None else np.zeros(_shape(t))
            parts.append(np.asarray(g, dtype=np.float64).ravel())
        return np.concatenate(parts)


def _listed(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]
