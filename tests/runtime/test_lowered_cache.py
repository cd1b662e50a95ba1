"""The lowered-module cache: a kernel analysed again (a new process, new relation objects of the
same schema) reuses its generated source, with the parameters bound to the new objects; any
change that changes the generated code (a field's type, a grid's shape, a captured constant,
the variant) is lowered again; a damaged entry is never trusted."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime.backends.cpu.loops import CpuLowerer
from relsim.runtime.caches import fingerprint
from relsim.runtime.pipeline import analyse
from tests import heat_graph

SCALE = 0.25

conduct = heat_graph.conduct_kernel()


@rs.kernel
def update(v):  # heat_graph's, its rate a module constant (that the "constant" change rebinds)
    v.T += SCALE * v.flux
    v.flux = 0.0


@rs.kernel
def smooth(c):
    c.v = c(1, 0).u + c(-1, 0).u - 2.0 * c.u


def _mesh(n=40, dtype=rs.f64, seed=0):
    return heat_graph.chain(n, T=np.random.default_rng(seed).standard_normal(n), dtype=dtype)


@pytest.fixture
def lowerings(monkeypatch):
    """Counts the lowerings that actually run (cache misses)."""
    count = []
    module = CpuLowerer.module

    def counting(self):
        count.append(self.a.kernel_name)
        return module(self)

    monkeypatch.setattr(CpuLowerer, "module", counting)
    return count


def _compile(kernel, relation, cfg):
    return cfg.backend.compile(analyse(kernel, relation), cfg)


def test_a_second_schema_twin_hits_and_binds_its_own_objects(tmp_path, lowerings):
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path))
    V1, E1 = _mesh(seed=1)
    first = _compile(conduct, E1, cfg)
    assert lowerings == ["conduct"]
    V2, E2 = _mesh(seed=2)  # new objects, the same schema: the entry is reused
    second = _compile(conduct, E2, cfg)
    assert lowerings == ["conduct"] and second.source == first.source
    assert [p.name for p in second.params] == [p.name for p in first.params]
    bound = [getattr(p, "field", None) for p in second.params]
    assert V2.field("T") in bound and V2.field("flux") in bound
    assert not any(f is V1.field("T") or f is V1.field("flux") for f in bound)


def test_the_reused_module_computes_what_a_fresh_lowering_does(tmp_path):
    results = []
    for cache in ("a", "a", "b"):  # miss, hit, miss in another cache
        cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path / cache))
        V, E = _mesh(seed=3)
        conduct._plans.clear()
        update._plans.clear()
        conduct._last = update._last = (None,) * 7
        heat_graph.step(V, E, conduct, update, cfg, times=3)
        results.append(V.T.numpy(copy=True).tobytes())
    assert results[0] == results[1] == results[2]
    assert len(list((tmp_path / "a" / "lowered").iterdir())) == 2


@pytest.mark.parametrize("change", ["dtype", "constant", "fast_math", "debug"])
def test_what_changes_the_code_is_lowered_again(tmp_path, lowerings, change, monkeypatch):
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path))
    V, _ = _mesh()
    _compile(update, V, cfg)
    if change == "dtype":
        V, _ = _mesh(dtype=rs.f32)
    elif change == "constant":
        monkeypatch.setitem(globals(), "SCALE", 0.5)
    elif change == "fast_math":
        cfg = rs.Config(target="cpu", cache_dir=str(tmp_path), fast_math=True)
    else:
        cfg = rs.Config(target="cpu", cache_dir=str(tmp_path), debug=True)
    exe = _compile(update, V, cfg)
    assert lowerings == ["update", "update"]
    assert ("0.5" in exe.source) == (change == "constant")
    _compile(update, V, cfg)  # the changed one is cached in turn (the debug variant never)
    assert len(lowerings) == (3 if change == "debug" else 2)


def test_a_grid_of_another_shape_is_not_lowered_again(tmp_path, lowerings):
    """The shape is bound per launch: one lowering per count of axes and periodic kinds."""
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path))
    sources = []
    for shape, periodic in (((6, 5), True), ((6, 5), True), ((7, 5), True), ((9, 4), True),
                            ((7, 5), (True, False))):
        C = rs.Relation("C", int(np.prod(shape)))
        C.set_grid(shape, periodic)
        C.new_field("u", rs.f64)
        C.new_field("v", rs.f64)
        sources.append(_compile(smooth, C, cfg).source)
    assert lowerings == ["smooth", "smooth"]
    assert sources[0] == sources[1] == sources[2] == sources[3]


def test_a_damaged_entry_is_lowered_again(tmp_path, lowerings):
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path))
    V, E = _mesh()
    want = _compile(conduct, E, cfg).source
    (entry,) = (tmp_path / "lowered").iterdir()
    for damage in (b"\x00garbage", entry.read_bytes()[:40]):
        entry.write_bytes(damage)
        with pytest.warns(rs.RelsimWarning, match=f"cache entry .*{entry.name} is damaged"):
            assert _compile(conduct, E, cfg).source == want
    assert lowerings == ["conduct"] * 3


def test_an_unknown_value_in_the_kernel_is_not_cached(tmp_path, lowerings, monkeypatch):
    class Odd:
        pass

    monkeypatch.setattr(fingerprint.Walk, "analysed",
                        lambda self, a: self.value(Odd()))
    cfg = rs.Config(target="cpu", cache_dir=str(tmp_path))
    V, E = _mesh()
    _compile(conduct, E, cfg)
    _compile(conduct, E, cfg)
    assert lowerings == ["conduct", "conduct"]
    assert not (tmp_path / "lowered").exists()
