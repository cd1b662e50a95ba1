"""A cpu kernel's parallel variant as parts (`backends/cpu/parts.py`, `parallel_for.py`): the
part function's shares cover every iteration once, the packed arguments arrive as they were
given (arrays of any dtype, rank and writability, numbers, None), serial and parallel runs give
the same bits, and the part function is compiled telling LLVM its arrays do not overlap."""
import ast

import numba
import numpy as np
import pytest

from relsim.compiled import njit
from relsim.runtime.backends.cpu import parts


def _shares(loop: str, nt: int) -> list:
    """The iterations each of `nt` parts of a loop over `loop` runs (its part function run
    as Python)."""
    source = f"def kernel_parallel(_seen, _n, _lo, _hi):\n    _k = 2\n" \
             f"    for _i in {loop}:\n        _seen.append(_i)\n"
    fn = parts.part_function(ast.parse(source).body[0])
    space = {}
    exec(ast.unparse(ast.fix_missing_locations(ast.Module([fn], []))), space)
    out = []
    for t in range(nt):
        seen = []
        space["kernel_parallel"](t, nt, seen, 10, 3, 17)
        out.append(seen)
    return out


@pytest.mark.parametrize("loop", ["prange(_n)", "prange(_lo, _hi)"])
@pytest.mark.parametrize("nt", [1, 2, 3, 7, 20])
def test_the_shares_cover_every_iteration_once_in_order(loop, nt):
    shares = _shares(loop, nt)
    first, end = (0, 10) if loop == "prange(_n)" else (3, 17)
    assert [i for s in shares for i in s] == list(range(first, end))
    assert max(map(len, shares)) - min(map(len, shares)) <= 1  # (equal shares, as Numba's)


def test_a_store_outside_the_loop_is_refused():
    """Statements before the loop run in every part: only names may be assigned there."""
    source = "def kernel_parallel(_n, a):\n    a[0] = 1\n    for _i in prange(_n):\n        pass\n"
    with pytest.raises(AssertionError, match="outside its prange loop stores"):
        parts.part_function(ast.parse(source).body[0])
    two = "def kernel_parallel(_n):\n    for _i in prange(_n):\n        pass\n" \
          "    for _j in prange(_n):\n        pass\n"
    with pytest.raises(AssertionError, match="2 prange loops"):
        parts.part_function(ast.parse(two).body[0])


def _mixed_part(_t, _nt, n, src, grid, flag, scale, small, absent, out, count):
    first = n * _t // _nt
    for i in range(first, n * (_t + 1) // _nt):
        out[i, 0] = src[i] * scale + small + grid[i % 2, i % 3, 1]
        out[i, 1] = 1.0 if flag else -1.0
        count[i] = np.int32(i) + (absent is None)


def _mixed_args(n):
    src = np.linspace(-1.0, 2.0, n)
    src.flags.writeable = False  # (read-only: the part compiles for the types given)
    grid = np.arange(12, dtype=np.float64).reshape(2, 3, 2)
    out, count = np.zeros((n, 2)), np.zeros(n, np.int32)
    return (n, src, grid, True, 0.75, np.float32(0.125), None, out, count), out, count


def test_packed_arguments_arrive_as_given_serial_and_on_every_thread(tmp_path):
    flags = dict(cache=True, error_model="numpy", boundscheck=False)
    function = parts.PartFunction(njit(no_alias=True, **flags)(_mixed_part), tmp_path, flags)
    n = 1001
    results = []
    for serial, threads in ((True, 1), (False, 1), (False, 2)):
        args, out, count = _mixed_args(n)
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            parts.Parts(function, serial)(*args)
        finally:
            numba.set_num_threads(before)
        results.append((out.tobytes(), count.tobytes()))
    args, out, count = _mixed_args(n)
    src, grid = args[1], args[2]
    i = np.arange(n)
    want = src * 0.75 + np.float32(0.125) + grid[i % 2, i % 3, 1]
    assert results[0][0] == np.stack([want, np.ones(n)], axis=1).tobytes()
    assert np.frombuffer(results[0][1], np.int32).tolist() == list(range(1, n + 1))
    assert len(set(results)) == 1  # the same bits serial and on 1 or 2 threads
    assert len(function.wrappers) == 1  # (one wrapper for the argument types, both variants)
    # a new process's wrapper for the same part and types loads from the disk cache
    again = parts.PartFunction(njit(no_alias=True, **flags)(_mixed_part), tmp_path, flags)
    assert again.ensure(parts.argument_types(_mixed_args(5)[0]), load_only=True)
    assert again.loaded == 1


def test_the_part_function_is_compiled_with_noalias_arguments():
    fn = njit(no_alias=True)(_mixed_part)
    args, _, _ = _mixed_args(8)
    fn(0, 1, *args)
    (llvm,) = fn.inspect_llvm().values()
    define = next(line for line in llvm.splitlines() if line.startswith("define") and
                  "_mixed_part" in line)
    assert "noalias" in define.split("excinfo")[1]  # (the arrays' pointers, not only Numba's)
    plain = numba.njit(_mixed_part)
    plain(0, 1, *args)
    (llvm,) = plain.inspect_llvm().values()
    define = next(line for line in llvm.splitlines() if line.startswith("define") and
                  "_mixed_part" in line)
    assert "noalias" not in define.split("excinfo")[1]
