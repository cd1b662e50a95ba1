"""Random control flow for the soak's schedules (`random_kernels.program`): Global arithmetic
(`rs.assign`), loops (`rs.while_loop`) and branches (`rs.cond`) whose conditions compare
Globals, with launches and assignments (and, one level down, more loops and branches) inside.

The steps, beside `random_kernels`' own:

* ``("assign", g, expr)``: ``rs.assign(g, expr)``, `expr` the text of a Global expression;
* ``("loop", condition or None, max_iterations, count Global or None, body)``:
  ``rs.while_loop(condition, body, max_iterations, count=count)``;
* ``("branch", condition, then, otherwise or None)``: ``rs.cond(condition, then, otherwise)``.

Expressions and conditions are Python text over the program's scalar f64 Globals (`expression`
evaluates them into `rs.assign` / `rs.while_loop` operands). They are drawn from a stream of
their own (`with_control`), so a program's kernels, sizes and other steps are those its seed
gave before control steps existed.
"""
from __future__ import annotations

import random

# the Globals arithmetic may assign (scalar f64) and the count Globals loops may set
ASSIGNED = ("g_in", "total", "lo", "hi", "amin", "amax")
COUNTS = (None, None, "g_in", "gi")
LITERALS = ("0.5", "2.0", "-1.0", "0.25", "3.0", "0.0", "1e3")
COMPARE = ("<", "<=", ">", ">=")
KINDS = frozenset({"assign", "loop", "branch"})  # (with "launch": what a capture records)


def with_control(seed: int, schedule: list, kernels: dict, spaces: dict) -> list:
    """`schedule` with control steps added at random places (for 3 programs in 5), drawn from
    a stream of `seed`'s own. `kernels`: name -> relation; `spaces`: relation -> the spaces
    launches over it may take."""
    r = random.Random(f"control {seed}")
    if r.random() < 0.4:
        return schedule
    out = list(schedule)
    for _ in range(r.randint(1, 3)):
        out.insert(r.randint(1, len(out)), _control(r, kernels, spaces, 0))
    return out


def _control(r: random.Random, kernels, spaces, depth: int):
    x = r.random()
    if x < 0.25:
        return _assign(r)
    if x < 0.6:
        cond = None if r.random() < 0.2 else _condition(r)
        return ("loop", cond, r.randint(0, 4), r.choice(COUNTS),
                _body(r, kernels, spaces, depth + 1))
    return ("branch", _condition(r), _body(r, kernels, spaces, depth + 1),
            None if r.random() < 0.3 else _body(r, kernels, spaces, depth + 1))


def _body(r: random.Random, kernels, spaces, depth: int) -> tuple:
    steps = []
    for _ in range(r.randint(1, 3)):
        x = r.random()
        if x < 0.3:
            steps.append(_assign(r))
        elif x < 0.45 and depth < 2:
            steps.append(_control(r, kernels, spaces, depth))
        else:
            name = r.choice(sorted(kernels))
            steps.append(("launch", name, r.choice(spaces[kernels[name]])))
    return tuple(steps)


def _assign(r: random.Random) -> tuple:
    return ("assign", r.choice(ASSIGNED), _expr(r, 0))


def _expr(r: random.Random, depth: int) -> str:
    if depth >= 2 or r.random() < 0.4:
        return r.choice(ASSIGNED) if r.random() < 0.6 else r.choice(LITERALS)
    op = r.choice(["+", "-", "*", "/", "abs", "neg"])
    if op == "abs":
        return f"abs({_expr(r, depth + 1)})"
    if op == "neg":
        return f"-({_expr(r, depth + 1)})"
    return f"({_expr(r, depth + 1)} {op} {_expr(r, depth + 1)})"


def _condition(r: random.Random) -> str:
    parts = [f"({r.choice(ASSIGNED)} {r.choice(COMPARE)} {_expr(r, 1)})"
             for _ in range(1 if r.random() < 0.7 else 2)]
    return " & ".join(parts)


def walk(steps):
    """Every step of `steps`, the steps inside loops and branches after theirs (depth first)."""
    for step in steps:
        yield step
        inner = step[4:] if step[0] == "loop" else step[2:] if step[0] == "branch" else ()
        for part in inner:
            yield from walk(part or ())


def expression(text: str, globals_: dict):
    """The `rs.assign` operand or condition `text` denotes over the Globals `globals_`."""
    return eval(text, {"__builtins__": {"abs": abs}}, dict(globals_))  # noqa: S307 (ours)


def format_step(step, launch_text) -> str:
    """One control step as text (`launch_text(step)` for a launch inside it)."""
    kind = step[0]
    if kind == "assign":
        return f"rs.assign({step[1]}, {step[2]})"

    def body(steps):
        return "[" + "; ".join(format_step(s, launch_text) if s[0] in KINDS else
                               launch_text(s) for s in steps) + "]"
    if kind == "loop":
        _, cond, limit, count, steps = step
        return f"rs.while_loop({cond}, {body(steps)}, {limit}, count={count})"
    _, cond, then, otherwise = step
    return f"rs.cond({cond}, {body(then)}, {'None' if otherwise is None else body(otherwise)})"
