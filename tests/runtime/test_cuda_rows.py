"""Rows inserted and deleted on the device (cuda target, in the simulator in CI): the same rows,
values and order as `interp`, and the fields stay on the device: no field crosses the bus for a
row change (only the flags, and the values the host keeps newer)."""
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import particles2d
from tests.conftest import configured

pytestmark = pytest.mark.skipif("cuda" not in rs.targets(),
                                reason="numba.cuda is not importable (pip install relsim[cuda])")

CUDA = rs.Config(target="cuda")
INTERP = rs.Config(target="interp")


def transfers():
    from relsim.runtime.backends.cuda import memory
    return dict(memory.TRANSFERS)


def moved(before, direction, kind="field"):
    return transfers().get((direction, kind), 0) - before.get((direction, kind), 0)


def particles():
    P = rs.Relation("P", 9, elastic=True)
    P.new_field("x", rs.f64).load(np.arange(9.0))
    P.new_field("v", rs.vec(2, rs.f32)).load(np.arange(18.0).reshape(9, 2))
    P.new_field("m", rs.mat(2, 2, rs.f64)).load(np.arange(36.0).reshape(9, 2, 2))
    P.new_field("tag", rs.i32)
    Q = rs.Relation("Q", 0, elastic=True)
    Q.new_key_field("src", P)
    Q.new_field("y", rs.f64)
    return P, Q


def kernels(P, Q):
    @rs.kernel
    def step(p):
        p.x += 1.0
        p.m = p.m * 0.5
        if p.tag == 3 and p.x > 25.0:
            rs.delete(p)
        if p.tag == 0 and p.x < 3.5:
            for k in range(2):
                rs.insert(P, x=p.x * 10.0 + k, v=(p.x, -p.x), tag=3)
        if p.tag == 0 and p.x > 5.5 and p.x < 7.5:
            rs.insert(Q, src=p, y=p.x * 2.0)

    return step


def values(P, Q):
    return [P.size, P.x.numpy(copy=True), P.v.numpy(copy=True), P.m.numpy(copy=True),
            P.tag.numpy(copy=True), Q.size, Q.src.numpy(copy=True), Q.y.numpy(copy=True)]


def same(a, b):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), f"result {i}: {x} != {y}"


def test_kernel_row_changes_stay_on_the_device():
    got = {}
    for cfg in (INTERP, CUDA):
        P, Q = particles()
        step = kernels(P, Q)
        P.foreach(step, cfg)  # (binds and uploads)
        before = transfers()
        for _ in range(3):
            P.foreach(step, cfg)
        if cfg is CUDA:
            # rows deleted and inserted three times: no field was copied either way; only the
            # flags (and Q's inserted keys, which the host keeps) came down
            assert moved(before, "up") == 0 and moved(before, "down") == 0
            assert moved(before, "down", "rows") > 0
        got[cfg.target] = values(P, Q)
    same(got["interp"], got["cuda"])
    assert got["cuda"][0] > 0 and got["cuda"][5] > 0


def test_host_deletes_and_inserts_on_device_fields():
    """rel.delete / rel.insert from the host while the device holds the newest values: made on
    the device (the mask and the inserted rows go up, no field comes down)."""
    got = {}
    for cfg in (INTERP, CUDA):
        P, Q = particles()
        step = kernels(P, Q)
        P.foreach(step, cfg)
        before = transfers()
        P.delete(np.array([1, 2]))
        P.insert(2, x=np.array([-1.0, -2.0]), m=np.ones((2, 2, 2)))
        P.foreach(step, cfg)
        if cfg is CUDA:
            assert moved(before, "down") == 0 and moved(before, "up") == 0
        got[cfg.target] = values(P, Q)
    same(got["interp"], got["cuda"])


def test_a_field_the_host_wrote_since_changes_on_the_host():
    got = {}
    for cfg in (INTERP, CUDA):
        P, Q = particles()
        step = kernels(P, Q)
        P.foreach(step, cfg)
        P.x.load(np.arange(P.size) * 3.0)  # host-newer: changed there
        P.foreach(step, cfg)
        P.v.numpy()  # handed out: kept current on the host after every launch
        P.foreach(step, cfg)
        got[cfg.target] = values(P, Q)
    same(got["interp"], got["cuda"])


