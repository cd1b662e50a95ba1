"""One fold rule: `semantics.reduce_step` (and `semantics.arg_better`) is what every fold
computes, and its compiled forms agree with it bit for bit: the Numba folds of
`folds/host_folds` (`_combine`, `_combine_bool`, `fold_arg`, which spell the rule out for
Numba's cache) and the absorbed folds `lowering/pending_folds` emits through the rule itself.
The values hold ties, signed zeros, infinities, NaNs and integer overflow (only the sign of a
NaN made from two NaNs is not compared, see `_same`)."""
import ast
import math

import numpy as np
import pytest
from numba import njit

from relsim.runtime import semantics
from relsim.runtime.folds import host_folds
from relsim.runtime.lowering.emit import EmitAlgebra, name
from relsim.runtime.lowering.pending_folds import fold_pending_row
from relsim.runtime.numpy_algebra import NumpyAlgebra
from relsim.types import bool_, f32, f64, i32, i64

ALG = NumpyAlgebra()
NUMERIC_OPS = [op for op in semantics.FOLD_OPS if op not in ("and", "or")]
CASES = [(op, t) for op in NUMERIC_OPS for t in (f64, f32, i64, i32)] + \
    [(op, bool_) for op in ("and", "or")]
RNG = np.random.default_rng(7)
# target row t receives slots IDS[OFF[t]:OFF[t+1]] (0 to 6 of them), in that order
_COUNTS = RNG.integers(0, 7, size=64)
OFF = np.concatenate([[0], np.cumsum(_COUNTS)])
IDS = RNG.permutation(OFF[-1])


def _case_id(case):
    return f"{case[0]}-{case[1]!r}"


def _pool(t):
    """Values that tell fold rules apart: ties, signed zeros, infinities, NaN, extreme ints."""
    if t.is_bool:
        return np.array([True, False])
    if t.is_float:
        return np.array([0.0, -0.0, 0.0, -0.0, 1.5, 1.5, -1.5, np.inf, -np.inf, np.nan])
    info = np.iinfo(t.dtype)
    return np.array([0, 1, 1, -1, 7, info.max, info.max, info.min, -2])


def _draw(t, shape, seed):
    pool = _pool(t)
    return pool[np.random.default_rng(seed).integers(0, len(pool), size=shape)].astype(t.dtype)


def _slots(t, ncomp=2):
    """A value per slot and component (one slot per entry of IDS), and start values per row."""
    return _draw(t, (len(IDS), ncomp), 1), _draw(t, (len(_COUNTS), ncomp), 2)


def _rule(op, acc, vals, t, negate=(), step=semantics.reduce_step):
    """The fold by the rule: acc op vals[s] for each slot s in order (negated where listed)."""
    acc = acc.copy()
    with np.errstate(all="ignore"):
        for s in range(len(vals)):
            for c in range(acc.shape[0]):
                v = ALG.neg(vals[s, c], t) if s in negate else vals[s, c]
                acc[c] = step(ALG, op, acc[c], v, t)
    return acc


def _rule_gather(op, F, ids, vals, t):
    out = F.copy()
    for row in range(len(F)):
        mine = ids[OFF[row]:OFF[row + 1]]
        slots = np.array([vals[s if s >= 0 else ~s] for s in mine]).reshape(-1, vals.shape[1])
        out[row] = _rule(op, F[row], slots, t, {i for i, s in enumerate(mine) if s < 0})
    return out


