"""Differential testing: random kernels and data; `interp`, serial and parallel CPU must agree
bit for bit (NaNs compared as NaNs)."""
import importlib.util
import itertools
import os
import sys
import textwrap

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relsim as rs

F64_LEAVES = ["e.w", "e.head.a", "e.tail.a", "e.head.b", "e.tail.b", "e.head.p[1]",
              "rs.dot(e.head.p, e.tail.p)", "g_in"]
F32_LEAVES = ["e.head.c", "e.tail.c", "e.wf"]
I_LEAVES = ["e.head.i", "e.tail.i", "e.n"]


@st.composite
def f64_expr(draw, depth=0, locals_=()):
    leaves = F64_LEAVES + list(locals_)
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        kind = draw(st.integers(0, 3))
        if kind == 0:
            return repr(draw(st.sampled_from([0.5, -1.25, 3.0, 1e-3, 2.0])))
        if kind == 1:
            return f"float({draw(int_expr(depth + 1))})"
        if kind == 2:
            return f"float({draw(f32_expr(depth + 1))})"
        return draw(st.sampled_from(leaves))
    a = draw(f64_expr(depth + 1, locals_))
    b = draw(f64_expr(depth + 1, locals_))
    form = draw(st.integers(0, 10))
    return [f"({a} + {b})", f"({a} - {b})", f"({a} * {b})", f"({a} / {b})", f"(-{a})",
            f"math.sqrt(abs({a}))", f"min({a}, {b})", f"max({a}, {b}, 0.25)",
            f"({a} if {a} < {b} else {b} * 2.0)", f"math.exp(min({a}, 3.0))",
            f"rs.norm(({a}, {b}, 1.0))"][form]


@st.composite
def f32_expr(draw, depth=0):
    if depth >= 3 or draw(st.booleans()):
        return draw(st.sampled_from(F32_LEAVES))
    a, b = draw(f32_expr(depth + 1)), draw(f32_expr(depth + 1))
    return draw(st.sampled_from([f"({a} * {b})", f"({a} + 0.5 * {b})", f"math.sin({a})",
                                 f"({a} - {b})", f"abs({a})"]))


@st.composite
def int_expr(draw, depth=0):
    if depth >= 3 or draw(st.booleans()):
        return draw(st.sampled_from(I_LEAVES + ["3", "-2"]))
    a, b = draw(int_expr(depth + 1)), draw(int_expr(depth + 1))
    return draw(st.sampled_from([f"({a} + {b})", f"({a} * {b})", f"({a} // 3)", f"({a} % 5)",
                                 f"max({a}, {b})", f"({a} - {b})"]))


@st.composite
def kernel_source(draw):
    lines, locals_ = [], []
    for k in range(draw(st.integers(1, 3))):
        name = f"x{k}"
        lines.append(f"{name} = {draw(f64_expr(0, tuple(locals_)))}")
        locals_.append(name)
    loc = tuple(locals_)
    body = [f"e.head.acc += {draw(f64_expr(1, loc))}",
            f"e.tail.acc -= {draw(f64_expr(1, loc))}",
            f"e.out = {draw(f64_expr(1, loc))}",
            f"e.o32 = {draw(f32_expr(1))}",
            f"e.oi = {draw(int_expr(1))}",
            f"total += {draw(f64_expr(1, loc))}",
            f"lo = min(lo, {draw(f64_expr(1, loc))})",
            f"e.head.pacc += ({draw(f64_expr(2, loc))}, 1.0, {draw(f64_expr(2, loc))})",
            f"rs.reduce_max(e.tail.mx, {draw(f64_expr(2, loc))})"]
    chosen = draw(st.lists(st.sampled_from(body), min_size=1, max_size=5, unique=True))
    if draw(st.booleans()):
        cond = f"{draw(f64_expr(2, loc))} > {draw(f64_expr(2, loc))}"
        split = len(chosen) // 2
        chosen = [f"if {cond}:"] + ["    " + c for c in chosen[:split] or ["pass"]] + \
            ["else:"] + ["    " + c for c in chosen[split:] or ["pass"]]
    return "\n".join(lines + chosen)


_counter = itertools.count()


def _load_kernel(tmp_path, body):
    src = textwrap.dedent("""\
        import math
        import relsim as rs

        def make(total, lo, g_in):
            @rs.kernel
            def k(e):
        {body}
            return k
        """).format(body=textwrap.indent(body, " " * 8))
    path = tmp_path / f"gen_kernel_{next(_counter)}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod.make


def _data(seed):
    rng = np.random.default_rng(seed)
    nv, ne = 9, 23
    V, E = rs.Relation("V", nv), rs.Relation("E", ne)
    E.new_key_field("head", V).load(rng.integers(0, nv, ne))
    E.new_key_field("tail", V).load(rng.integers(0, nv, ne))
    V.new_field("a", rs.f64).load(rng.normal(size=nv))
    V.new_field("b", rs.f64).load(rng.uniform(-3, 3, nv))
    V.new_field("c", rs.f32).load(rng.normal(size=nv).astype(np.float32))
    V.new_field("i", rs.i64).load(rng.integers(-5, 6, nv))
    V.new_field("p", rs.vec(3, rs.f64)).load(rng.normal(size=(nv, 3)))
    V.new_field("acc", rs.f64).load(rng.normal(size=nv))
    V.new_field("pacc", rs.vec(3, rs.f64))
    V.new_field("mx", rs.f64, init=-1.0)
    E.new_field("w", rs.f64).load(rng.normal(size=ne))
    E.new_field("wf", rs.f32).load(rng.normal(size=ne).astype(np.float32))
    E.new_field("n", rs.i32).load(rng.integers(-9, 9, ne).astype(np.int32))
    E.new_field("out", rs.f64)
    E.new_field("o32", rs.f32)
    E.new_field("oi", rs.i64)
    return V, E


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        return np.array_equal(nan_a, nan_b) and np.array_equal(
            a[~nan_a].view(np.uint8), b[~nan_b].view(np.uint8))
    return np.array_equal(a, b)


@settings(max_examples=int(os.environ.get("RELSIM_DIFF_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=kernel_source(), seed=st.integers(0, 2**16))
def test_random_kernels_agree_bitwise(tmp_path, body, seed):
    make = _load_kernel(tmp_path, body)
    results = {}
    for target in ("interp", "cpu-serial", "cpu"):
        V, E = _data(seed)
        total, lo, g_in = rs.Global(rs.f64, 0.125), rs.Global(rs.f64, 1e300), \
            rs.Global(rs.f64, 0.75)
        k = make(total, lo, g_in)
        cfg = rs.Config(target=target, parallel_threshold=1)
        for _ in range(2):
            E.foreach(k, cfg)
        results[target] = [f.numpy().copy() for f in list(V.fields.values()) +
                           list(E.fields.values())] + [np.array([total.value, lo.value])]
    for target in ("cpu-serial", "cpu"):
        for a, b in zip(results["interp"], results[target]):
            assert _same(a, b), f"{target} differs from interp for kernel:\n{body}"
