"""`rs.Tangents`: forward-mode derivatives of a relsim program (directional derivatives, J v).

    with rs.Tangents({V.k: dk, kappa: 0.5}) as tan:   # the direction: a seed per input
        E.foreach(conduct)
        V.foreach(update)
    tan.of(V.T)              # the derivative of V.T's values in that direction
    V.T.numpy()              # the values, as without rs.Tangents

Inside the block each launch runs its *tangent kernel* instead (`runtime/tangent`): the kernel's
own statements and, before each, its tangent, so one pass computes the values and their
derivative. A float field carries its tangent in a field of its relation, ``<name>__dot``; a
float Global in a tangent Global. A field or Global carries one from its seed, or from the
first launch that writes it (its tangent there starts at 0). The tangent kernels are ordinary
kernels: the same phase rules, every target and rank count, the same bits on any thread count.

Inside a recording `rs.Tape`, the tape records the tangent kernels: its `backward` of a tangent
(``tan.tangent_of(energy)``) differentiates the directional derivative again, reverse over
forward: Hessian-vector products (min/max reductions are refused there).

What the host does between launches is a constant to the derivative: a `load` or a Global's
``value = ...`` sets the target's tangent to 0. `Field.swap` and `copy_from` carry tangents with
the values. Refused: `rs.assign` (scalar arithmetic between Globals: its derivative is not
taken yet), linalg's solves, an `rs.capture`, and an `rs.Tape` started inside the block.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from . import config as _config
from . import jacobians
from .errors import GradientError
from .relations import launch as _launch
from .relations.field import Field
from .relations.globals import Global
from .runtime.adjoint import GivenKernel
from .runtime.adjoint.field_picks import NONE, PICK, picked_fields
from .runtime.adjoint.records import is_diff
from .runtime.tangent import Tangent, tangent_name
from .runtime.tangent.finder import Finder
from .runtime.tangent.generate import SELECTED
from .tape import (
    Tape,
    _find_chosen_rows,
    _pick_globals,
    analysis_of,
    picks_rows,
    prepare_picks,
)


class TangentKernel(GivenKernel):
    """A launch's tangent kernel (`runtime/tangent/generate.py`): a tape recording around the
    `rs.Tangents` block records it like the user's kernels (`recordable`)."""

    recordable = True


