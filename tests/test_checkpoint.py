"""Checkpoint and restart (rs.checkpoint, rs.restart): continuing from a checkpoint gives the
uninterrupted run's bits; a bad file changes nothing and says what is wrong."""
from __future__ import annotations

import math

import numpy as np
import pytest

import relsim as rs
from relsim.checkpoint import interval


def problem(n=40, seed=5):
    rng = np.random.default_rng(seed)
    V, E = rs.Relation("V", n), rs.Relation("E", 3 * n)
    E.new_key_field("a", V).load(rng.integers(0, n, 3 * n))
    E.new_key_field("b", V).load(rng.integers(0, n, 3 * n))
    E.new_field("k", rs.f64).load(rng.random(3 * n))
    V.new_field("T", rs.f64).load(rng.random(n))
    V.new_field("flux", rs.f64)
    heat = rs.Global(rs.f64, 0.0)
    hot = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def conduct(e):
        d = e.k * (e.b.T - e.a.T)
        e.a.flux += d
        e.b.flux -= d

    @rs.kernel
    def update(v):
        v.T += 0.05 * v.flux
        v.flux = 0.0
        heat += v.T
        rs.reduce_argmax(hot, v.T)

    def step():
        heat.value = 0.0
        E.foreach(conduct)
        V.foreach(update)
    return (V, E), {"heat": heat, "hot": hot}, step


def test_a_restarted_run_ends_with_the_uninterrupted_bits(tmp_path, target):
    rs.configure(target=target.target)
    try:
        rels, globs, step = problem()
        for _ in range(5):
            step()
        rs.checkpoint(tmp_path / "c.h5", rels, globs, meta={"step": 5})
        for _ in range(5):
            step()
        want = (rels[0].T.numpy(copy=True), globs["heat"].value, globs["hot"].row)
        rels2, globs2, step2 = problem()
        assert rs.restart(tmp_path / "c.h5", rels2, globs2) == {"step": 5}
        for _ in range(5):
            step2()
        got = (rels2[0].T.numpy(copy=True), globs2["heat"].value, globs2["hot"].row)
        assert got[0].tobytes() == want[0].tobytes() and got[1:] == want[1:]
    finally:
        rs.configure(target="cpu")


def _saved(tmp_path):
    rels, globs, step = problem()
    step()
    path = tmp_path / "c.h5"
    rs.checkpoint(path, rels, globs, meta={"step": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.h5"]  # no temporary file left
    return path


def _unchanged(rels):
    return [f.numpy(copy=True).tobytes() for R in rels for f in R.fields.values()]


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "truncated or corrupt"),
    (lambda p: p.write_bytes(b"not hdf5 at all"), "truncated or corrupt"),
    (lambda p: p.unlink(), "no such file"),
])
def test_a_damaged_file_is_refused(tmp_path, damage, message):
    path = _saved(tmp_path)
    damage(path)
    rels, globs, _ = problem()
    before = _unchanged(rels)
    with pytest.raises(rs.DataError, match=message):
        rs.restart(path, rels, globs)
    assert _unchanged(rels) == before


def test_changed_values_fail_the_checksum(tmp_path):
    import h5py
    path = _saved(tmp_path)
    with h5py.File(path, "r+") as h:
        h["relations/V/T"][3] = 99.0
    rels, globs, _ = problem()
    with pytest.raises(rs.DataError, match="checksum does not match"):
        rs.restart(path, rels, globs)


@pytest.mark.parametrize("change, message", [
    (lambda: problem(n=41), "V had 40 rows, it has 41 now"),
    (lambda: problem(seed=6), "keys of E.a differ"),
])
def test_another_problem_is_refused_and_left_unchanged(tmp_path, change, message):
    path = _saved(tmp_path)
    rels, globs, _ = change()
    before = _unchanged(rels)
    with pytest.raises(rs.DataError, match=message):
        rs.restart(path, rels, globs)
    assert _unchanged(rels) == before


def test_other_fields_or_globals_are_refused(tmp_path):
    path = _saved(tmp_path)
    rels, globs, _ = problem()
    rels[0].new_field("extra", rs.i32)
    with pytest.raises(rs.DataError, match=r"V had the fields \['T', 'flux'\]"):
        rs.restart(path, rels, globs)
    rels, globs, _ = problem()
    with pytest.raises(rs.DataError, match="holds the Globals"):
        rs.restart(path, rels, {"heat": globs["heat"]})
    with pytest.raises(rs.DataError, match="holds the relations"):
        rs.restart(path, rels[:1], globs)


def test_bad_arguments_and_unwritable_places(tmp_path):
    rels, globs, _ = problem()
    with pytest.raises(rs.DataError, match="cannot write it"):
        rs.checkpoint(tmp_path / "no" / "such" / "dir.h5", rels, globs)
    with pytest.raises(rs.DataError, match="JSON values"):
        rs.checkpoint(tmp_path / "c.h5", rels, globs, meta={"x": object()})
    with pytest.raises(rs.DataError, match="elastic"):
        rs.checkpoint(tmp_path / "c.h5", rs.Relation("P", 3, elastic=True))
    assert not list(tmp_path.iterdir())


def test_young_daly_interval():
    tau, lost = interval(10.0, 3600.0 * 24)
    assert math.isclose(tau, math.sqrt(2 * 10 * 86400) - 10)
    assert 0 < lost < 0.02 and math.isclose(lost, 10 / tau + (tau + 10) / (2 * 86400))
    with pytest.raises(rs.DataError, match="positive"):
        interval(0.0, 1.0)
