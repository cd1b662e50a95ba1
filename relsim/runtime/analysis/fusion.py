"""The checks that make `rs.fuse(k1, k2, ...)` give the bits of the kernels run one after the
other (the fused body itself is checked as one kernel first, which already refuses a later
kernel reading another row of a field an earlier one writes, or reading a Global it reduces):

* a field one kernel reduces into through keys, or a Global it reduces into, is touched by no
  other kernel of the fusion: run apart, each launch folds its own contributions (rounding
  once per launch, and in its own row order); fused, they would fold together;
* no kernel but the last returns early, deletes its row or inserts rows: run apart, the later
  kernels run for that row (or not at all, once deleted) regardless.
"""
from __future__ import annotations

from ...errors import KernelSyntaxError, PhaseError
from .. import ir
from . import access, phase
from .typecheck import TypeChecker


def check(name: str, parts, relation, param: str, bodies) -> None:
    """Raise where fusing the kernels `parts` (their untyped `bodies`) would change results."""
    for kernel, body in zip(parts[:-1], bodies[:-1]):
        for s in ir.walk_stmts(body):
            what = _ends_row(s)
            if what:
                raise KernelSyntaxError(
                    f"kernel {kernel.name!r} {what}: in rs.fuse only the last kernel may (the "
                    f"kernels after it run for the same row)", s.loc, name)
    summaries = [access.summarize(relation, TypeChecker(name, relation, param).check(b))
                 for b in bodies]
    for j, (kernel, summary) in enumerate(zip(parts, summaries)):
        info = phase.check(summary, name)
        for target in (*info.key_reduced, *info.global_reduced):
            mine = next(a for a in summary.for_target(target) if a.mode != "read")
            for i, other in enumerate(summaries):
                used = list(other.for_target(target)) if i != j else []
                if used:
                    raise PhaseError(
                        f"{phase.target_name(target)} is reduced into by kernel "
                        f"{kernel.name!r} and used by kernel {parts[i].name!r}; fused, their "
                        f"contributions would fold together (run them as separate launches)",
                        mine.loc, name, extra=[(f"used by {parts[i].name!r} here", used[0].loc)])


def _ends_row(s) -> str | None:
    if isinstance(s, ir.Return):
        return "returns early"
    if isinstance(s, ir.Delete):
        return "deletes rows"
    if isinstance(s, ir.Insert):
        return "inserts rows"
    return None