def _same(a, b):
    """Bit for bit, except which NaN: when two NaNs meet, x86 returns one operand's and the
    compilers (of NumPy, of Numba) are free to commute + and *, so its sign may differ."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if not np.array_equal(nan, np.isnan(b)):
            return False
        a, b = np.where(nan, 0, a), np.where(nan, 0, b)
    return a.tobytes() == b.tobytes()


def _ids(op, t):
    """Slot ids; for + on floats some name the negation of a shared slot (~s)."""
    if op == "+" and t.is_float:
        return np.where(np.random.default_rng(3).random(len(IDS)) < 0.3, ~IDS, IDS)
    return IDS


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_global_folds_follow_the_rule(case):
    op, t = case
    vals, starts = _slots(t)
    fold = host_folds.fold_bool if t.is_bool else host_folds.fold_num
    for row, init in enumerate(starts):  # short folds: each row's slots
        mine = vals[IDS[OFF[row]:OFF[row + 1]]]
        g = init.copy()
        fold(g, mine, host_folds.OPS[op])
        assert _same(g, _rule(op, init, mine, t, step=semantics.global_step))


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_gathers_follow_the_rule(case):
    op, t = case
    vals, F = _slots(t)
    ids = _ids(op, t)
    want = _rule_gather(op, F, ids, vals, t)
    code = host_folds.OPS[op]
    if t.is_bool:
        got = F.copy()
        host_folds.gather_bool_serial(got, OFF, IDS, vals, code)
        assert _same(got, want)
        return
    for ids_arg in (ids, ids.astype(np.int32)):
        got = F.copy()
        host_folds.gather_num_serial(got, OFF, ids_arg, vals, code)
        assert _same(got, want)
        got = F.copy()
        rows = np.flatnonzero(_COUNTS)
        host_folds.gather_num_rows_serial(got, rows, OFF, ids_arg, vals, code)
        assert _same(got, want)
        got = F[:, :1].copy().reshape(-1)
        host_folds.gather_num_scalar_serial(got, OFF, ids_arg, vals[:, :1].copy().reshape(-1),
                                           code)
        assert _same(got, want[:, 0])
    if t == f64:
        got = F.copy()
        host_folds.gather_num_parallel(got, OFF, ids, vals, code)
        assert _same(got, want)


@pytest.mark.parametrize("op", ["argmin", "argmax"])
@pytest.mark.parametrize("t", [f64, i32], ids=repr)
def test_arg_folds_follow_the_rule(op, t):
    vals, starts = _slots(t, ncomp=1)
    per_row = 3
    for g0 in starts[:8]:
        best, brow = g0.copy(), np.array([-1])
        host_folds.fold_arg(best, brow, vals, per_row, np.zeros(0, np.int64), False,
                           op == "argmin")
        want, wrow = g0[0], -1
        for s in range(len(vals)):
            if semantics.arg_better(ALG, op, want, vals[s, 0], t):
                want, wrow = vals[s, 0], s // per_row
        assert _same(best, np.array([want], dtype=t.dtype)) and brow[0] == wrow


def _absorbing_fold(op, t, has_ids, ncomp):
    """The absorbed fold as a kernel emits it, compiled on its own: fold(F, off, ids, vals, row)."""
    alg = EmitAlgebra()
    comps = [("F", ast.Tuple([name("_row"), ast.Constant(c)], ast.Load())) for c in range(ncomp)]
    fold_pending_row(alg, 0, comps, op, has_ids, t)
    mod = ast.parse("def fold(F, _absorb0_off, _absorb0_ids, _absorb0_vals, _row):\n    pass\n")
    mod.body[0].body = alg.out
    env = {"np": np, "math": math, "_f64": np.float64, "_f32": np.float32, "_i64": np.int64,
           "_u64": np.uint64, "_i32": np.int32, "_bool": np.bool_, "_INF": math.inf,
           "_NAN": math.nan}
    exec(compile(ast.fix_missing_locations(mod), "<absorbed fold>", "exec"), env)
    return njit(env["fold"])


@pytest.mark.parametrize("case", [c for c in CASES if not c[1].is_bool], ids=_case_id)
def test_absorbed_folds_follow_the_rule(case):
    op, t = case
    vals, F0 = _slots(t)
    for has_ids in (True, False):
        ids = _ids(op, t) if has_ids else np.arange(len(IDS))
        # without ids the slots are stored in fold order: entry j is slot j
        slot_vals = vals if has_ids else vals[IDS]
        want = _rule_gather(op, F0, ids if has_ids else IDS, vals, t)
        fold = _absorbing_fold(op, t, has_ids, 2)
        F = F0.copy()
        for row in range(len(F)):
            fold(F, OFF, ids if has_ids else None, slot_vals, row)
        assert _same(F, want)


def test_op_codes_are_the_rule_operators():
    assert list(host_folds.OPS) == list(semantics.FOLD_OPS)
    assert all(host_folds.OP_NAMES[code] == op for op, code in host_folds.OPS.items())
