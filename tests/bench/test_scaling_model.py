"""The scaling model's communication part (`bench/scaling/traffic.py`) on a tiny Airfoil: its
per-rank bytes are what `plan.share` gives for the fields the runtime's dirty rule sends, and
what `mpiexec -n 2` and `-n 3` runs receive (`exchange.TRAFFIC`)."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from relsim.runtime.parallel import partition, plan

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is the repository's, never installed
    sys.path.insert(0, str(ROOT))

from bench.scaling import airfoil as scaling  # noqa: E402
from bench.scaling import model, traffic, validate  # noqa: E402

SIZE = (8, 6)


@pytest.fixture(scope="module")
def cycle():
    _, step, start = model.build(scaling, SIZE)
    launches, _, _ = model.record_cycles(step, 1)
    return launches, start


@pytest.mark.parametrize("nranks", [2, 3])
def test_bytes_follow_plan_share_and_the_dirty_rule(cycle, nranks):
    launches, start = cycle
    # a one-iteration run: its first update runs fused with the second stage's adt_calc
    assert [ln.name for ln in launches] == ["save_soln", "adt_calc", "res_calc", "bres_calc",
                                            "update_adt", "res_calc", "bres_calc", "update"]
    q = traffic.exact(launches, nranks, start)
    # q is written by update (the previous iteration's, then the first stage's), adt by
    # adt_calc and update_adt: each plan that reads them at ghost rows receives them once after
    # each write; x (never written) and res (reduced: run by the execution halo) never travel
    sent = {"adt_calc": {"q"}, "res_calc": {"q", "adt"}, "bres_calc": {"q", "adt"}}
    for i, ln in enumerate(launches):
        for r in range(nranks):
            sh = plan.share(ln.analysed, ln.relation, ln.subset, r,
                            lambda rel: partition.owners(rel, nranks, set())[0])
            want_bytes = want_msgs = 0
            for rel, fields, rows in sh.ghosts:
                owner = partition.owners(rel, nranks, set())[0]
                for f in fields:
                    if f.name in sent.get(ln.name, ()):
                        want_bytes += len(rows) * traffic.row_bytes(f)
                        want_msgs += len(np.unique(owner[rows]))
            assert q[i, r, traffic.Q["recv_bytes"]] == want_bytes, (ln.name, r)
            assert q[i, r, traffic.Q["recv_msgs"]] == want_msgs, (ln.name, r)
            assert q[i, r, traffic.Q["rows"]] == len(sh.rows)
    assert q[:, :, traffic.Q["recv_bytes"]].sum() > 0
    assert np.array_equal(q[:, :, traffic.Q["recv_bytes"]].sum(axis=1),
                          q[:, :, traffic.Q["send_bytes"]].sum(axis=1))


def test_extrapolation_keeps_messages_and_scales_the_surface(cycle):
    launches, start = cycle
    q = traffic.exact(launches, 3, start)
    timing = model.Timing({ln.kind: (1e-5, 1e-8) for ln in launches}, 0.0)
    base = model.slowest(launches, q, 3, timing, model.Network())
    x = model.extrapolate(base, 100.0, 25.0, 2, 3, 12)[:, 0, :]
    Q = traffic.Q
    assert np.allclose(x[:, Q["recv_bytes"]], base[:, Q["recv_bytes"]] / 2)
    assert np.allclose(x[:, Q["owned"]], base[:, Q["owned"]] / 4)
    assert np.array_equal(x[:, Q["recv_msgs"]], base[:, Q["recv_msgs"]])


@pytest.mark.mpi
@pytest.mark.skipif(validate.mpiexec() is None, reason="no mpiexec")
def test_model_bytes_equal_what_mpiexec_runs_receive():
    rows = validate.compare("airfoil", SIZE, ranks=(2, 3), cycles=3)
    for n, model_bytes, measured, model_msgs, measured_msgs, per_rank in rows:
        assert (model_bytes, model_msgs) == (measured, measured_msgs), n
        assert model_bytes > 0 and per_rank == "yes"
