"""Global min/max, arg-min/arg-max and integer sums folded in the launch's loop (cpu:
`loops.CpuLowerer.chunk_fold`, `lanes.Chunks`, `host_folds.fold_candidates`): per lane of each
chunk of rows the first best value and its row, folded after the launch in row order, so the
value and row are the slot fold's, bit for bit: NaNs (the lowest row's), ties and signed zeros
(the first row's), subsets, vectors, integer wrap-around, on 1 and 2 threads."""
import re

import numpy as np
import pytest

import relsim as rs
from relsim.runtime.backends.cpu import lanes

N = 3 * 8192 + 77  # several chunks, groups of lanes cut at the end
CONFIGS = {f"{t}-thread-{'parallel' if p == 1 else 'serial'}":
           rs.Config(target="cpu", threads=t, parallel_threshold=p)
           for t in (1, 2) for p in (1, 10 ** 9)}

R = rs.Relation("chunk_R", N)
R.new_field("x", rs.f64)
R.new_field("k", rs.i32)
R.new_field("p", rs.vec(2))
lo = rs.Global(rs.f64, np.inf)
hi = rs.Global(rs.f64, -np.inf)
where_lo = rs.Global(rs.f64, np.inf)
where_hi = rs.Global(rs.f32, -np.inf)
box = rs.Global(rs.vec(2), (np.inf, np.inf))
count = rs.Global(rs.i64, 0)
wraps = rs.Global(rs.i32, 0)
total = rs.Global(rs.f64, 0.0)
some = R.subset("some", np.flatnonzero(np.arange(N) % 3 != 1))


@rs.kernel
def extremes(r):
    rs.reduce_min(lo, r.x)
    rs.reduce_max(hi, r.x)
    rs.reduce_argmin(where_lo, r.x)
    rs.reduce_argmax(where_hi, r.x)
    rs.reduce_min(box, r.p)
    if r.x > 0.25:
        count += 1
    wraps += r.k
    total += r.x


def _data(kind, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N)
    if kind == "ties":  # few distinct values: many ties, and zeros of both signs
        x = np.round(x * 2) / 2
        x[rng.random(N) < 0.2] = -0.0
    if kind == "nan":  # NaNs of different payloads at rows in different chunks and lanes
        for r, payload in ((20001, 7), (9000, 3), (17, 5)):
            x[r] = np.frombuffer(np.array(0x7FF8000000000000 + payload).tobytes(), np.float64)[0]
    k = rng.integers(-2 ** 31, 2 ** 31, N).astype(np.int32)  # its sum wraps
    p = rng.standard_normal((N, 2))
    p[::5] = np.round(p[::5])
    return x, k, p


def _run(space, cfg, data):
    x, k, p = data
    R.x.load(x)
    R.k.load(k)
    R.p.load(p)
    for g, v in ((lo, np.inf), (hi, -np.inf), (where_lo, np.inf), (where_hi, -np.inf),
                 (count, 0), (wraps, 5), (total, 0.0)):
        g.value = v
    box.value = (np.inf, 0.0)
    space.foreach(extremes, cfg)
    return [g.data.tobytes() for g in (lo, hi, where_lo, where_hi, box, count, wraps, total)] \
        + [where_lo.row, where_hi.row]


@pytest.mark.parametrize("kind", ["plain", "ties", "nan"])
@pytest.mark.parametrize("cfg", CONFIGS.values(), ids=CONFIGS.keys())
def test_the_slot_folds_value_and_row(kind, cfg):
    data = _data(kind)
    for space in (R, some):
        want = _run(space, rs.Config(target="interp"), data)
        got = _run(space, cfg, data)
        assert got == want, space


def test_the_chunks_fold_without_slots():
    """The lanes variant runs, and the chunk-folded Globals' slots are never written (no
    per-row store for them, not even the identity of a skipped one). A conditional integer sum
    (`count`) keeps its slots: there the slot's identity and value stores merge into one
    branch-free store, which beats a lane's read-add-write under the row's branch."""
    _run(R, CONFIGS["2-thread-parallel"], _data("plain"))
    exe = extremes._last[3]
    b = exe.bindings[None]
    assert isinstance(b.lanes, lanes.LaneSums)
    folded = {id(c.glob) for c in b.lanes.chunks}
    assert {id(g) for g in (lo, hi, where_lo, where_hi, box, wraps)} == folded
    body = _function_source(exe.source, "kernel_lanes_parallel").split("\n", 1)[1]
    stored = set(re.findall(r"(_slots\d+)\[", body))
    assert len(stored) == 1  # count's (`total`'s too are not: a pure kernel's sum needs its
    #                          slots only when its exact path runs the kernel again)


def test_a_launchs_compiled_calls_include_its_globals_folds_as_the_launch_types_them():
    """The calls a binding makes (`calls_of`: what `rs.precompile` compiles ahead, shared with
    its workers) include relsim's folds of the Globals' lanes run after the kernel: the float
    sum's rounding (`lane_sums.finish`) and each chunk-folded Global's fold, with the argument
    types the launch compiles them for (so that what is compiled ahead is what is called)."""
    from relsim.runtime.folds import host_folds, lane_sums
    _run(R, CONFIGS["2-thread-parallel"], _data("plain"))
    exe = extremes._last[3]
    calls = exe.calls_of(exe.bindings[None])
    host = [(fn, args) for fn, args in calls
            if fn in (lane_sums.finish, host_folds.fold_num, host_folds.fold_candidates)]
    assert sorted(fn.py_func.__name__ for fn, _ in host) == \
        ["finish"] + ["fold_candidates"] * 5 + ["fold_num"]
    for fn, args in host:
        assert tuple(fn.typeof_pyval(a) for a in args) in fn.overloads, fn


def _function_source(source, fname):
    """The text of function `fname` of a generated module, and of its loop's body when that
    is a function of its own (`outline`: after the function's first line)."""
    start = source.index(f"def {fname}(")
    end = source.find("\ndef ", start + 1)
    text = source[start:end if end > 0 else None]
    for callee in sorted(set(re.findall(r"\b(\w+_body)\(", text))):
        text += _function_source(source, callee).split("\n", 1)[1]
    return text


def test_an_integer_sum_wraps_as_the_slot_fold():
    data = _data("plain")
    want = int(np.sum(data[1].astype(np.int64)) + 5)
    want = (want + 2 ** 31) % 2 ** 32 - 2 ** 31
    _run(R, CONFIGS["2-thread-parallel"], data)
    assert wraps.value == want
