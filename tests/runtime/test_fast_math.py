"""Config(fast_math=True): products may fuse with sums into FMAs (cpu: LLVM's ``contract`` flag;
cuda: plain products, which NVVM fuses), and by default they never do."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime import execute


def axpy_relation(n=50):
    V = rs.Relation("V", n)
    rng = np.random.default_rng(1)
    for name in "abc":
        V.new_field(name, rs.f64).load(rng.standard_normal(n))
    V.new_field("y", rs.f64)
    return V


@rs.kernel
def axpy(v):
    v.y = v.a * v.b + v.c


def test_fast_math_is_a_bool():
    with pytest.raises(rs.ConfigError, match="fast_math must be True or False"):
        rs.Config(fast_math=1)


def test_cpu_fast_math_lets_llvm_contract_products(tmp_path):
    V = axpy_relation()
    # a fresh cache: Numba shows the LLVM IR of what it compiled, not of what it loaded
    exact = rs.Config(target="cpu", cache_dir=str(tmp_path))
    fast = rs.Config(target="cpu", fast_math=True, cache_dir=str(tmp_path))
    for cfg in (exact, fast):
        V.foreach(axpy, cfg)
    ir = {cfg: execute.executable(axpy, V, cfg).row_loops[False].part.inspect_llvm()
          for cfg in (exact, fast)}
    got = {cfg: "".join(v for v in ir[cfg].values()) for cfg in ir}
    assert "fmul contract" in got[fast] and "fadd contract" in got[fast]
    assert "contract" not in got[exact]
    assert "fast_math" in execute.executable(axpy, V, fast).source
    a, b, c = (getattr(V, f).numpy() for f in "abc")
    np.testing.assert_allclose(V.y.numpy(), a * b + c, rtol=1e-15, atol=1e-15)


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba.cuda is not importable")
def test_cuda_products_are_rounded_alone_unless_fast_math():
    V = axpy_relation()
    exact = execute.executable(axpy, V, rs.Config(target="cuda")).source
    fast = execute.executable(axpy, V, rs.Config(target="cuda", fast_math=True)).source
    assert "_dev.mul(" in exact and "_dev.mul(" not in fast
    V.foreach(axpy, rs.Config(target="cuda", fast_math=True))
    a, b, c = (getattr(V, f).numpy() for f in "abc")
    np.testing.assert_allclose(V.y.numpy(), a * b + c, rtol=1e-15, atol=1e-15)
