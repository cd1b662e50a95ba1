"""The analysis cache: a kernel analysed again over relations of the same schema (new objects,
as in a new process) skips the passes after the frontend and refers to the new objects; a
change in the kernel, a captured constant or any reachable relation's schema analyses again;
failures and damaged or foreign entries are never reused."""
import pickle

import numpy as np
import pytest

import relsim as rs
from relsim.runtime import ir
from relsim.runtime.analysis.typecheck import TypeChecker
from relsim.runtime.caches import analysed as analysis_cache
from relsim.runtime.pipeline import analyse
from tests import heat_graph

RATE = 0.5


# tests/heat_graph.py's kernels, varied for these tests: conduct also reduces into a Global, and
# update (which leaves flux) reads its rate from a module constant that a test rebinds
@rs.kernel
def conduct(e):
    d = e.head.T - e.tail.T
    e.tail.flux += d
    e.head.flux -= d
    total += d * d  # noqa: F821 (a captured Global)


@rs.kernel
def update(v):
    v.T += RATE * v.flux


@rs.kernel
def bad(v):
    v.T = v.flux + v.nothing


total = rs.Global(rs.f64, 0.0)


def _mesh(n=30, dtype=rs.f64, extra=False):
    V, E = heat_graph.chain(n, T=np.linspace(0.0, 1.0, n), dtype=dtype)
    if extra:
        V.new_field("unused", rs.i32)
    return V, E


@pytest.fixture
def checks(monkeypatch):
    """The kernels the type checker ran for (analysis cache misses)."""
    ran = []
    check = TypeChecker.check

    def counting(self, untyped):
        ran.append(self.kernel_name)
        return check(self, untyped)

    monkeypatch.setattr(TypeChecker, "check", counting)
    return ran


def _fields_read(a):
    return {id(n.field) for s in a.body for n in s.walk() if isinstance(n, ir.FieldRead)}


def test_a_schema_twin_hits_and_refers_to_its_own_objects(tmp_path, checks):
    V1, E1 = _mesh()
    first = analyse(conduct, E1, tmp_path)
    V2, E2 = _mesh()
    second = analyse(conduct, E2, tmp_path)
    assert len(checks) == 1
    assert _fields_read(second) == {id(V2.field("T")), id(E2.field("head")), id(E2.field("tail"))}
    assert second.relation is E2 and second.key[0] == first.key[0]
    targets = {id(lay.target) for lay in second.layouts}
    assert targets == {id(V2.field("flux")), id(total)}
    assert [s.__class__ for s in second.body] == [s.__class__ for s in first.body]
    assert second.locals == first.locals


def test_what_changes_the_analysis_is_analysed_again(tmp_path, checks, monkeypatch):
    V, E = _mesh()
    analyse(update, V, tmp_path)
    analyse(update, _mesh(dtype=rs.f32)[0], tmp_path)  # a field's type
    analyse(update, _mesh(extra=True)[0], tmp_path)  # another field in the schema
    monkeypatch.setitem(globals(), "RATE", 0.25)  # a captured constant
    analyse(update, V, tmp_path)
    assert len(checks) == 4
    analyse(update, V, tmp_path)
    assert len(checks) == 4


def test_a_schema_change_through_a_key_is_seen(tmp_path, checks):
    _, E = _mesh()
    analyse(conduct, E, tmp_path)
    V2, E2 = _mesh()
    V2.new_field("elsewhere", rs.f64)  # on the relation E's keys reach
    analyse(conduct, E2, tmp_path)
    assert len(checks) == 2


def test_a_failing_analysis_is_never_stored(tmp_path):
    V, _ = _mesh()
    for _ in range(2):
        with pytest.raises(rs.KernelNameError, match="no field or grouping 'nothing'"):
            analyse(bad, V, tmp_path)
    assert not (tmp_path / "analysed").exists() or not any((tmp_path / "analysed").iterdir())


