"""The compiled finite-element pattern (`linalg/pattern.py`) against the definition: every pair
of one element's vertices and the diagonal, distinct, in CSR order, and each element pair's
entry."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relsim as rs
from relsim import linalg
from relsim.linalg import pattern


def _reference(conn, n):
    """The pattern as sorted distinct codes row * n + col, and each pair's entry."""
    k = conn.shape[1]
    every = np.arange(n, dtype=np.int64)
    codes = (conn[:, :, None] * n + conn[:, None, :]).reshape(-1)
    distinct = np.unique(np.concatenate([codes, every * n + every]))
    return distinct, np.searchsorted(distinct, codes).reshape(len(conn), k * k)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), k=st.sampled_from([1, 2, 3, 4, 8]), ne=st.integers(0, 30),
       seed=st.integers(0, 2 ** 32 - 1))
def test_the_pattern_is_the_definitions(n, k, ne, seed):
    # (random elements: vertices repeated within one, vertices in no element, no elements)
    conn = np.random.default_rng(seed).integers(0, n, (ne, k)).astype(np.int64)
    offsets, rows, cols, index = pattern.element_pattern(conn, n)
    distinct, want_index = _reference(conn, n)
    assert offsets[0] == 0 and (np.diff(offsets) >= 1).all()
    assert rows.tolist() == np.repeat(np.arange(n), np.diff(offsets)).tolist()
    assert (rows * n + cols).tolist() == distinct.tolist()
    assert index.tolist() == want_index.tolist()
    # in the keys' own types (int32 here): the same pattern
    got = pattern.element_pattern(conn, n, lambda size: np.int32)
    assert [a.dtype for a in got[1:]] == [np.int32] * 3
    assert all(np.array_equal(a, b) for a, b in zip(got, (offsets, rows, cols, index)))
    # written in shares of the rows and elements, on threads (more shares than rows too)
    for parts in (2, 3, n + 2):
        got = pattern.element_pattern(conn, n, parts=parts)
        assert all(np.array_equal(a, b) for a, b in zip(got, (offsets, rows, cols, index)))


@pytest.mark.parametrize("dims", [(2, 3, 1), (4, 3, 2)])
def test_from_elements_on_a_hex_brick(dims):
    nx, ny, nz = dims
    V = rs.Relation("V", (nx + 1) * (ny + 1) * (nz + 1))
    H = rs.Relation("H", nx * ny * nz)
    i, j, k = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    node = lambda a, b, c: (a * (ny + 1) + b) * (nz + 1) + c  # noqa: E731
    corners = [node(i + a, j + b, k + c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    conn = np.stack([c.reshape(-1) for c in corners], axis=1).astype(np.int64)
    H.new_key_field("v", V, 8, values=conn)
    A = linalg.SparseMatrix.from_elements(H.v)
    distinct, want_index = _reference(conn, V.size)
    got = A.entries.row.numpy().astype(np.int64) * V.size + A.entries.col.numpy()
    assert got.tolist() == distinct.tolist()
    assert H.A.numpy().tolist() == want_index.tolist()


def test_a_share_that_fails_on_its_thread_fails_the_pattern(monkeypatch):
    """An error in a share written on another thread (here the first share's element
    entries) is raised by `element_pattern`, never a pattern with that share unwritten."""
    real = pattern._fill_index

    def failing(conn, offsets, cols, index, lo, hi):
        if lo == 0:
            raise MemoryError("share 0")
        real(conn, offsets, cols, index, lo, hi)

    monkeypatch.setattr(pattern, "_fill_index", failing)
    conn = np.arange(40, dtype=np.int64).reshape(10, 4) % 13
    with pytest.raises(MemoryError, match="share 0"):
        pattern.element_pattern(conn, 13, parts=2)
