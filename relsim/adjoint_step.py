"""Parts of a program a tape records whole, with an adjoint of their own (`AdjointStep`,
`record_step`): `linalg`'s solves, differentiated implicitly. `tape.py` records and reverses
them with the launches."""
from __future__ import annotations

import types
from dataclasses import dataclass

from .relations import launch as _launch


class AdjointStep:
    """A part of a program that a tape records whole and differentiates by its own `reverse`
    (`linalg`'s solves: implicitly, by one more solve). Run it with `rs.record_step(step)`:
    with no tape recording that is ``step.run()``; while one records, the tape keeps the values
    of `writes` before the step and records the step as one event (the launches inside it are
    not recorded). Subclasses set:

    - `reads`: the float fields whose derivatives `reverse` adds to (their ``.grad``);
    - `writes`: the fields the step overwrites;
    - ``run()``: the forward computation (run again by a checkpointed tape's `backward`);
    - ``reverse()``: called by `backward` with `writes` holding their values from before the
      step and their ``.grad`` the derivatives of the loss with respect to their values after
      it; it adds into the ``.grad`` of `reads` and sets the ``.grad`` of `writes` to the
      derivatives with respect to their values before the step (0 for what it overwrote)."""

    name = "step"
    reads: tuple = ()
    writes: tuple = ()

    def run(self) -> None:
        """The forward computation (a subclass defines it)."""
        raise NotImplementedError

    def reverse(self) -> None:
        """The adjoint: adds into the ``.grad`` of `reads`, sets that of `writes` (a subclass
        defines it; the class docstring says what it is given)."""
        raise NotImplementedError


def record_step(step: AdjointStep) -> None:
    """Run `step`; a recording tape records it whole (see `AdjointStep`)."""
    if not isinstance(step, AdjointStep):
        raise TypeError(f"record_step needs an rs.AdjointStep, got {step!r}")
    recording = list(_launch.recorders)
    for r in recording:
        r.before_step(step)
    _launch.recorders.clear()  # (its own launches and assignments are the step's business)
    try:
        step.run()
    finally:
        _launch.recorders[:] = recording


@dataclass
class _Step:
    step: AdjointStep
    saved: list  # (field, its value before the step)


def _step_accesses(step) -> list:
    """A step's reads and writes as the access records `blind_spots` reads."""
    return [types.SimpleNamespace(target=t, mode="read") for t in step.reads] + \
        [types.SimpleNamespace(target=t, mode="write") for t in step.writes]