def test_particles2d_makes_no_field_round_trips():
    """Each step deletes the particles that leave and inserts new ones: the particles' fields
    stay on the device. The one field copy a step makes is the host's read of the positions
    for binning them into cells (the domain's key rule runs on the host)."""
    runs = {}
    for target in ("cpu", "cuda"):
        with configured(target=target):
            g, parts, k, glob = particles2d.build(n_cells=6, n_particles=60)
            C, P = g.cells, parts.rel
            per_step = []
            for step in range(25):
                before = transfers()
                glob["phase"].value = 0.37 * step
                P.foreach(k["move"])
                C.sources.foreach(k["emit"])
                parts.locate()
                C.foreach(k["count"])
                per_step.append((moved(before, "up"), moved(before, "down")))
            runs[target] = (P.pos.numpy(copy=True), P.vel.numpy(copy=True),
                            C.count.numpy(copy=True), glob["left"].value, P.size)
    assert runs["cpu"][3] > 0  # particles left the box: rows were deleted
    same(runs["cpu"], runs["cuda"])
    assert all(up == 0 and down == 1 for up, down in per_step[1:]), per_step


@pytest.mark.parametrize("seed", range(6))
def test_random_row_changes_match_interp(seed):
    """Launches that delete and insert rows where random thresholds (Globals) say, and host
    deletes and inserts between them, on relations of up to ~700 rows (several chunks and
    several runs per thread of the scan): the same rows and values as interp."""
    def build():
        rng = np.random.default_rng(seed)
        n = int(rng.integers(0, 700))
        P = rs.Relation("P", n, elastic=True)
        P.new_field("x", rs.f64).load(rng.standard_normal(n))
        P.new_field("v", rs.vec(2, rs.f32)).load(rng.standard_normal((n, 2)))
        P.new_field("t", rs.i32).load(rng.integers(0, 5, n))
        cut = rs.Global(rs.f64, 0.0)
        grow = rs.Global(rs.f64, 0.0)

        @rs.kernel
        def churn(p):
            p.x = p.x * 0.75 + 0.125 * p.t
            if p.x > cut:
                rs.delete(p)
            if p.x < grow:
                for k in range(2):
                    rs.insert(P, x=p.x + 0.5 * k, v=(p.v[1], p.x), t=k + 1)
            p.v = p.v * 0.5

        return P, cut, grow, churn

    def run(cfg):
        P, cut, grow, churn = build()
        rng = np.random.default_rng(1000 + seed)
        for step in range(5):
            cut.value = float(rng.uniform(-0.5, 2.5))
            grow.value = float(rng.uniform(-2.5, -0.5))
            P.foreach(churn, cfg)
            if step == 2 and P.size:
                P.delete(rng.random(P.size) < 0.3)
                P.insert(3, x=rng.standard_normal(3), t=np.array([4, 4, 4], dtype=np.int32))
        return [P.size, P.x.numpy(copy=True), P.v.numpy(copy=True), P.t.numpy(copy=True)]

    same(run(INTERP), run(CUDA))


def test_a_refused_row_change_leaves_no_flags_behind():
    """A delete the data model refuses (a key still points at the row) raises, and changes
    nothing; the next launch of the kernel starts from clean flags (no stale deletes)."""
    for cfg in (INTERP, CUDA):
        P = rs.Relation("P", 5, elastic=True)
        P.new_field("x", rs.f64).load(np.arange(5.0))
        P.new_field("gone", rs.bool_)
        Q = rs.Relation("Q", 1)
        Q.new_key_field("at", P, values=[3])

        @rs.kernel
        def cull(p):
            p.x += 1.0
            if p.gone:
                rs.delete(p)

        P.gone.load(np.array([False, False, False, True, False]))
        with pytest.raises(rs.DataError, match="still points at deleted row"):
            P.foreach(cull, cfg)
        assert P.size == 5
        P.gone.load(False)
        P.foreach(cull, cfg)
        assert P.size == 5 and P.x.numpy().tolist() == [2.0, 3.0, 4.0, 5.0, 6.0], cfg.target
