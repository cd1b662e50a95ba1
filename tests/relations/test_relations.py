"""Relations, fields, key fields, subsets, groupings and globals."""
import numpy as np
import pytest

import relsim as rs


def test_fields_load_dump_fill_copy_swap():
    R = rs.Relation("R", 4)
    x = R.new_field("x", rs.f64, init=1.5)
    assert R.field("x") is x and R.x is x
    assert x.numpy().tolist() == [1.5] * 4
    x.load([1, 2, 3, 4])
    assert x.numpy().dtype == np.float64 and x.numpy().tolist() == [1, 2, 3, 4]
    view = x.numpy()
    view[0] = 9.0  # numpy() is a view: no copy
    assert x.numpy()[0] == 9.0
    p = R.new_field("p", rs.vec(3, rs.f32), init=(1, 2, 3))
    assert p.numpy().shape == (4, 3) and p.numpy().dtype == np.float32
    m = R.new_field("m", rs.mat(2, 2, rs.i64))
    assert m.numpy().shape == (4, 2, 2)
    y = R.new_field("y", rs.f64)
    y.copy_from(x)
    assert y.numpy().tolist() == x.numpy().tolist()
    y.fill(0.0)
    before = R.storage_version
    a, b = x.numpy(), y.numpy()
    x.swap(y)
    assert x.numpy() is b and y.numpy() is a and R.storage_version > before


def test_field_errors_name_the_field():
    R = rs.Relation("R", 3)
    R.new_field("x", rs.i32)
    with pytest.raises(rs.DataError, match=r"R\.x.*shape"):
        R.x.load(np.zeros(4))
    with pytest.raises(rs.DataError, match=r"float64.*R\.x"):
        R.x.load(np.zeros(3))
    with pytest.raises(rs.SchemaError, match="already has"):
        R.new_field("x", rs.f64)
    with pytest.raises(rs.SchemaError, match="no field 'nope'"):
        R.field("nope")
    with pytest.raises(rs.DataError):
        rs.Relation("bad", -1)


def test_key_fields_are_validated_and_read_only():
    V, E = rs.Relation("V", 3), rs.Relation("E", 2)
    head = E.new_key_field("head", V)
    with pytest.raises(rs.DataError, match=r"E\.head: row 1 holds 3, outside V \(size 3\)"):
        head.load([0, 3])
    head.load([2, 1])
    with pytest.raises(ValueError):
        head.numpy()[0] = 0
    tri = E.new_key_field("v", V, 3)
    with pytest.raises(rs.DataError, match="shape"):
        tri.load([0, 1])
    tri.load([[0, 1, 2], [2, 1, 0]])


def test_keys_loaded_without_a_copy_take_the_array_as_storage():
    V, E = rs.Relation("V", 3), rs.Relation("E", 4)
    assert rs.KeyField.storage_dtype(3) == np.int32
    assert rs.KeyField.storage_dtype(2 ** 31) == np.int64
    given = np.array([2, 0, 1, 1], dtype=np.int32)  # the keys' storage type (int32 here)
    head = E.new_key_field("head", V, values=given, copy=False)
    assert np.shares_memory(head.numpy(), given) and given.flags.writeable
    with pytest.raises(ValueError):
        head.numpy()[0] = 0
    with pytest.raises(rs.DataError, match=r"E\.tail: row 3 holds 3, outside V"):
        E.new_key_field("tail", V, values=np.array([0, 1, 2, 3], dtype=np.int32), copy=False)
    # another type, or not contiguous: copied as by default
    for other in (given.astype(np.int64), np.array([2, 9, 0, 9, 1, 9, 1, 9],
                                                   dtype=np.int32)[::2]):
        head.load(other, copy=False)
        assert head.numpy().tolist() == [2, 0, 1, 1] and not np.shares_memory(head.numpy(),
                                                                               other)
    head.load(given)  # (the default copies)
    assert not np.shares_memory(head.numpy(), given)


def test_subsets_and_groupings():
    V, E = rs.Relation("V", 4), rs.Relation("E", 5)
    E.new_key_field("head", V).load([3, 1, 3, 0, 1])
    g = E.group_by("head", "incoming")
    off, rows = g.arrays()
    assert off.tolist() == [0, 1, 3, 3, 5]
    assert rows.tolist() == [3, 1, 4, 0, 2]  # ascending within each group
    s = V.subset("evens", np.array([True, False, True, False]))
    assert s.rows.tolist() == [0, 2] and V.subset("evens") is s
    assert V.subset("picked", [3, 1, 3]).rows.tolist() == [1, 3]
    with pytest.raises(rs.DataError, match="row indices"):
        V.subset("bad", [5])
    E.head.load([0, 0, 0, 0, 0])  # grouping follows the key field
    assert g.arrays()[0].tolist() == [0, 5, 5, 5, 5]


