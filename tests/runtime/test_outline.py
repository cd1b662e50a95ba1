"""A large parallel loop's body is compiled as a function the loop calls (`backends/cpu/
outline.py`): the same bits as interp and the serial variant, an early return leaves only its
own row, a small body stays in its loop."""
import ast

import numpy as np
import pytest

import relsim as rs
from relsim.runtime import execute
from relsim.runtime.backends.cpu import outline


def _advect_like():
    """Enough arithmetic for `outline.OUTLINE_STATEMENTS`, an early return, a loop whose
    `continue` is its own."""
    @rs.kernel
    def heavy(c):
        if c.u > 1.2:
            return
        x = c.u
        for k in range(3):
            if k == 1:
                continue
            x = x + 0.5 * k
        for _k in range(4):
            x = 0.5 * x + c(1, 0).u * 0.25 - c(-1, 0).u * 0.125 + c(0, 1).u / (2.0 + c.u * c.u)
            x = x - c(0, -1).u * 0.0625 + abs(x) * 0.03125 - c(1, 1).u * c(-1, -1).u * 0.5
            x = x + (c(2, 0).u - c(-2, 0).u) * (c(0, 2).u + 1.5) / (3.0 + abs(c(1, -1).u))
            x = x * 0.75 + max(c(-1, 1).u, x) * 0.25 - min(c(1, 1).u, 0.5) * 0.125
            x = x + (c(1, 0).u - c(-1, 0).u) * (c(0, 1).u - c(0, -1).u) / (4.0 + abs(x))
            x = x - c(2, 1).u * 0.0625 + c(-2, -1).u * c(1, 2).u * 0.25 - abs(c(-1, 2).u) * 0.5
            x = x * 0.5 + c(2, 2).u * c(-2, 2).u - c(2, -2).u / (1.0 + abs(c(-2, -2).u))
            x = x + max(c(0, 2).u, c(0, -2).u) * 0.25 - min(c(2, 0).u, c(-2, 0).u) * 0.125
            x = x - (c(1, 2).u + c(2, 1).u) * (c(-1, -2).u - c(-2, -1).u) * 0.0625
            x = x * 0.875 + abs(c(1, -2).u - c(-1, 2).u) * 0.125 / (1.0 + x * x)
            x = x * 0.625 - (c(2, -1).u - c(-2, 1).u) * (c(1, -1).u + 2.5) / (5.0 + abs(x))
            x = x + min(c(-1, -2).u, x) * 0.375 - max(c(2, 2).u, c(-2, -2).u) * 0.0625
        c.v = x
    return heavy


@rs.kernel
def light(c):
    c.v = 2.0 * c.u


def _grid(n=24, seed=0):
    C = rs.Relation("C", n * n)
    C.set_grid((n, n), True)
    C.new_field("u", rs.f64).load(np.random.default_rng(seed).standard_normal(n * n))
    C.new_field("v", rs.f64, init=-1.0)
    return C


def _functions(source) -> dict:
    return {f.name: f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef)}


@pytest.mark.parametrize("subset", [False, True])
def test_outlined_bodies_give_the_bits_of_interp(subset):
    heavy = _advect_like()
    results = {}
    for target in ("interp", "cpu-serial", "cpu"):
        C = _grid()
        where = C.subset("some", np.arange(0, C.size, 3)) if subset else C
        cfg = rs.Config(target=target, parallel_threshold=1)
        where.foreach(heavy, cfg)
        results[target] = C.v.numpy(copy=True)
    assert results["interp"].tobytes() == results["cpu-serial"].tobytes()
    assert results["interp"].tobytes() == results["cpu"].tobytes()
    assert (results["cpu"] == -1.0).any()  # (the early return left some rows)
    exe = execute.executable(heavy, C, rs.Config(target="cpu", parallel_threshold=1))
    funcs = _functions(exe.source)
    (loop,) = funcs["kernel_grid"].body[-1:]  # a loop of blocks of grid lines (this part's)
    assert _over_blocks(funcs["kernel_grid"], loop)
    assert ast.unparse(loop.body[-1]).startswith("kernel_grid_body(")
    # row loops stay as they are (LULESH's large row kernels ran slower outlined), and so do
    # serial loops
    assert "kernel_body" not in funcs
    # a large body runs the wrapping (peeled) form along the whole line: one copy, not three
    lines = [s for s in ast.walk(funcs["kernel_grid_body"])
             if isinstance(s, ast.For) and ast.unparse(s.target) == "_g0"]
    assert len(lines) == 1
    # the body function runs its block's lines in a loop
    (lines,) = funcs["kernel_grid_body"].body
    assert ast.unparse(lines.iter) == "range(_olo, _ohi)"


def test_a_small_body_stays_in_its_loop():
    C = _grid(8)
    C.foreach(light, rs.Config(target="cpu", parallel_threshold=1))
    assert (C.v.numpy() == 2.0 * C.u.numpy()).all()
    source = execute.executable(light, C, rs.Config(target="cpu", parallel_threshold=1)).source
    assert not any(name.endswith("_body") for name in _functions(source))


@pytest.mark.parametrize("n", [0, 1, 5, 1023, 1024, 1025, 5000])
@pytest.mark.parametrize("first", [0, 3])
def test_the_blocks_cover_every_iteration_once_in_order(n, first):
    """The outlined loop's blocks, run as written (prange as range), give every iteration
    of the original loop once, in ascending order, with the names assigned before it."""
    src = ("def f(lo, hi, out):\n    k = 2\n    for i in prange(lo, hi):\n"
           "        if i % 7 == 3:\n            continue\n        out.append(i * k)\n")
    fn = ast.parse(src).body[0]
    body, calling = outline.outlined(fn, threshold=1)
    assert [a.arg for a in body.args.args] == ["_olo", "_ohi", "lo", "hi", "out", "k"]
    assert body.body[0].body is fn.body[1].body  # the statements are shared, not copied
    space = {"prange": range, "_i64": int}
    exec(compile(ast.fix_missing_locations(ast.Module([body, calling], [])), "<t>", "exec"),
         space)
    got = []
    space["f"](first, first + n, got)
    assert got == [i * 2 for i in range(first, first + n) if i % 7 != 3]


