"""Choices between cheap values (`x if c else y`, `and`, `or`) lower on the cpu to one `select`
instruction (`backends/cpu/choice.py`) instead of a branch, with interp's bits; a side that may
fail or reads memory is still computed only when chosen; the 0 x inf guards of generated
adjoints have no branch (Numba's passes cost far more than linearly in the branches of a
kernel: the implicit fem energy's tangent adjoint took 133 s to compile with them)."""
import ast
import math

import numpy as np

import relsim as rs
from relsim.runtime import execute

TARGETS = ("interp", "cpu-serial", "cpu")


def _relation(n=64, seed=0):
    rng = np.random.default_rng(seed)
    R = rs.Relation("R", n)
    a = rng.standard_normal(n)
    a[::5] = 0.0
    a[1::7] = -0.0
    b = rng.standard_normal(n)
    b[::3] = np.inf
    b[2::9] = np.nan
    R.new_field("a", rs.f64).load(a)
    R.new_field("b", rs.f64).load(b)
    R.new_field("k", rs.i32).load(rng.integers(-1, 5, n).astype(np.int32))
    R.new_field("w", rs.vec(3, rs.f64)).load(rng.standard_normal((n, 3)))
    R.new_field("out", rs.vec(3, rs.f64))
    R.new_field("flag", rs.i32)
    return R


@rs.kernel
def cheap(r):
    guarded = 0.0 if r.a == 0.0 else r.a * r.b  # an adjoint's 0 x inf rule
    both = r.a == 0.0 and not math.isfinite(r.b)
    either = r.a > 0.0 or r.b < 0.0 or r.k == 2
    v = r.w if r.a < 0.0 else -r.w  # a vector chosen component by component
    n = r.k * 3 if r.k > 1 else -0.0  # an integer and a float: the float's type
    r.out = v + rs.vec(3)(guarded, n, -0.0 if either else 0.0)
    r.flag = 1 if both else 0


@rs.kernel
def lazy(r):
    # the right side reads a vector at a computed index: only where the left side allows
    inside = r.k >= 0 and r.k < 3 and r.w[r.k] > 0.0
    q = r.k // (r.k - 2) if r.k != 2 else 99  # an integer division: never by zero
    r.flag = q * 2 + (1 if inside else 0)


def _run(kernel, target):
    R = _relation()
    R.foreach(kernel, rs.Config(target=target, parallel_threshold=1))
    return R.out.numpy(copy=True).tobytes() + R.flag.numpy(copy=True).tobytes()


def _branches(source, function="kernel_parallel") -> int:
    fn = next(f for f in ast.parse(source).body
              if isinstance(f, ast.FunctionDef) and f.name == function)
    return sum(isinstance(s, ast.If) for s in ast.walk(fn))


def test_cheap_choices_are_picks_with_the_bits_of_interp():
    assert len({_run(cheap, t) for t in TARGETS}) == 1
    R = _relation()
    source = execute.executable(cheap, R, rs.Config(target="cpu")).source
    assert "_choice.pick(" in source
    assert _branches(source) == 0


def test_a_side_that_reads_memory_or_divides_is_computed_only_when_chosen():
    assert len({_run(lazy, t) for t in TARGETS}) == 1
    R = _relation()
    R.foreach(lazy, rs.Config(target="cpu"))  # no index error: w[k] read for 0 <= k < 3 only
    source = execute.executable(lazy, R, rs.Config(target="cpu")).source
    assert _branches(source) >= 3  # `and` twice (the read's check), the division's choice


def test_the_zero_times_infinity_guards_of_an_adjoint_have_no_branch():
    R = _relation()
    R.b.load(np.where(np.isfinite(R.b.numpy()), R.b.numpy(), 1.5))
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def energy(r):
        loss += r.a * r.b * math.exp(r.a) + r.a * r.a * max(r.b, 0.5)

    grads = set()
    for target in TARGETS:
        cfg = rs.Config(target=target, parallel_threshold=1)
        with rs.Tape() as tape:
            loss.value = 0.0
            R.foreach(energy, cfg)
        tape.backward(loss)
        grads.add(R.a.grad.numpy(copy=True).tobytes() + R.b.grad.numpy(copy=True).tobytes())
    assert len(grads) == 1
    adjoint = next(iter(energy._adjoints.values()))
    source = execute.executable(adjoint, R, rs.Config(target="cpu")).source
    assert source.count("_choice.pick(") >= 4
    assert _branches(source) == 0


def test_decompositions_choose_without_branches_and_sweep_in_one_loop():
    """A 3x3 rs.svd's selects (scale-free rotations, the sort) are picks, and its Jacobi sweeps
    one loop of one sweep's code (`EmitAlgebra.repeat`): measured, its function compiled in
    4.9 s written out with a branch per select, 3.3 s with picks, 1.3 s as a loop. The bits are
    interp's (tests/runtime/test_decompositions.py, on every target)."""
    from relsim.runtime import decompositions

    R = rs.Relation("m", 4)
    R.new_field("F", rs.mat(3, 3)).load(np.random.default_rng(0).normal(size=(4, 3, 3)))
    R.new_field("S", rs.vec(3))

    @rs.kernel
    def singular_values(m):
        U, S, V = rs.svd(m.F)
        m.S = S

    source = execute.executable(singular_values, R, rs.Config(target="cpu")).source
    fn = next(f for f in ast.parse(source).body
              if isinstance(f, ast.FunctionDef) and f.name == "_fn_svd3_f64")
    assert not any(isinstance(n, (ast.If, ast.IfExp)) for n in ast.walk(fn))
    assert "_choice.pick(" in ast.unparse(fn)
    (loop,) = [n for n in ast.walk(fn) if isinstance(n, ast.For)]
    assert ast.literal_eval(loop.iter.args[0]) == decompositions.SWEEPS


def test_a_repeated_step_assigns_its_carried_locals_all_at_once():
    """`EmitAlgebra.repeat`: a step that passes carried locals on to other places (here
    (a, b, c) -> (b, a + b, a): a goes to c's place after a's own is assigned) reads every one
    before any is assigned, as NumPy's loop does."""
    from relsim.runtime.lowering.emit import EmitAlgebra
    from relsim.runtime.numpy_algebra import NumpyAlgebra
    from relsim.types import f64

    def run(alg, start):
        return alg.repeat(6, start, lambda s: [s[1], alg.binop("+", s[0], s[1], f64), s[0]])

    alg = EmitAlgebra()
    got = run(alg, [ast.Name(v, ast.Load()) for v in ("a0", "b0", "c0")])
    scope = {"a0": 1.0, "b0": 2.0, "c0": 0.0}
    exec(compile(ast.fix_missing_locations(ast.Module(alg.out, [])), "<repeat>", "exec"), scope)
    want = run(NumpyAlgebra(), [np.float64(1.0), np.float64(2.0), np.float64(0.0)])
    assert tuple(scope[v.id] for v in got) == tuple(want) == (21.0, 34.0, 13.0)
