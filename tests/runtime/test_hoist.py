"""`lowering.hoist.invariants`: in a loop that certainly runs (constant bounds, one iteration at
least), a generated temporary assigned a pure expression of what the loop never changes is
computed once before it (a cell list's 27 neighbours computed the row's grid coordinates 27
times: md's force loop 1.56 -> 1.43 ms), with the same values; statements after an early exit,
loads from arrays the loop stores to or hands to a call, temporaries carried between
iterations, and loops of a count not known stay as they were."""
import ast

import numpy as np

import relsim as rs
from relsim.domains import grid
from relsim.runtime import execute
from relsim.runtime.lowering.hoist import invariants

BODY = """
for k in range(27):
    _t1 = cell[r]
    _t2 = shape[0]
    _t3 = _t1 % _t2
    _t4 = _t3 + k % 3 - 1
    _t5 = _t4 if 0 <= _t4 < _t2 else _t4 % _t2
    _t6 = _t1 // _t2
    for j in range(2):
        _t7 = _t6 * 2 + 1
        acc[0] += _t7 * j + _t5
    out[k] = _t5
    _t8 = out[0]
    acc[1] += _t8
"""


def _run(body, r):
    scope = {"cell": np.array([5, 7, 11]), "shape": np.array([4]), "r": r,
             "out": np.zeros(27, dtype=np.int64), "acc": np.zeros(2, dtype=np.int64)}
    exec(ast.unparse(ast.Module(body, [])), scope)  # (generated code is unparsed too)
    return scope["out"].tolist(), scope["acc"].tolist()


def test_invariant_temporaries_move_before_the_loop_with_the_same_values():
    body = ast.parse(BODY).body
    after = invariants(body)
    for r in (0, 1, 2):
        assert _run(after, r) == _run(body, r)
    before = [ast.unparse(s) for s in after[:-1]]
    # the row's cell, the shape, the coordinate and the division; the inner loop's own
    # invariant leaves both loops
    assert before == ["_t1 = cell[r]", "_t2 = shape[0]", "_t3 = _t1 % _t2", "_t6 = _t1 // _t2",
                      "_t7 = _t6 * 2 + 1"]
    text = ast.unparse(after[-1])
    # kept: what depends on k, and a load from an array the loop stores to
    assert "_t4 = _t3 + k % 3 - 1" in text and "_t8 = out[0]" in text
    assert ast.unparse(ast.Module(body, [])) == ast.unparse(ast.parse(BODY))  # not changed


def _kept(source: str) -> str:
    body = ast.parse(source).body
    after = invariants(body)
    assert len(after) == len(body), ast.unparse(ast.Module(after, []))
    return ast.unparse(ast.Module(after, []))


def test_loops_that_may_not_run_or_leave_early_keep_their_statements():
    _kept("for k in range(n):\n    _t1 = a // b\n    out[k] = _t1\n")  # count not known
    _kept("for k in range(0):\n    _t1 = a // b\n    out[k] = _t1\n")
    _kept("for k in range(3, 3):\n    _t1 = a // b\n    out[k] = _t1\n")
    _kept("for k in range(4):\n    if a > k:\n        continue\n    _t1 = a // b\n"
          "    out[k] = _t1\n")  # after an early exit: it may never have run
    _kept("for k in range(4):\n    out[k] = _t1\n    _t1 = a // b\n")  # carried from before
    _kept("for k in range(4):\n    _t1 = a // b\n    _t1 = _t1 + k\n")  # assigned twice
    _kept("for k in range(4):\n    x = a // b\n    out[k] = x\n")  # a user's local
    _kept("for k in range(4):\n    _t1 = arr[0]\n    touch(arr)\n")  # a call may write it
    _kept("for k in range(4):\n    _t1 = f(a)\n    out[k] = _t1\n")  # not known pure
    _kept("for k in range(4):\n    _t1 = b\n    b = k\n")  # b changes in the loop


@rs.kernel
def _neighbourhood(c):
    s = 0.0
    for k in range(9):  # the 3 x 3 cells around, offsets computed at run time
        s += c(k % 3 - 1, k // 3 - 1).u * (1.0 + 0.1 * k)
    c.w = s


def test_a_computed_neighbourhood_gives_interps_bits_with_the_coordinates_found_once():
    results = {}
    for target, threads in (("interp", None), ("cpu", 1), ("cpu", 2), ("cpu-serial", None)):
        g = grid.Grid((7, 5), periodic=True)
        C = g.cells
        C.new_field("u", rs.f64).load(np.sin(np.arange(C.size) * 0.7))
        C.new_field("w", rs.f64)
        cfg = rs.Config(target=target, threads=threads, parallel_threshold=1)
        C.foreach(_neighbourhood, cfg)
        results[target, threads] = C.w.numpy(copy=True)
        if target == "cpu":
            source = execute.executable(_neighbourhood, C, cfg).source
    for got in results.values():
        assert got.tobytes() == results["interp", None].tobytes()
    u = np.sin(np.arange(35) * 0.7).reshape(5, 7)  # (x fastest)
    want = sum(np.roll(u, (1 - k // 3, 1 - k % 3), axis=(0, 1)) * (1.0 + 0.1 * k)
               for k in range(9))
    np.testing.assert_allclose(results["interp", None], want.ravel(), rtol=1e-13)
    # the row's coordinates (a remainder by the grid's shape) before the 9 offsets' loop
    serial = source.index("def kernel_parallel")
    assert source.index("% _t", serial) < source.index("in range(9):", serial)