class Tangents(_launch.Recorder):
    """Forward mode over the launches inside ``with rs.Tangents(seeds) as tan:``. `seeds`: a
    dict from float (f64) fields and Globals to their direction: an array shaped like the
    field's values (or one number for every row), or the Global's value. ``tan.of(target)``
    is the derivative of a field's or Global's values in that direction (0 where no seed
    reaches it). `Tangents.jacobian` and `Tangents.jacobian_diagonal` give a program's whole
    Jacobian, and the diagonal of J^T J, by kernels generated from its residual kernels."""

    label = "an rs.Tangents runs"

    def __init__(self, seeds: dict):
        if not isinstance(seeds, dict) or not seeds:
            raise GradientError("rs.Tangents needs a dict of float fields and Globals to their "
                                "directions (the seeds)")
        self.seeds = []
        for t, seed in seeds.items():
            if not isinstance(t, (Field, Global)) or getattr(t, "is_key", False) or \
                    not is_diff(t.type):
                what = getattr(t, "qualname", None) or getattr(t, "name", None) or repr(t)
                raise GradientError(f"rs.Tangents seeds float (f64) fields and Globals "
                                    f"(scalars, vectors, matrices), not {what} "
                                    f"({getattr(t, 'type', type(t).__name__)!r})")
            shape = (t.relation.size,) + t.type.shape if isinstance(t, Field) else t.type.shape
            value = np.asarray(seed, dtype=np.float64)
            if value.shape != shape and not (isinstance(t, Field) and value.ndim == 0):
                raise GradientError(f"the seed for {_name(t)} has shape {value.shape}; its "
                                    f"values have shape {shape}")
            self.seeds.append((t, value))
        self.active: dict = {}  # id(target) -> target: those carrying a tangent now
        self._pending = None  # (Globals a row won, picked fields): the launch running now

    @staticmethod
    def jacobian_diagonal(program, residuals, unknowns, weights=None):
        """The diagonal of J^T J, J the Jacobian of the `residuals` (f64 fields) with respect to
        the `unknowns` (f64 fields and Globals) of what `program` (a callable running launches)
        computes, by kernels generated from the residual kernels (`runtime/tangent/
        jacobian.py`): a list of arrays shaped like each unknown's values, or None where the
        program is not of the form those kernels need (the program runs once either way).
        `weights`: a float per residual field (default 1)."""
        return jacobians.jacobian_diagonal(program, residuals, unknowns, weights or {})

    @staticmethod
    def jacobian(program, residuals, unknowns):
        """The Jacobian J of the `residuals` with respect to the `unknowns` (as for
        `jacobian_diagonal`) as sparse triplets ``(rows, cols, values, shape)``: rows number the
        residuals' values in order (each field row by row), columns the unknowns'; or None
        where the program is not of the form the generated kernels need."""
        return jacobians.jacobian_entries(program, residuals, unknowns)

    @staticmethod
    def running() -> bool:
        """Whether an rs.Tangents block runs now (linalg's solves ask: they refuse it)."""
        return any(isinstance(r, Tangents) for r in _launch.recorders)

    # -- the block ----------------------------------------------------------------------------
    def __enter__(self) -> Tangents:
        for r in _launch.recorders:
            if not isinstance(r, Tape):
                raise GradientError(f"rs.Tangents cannot start while {r.label}")
        self.active = {}
        for t, value in self.seeds:
            self._set(t, value)
        _launch.recorders.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _launch.recorders.remove(self)

    def of(self, target):
        """The derivative of `target`'s values (a float field: an array shaped like its values;
        a Global: its value's shape) in the seeds' direction."""
        if not isinstance(target, (Field, Global)) or not is_diff(target.type):
            raise GradientError(f"tan.of takes a float (f64) field or Global, not {target!r}")
        if id(target) not in self.active:
            shape = (target.relation.size,) + target.type.shape if isinstance(target, Field) \
                else target.type.shape
            return np.zeros(shape) if shape else 0.0
        if isinstance(target, Field):
            return _tangent_field(target).numpy(copy=True)
        v = tangent_global(target).value
        return v.copy() if isinstance(v, np.ndarray) else v

    def tangent_of(self, target):
        """The field or Global carrying `target`'s tangent (``<name>__dot``; a Global's tangent
        Global): a loss for a tape recording around the block (reverse over forward)."""
        if not isinstance(target, (Field, Global)) or not is_diff(target.type):
            raise GradientError(f"tan.tangent_of takes a float (f64) field or Global, not "
                                f"{target!r}")
        if id(target) not in self.active:
            raise GradientError(f"{_name(target)} carries no tangent in this block (no seed "
                                f"reaches it)")
        return _tangent_field(target) if isinstance(target, Field) else tangent_global(target)

    # -- the recorder hooks -------------------------------------------------------------------
    def kernel_to_run(self, kernel, relation, subset, config):
        """Recorder hook (relsim calls it): the tangent kernel of the launch about to run."""
        if isinstance(kernel, GivenKernel):
            raise GradientError(f"kernel {kernel.name} is generated (an adjoint or a tangent); "
                                f"rs.Tangents differentiates a program's own kernels")
        cfg = config if config is not None else _config.current()
        base = relation if subset is None else subset.relation
        a = analysis_of(kernel, base, cfg)
        if a.inserts or a.deletes:
            raise GradientError("cannot differentiate rs.insert or rs.delete in forward mode "
                                "(rows that come and go)", None, kernel.name)
        reads = frozenset(id(x.target) for x in a.summary.accesses
                          if id(x.target) in self.active)
        cache = kernel.__dict__.setdefault("_tangents", {})
        key = (id(base), id(a), reads)
        made = cache.get(key)
        picks = picks_rows(a)
        if picks:
            prepare_picks(base, a)
            for f in picked_fields(a):
                if not f.relation.has_field(f.name + SELECTED):
                    f.relation.new_field(f.name + SELECTED, f.type)
        if made is None:
            gen = Tangent(a, lambda t: id(t) in self.active, tangent_global, _selection)
            for t in gen.written:  # their tangent fields exist before the kernel is analysed
                if isinstance(t, Field):
                    _tangent_field(t)
            made = cache[key] = (TangentKernel(kernel, f"{kernel.name}_tangent", a.param,
                                               gen.body()), gen.written)
        for t in made[1]:
            if id(t) not in self.active:  # its tangent before the launch: 0
                self._set(t, 0.0)
        if picks and any(isinstance(r, Tape) for r in _launch.recorders):
            raise GradientError(f"kernel {kernel.name}: a min/max reduction into a float "
                                f"under rs.Tangents inside a recording rs.Tape (reverse over "
                                f"forward through the chosen contributions is not available)")
        self._pending = self._find(kernel, base, subset, a, cfg) if picks else None
        return made[0]

    def _find(self, kernel, base, subset, a, cfg) -> tuple:
        """Before a launch with min/max reductions into floats: the contributions its folds
        choose (the reverse mode's finding kernels, on the values before the launch), and the
        selections zeroed. (The Globals a row won, the picked fields.)"""
        adj = _finding(kernel, base, a)
        with _unrecorded():  # (the finding kernels are not the program's launches)
            won = _find_chosen_rows(adj, base if subset is None else subset, cfg)
            for g in adj.picks:
                _selection(g)[1].value = 0.0
            for f in adj.field_picks:
                f.relation.field(f.name + SELECTED).load(0.0)
        return won, tuple(adj.field_picks)

    def after_launch(self, kernel, relation, subset, config) -> None:
        """Recorder hook: where a contribution won a min/max reduction, the target's tangent is
        that contribution's (its selection)."""
        if self._pending is None:
            return
        won, fields = self._pending
        self._pending = None
        with _unrecorded():
            for g in won:
                if id(g) in self.active:
                    tangent_global(g).value = _selection(g)[1].value
            for f in fields:
                if id(f) not in self.active:
                    continue
                picked = f.relation.field(f.name + PICK).numpy() != NONE
                if picked.any():
                    d = _tangent_field(f).numpy(copy=True)
                    d[picked] = f.relation.field(f.name + SELECTED).numpy()[picked]
                    _tangent_field(f).load(d)

    def before_host_write(self, target, value) -> None:
        """Recorder hook: the host assigns a value: a constant, its tangent 0."""
        self.active.pop(id(target), None)

    def before_assign(self, target, expr, value) -> None:
        """Recorder hook: `rs.assign` is refused (its derivative is not taken yet)."""
        raise GradientError(f"rs.assign({_name(target)}, ...) inside rs.Tangents: forward mode "
                            f"does not differentiate scalar arithmetic between Globals yet; "
                            f"compute it in a kernel")

    def before_step(self, step) -> None:
        """Recorder hook: a step with an adjoint of its own (linalg's solves) is refused."""
        raise GradientError(f"{step.name} inside rs.Tangents: forward mode through linalg's "
                            f"solves is not available yet")

    def before_swap(self, field, other) -> None:
        """Recorder hook: the tangents swap with the values."""
        if id(field) not in self.active and id(other) not in self.active:
            return
        for f in (field, other):
            if id(f) not in self.active:
                self._set(f, 0.0)
        _tangent_field(field).swap(_tangent_field(other))

    def before_copy(self, field, source) -> None:
        """Recorder hook: `field` takes `source`'s values, and its tangent."""
        if id(source) not in self.active:
            self.active.pop(id(field), None)
            return
        if id(field) not in self.active:
            self._set(field, 0.0)
        _tangent_field(field).copy_from(_tangent_field(source))

    def _set(self, target, value) -> None:
        """`target` carries a tangent, `value` now (made on first use). A tape recording around
        the block does not see it: a seed (or the 0 a tangent starts from) is a constant."""
        with _unrecorded():
            if isinstance(target, Field):
                _tangent_field(target).load(value)
            else:
                tangent_global(target).value = value if np.ndim(value) else float(value)
        self.active[id(target)] = target


