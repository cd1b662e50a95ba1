"""The cpu lowering indexes with unsigned integers wherever an index cannot be negative: a
row's position in a subset, a group's offsets and its rows, a reduction's slots and their
places, as it does a field's row. Numba wraps a signed index that is negative around (a test
and a branch per access): inside a grouping loop it cost a sparse product's parallel variant
~10%, and in the lanes of a kernel that writes fields and sums a Global (a CG update) it kept
LLVM from vectorising them, 2.3x the time (bench/cg_iteration.py)."""
import ast
import dataclasses
import sys

import numpy as np
import pytest

import relsim as rs
from relsim.runtime import execute
from tests.conftest import CPU_TARGETS

ORDERED = [0, 0, 1, 2, 2, 2, 4, 5, 5]  # the entries' rows: in order (no rows array bound)
SHUFFLED = [2, 5, 0, 2, 4, 0, 1, 2, 5]  # out of order (the grouping's rows array bound)


def _matrix(rows):
    V = rs.Relation("V", 6)
    V.new_field("x", rs.f64).load(np.linspace(-1.0, 2.0, 6))
    V.new_field("y", rs.f64)
    E = rs.Relation("E", len(rows))
    E.new_key_field("row", V, values=np.array(rows))
    E.new_key_field("col", V, values=np.array([3, 1, 4, 1, 5, 0, 2, 0, 3]))
    E.new_field("a", rs.f64).load(np.arange(1.0, 10.0) / 7.0)
    E.group_by(E.row, "out")
    return V, E


@rs.kernel
def matvec(v):
    s = 0.0
    for e in v.out:
        s += e.a * e.col.x
    v.y = s


# a subset's rows, a group's offsets and rows, a reduction's slots, their places (`_spos`), a
# split scatter's mixed rows, their slots' places (`_own`), the parked values (`_shv`) and the
# slots' targets its plan reads (`_tgt`)
INDEXED = ("_rows", "_goff", "_grows", "_slots", "_spos", "_mixed", "_own", "_shv", "_tgt")
# and, per row too: debug checks' records, prints' flags and values, deletions' flags, inserted
# rows' values and flags, the offsets, ids and values of folds a kernel absorbs
PER_ROW = ("_dbg", "_pflag", "_pval", "_delete", "_ins", "_absorb")


def _signed_subscripts(source: str) -> list:
    """The subscripts of the arrays `INDEXED` names whose (first) index is not made unsigned
    (`_u64(...)`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                node.value.id.startswith(INDEXED + PER_ROW):
            index = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
            if not (isinstance(index, ast.Call) and isinstance(index.func, ast.Name) and
                    index.func.id == "_u64"):
                found.append(ast.unparse(node))
    return found


@pytest.mark.parametrize("rows", [ORDERED, SHUFFLED], ids=["ordered", "shuffled"])
@pytest.mark.parametrize("target", CPU_TARGETS, indirect=True)
def test_group_offsets_and_subset_rows_are_indexed_unsigned(target, rows):
    V, E = _matrix(rows)
    want = np.zeros(6)
    np.add.at(want, np.array(rows), E.a.numpy() * V.x.numpy()[E.col.numpy()])
    V.foreach(matvec, target)
    source = execute.executable(matvec, V, target).source
    assert "_goff" in source and "_grows" in source and "_rows" in source
    assert _signed_subscripts(source) == []
    got_whole = V.y.numpy(copy=True)
    V.y.fill(0.0)
    V.subset("some", np.array([0, 2, 5])).foreach(matvec, target)
    got_some = V.y.numpy(copy=True)
    V.foreach(matvec, rs.Config(target="interp"))
    np.testing.assert_array_equal(got_whole, V.y.numpy())  # interp's bits
    np.testing.assert_array_equal(got_some, np.where(np.isin(np.arange(6), [0, 2, 5]),
                                                     got_whole, 0.0))
    np.testing.assert_allclose(got_whole, want, rtol=1e-15)


total = rs.Global(rs.f64, 0.0)


@rs.kernel
def update(v):  # fields written and a float64 Global summed: lanes that also write slots
    v.x = v.x - 0.25 * v.y
    total += v.x * v.x


@rs.kernel
def spread(e):  # a reduction into fields through keys, conditional at one site
    d = e.a * (e.row.x - e.col.x)
    if d > 0.0:
        e.col.y += d
    e.row.y -= d


@pytest.mark.parametrize("scatter", ["split", "slots"])
@pytest.mark.parametrize("target", CPU_TARGETS, indirect=True)
def test_reduction_slots_and_their_places_are_indexed_unsigned(target, scatter):
    cfg = dataclasses.replace(target, scatter=scatter)
    results = {}
    for run in (cfg, rs.Config(target="interp")):
        V, E = _matrix(SHUFFLED)
        total.value = 0.0
        E.foreach(spread, run)
        V.foreach(update, run)
        results[run.target] = (V.x.numpy(copy=True), V.y.numpy(copy=True), total.value)
        if run is cfg:
            for kernel, R in ((spread, E), (update, V)):
                source = execute.executable(kernel, R, cfg).source
                assert "_slots" in source
                assert _signed_subscripts(source) == []
    got, want = results[cfg.target], results["interp"]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def _elastic():
    P = rs.Relation("P", 6, elastic=True)
    P.new_field("x", rs.f64).load(np.arange(6.0))
    P.new_field("tag", rs.i32)
    return P


def _grow_and_prune(P):
    @rs.kernel
    def step(p):
        p.x += 1.0
        if p.x > 5.5:
            rs.delete(p)
        if p.x == 3.0:
            print("row", p.x)
        for k in range(2):
            if p.x < 2.5:
                rs.insert(P, x=p.x * 10 + k, tag=7)
    return step


@pytest.mark.parametrize("target", CPU_TARGETS, indirect=True)
def test_per_row_records_are_indexed_unsigned(target, capsys):
    """Debug checks' records, prints, deletions and insertions (a debug launch), and the folds
    a kernel absorbs from an earlier launch's pending slots."""
    out = {}
    for cfg in (dataclasses.replace(target, debug=True), rs.Config(target="interp")):
        P = _elastic()
        step = _grow_and_prune(P)
        P.foreach(step, cfg)
        out[cfg.target] = (P.x.numpy(copy=True), P.tag.numpy(copy=True), capsys.readouterr().out)
        if cfg.target != "interp":
            source = execute.executable(step, P, cfg).source
            for part in ("_dbg", "_pflag", "_delete", "_ins"):
                assert part in source
            assert _signed_subscripts(source) == []
    for a, b in zip(out[target.target][:2], out["interp"][:2]):
        np.testing.assert_array_equal(a, b)
    assert out[target.target][2] == out["interp"][2] != ""

    V, E = _matrix(SHUFFLED)
    slots = dataclasses.replace(target, scatter="slots")
    E.foreach(spread, slots)
    E.foreach(spread, slots)  # its pending slots: absorbed by the next reader at its own key
    V.foreach(update, slots)
    absorbing = [fn for fn in execute.executable(update, V, slots).absorbing_fns.values()]
    if target.target == "cpu":
        assert absorbing
    for fn in absorbing:
        source = open(sys.modules[fn.part.py_func.__module__].__file__).read()
        assert "_absorb" in source
        assert _signed_subscripts(source) == []
