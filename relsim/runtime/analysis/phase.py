"""Phase checking: the rules that make every kernel race-free and order-independent.

* a field touched only through the centred key: any mix of read / write / reduce;
* a field reached through any other key path: read-only, or reduce-only with one operator;
  except that a field read through other keys may be written (or reduced into) at the
  kernel's own row when the launch runs over a subset none of those reads reach (one colour of
  a red-black or graph colouring: Gauss-Seidel): `coloured` lists these, and the launch proves
  it (`runtime/colouring.py`) or raises this same error;
* a global: read-only, or reduce-only with one operator.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import PhaseError
from ...relations.field import Field
from .access import AccessSummary


@dataclass(frozen=True)
class PhaseInfo:
    key_reduced: dict  # Field -> op, for fields reduced through (some) non-centred key
    global_reduced: dict  # Global -> op


def target_name(t) -> str:
    if isinstance(t, Field):
        return f"field {t.qualname}"
    return f"Global {t.name!r}" if t.name else "Global"


def _colourable(acc) -> bool:
    """A field read through other keys and otherwise touched only at the kernel's own row."""
    others = [a for a in acc if a.mode != "read"]
    return bool(others) and all(a.centred for a in others) and \
        any(a.mode == "read" and not a.centred for a in acc)


def coloured(summary: AccessSummary) -> list:
    """[(field, its first read through another key, its first write or reduction)]: the fields
    a launch may read through keys and write only over a subset the reads never reach."""
    out = []
    for t in summary.targets():
        acc = summary.for_target(t)
        if isinstance(t, Field) and _colourable(acc):
            reads = [a for a in acc if a.mode == "read" and not a.centred]
            out.append((t, reads[0], next(a for a in acc if a.mode != "read")))
    return out


def conflict(field, read, other, kernel_name: str, note: str = "") -> PhaseError:
    """The error for `field` read through another key (`read`) and written or reduced into
    (`other`) in one launch (`note`: why the launch could not run it as a colour)."""
    rule = ("a field reached through another key may be read or reduced into in one kernel, "
            "not both")
    verb = "written" if other.mode == "write" else f"reduced with '{other.op}'"
    return PhaseError(
        f"{target_name(field)} is read and {verb} in the same kernel ({rule}; the result would "
        f"depend on the order rows run in){note}", read.loc, kernel_name,
        extra=[(f"{verb} here ({other.path})", other.loc)])


def check(summary: AccessSummary, kernel_name: str) -> PhaseInfo:
    key_reduced, global_reduced = {}, {}
    for t in summary.targets():
        acc = summary.for_target(t)
        is_field = isinstance(t, Field)
        if is_field:
            through = [a for a in acc if not a.centred]
            bad_write = next((a for a in through if a.mode == "write"), None)
            if bad_write:
                raise PhaseError(
                    f"{target_name(t)} is written through the key path '{bad_write.path}'; only "
                    f"the kernel's own row may be written (another row may write the same entry: a "
                    f"race). Reduce into it instead (+=, *=, min, max)", bad_write.loc,
                    kernel_name)
            if not through:
                continue
        reads = [a for a in acc if a.mode == "read"]
        others = [a for a in acc if a.mode != "read"]
        if is_field and _colourable(acc):
            continue  # decided per launch space (`coloured`): see the module docstring
        if reads and others:
            first_other = others[0]
            # point at a read through another key if there is one (the centred ones are fine)
            reads.sort(key=lambda a: a.centred)
            if is_field:
                raise conflict(t, reads[0], first_other, kernel_name)
            verb = "written" if first_other.mode == "write" else \
                f"reduced with '{first_other.op}'"
            raise PhaseError(
                f"{target_name(t)} is read and {verb} in the same kernel (a Global may be read "
                f"or reduced into in one kernel, not both; the result would depend on the order "
                f"rows run in)", reads[0].loc, kernel_name,
                extra=[(f"{verb} here", first_other.loc)])
        ops = {}
        for a in others:
            ops.setdefault(a.op, a)
        if len(ops) > 1:
            (op1, a1), (op2, a2) = list(ops.items())[:2]
            raise PhaseError(
                f"{target_name(t)} is reduced with both '{op1}' and '{op2}' (one reduction "
                f"operator per {'field' if is_field else 'Global'} and kernel; mixed operators do "
                f"not commute)", a1.loc, kernel_name,
                extra=[(f"reduced with '{op2}' here", a2.loc)])
        if others:
            (key_reduced if is_field else global_reduced)[t] = others[0].op
    return PhaseInfo(key_reduced, global_reduced)