def test_damaged_and_foreign_entries_are_analysed_again(tmp_path, checks):
    V, E = _mesh()
    analyse(conduct, E, tmp_path)
    (entry,) = (tmp_path / "analysed").iterdir()
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2])
    with pytest.warns(rs.RelsimWarning, match=f"{entry.name} is damaged .*truncated"):
        analyse(conduct, E, tmp_path)
    assert entry.read_bytes() == good  # stored again
    entry.write_bytes(pickle.dumps((analysis_cache.FORMAT, print)))  # not an analysis
    with pytest.warns(rs.RelsimWarning, match="builtins.print is not part of an analysis"):
        analyse(conduct, E, tmp_path)

    class Boom:
        def __reduce__(self):
            import os
            return (os.getcwd, ())

    entry.write_bytes(pickle.dumps((analysis_cache.FORMAT, Boom())))  # a foreign class
    with pytest.warns(rs.RelsimWarning, match="is not part of an analysis"):
        a = analyse(conduct, E, tmp_path)
    assert len(checks) == 4 and a.layouts


def test_a_result_holding_an_object_outside_the_key_stores_nothing(tmp_path):
    V, E = _mesh()
    other, _ = _mesh()
    key = analysis_cache.Key("k", E, "e", (), None, tmp_path)
    key.store((other.field("T"),))
    assert not key.path.exists()
    key.store((V.field("T"), 1.5))  # reached through E's keys: in the table
    assert key.load() == (V.field("T"), 1.5)


def _spawner():
    S = rs.Relation("S", 5)
    S.new_field("x", rs.f64).load(np.arange(5.0))
    P = rs.Relation("P", 0, elastic=True)
    P.new_field("pos", rs.f64)

    @rs.kernel
    def spawn(s):
        if s.x > 1.0:
            rs.insert(P, pos=2.0 * s.x)

    return S, P, spawn


def test_a_relation_the_kernel_inserts_into_is_part_of_the_key(tmp_path, checks):
    S, P, spawn = _spawner()
    analyse(spawn, S, tmp_path)
    S2, P2, _ = _spawner()
    second = analyse(spawn, S2, tmp_path)  # spawn's P is the first program's: the same key
    assert len(checks) == 1
    assert second.inserts[0].target is P
    P.new_field("vel", rs.f64)  # the inserted-into relation's schema changed
    analyse(spawn, S, tmp_path)
    assert len(checks) == 2


def test_fused_kernels_hit_too(tmp_path, checks):
    V, E = _mesh()
    both = rs.fuse(update, update, name="twice")
    analyse(both, V, tmp_path)
    first = len(checks)  # the fusion check types each part too
    analyse(both, _mesh()[0], tmp_path)
    assert first and len(checks) == first


def test_launches_from_the_cache_give_the_same_bits(tmp_path):
    out = []
    for _ in range(2):
        cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path))
        V, E = _mesh()
        for k in (conduct, update):
            k._plans.clear()
            k._last = (None, None, -1, None, None)
        total.value = 0.0
        heat_graph.step(V, E, conduct, update, cfg, times=3)
        out.append((V.T.numpy(copy=True).tobytes(), float(total.value)))
    assert out[0] == out[1]
    assert len(list((tmp_path / "analysed").iterdir())) == 2


def _summing(glob):
    @rs.kernel
    def sums(v):
        glob += v.T * v.T  # noqa: F821 (a captured Global)
    return sums


def test_a_global_summed_in_order_and_one_summed_exactly_are_lowered_apart(tmp_path):
    """The same kernel text over a Global with sum="ordered" (no lanes: a serial fold) and
    one with the default exact sum (lanes in the loop): each its own lowering, whichever
    came first (the ordered one's lowering had been taken for the exact one: slower)."""
    from relsim.runtime import execute
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path))
    V, _ = heat_graph.chain(8, T=np.linspace(0.0, 1.0, 8))
    exes = []
    for mode in ("ordered", "exact"):
        g = rs.Global(rs.f64, 0.0, sum=mode)
        k = _summing(g)
        V.foreach(k, cfg)
        exes.append(execute.executable(k, V, cfg))
    assert exes[0].lane_offsets == {} and exes[1].lane_offsets == {0: 0}
    assert exes[0].path != exes[1].path
