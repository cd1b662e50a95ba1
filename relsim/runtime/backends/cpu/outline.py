"""A large parallel loop's body compiled as a function of its own, which the loop calls.

Numba's parallel passes (parfor conversion, array analysis, hoisting, gufunc lowering) take time
that grows much faster than the loop body they see: measured on this project's smoke advection
kernel (2-D, semi-Lagrangian, three bilinear interpolations), the grid loops' parallel variant
compiled in 57 s against 3.6 s for the same loops serially, and its row loop in 16 s against
1.1 s. With the body outlined — an ordinary (serial) function the parallel loop calls — the
parallel passes see a loop of one call: 7.2 s and 2.9 s, and the launch ran as fast or faster
(15 ms against 22 ms a step at 512^2, 2 threads).
A small body gains nothing (a light row loop's call can cost vectorisation: 1.4 -> 1.7 ms on
2M rows), so only bodies of at least `OUTLINE_STATEMENTS` statements are outlined, and only
in the loops `loops.OUTLINED_LOOPS` names (the grid loops): elsewhere the outlined body ran
slower (LULESH's large row kernels 6-28%, Airfoil's split and lanes loops ~18%), the parallel
compilation's loss being the lesser one there. Any parallel loop of at least `HUGE` statements
is outlined too: generated adjoint and tangent kernels reach 3,000-11,000, where the parallel
passes take minutes (the fem beam's forces adjoint, 3,844 statements: its parallel variant
compiled in 149 s inline, 26 s outlined; its backward at 5,184 tets, 2 threads, 6.6 ms inline
against 7.0 ms outlined).

The loop becomes ``for _ob in prange(_onb): kernel_body(_olo, _ohi, ...)`` over at most
`OUTLINE_BLOCKS` contiguous blocks of its iterations, and the body function runs its block's
iterations in an ordinary loop: one call a block, not an iteration (a call per row of LULESH's
large kernels, each passing its dozens of arrays, cost 32% of its speed), and that loop keeps
what LLVM does to a loop (hoisting, vectorising). The body function takes the block's bounds,
the function's arguments and the names it assigns before the loop, in that order; the loop's
body is the same statements (shared with the serial variants, as `emit.unparse` expects), so
the same arithmetic in the same order: the bits do not change, only which thread runs a block.

A loop outlined this way is outlined in every function that has it: the serial variant calls the
body function once over all its rows, so the serial and the parallel variant call one body
function (`outlined`'s `made`) and Numba compiles it once.
"""
from __future__ import annotations

import ast

from ...lowering.emit import call, name

# measured (see above): 37 and 40 statements, outlined 1.35 / 1.75 s against 0.93 / 1.01 s
# inline; 388 statements, 2.9 s against 16 s
OUTLINE_STATEMENTS = 150
# any parallel loop's body this large is outlined (`loops.OUTLINED_LOOPS` names the loops
# outlined from OUTLINE_STATEMENTS): the largest user kernels measured (LULESH's element and
# hourglass kernels, ~2,200 statements) stay inline, where outlining cost them speed
HUGE = 3000
# the same for kernels relsim generates (adjoints, tangents, Jacobians: `Analysed.generated`),
# whose parallel variants no measurement found slower outlined: a particle-cell pair force's
# adjoints (1,287 statements) 8.0 / 9.9 s inline -> 3.9 / 5.2 s outlined to compile, forward
# and backward over 1,500 particles on 2 threads 147.3 / 149.5 ms -> 149.0 / 148.1 ms
HUGE_GENERATED = 1000
# at most this many blocks of iterations a parallel loop is cut into (the threads share them
# out statically; a call a block costs nothing next to a block of large bodies)
OUTLINE_BLOCKS = 1024


def large(stmts) -> bool:
    """Whether a loop body of these statements is large (its compile time matters more than
    a few operations a row)."""
    return _statements(stmts) >= OUTLINE_STATEMENTS


