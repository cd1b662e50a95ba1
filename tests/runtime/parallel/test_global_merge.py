"""The Global merge's host rules, on one process: the NumPy arg rule against the compiled fold
it stands for, candidates from lanes put in row order, and every rank's lanes gathered (ranks
played by threads)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from relsim.runtime.folds import host_folds, lane_sums
from relsim.runtime.parallel.global_merge import (
    INLINE_CHUNKS,
    NO_ROW,
    _gather_lanes,
    _in_row_order,
    first_best,
)


def _pool(rng, kind):
    if kind == "ties":
        return np.floor(3 * rng.random(rng.integers(0, 30)))
    if kind == "zeros":
        return np.where(rng.random(rng.integers(0, 30)) < 0.5, 0.0, -0.0)
    vals = rng.standard_normal(rng.integers(0, 30))
    vals[rng.random(len(vals)) < 0.1] = np.nan
    vals[rng.random(len(vals)) < 0.1] = np.inf
    return vals


@pytest.mark.parametrize("kind", ["ties", "zeros", "specials"])
@pytest.mark.parametrize("is_min", [True, False])
def test_first_best_is_the_compiled_arg_fold(kind, is_min):
    """Strictly better or the first NaN, from the Global's value and row: the value and the
    row `host_folds.fold_arg` gives, bit for bit (signed zeros: the first stays)."""
    rng = np.random.default_rng(7 + is_min)
    for _ in range(300):
        vals = _pool(rng, kind)
        rows = np.sort(rng.choice(1000, len(vals), replace=False)).astype(np.int64)
        start = rng.choice([np.inf if is_min else -np.inf, 0.0, -0.0, 1.0, np.nan])
        start_row = int(rng.integers(-1, 5))
        value, row = np.array([start]), np.array([start_row], dtype=np.int64)
        host_folds.fold_arg(value, row, vals.reshape(-1, 1).copy(), 1, rows, True, is_min)
        got = first_best(vals, rows, np.float64(start), start_row, is_min)
        assert np.float64(got[0]).tobytes() == value[0].tobytes() and got[1] == row[0], \
            (vals, rows, start)


def test_lanes_candidates_in_row_order_without_empty_lanes():
    """Candidates (lanes x chunks, components), rows -1 where a lane had none: each
    component's in ascending row; slots' rows (one column) are taken as they are."""
    vals = np.array([[5.0, 1.0], [3.0, 2.0], [4.0, 9.0], [8.0, 7.0]])
    rows = np.array([[30, -1], [10, 40], [-1, 20], [20, 5]], dtype=np.int64)
    v, r = _in_row_order(vals[:, 0], rows, 0)
    assert v.tolist() == [3.0, 8.0, 5.0] and r.tolist() == [10, 20, 30]
    v, r = _in_row_order(vals[:, 1], rows, 1)
    assert v.tolist() == [7.0, 9.0, 2.0] and r.tolist() == [5, 20, 40]
    slots = np.arange(4, dtype=np.int64)
    assert _in_row_order(vals[:, 1], slots, 1)[1] is slots
    assert first_best(*_in_row_order(vals[:, 1], rows, 1), np.float64(np.inf), NO_ROW,
                      True) == (2.0, 40)


class _ThreadRank:
    """A world of `size` ranks played by threads: Allgather and Allgatherv through a board."""

    def __init__(self, rank, size, board, barrier):
        self.rank, self.size, self.comm = rank, size, self
        self.board, self.barrier = board, barrier

    def _post(self, buf):
        self.board[self.rank] = np.array(buf, copy=True)
        self.barrier.wait()

    def Allgather(self, send, recv):  # noqa: N802 (mpi4py's name)
        self._post(send)
        recv[:] = np.stack(self.board)
        self.barrier.wait()

    def Allgatherv(self, send, spec):  # noqa: N802
        recv, (counts, displs) = spec
        self._post(send)
        for q in range(self.size):
            recv[displs[q]:displs[q] + counts[q]] = self.board[q]
        self.barrier.wait()


def _gathered_by_threads(chunk_counts, ncomp=2):
    """What each rank's `_gather_lanes` returns, each rank holding `chunk_counts[q]` chunks of
    distinct lanes (None: no lanes); and the lanes."""
    size = len(chunk_counts)
    board, barrier = [None] * size, threading.Barrier(size)
    rng = np.random.default_rng(len(chunk_counts) + sum(c or 0 for c in chunk_counts))
    # (each rank's lanes of two sums, this Global's the second: `LaneSums.part`)
    mine = [None if n is None else
            (rng.standard_normal((n, ncomp + 1, lane_sums.STATE, lane_sums.LANES)), 1,
             ncomp + 1, 10 + q) for q, n in enumerate(chunk_counts)]
    out = [None] * size

    def rank(q):
        messages = {}
        world = _ThreadRank(q, size, board, barrier)
        out[q] = [_gather_lanes(world, mine[q], ncomp, messages) for _ in range(2)]
    threads = [threading.Thread(target=rank, args=(q,)) for q in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out, mine


MORE = INLINE_CHUNKS + 1  # (chunks past the first message)


@pytest.mark.parametrize("counts", [[1, 1], [2, 1, 3], [MORE + 2, 1, 2], [2, MORE],
                                    [MORE + 1, 1, MORE], [3, 3, 3]])
def test_every_ranks_lanes_gathered_in_rank_order(counts):
    """Ranks with as many chunks each, or not, some with more than the first message holds
    (the rest in a second): every rank gets every rank's lanes in rank order and the depth
    bounds added, at each merge (the buffers are kept between merges)."""
    out, mine = _gathered_by_threads(counts)
    want = np.concatenate([lanes[:, q0:q1] for lanes, q0, q1, _ in mine])
    for got in out:
        for lanes, depth in got:
            assert lanes.flags.c_contiguous  # (what `lane_sums.finish` is compiled for)
            assert np.array_equal(lanes, want)
            assert depth == sum(d for *_, d in mine)


def test_a_rank_without_lanes_makes_every_rank_merge_exactly():
    out, _ = _gathered_by_threads([2, None, INLINE_CHUNKS + 2])
    assert all(got == [None, None] for got in out)