@contextmanager
def _unrecorded():
    """No recorder hears what the block does (rs.Tangents' own launches and loads)."""
    recorders = list(_launch.recorders)
    _launch.recorders.clear()
    try:
        yield
    finally:
        _launch.recorders[:] = recorders


def _name(t) -> str:
    return getattr(t, "qualname", None) or f"Global {getattr(t, 'name', None) or t!r}"


def _tangent_field(f):
    """Field f's tangent field on its relation (made on first use)."""
    name = tangent_name(f.name)
    R = f.relation
    return R.field(name) if R.has_field(name) else R.new_field(name, f.type)


class _Finding:
    """The finding kernels of a launch (`runtime/tangent/finder.py`), as `rs.Tape`'s
    `_find_chosen_rows` runs them: `finder`, `finder2` (or None), `picks` (Global -> op) and
    `field_picks` (field -> op)."""

    def __init__(self, kernel, a):
        gen = Finder(a, lambda g: _pick_globals(g)[0])
        self.finder = GivenKernel(kernel, f"{kernel.name}_finder", a.param, gen.stage(1))
        self.picks, self.field_picks = dict(gen.picks), dict(gen.field_picks)
        self.finder2 = GivenKernel(kernel, f"{kernel.name}_finder2", a.param, gen.stage(2)) \
            if self.field_picks else None


def _finding(kernel, base, a) -> _Finding:
    cache = kernel.__dict__.setdefault("_tangent_finders", {})
    key = (id(base), id(a))
    if key not in cache:
        cache[key] = _Finding(kernel, a)
    return cache[key]


def _selection(g):
    """(the Global holding the row g's min/max reduction chose, g's selection Global)."""
    s = getattr(g, "_selected", None)
    if s is None:
        s = g._selected = Global(g.type, 0.0, name=f"{g.name or 'global'}__dsel")
    return _pick_globals(g)[1], s


def tangent_global(g):
    """Global g's tangent Global (made on first use)."""
    t = getattr(g, "_tangent", None)
    if t is None:
        t = g._tangent = Global(g.type, 0.0, name=f"{g.name or 'global'}__dot")
    return t