def outlined(fn: ast.FunctionDef, threshold: int = OUTLINE_STATEMENTS,
             made: dict | None = None) -> tuple:
    """(body function or None, fn): fn's last top-level loop calling a function of its body
    when the body has at least `threshold` statements, else fn unchanged. A `prange` loop calls
    it block by block, a `range` loop once over all its iterations. `made` (body text and the
    names it takes -> its function's name) lets functions whose loops have the same body call
    one function (None returned for it after the first): the serial and the parallel variant
    of a huge body compile it once."""
    found = _row_loop(fn)
    if found is None:
        return None, fn
    at, loop = found
    if _statements(loop.body) < threshold:
        return None, fn
    before = [t.id for s in fn.body[:at] if isinstance(s, ast.Assign)
              for t in s.targets if isinstance(t, ast.Name)]
    shared = [a.arg for a in fn.args.args] + before
    made = {} if made is None else made
    key = (ast.dump(ast.Module(loop.body, [])), loop.target.id, tuple(shared))
    body_name, body = made.get(key), None
    if body_name is None:
        body_name = _body_name(fn.name, set(made.values()))
        made[key] = body_name
        block = ast.For(loop.target, call("range", name("_olo"), name("_ohi")), loop.body, [])
        body = ast.FunctionDef(body_name, ast.arguments(
            [], [ast.arg(p) for p in ["_olo", "_ohi"] + shared], None, [], [], None, []),
            [block], [], None, None)
    args = loop.iter.args
    first, end = (ast.Constant(0), args[0]) if len(args) == 1 else (args[0], args[1])
    if loop.iter.func.id == "range":  # serial: one call over every iteration
        # (an int64 first, as the parallel callers pass: a literal 0 would type another
        # signature of the body)
        calling = [ast.Expr(call(body_name, call("_i64", first), end, *map(name, shared)))]
        return body, ast.FunctionDef(fn.name, fn.args, fn.body[:at] + calling, [], None, None)

    def assign(var, value):
        return ast.Assign([ast.Name(var, ast.Store())], value)

    def op(a, o, b):
        return ast.BinOp(a, o(), b)

    def bound(k):  # first + count * k // blocks: block k's first iteration
        return op(name("_ofirst"), ast.Add,
                  op(op(name("_ocount"), ast.Mult, k), ast.FloorDiv, name("_onb")))

    setup = [assign("_ofirst", first), assign("_ocount", op(end, ast.Sub, name("_ofirst"))),
             assign("_onb", call("max", ast.Constant(0),
                                 call("min", name("_ocount"), ast.Constant(OUTLINE_BLOCKS))))]
    calling = ast.For(ast.Name("_ob", ast.Store()), call("prange", name("_onb")), [
        assign("_obi", call("_i64", name("_ob"))),  # (prange's index is unsigned)
        ast.Expr(call(body_name, bound(name("_obi")),
                      bound(op(name("_obi"), ast.Add, ast.Constant(1))), *map(name, shared)))],
        [])
    return body, ast.FunctionDef(fn.name, fn.args, fn.body[:at] + setup + [calling], [], None,
                                 None)


def _body_name(fname: str, taken: set) -> str:
    """The body function's name: the function's without its variant (`kernel_parallel`
    -> `kernel_body`, `kernel_lanes_serial` -> `kernel_lanes_body`), unless another body
    has it."""
    base = "_".join(w for w in fname.split("_") if w not in ("serial", "parallel"))
    for candidate in (f"{base}_body", f"{fname}_body"):
        if candidate not in taken:
            return candidate
    raise AssertionError(f"two bodies of {fname}")


def _row_loop(fn):
    """(index, loop) of fn's last top-level statement when it is a `range` or `prange` loop
    over one or two bounds (nothing after it can read its names), else None."""
    if not fn.body:
        return None
    loop = fn.body[-1]
    if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and \
            isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) and \
            loop.iter.func.id in ("range", "prange") and len(loop.iter.args) in (1, 2) and \
            not loop.orelse:
        return len(fn.body) - 1, loop
    return None


def _statements(stmts) -> int:
    n = 0
    for s in stmts:
        n += 1
        for part in ("body", "orelse"):
            sub = getattr(s, part, None)
            if sub:
                n += _statements(sub)
    return n