def test_globals():
    g = rs.Global(rs.f64, 2.5)
    assert g.value == 2.5 and isinstance(g.value, float)
    g.value = 3
    assert g.value == 3.0
    v = rs.Global(rs.vec(3, rs.f64), (1, 2, 3))
    assert v.value.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(rs.DataError):
        v.value = (1, 2)
    assert rs.Global(rs.f64).row == -1


def test_global_value_that_is_not_a_number_is_a_data_error():
    g = rs.Global(rs.f64, 1.5, name="dt")
    with pytest.raises(rs.DataError, match=r"Global 'dt' of type f64 cannot hold 'abc'"):
        g.value = "abc"
    assert g.value == 1.5  # unchanged
    v = rs.Global(rs.vec(3, rs.f64))
    with pytest.raises(rs.DataError, match=r"Global of type vec3\[f64\].*shape \(2,\)"):
        v.value = (1.0, 2.0)
    v.value = (1.0, 2.0, 3.0)
    assert v.value.tolist() == [1.0, 2.0, 3.0]


def test_a_host_side_typo_lists_the_fields_and_suggests_one():
    R = rs.Relation("V", 3)
    R.new_field("T", rs.f64)
    R.new_field("flux", rs.f64)
    R.subset("left", [0])
    with pytest.raises(AttributeError, match=r"relation 'V' has no field, subset or grouping "
                                             r"'flx' \(did you mean 'flux'\?\); its fields: T, "
                                             r"flux; subsets: left; groupings: none"):
        _ = R.flx


def test_a_name_clash_says_what_holds_the_name():
    from relsim.domains import grid
    g = grid.box((4, 4))
    with pytest.raises(rs.SchemaError, match=r"cells already has a field named 'v' \(4 keys "
                                             r"into cells_vertices, per row\); choose another"):
        g.cells.new_field("v", rs.f64)
    R = rs.Relation("R", 2)
    R.new_field("x", rs.f64)
    R.subset("some", [1])
    with pytest.raises(rs.SchemaError, match=r"R already has a subset named 'some'"):
        R.new_field("some", rs.f64)


def test_keys_are_stored_as_int32_and_widen_when_their_target_must(monkeypatch):
    """Keys into a relation of fewer than 2**31 - 1 rows are int32 (half the bytes a memory-bound
    kernel reads); deleting rows renumbers them in that type; a target growing past the bound
    widens the keys into it to int64, values unchanged."""
    from relsim.relations import key_field as key_field_module
    P = rs.Relation("P", 4, elastic=True)
    Q = rs.Relation("Q", 3)
    k = Q.new_key_field("p", P, values=[3, 1, 1])
    assert k.numpy().dtype == np.int32
    P.delete(np.array([True, False, False, False]))
    assert k.numpy().dtype == np.int32 and k.numpy().tolist() == [2, 0, 0]
    monkeypatch.setattr(key_field_module, "INT32_KEYS_BELOW", 5)
    P.insert(3)  # P: 6 rows, past the (lowered) bound
    assert k.numpy().dtype == np.int64 and k.numpy().tolist() == [2, 0, 0]
    assert Q.new_key_field("q", P, values=[5, 4, 0]).numpy().dtype == np.int64


def test_a_dropped_grouping_can_be_made_again_over_other_rows():
    V = rs.Relation("V", 3)
    E = rs.Relation("E", 2)
    E.new_key_field("to", V, values=[2, 0])
    E.group_by(E.to, "ins")
    F = rs.Relation("F", 3)
    F.new_key_field("to", V, values=[1, 1, 0])
    with pytest.raises(rs.SchemaError, match="already has a grouping named 'ins'"):
        F.group_by(F.to, "ins")
    before = V.schema_version
    V.drop_grouping("ins")
    assert "ins" not in V.groupings and V.schema_version > before
    F.group_by(F.to, "ins")
    assert V.grouping("ins").source is F
    with pytest.raises(rs.SchemaError, match="V has no grouping named 'nope'; its groupings: "
                                             "ins"):
        V.drop_grouping("nope")


def test_a_dropped_subset_can_be_made_again_and_the_old_one_still_runs():
    V = rs.Relation("V", 4)
    V.new_field("u", rs.f64)
    old = V.subset("s", [0, 2])
    with pytest.raises(rs.SchemaError, match="already has a subset named 's'"):
        V.subset("s", [1])
    V.drop_subset("s")
    assert "s" not in V.subsets
    new = V.subset("s", [1])
    assert V.subset("s") is new

    @rs.kernel
    def one(v):
        v.u = 1.0

    old.foreach(one)
    assert V.u.numpy().tolist() == [1.0, 0.0, 1.0, 0.0]
    with pytest.raises(rs.SchemaError, match="V has no subset named 'nope'; its subsets: s"):
        V.drop_subset("nope")
