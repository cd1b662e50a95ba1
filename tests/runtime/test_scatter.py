"""The cpu target's ways of applying reductions into fields through keys (`Config.scatter`):
direct (serial, straight into the field), split (blocks of rows in parallel, direct to the
targets a block owns, the shared ones parked and folded) and parked slots. Each must give the
serial meaning bit for bit, for any thread count; the owned/shared split is checked on its own."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime.backends.cpu import ownership, pending
from tests.conftest import chain_mesh

SCHEMES = ("direct", "split", "slots", "auto")


def _graph(nv=300, ne=1500, seed=3, local=True):
    rng = np.random.default_rng(seed)
    tail = rng.integers(0, nv, ne)
    if local:  # a banded graph in vertex order: most vertices owned by one block of edges
        tail = np.sort(tail)
        head = np.minimum(tail + rng.integers(0, 8, ne), nv - 1)
    else:
        head = rng.integers(0, nv, ne)
    V, E = rs.Relation("V", nv), rs.Relation("E", ne)
    E.new_key_field("head", V).load(head)
    E.new_key_field("tail", V).load(tail)
    E.new_key_field("v", V, arity=2).load(np.stack([tail, head], axis=1))
    V.new_field("T", rs.f64).load(rng.standard_normal(nv) * 10.0 ** rng.integers(-8, 8, nv))
    V.new_field("acc", rs.vec(2, rs.f64), init=0.0)
    V.new_field("low", rs.f64, init=np.inf)
    E.new_field("k", rs.f64).load(rng.random(ne))
    return V, E


def _kernel():
    @rs.kernel
    def flux(e):
        d = e.k * (e.head.T - e.tail.T)
        if d > 0.0:  # a conditional site: shared slots a row skips keep the identity
            e.tail.acc[1] += d * d
        e.tail.acc += (d, -0.0)
        e.head.acc -= (d, 1e-3 * d)
        e.head.low = min(e.head.low, d)
        for x in e.v:  # a static loop over the edge's two vertices
            x.low = min(x.low, -d)

    return flux


def _run(V, E, kernel, cfg, times=3, subset=None):
    V.acc.load(np.zeros((V.size, 2)))
    V.low.load(np.full(V.size, np.inf))
    space = E if subset is None else E.subset(subset)
    for _ in range(times):
        space.foreach(kernel, cfg)
    return V.acc.numpy().copy(), V.low.numpy().copy()


def _same(a, b):
    return all(np.array_equal(x.view(np.uint64), y.view(np.uint64)) for x, y in zip(a, b))


@pytest.mark.parametrize("local", [True, False])
def test_every_scheme_gives_the_serial_meaning(local):
    V, E = _graph(local=local)
    flux = _kernel()
    want = _run(V, E, flux, rs.Config(target="interp"))
    for threads in (1, 2):
        for scheme in SCHEMES:
            cfg = rs.Config(target="cpu", threads=threads, scatter=scheme, parallel_threshold=1)
            assert _same(_run(V, E, flux, cfg), want), (scheme, threads)
    for scheme in SCHEMES:
        cfg = rs.Config(target="cpu-serial", scatter=scheme)
        assert _same(_run(V, E, flux, cfg), want), scheme


def test_schemes_over_a_subset_and_after_keys_change():
    V, E = _graph()
    flux = _kernel()
    E.subset("third", np.arange(0, E.size, 3))
    want = _run(V, E, flux, rs.Config(target="interp"), subset="third")
    for scheme in SCHEMES:
        cfg = rs.Config(target="cpu", threads=2, scatter=scheme, parallel_threshold=1)
        assert _same(_run(V, E, flux, cfg, subset="third"), want), scheme
    # new key values: the split is rebuilt from them
    rng = np.random.default_rng(11)
    head = rng.integers(0, V.size, E.size)
    E.head.load(head)
    E.v.load(np.stack([E.tail.numpy(), head], axis=1))
    want = _run(V, E, flux, rs.Config(target="interp"))
    for scheme in SCHEMES:
        cfg = rs.Config(target="cpu", threads=2, scatter=scheme, parallel_threshold=1)
        assert _same(_run(V, E, flux, cfg), want), scheme


def test_direct_scatter_after_a_pending_fold_keeps_launch_order():
    """A parked launch's fold still pending on a field is folded before a direct launch adds to
    it (x + a + b, not x + b + a: different bits in floating point)."""
    V, E = chain_mesh(5)
    E.new_field("w", rs.f64).load([1e16, 1.0, -1e16, 3.0])
    V.new_field("acc", rs.f64, init=1.0)

    @rs.kernel
    def big(e):
        e.head.acc += e.w

    @rs.kernel
    def small(e):
        e.head.acc += 0.5 * e.w

    parked = rs.Config(target="cpu", scatter="slots")
    E.foreach(big, parked)
    assert pending.folds_of(V.acc)  # left pending
    E.foreach(small, rs.Config(target="cpu", scatter="direct"))
    want = np.ones(5)
    w = np.array([1e16, 1.0, -1e16, 3.0])
    for vals in (w, 0.5 * w):
        for e in range(4):
            want[e + 1] = want[e + 1] + vals[e]
    assert np.array_equal(V.acc.numpy(), want)


def test_auto_splits_a_local_graph_and_runs_a_random_one_serially(monkeypatch):
    from relsim.runtime.backends.cpu import backend as cpu
    flux = _kernel()
    cfg = rs.Config(target="cpu", threads=2, parallel_threshold=1)
    for local, want in ((True, "split"), (False, "direct")):
        V, E = _graph(nv=2000, ne=20000, local=local)
        E.foreach(flux, cfg)
        assert flux._last[3].bindings[None].scheme == want, local
    # one thread, or a small relation: direct
    E.foreach(flux, rs.Config(target="cpu", threads=1, parallel_threshold=1))
    assert flux._last[3].bindings[None].scheme == "direct"
    E.foreach(flux, rs.Config(target="cpu", threads=2))  # 20000 rows >= the default threshold
    assert flux._last[3].bindings[None].scheme == "direct"
    # with many threads, parking every contribution beats one thread on a random graph
    monkeypatch.setattr(cpu.CpuExecutable, "nthreads", lambda self: 16)
    V, E = _graph(nv=2000, ne=20000, local=False)
    want = _run(V, E, flux, rs.Config(target="interp"))
    assert _same(_run(V, E, flux, cfg), want)
    assert flux._last[3].bindings[None].scheme == "slots"


def test_bad_scheme_is_a_config_error():
    with pytest.raises(rs.ConfigError, match="scatter must be one of auto, direct, split"):
        rs.Config(scatter="atomic")


# -- the owned/shared split on its own --------------------------------------------------------
def test_split_owned_and_shared_targets():
    # 6 rows, 2 slots each; blocks rows [0, 3) and [3, 6)
    tgt = np.array([0, 1, 1, 2, 0, -1, 3, 4, 4, 5, 2, 5], dtype=np.int64)
    bounds = ownership.block_bounds(6, 2)
    assert bounds.tolist() == [0, 3, 6]
    own = ownership.owners(tgt, 2, bounds, 7)
    assert own.tolist() == [0, 0, -1, 1, 1, 1, ownership.UNTOUCHED]
    sp = ownership.split(tgt, 2, bounds, 7)
    assert sp.rows.tolist() == [2]
    assert sp.nshared == 2 and sp.nslots == 12
    # target 2's slots (3 and 10) are parked in slot order; the others are applied directly;
    # places are kept for the two mixed rows only (rows 1 and 5: indices 0 and 1)
    assert sp.mixed.tolist() == [-1, 0, -1, -1, -1, 1]
    assert sp.places.tolist() == [-1, 0, 1, -1]
    assert sp.off.tolist() == [0, 2]


def test_a_split_made_a_chunk_at_a_time_is_the_split_of_the_whole():
    """`split_chunks` asks for the slots' targets a chunk of positions at a time (never the
    whole array: at miniFE 80^3 it took 131 MB) and makes the split of the whole."""
    rng = np.random.default_rng(5)
    mixed_or_not = set()
    for npos, per_row, nblocks, ntarget in ((0, 3, 2, 5), (1, 1, 1, 1), (37, 3, 4, 20),
                                            (500, 8, 3, 200), (300, 2, 2, 600)):
        tgt = rng.integers(-1, ntarget, npos * per_row).astype(np.int32)
        bounds = ownership.block_bounds(npos, nblocks)
        whole = ownership.split(tgt, per_row, bounds, ntarget)
        mixed_or_not.update((whole.mixed >= 0).tolist())
        for chunk in (1, 5, 64):
            asked = []

            def targets(lo, hi, tgt=tgt, per_row=per_row, asked=asked):
                asked.append(hi - lo)
                return tgt[lo * per_row:hi * per_row]

            part = ownership.split_chunks(targets, npos, per_row, bounds, ntarget, chunk)
            for name in ("bounds", "mixed", "places", "rows", "off"):
                assert np.array_equal(getattr(part, name), getattr(whole, name)), (name, chunk)
            assert (part.nslots, part.per_row) == (whole.nslots, whole.per_row)
            assert max(asked, default=0) <= chunk and sum(asked) == 3 * npos
    assert mixed_or_not == {True, False}  # (positions reaching a shared target, and not)


@pytest.mark.parametrize("chunk", [1, 7])
def test_a_split_scatter_planned_a_chunk_at_a_time_gives_the_serial_meaning(chunk, monkeypatch):
    monkeypatch.setattr(ownership, "CHUNK_POSITIONS", chunk)
    V, E = _graph(local=False)
    flux = _kernel()
    want = _run(V, E, flux, rs.Config(target="interp"))
    E.subset("third", np.arange(0, E.size, 3))
    want_third = _run(V, E, flux, rs.Config(target="interp"), subset="third")
    for threads in (1, 2):
        cfg = rs.Config(target="cpu", threads=threads, scatter="split", parallel_threshold=1)
        assert _same(_run(V, E, flux, cfg), want), threads
        assert _same(_run(V, E, flux, cfg, subset="third"), want_third), threads


def test_splits_of_several_reductions_share_one_index_of_mixed_rows():
    """The kernel tests one `_mixed[pos]` per row: each reduction's places are re-indexed by
    the rows mixed in any of them (-1 where only another is mixed)."""
    bounds = ownership.block_bounds(6, 2)
    a = ownership.split(np.array([0, 1, 1, 2, 0, -1, 3, 4, 4, 5, 2, 5]), 2, bounds, 7)
    b = ownership.split(np.array([0, 0, 0, 0, 1, 1]), 1, bounds, 2)  # target 0 shared
    assert a.mixed.tolist() == [-1, 0, -1, -1, -1, 1]
    assert b.mixed.tolist() == [0, 1, 2, 3, -1, -1] and b.places.tolist() == [0, 1, 2, 3]
    mixed, (pa, pb) = ownership.combined([a, b])
    assert mixed.tolist() == [0, 1, 2, 3, -1, 4]
    assert pa.tolist() == [-1, -1, -1, 0, -1, -1, -1, -1, 1, -1]
    assert pb.tolist() == [0, 1, 2, 3, -1]


def test_block_bounds_cover_every_row_once():
    for n in (0, 1, 5, 17):
        for nb in (1, 2, 3, 8):
            b = ownership.block_bounds(n, nb)
            assert b[0] == 0 and b[-1] == n and np.all(np.diff(b) >= 0)
            assert len(b) - 1 <= max(1, n)


def test_cost_model_weighs_the_scatter_share_of_a_row():
    """A heavy kernel splits where a light one, with the same keys, runs direct: the rows that
    reach a shared target cost extra only in their scatter part."""
    from types import SimpleNamespace

    from relsim.runtime.backends.cpu import scatter as cpu_scatter
    n = 1000
    tgt = np.arange(n, dtype=np.int64)
    tgt[:33] = n - 1 - np.arange(33)  # 33 rows of block 0 reach rows block 1 reaches too
    lay = SimpleNamespace(per_row=1, target=SimpleNamespace(type=rs.f64,
                                                            relation=SimpleNamespace(size=n)))
    layouts = {0: lay}

    def targets(k, lay, lo, hi):  # (one slot a row)
        return tgt[lo:hi]

    def choose(share):
        return cpu_scatter.choose("auto", layouts, n, False, 2, targets, share)[0]

    assert choose(0.48) == "direct"  # the plain edge scatter's share
    assert choose(0.03) == "split"  # LULESH's force kernels' share
    assert choose(0.0) == "split"
    assert cpu_scatter.choose("auto", layouts, n, True, 2, targets, 0.03)[0] == \
        "direct"  # a serial launch


def test_scatter_share_of_the_edge_scatter():
    from relsim.runtime.backends.cpu.scatter import scatter_share
    from relsim.runtime.pipeline import analyse
    V, E = _graph()
    light = _kernel()
    s = scatter_share(analyse(light, E))
    assert 0.2 < s < 0.8
