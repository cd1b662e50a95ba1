"""relsim.domains.unique_sides: the distinct edges or faces of custom cells for plugin authors
(a quad mesh's edges), against a Python definition; the bundled meshes' edges come from it."""
import numpy as np
import pytest

import relsim as rs
from relsim import domains

QUAD_EDGES = ((0, 1), (1, 2), (2, 3), (3, 0))


def quads(nx, ny):
    """A structured nx x ny quad mesh, counter-clockwise cells."""
    v = np.arange((nx + 1) * (ny + 1)).reshape(ny + 1, nx + 1)
    return np.stack([v[:-1, :-1], v[:-1, 1:], v[1:, 1:], v[1:, :-1]], axis=-1).reshape(-1, 4)


def test_a_quad_meshes_edges_are_its_distinct_vertex_pairs():
    cells = quads(3, 2)
    s = domains.unique_sides(cells, QUAD_EDGES)
    pairs = sorted({tuple(sorted((int(c[a]), int(c[b])))) for c in cells for a, b in QUAD_EDGES})
    assert s.vertices.tolist() == [list(p) for p in pairs]
    assert len(pairs) == 3 * 3 + 4 * 2  # horizontal + vertical edges
    for i, c in enumerate(cells):  # each cell's local edges are rows of the table
        for j, (a, b) in enumerate(QUAD_EDGES):
            assert sorted(s.vertices[s.of_cell[i, j]].tolist()) == sorted([c[a], c[b]])
            first = s.oriented[s.of_cell[i, j]].tolist()
            assert sorted(first) == sorted([c[a], c[b]])
    on_boundary = s.count == 1
    assert on_boundary.sum() == 2 * (3 + 2) and (s.count <= 2).all()
    # the first cell listing an edge gives its orientation
    assert s.oriented[s.of_cell[0, 0]].tolist() == [cells[0, 0], cells[0, 1]]


def test_faces_of_any_length_and_bad_input():
    tets = np.array([[0, 1, 2, 3], [1, 2, 3, 4]])
    faces = ((1, 2, 3), (0, 3, 2), (0, 1, 3), (0, 2, 1))
    s = domains.unique_sides(tets, faces)
    assert len(s.vertices) == 7 and s.count.tolist().count(2) == 1
    with pytest.raises(rs.DomainError, match="local vertex 4 is not one of a cell's 4 vertices"):
        domains.unique_sides(tets, ((0, 4),))
    with pytest.raises(rs.DomainError, match=r"cells must be an \(m, n\) integer array"):
        domains.unique_sides(np.zeros((2, 3)), QUAD_EDGES)
    empty = domains.unique_sides(np.zeros((0, 4), np.int64), QUAD_EDGES)
    assert empty.vertices.shape == (0, 2) and empty.of_cell.shape == (0, 4)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("lo,hi", [(0, 5), (-3, 40), (0, 10**6), (-(2**40), 2**40)])
def test_unique_rows_is_numpys_row_unique(k, lo, hi):
    """One integer per row where the values allow (and NumPy's row sort where they do not:
    the widest range with four columns): the same table, first rows, inverse and counts."""
    from relsim.domains.sides import unique_rows

    rng = np.random.default_rng(k)
    rows = np.sort(rng.integers(lo, hi, (500, k)), axis=1)
    rows[250:] = rows[:250][::-1]  # every row at least twice, in another order
    got = unique_rows(rows.astype(np.int64))
    want = np.unique(rows, axis=0, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert g.dtype == np.int64 and np.array_equal(g, np.asarray(w).reshape(g.shape))
    assert unique_rows(np.zeros((0, k), np.int64))[0].shape == (0, k)
