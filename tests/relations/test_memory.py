"""R.nbytes and R.memory(): the host bytes a relation holds, part by part."""
import numpy as np

import relsim as rs


def test_fields_subsets_and_built_groupings_are_counted():
    V, E = rs.Relation("V", 40), rs.Relation("E", 30)
    E.new_key_field("head", V, values=(7 * np.arange(30)) % 40)  # (not sorted by head)
    V.new_field("T", rs.f64)
    E.new_field("w", rs.f32, init=1.0)
    V.new_field("x", rs.vec(3))
    V.subset("few", [0, 2, 5])
    E.group_by("head", "edges")
    parts = V.memory()
    assert parts == {"field T": 40 * 8, "field x": 40 * 3 * 8, "subset few": 3 * 8,
                     "grouping edges": 0}  # (not built before a launch needs it)
    assert V.nbytes == sum(parts.values())
    assert E.memory() == {"field head": E.head.numpy().nbytes, "field w": 30 * 4}

    @rs.kernel
    def degree(v):
        for e in v.edges:
            v.T += e.w

    V.foreach(degree, rs.Config(target="interp"))
    offsets, rows = V.grouping("edges").arrays()
    assert V.memory()["grouping edges"] == offsets.nbytes + rows.nbytes > 0
    assert V.nbytes == 40 * 8 + 40 * 24 + 24 + offsets.nbytes + rows.nbytes
    # keys sorted (a matrix's entries by row): the rows are 0, 1, 2, ..., not kept
    E.head.load(np.arange(30) // 2)
    assert V.grouping("edges").in_order
    assert V.memory()["grouping edges"] == V.grouping("edges").offsets().nbytes
    assert V.grouping("edges").rows().tolist() == list(range(30))


def _traced_peak(fn) -> int:
    """The most bytes `fn()` held at once above what was allocated before (NumPy's arrays
    included: NumPy reports them to tracemalloc)."""
    import tracemalloc
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_grouping_of_sorted_keys_is_built_without_a_copy_of_them():
    """Sorted int32 keys (a matrix's entries by row): the offsets are found in the keys
    themselves; counting them made an int64 copy (112 MB at miniFE 80^3's 14M entries)."""
    n, per = 20_000, 50
    V, E = rs.Relation("V", n), rs.Relation("E", n * per)
    E.new_key_field("row", V, values=np.repeat(np.arange(n), per))
    assert E.row.numpy().dtype == np.int32
    g = E.group_by("row", "entries")
    peak = _traced_peak(g.offsets)  # (the build: `arrays()` makes the rows 0, 1, ... too)
    assert g.in_order and np.array_equal(g.offsets(), np.arange(n + 1) * per)
    assert peak < 4 * E.size  # bool temporaries and the offsets; an int64 copy is 8 per key
