"""Additions on the fused multiply-add pipes (`backends/cpu/fused.py`): ``fma(a, one(), b)`` is
``a + b`` bit for bit, and the TwoSum lanes that use it give the sums the plain additions give."""
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import relsim as rs
from relsim.runtime import execute
from relsim.runtime.backends.cpu import backend, fused


@njit(cache=False)
def _fused_add(a, b):
    return fused.fma(a, fused.one(), b)


@njit(cache=False)
def _fused_sub(a, b):
    return fused.fma(-b, fused.one(), a)


@njit(cache=False)
def _fma(a, b, c):
    return fused.fma(a, b, c)


def _bits(v: float) -> bytes:
    return struct.pack("<d", v)


def test_fma_rounds_once():
    a, b = 1.0 + 2.0 ** -30, 1.0 - 2.0 ** -30
    assert a * b - 1.0 == 0.0  # the product alone rounds to 1
    assert _fma(a, b, -1.0) == -(2.0 ** -60)


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=True), st.floats(allow_nan=True))
def test_a_fused_addition_is_the_addition(a, b):
    for got, want in ((_fused_add(a, b), a + b), (_fused_sub(a, b), a - b)):
        if math.isnan(want):
            assert math.isnan(got)
        else:
            assert _bits(got) == _bits(want)  # signed zeros too


@pytest.mark.parametrize("a, b", [(0.0, -0.0), (-0.0, -0.0), (-0.0, 0.0), (1.0, -1.0),
                                  (math.inf, 1.0), (5e-324, -5e-324)])
def test_signed_zeros_and_specials(a, b):
    assert _bits(_fused_add(a, b)) == _bits(a + b)
    assert _bits(_fused_sub(a, b)) == _bits(a - b)


g = rs.Global(rs.f64, 0.0)


@rs.kernel
def dot(r):
    g += r.x * r.y


@pytest.mark.parametrize("on", [False, True])
def test_lanes_with_and_without_fused_additions(monkeypatch, tmp_path, on):
    """The lanes variant is generated with fused additions only where the CPU has them, and
    sums exactly either way."""
    if on and not fused.available():
        pytest.skip("this CPU has no fused multiply-add")
    monkeypatch.setattr(backend.fused, "available", lambda: on)
    n = 3001
    R = rs.Relation(f"fused_{on}", n)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, n))
    y = rng.standard_normal(n)
    R.new_field("x", rs.f64).load(x)
    R.new_field("y", rs.f64).load(y)
    cfg = rs.Config(target="cpu", threads=1, cache_dir=str(tmp_path))
    g.value = 0.25
    R.foreach(dot, cfg)
    assert g.value == math.fsum([0.25] + list(x * y))
    source = execute.executable(dot, R, cfg).source
    lanes = source[source.index("def kernel_lanes_parallel("):]
    assert ("_fused.fma" in lanes) == on
