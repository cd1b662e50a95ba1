"""Captured Python values are compile-time constants: a kernel keeps the value it was compiled
with, and a launch after the script changed it warns once (RelsimWarning naming the variable and
suggesting rs.Global). The check costs well under a microsecond per launch."""
import warnings

import numpy as np
import pytest

import relsim as rs
from relsim.runtime.analysis.captures import origin

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized

SCALE = 2.0
OFFSETS = np.array([1.0, 2.0, 3.0])
SHIFT = 1


@rs.kernel
def scale(v):
    v.x = SCALE * v.x


@rs.kernel
def add_offset(v):
    v.x += OFFSETS[1]


@rs.func
def shifted(a):
    return a + SHIFT


@rs.kernel
def add_shift(v):
    v.x = shifted(v.x)


def relation(n=5):
    R = rs.Relation("R", n)
    R.new_field("x", rs.f64, init=1.0)
    return R


def launch(R, k, target):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        R.foreach(k, target)
    return [w for w in caught if issubclass(w.category, rs.RelsimWarning)]


@pytest.fixture
def restore_globals():
    saved = dict(SCALE=SCALE, OFFSETS=OFFSETS.copy(), SHIFT=SHIFT)
    yield
    globals().update(saved)


def test_changed_global_warns_once_and_the_kernel_keeps_its_value(target, restore_globals):
    global SCALE
    k = rs.kernel(scale.fn)  # a fresh kernel: compiled (and warned) in this test only
    R = relation()
    assert launch(R, k, target) == []
    SCALE = 3.0
    caught = launch(R, k, target)
    assert len(caught) == 1
    msg = str(caught[0].message)
    for words in ("kernel 'scale'", "SCALE = 2.0", "now 3.0", "keeps that value", "rs.Global",
                  "test_captures.py"):
        assert words in msg, msg
    assert caught[0].filename == __file__  # points at the launch in the user's code
    assert np.array_equal(R.x.numpy(), np.full(5, 4.0))  # 1 * 2 * 2: still SCALE = 2.0
    assert launch(R, k, target) == []  # once per kernel and name
    SCALE = 5.0
    assert launch(R, k, target) == []


def test_rebinding_an_equal_value_is_not_a_change(target, restore_globals):
    global SCALE
    k = rs.kernel(scale.fn)
    R = relation()
    launch(R, k, target)
    SCALE = float("2.0")  # another object, the same value
    assert launch(R, k, target) == []
    SCALE = 2  # the same number, another type: compiled differently
    assert len(launch(R, k, target)) == 1


def test_array_changed_in_place_warns(target, restore_globals):
    k = rs.kernel(add_offset.fn)
    R = relation()
    launch(R, k, target)
    OFFSETS[1] = 10.0
    caught = launch(R, k, target)
    assert len(caught) == 1 and "OFFSETS = [1. 2. 3.]" in str(caught[0].message)
    assert np.array_equal(R.x.numpy(), np.full(5, 5.0))  # 1 + 2 + 2


def test_closure_and_func_captures_are_watched(target, restore_globals):
    global SHIFT
    rate = 0.5

    @rs.kernel
    def damp(v):
        v.x = rate * v.x

    R = relation()
    assert launch(R, damp, target) == []
    rate = 0.25  # noqa: F841 - read by the kernel's closure
    caught = launch(R, damp, target)
    assert len(caught) == 1 and "rate = 0.5" in str(caught[0].message)

    k = rs.kernel(add_shift.fn)
    assert launch(R, k, target) == []
    SHIFT = 2
    caught = launch(R, k, target)
    assert len(caught) == 1 and "SHIFT = 1" in str(caught[0].message)


def test_globals_and_frame_snapshots_are_not_watched(target):
    g = rs.Global(rs.f64, 1.0)

    @rs.kernel
    def use(v):
        v.x = g * v.x

    R = relation()
    launch(R, use, target)
    g.value = 3.0  # an rs.Global is read at each launch: nothing to warn about
    assert launch(R, use, target) == []
    assert np.array_equal(R.x.numpy(), np.full(5, 3.0))
    assert origin(use.fn, "missing", 1.0) is None
