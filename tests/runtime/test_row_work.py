"""The cpu target weighs a kernel's rows by their grouping loops: a kernel looping over cell
lists runs on threads from far fewer rows than `parallel_threshold`, with the same bits."""
import numpy as np

import relsim as rs
from relsim.domains import grid, particles
from relsim.runtime import execute
from relsim.runtime.backends.cpu import row_work


def cloud(n=600, cells=6, seed=3):
    g = grid.Grid((cells, cells), spacing=1.0 / cells, periodic=True)
    pos = np.random.default_rng(seed).uniform(0.0, 1.0, (n, 2))
    parts = particles.Particles(g, pos)
    parts.locate()
    P = parts.rel
    P.new_field("near", rs.f64)
    P.new_field("twice", rs.f64)

    @rs.kernel
    def crowd(p):  # 9 neighbour cells, each ~17 particles: ~150 iterations a row
        s = 0.0
        for k in range(9):
            for q in p.cell(k % 3 - 1, k // 3 - 1).particles:
                s += rs.dot(p.pos - q.pos, p.pos - q.pos)
        p.near = s

    @rs.kernel
    def double(p):
        p.twice = 2.0 * p.near

    return g, P, crowd, double


def test_grouping_loops_count_the_loops_around_them():
    g, P, crowd, double = cloud()
    cfg = rs.Config(target="cpu", threads=2)
    P.foreach(crowd, cfg)
    P.foreach(double, cfg)
    heavy = execute.executable(crowd, P, cfg)
    light = execute.executable(double, P, cfg)
    assert [(c, [x.name for x in gs]) for c, gs in heavy.group_loops] == [(9, ["particles"])]
    assert light.group_loops == ()
    mean = 600 / 36
    assert row_work.threshold(4096, heavy.group_loops) == int(np.ceil(4096 / (1 + 9 * mean)))
    assert row_work.threshold(0, heavy.group_loops) == 0
    assert row_work.threshold(4096, ()) == 4096  # a row of LIGHT_ROW nodes or more
    # 600 rows: below 4096, above 4096 / 151: the cell-list kernel runs on threads, not the other
    assert heavy.bindings[None].parallel and not light.bindings[None].parallel


def test_the_weighed_parallel_launch_gives_the_serial_bits():
    answers = []
    for cfg in (rs.Config(target="cpu-serial"), rs.Config(target="cpu", threads=2)):
        g, P, crowd, double = cloud()
        P.foreach(crowd, cfg)
        answers.append(P.near.numpy().tobytes())
    assert answers[0] == answers[1]


def test_light_rows_go_parallel_from_more_rows_and_threshold_one_stays():
    """An axpy row (8 expression nodes) weighs 8 / LIGHT_ROW of a row: its launches go parallel
    from 4096 * LIGHT_ROW / 8 rows; a configured threshold of 1 (always parallel, as the tests
    force) is kept; a vector's or matrix's nodes count per component."""
    R = rs.Relation("light", 20000)
    R.new_field("x", rs.f64)
    R.new_field("y", rs.f64)
    R.new_field("m", rs.mat(3, 3))

    @rs.kernel
    def axpy(r):
        r.y = r.y + 0.5 * r.x

    @rs.kernel
    def matrices(r):
        r.y = rs.det(r.m @ r.m + rs.transpose(r.m) @ r.m - r.m) + r.x

    light = execute.executable(axpy, R, rs.Config(target="cpu", threads=2))
    assert light.row_ops == 8
    assert row_work.threshold(4096, (), 8) == 4096 * row_work.LIGHT_ROW // 8
    assert row_work.threshold(1, (), 8) == 1
    R.foreach(axpy, rs.Config(target="cpu", threads=2))  # 20,000 rows: serial now
    assert not light.bindings[None].parallel
    R.foreach(axpy, rs.Config(target="cpu", threads=2, parallel_threshold=1))
    assert axpy._last[3].bindings[None].parallel
    heavy = execute.executable(matrices, R, rs.Config(target="cpu", threads=2))
    assert heavy.row_ops >= 10 * light.row_ops
    R.foreach(matrices, rs.Config(target="cpu", threads=2))
    assert heavy.bindings[None].parallel  # 20,000 rows of matrix algebra: on threads
