"""What a tape's gradients cannot see, found at `backward` and said there (a `RelsimWarning`
naming the fields) and by `.grad` (a `DataError`, fields and Globals) rather than handed out
as a silent zero or a false "not differentiated".

- *Replaced before read*: a float field or Global the host assigned inside the tape (``load``,
  ``fill``, ``.value = ...``) that no recorded launch had read before, and that the next launch
  touching it reads. Its gradient is taken at the tape's start, and that value never reached
  the loss: the gradient is 0 by construction, although the assigned value (a parameter
  loaded inside the block, typically) did reach it.
- *Not differentiated*: a float field or Global the program reads whose elements are not f64
  (an f32 parameter). `backward` differentiates f64 values only.

An event is ``("host", target)`` or ``("launch", kernel name, accesses)`` (the launch's access
summary), in recorded order.
"""
from __future__ import annotations

from ...errors import RelsimWarning
from ...types import as_value_type
from .records import is_diff


def _label(t) -> str:
    qual = getattr(t, "qualname", None)
    if qual is not None:
        return f"field {qual}"
    return f"Global {t.name!r}" if t.name else "a Global"


def _is_float(t) -> bool:
    return as_value_type(t.type).elem.is_float


def replaced_before_read(events) -> dict:
    """{id(target): (target, how)}: the float targets assigned by the host before any launch
    read them, whose assigned value the next launch touching them reads."""
    read_before, pending, out = set(), {}, {}
    for e in events:
        if e[0] == "host":
            t = e[1]
            if id(t) not in read_before and _is_float(t):
                pending[id(t)] = t
            continue
        _, kernel, accesses = e
        by_target = {}
        for a in accesses:
            by_target.setdefault(id(a.target), []).append(a)
        for key, acc in by_target.items():
            reads = any(a.mode == "read" for a in acc)
            t = pending.pop(key, None)
            if t is not None and reads:
                out[key] = (t, kernel)
            if reads:
                read_before.add(key)
    return out


def not_differentiated(events) -> dict:
    """{id(target): (target, kernel)}: float targets that are not f64 and that a launch
    reads (the first such kernel)."""
    out = {}
    for e in events:
        if e[0] != "launch":
            continue
        for a in e[2]:
            t = a.target
            if a.mode == "read" and not getattr(t, "is_key", False) and _is_float(t) and \
                    not is_diff(t.type) and id(t) not in out:
                out[id(t)] = (t, e[1])
    return out


def reasons(events) -> dict:
    """{id(target): (target, why its gradient is not there)} for both kinds."""
    out = {}
    for key, (t, kernel) in replaced_before_read(events).items():
        out[key] = (t, f"{_label(t)} was assigned inside the tape before any recorded launch "
                       f"read it (kernel {kernel!r} then read the assigned value): its gradient "
                       f"is with respect to its value when the tape started, which that "
                       f"assignment replaced, so it is 0; assign parameters before "
                       f"`with rs.Tape()`")
    for key, (t, kernel) in not_differentiated(events).items():
        out[key] = (t, f"{_label(t)} is {t.type!r} (read by kernel {kernel!r}): tape.backward "
                       f"differentiates f64 values only; store parameters as f64")
    return out


def not_parameters(events) -> set:
    """ids of the targets that do not look like parameters: written by a recorded launch
    (state the program advances) or assigned by the host more than once (data it feeds in,
    an observation per step)."""
    assigned, out = {}, set()
    for e in events:
        if e[0] == "host":
            assigned[id(e[1])] = assigned.get(id(e[1]), 0) + 1
        else:
            out |= {id(a.target) for a in e[2] if a.mode != "read"}
    return out | {key for key, count in assigned.items() if count > 1}


def warning(found: dict, events) -> RelsimWarning | None:
    """One warning naming the fields of `reasons` that look like parameters, or None. The
    others are left to their ``.grad``: a simulation's initial state or its observations
    loaded in the block, or a time step the host computes (a Global), are constants to the
    tape far more often than parameters."""
    skip = not_parameters(events)
    fields = [why for key, (t, why) in found.items()
              if hasattr(t, "qualname") and key not in skip]
    if not fields:
        return None
    return RelsimWarning("tape.backward: no gradient for " + "; ".join(fields))