def _unrolled(n):
    """A row kernel of about 11 n statements (a static loop of n, unrolled)."""
    @rs.kernel
    def unrolled(r):
        x = r.u
        for _ in rs.static(range(n)):
            x = x * 0.5 + r.u * 0.25
            if x > 1.0:
                x = x - 0.125
            x = x + 0.0625
        r.v = x
    return unrolled


_huge = _unrolled(300)  # ~3,300 statements, as generated adjoints reach
_mid = _unrolled(150)  # ~1,650: between HUGE_GENERATED and HUGE
_checked = _unrolled(20)  # ~220; with debug checks a few hundred more


def _uv(n=10):
    R = rs.Relation("R", n)
    R.new_field("u", rs.f64)
    R.new_field("v", rs.f64)
    return R


def test_a_huge_row_loop_is_outlined_and_a_large_one_is_not():
    """Row loops are outlined from `outline.HUGE` statements (generated adjoint and tangent
    kernels: the parallel passes took minutes on them inline); LULESH-sized ones stay inline.
    (The source only: nothing is compiled here.)"""
    R = _uv()
    cfg = rs.Config(target="cpu", parallel_threshold=1)
    funcs = _functions(execute.executable(_huge, R, cfg).source)
    assert outline._statements(funcs["kernel_body"].body) >= outline.HUGE
    # one body function, which the serial and the parallel variant both call: compiled once
    assert [f for f in funcs if f.endswith("_body")] == ["kernel_body"]
    (loop,) = funcs["kernel_parallel"].body[-1:]
    assert _over_blocks(funcs["kernel_parallel"], loop)
    assert ast.unparse(loop.body[-1]).startswith("kernel_body(")
    assert "kernel_serial" not in funcs  # (a serial launch runs kernel_parallel as one part)
    heavy = _advect_like()  # ~400 statements a row: inline in its row loops
    C = _grid(8)
    funcs = _functions(execute.executable(heavy, C, cfg).source)
    assert "kernel_body" not in funcs


def test_a_kernel_relsim_generates_is_outlined_from_fewer_statements():
    """The same ~1,650-statement body: inline as a user's kernel (LULESH's stay inline, faster
    there), outlined as one relsim generates (`Analysed.generated`: adjoints, tangents)."""
    from relsim.runtime.adjoint import GivenKernel
    from relsim.runtime.analysis.frontend import Frontend

    R = _uv()
    cfg = rs.Config(target="cpu", parallel_threshold=1)
    user = _functions(execute.executable(_mid, R, cfg).source)
    assert "kernel_body" not in user
    param, body = Frontend(_mid.name).kernel(_mid)
    generated = GivenKernel(_mid, "_mid_generated", param, body)
    funcs = _functions(execute.executable(generated, R, cfg).source)
    n = outline._statements(funcs["kernel_body"].body)
    assert outline.HUGE_GENERATED <= n < outline.HUGE


def test_a_debug_variant_is_outlined_from_outline_statements():
    """A debug run is for finding errors: its parallel row loops are outlined from
    `outline.OUTLINE_STATEMENTS` (inline, a checked random kernel's took 7-10 s to compile);
    the same kernel without checks keeps its loops."""
    R = _uv()
    plain = _functions(execute.executable(_checked, R, rs.Config(
        target="cpu", parallel_threshold=1)).source)
    assert "kernel_body" not in plain
    cfg = rs.Config(target="cpu", parallel_threshold=1, debug=True)
    funcs = _functions(execute.executable(_checked, R, cfg).source)
    assert outline._statements(funcs["kernel_body"].body) < outline.HUGE_GENERATED


def test_one_outlined_body_serves_every_variant_with_the_bits_of_interp():
    """A body outlined once (here a debug variant's) is called by the serial and the parallel
    functions, over the whole relation and over a subset: each gives interp's bits, and the
    body is compiled for one signature at most."""
    import sys

    rows = np.array([0, 2, 3, 7, 9])
    results = {}
    for target in ("interp", "cpu-serial", "cpu"):
        for subset in (False, True):
            R = _uv()
            R.u.load(np.linspace(-1.0, 3.0, R.size))
            where = R.subset("some", rows) if subset else R
            cfg = rs.Config(target=target, parallel_threshold=1, debug=True)
            where.foreach(_checked, cfg)
            results[target, subset] = R.v.numpy(copy=True)
    for key, got in results.items():
        assert got.tobytes() == results["interp", key[1]].tobytes(), key
    assert not np.array_equal(results["interp", True], results["interp", False])
    exe = execute.executable(_checked, R, rs.Config(target="cpu", parallel_threshold=1,
                                                    debug=True))
    (mod,) = [m for m in list(sys.modules.values())
              if getattr(m, "__file__", None) == exe.path]
    # (none when an earlier test or run left the callers in Numba's disk cache: they load
    # with the body linked in, and the body's own dispatcher compiles nothing)
    assert len(mod.kernel_body.overloads) <= 1


def _over_blocks(fn, loop) -> bool:
    """Whether `loop`, the last of parallel variant `fn` (a part function: `cpu/parts`), runs
    this part's share of the `_onb` blocks of iterations."""
    return "_pcount = _onb - _pfirst" in ast.unparse(fn) and \
        ast.unparse(loop.iter).startswith("range(_pfirst + _pcount * _t // _nt")
