"""`lowering.load_reuse.reuse`: a load a row body's straight-line code made already reads the
local the first one stored (a vector field named component by component loads it whole each
time), with the same values; a store into the array, a store to the index's names or to the
local, a call, a branch or a loop in between make the load again; a store is never forwarded."""
import ast

import numpy as np

from relsim.runtime.lowering.load_reuse import reuse

BODY = """
a0 = F[_u64(r), 0]
a1 = F[_u64(r), 1]
b0 = F[_u64(r), 0]
c = a0 + b0
g0 = G[_u64(r)]
G[_u64(r)] = c
g1 = G[_u64(r)]
f2 = F[_u64(r), 0]
r = r + 1
f3 = F[_u64(r), 0]
f4 = F[_u64(r), 0]
k = f4
h0 = H[_u64(k)]
h1 = H[_u64(f3)]
bump(F)
f5 = F[_u64(r), 0]
out[0] = a1 + c + g0 + g1 + f2 + f3 + f4 + h0 + h1 + f5
"""


def _run(body):
    F = np.arange(12.0).reshape(4, 3)
    scope = {"F": F, "G": np.array([0.5, 1.5, 2.5, 3.5]), "H": np.arange(10.0) * 3,
             "r": 1, "out": [None], "_u64": np.uint64, "bump": lambda a: a.__iadd__(100.0)}
    exec(ast.unparse(ast.Module(body, [])), scope)
    return scope["out"][0], scope["G"].tolist()


def _copies(body) -> dict:
    return {s.targets[0].id: s.value.id for s in body if isinstance(s, ast.Assign) and
            isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Name)}


def test_repeated_loads_read_the_first_local_with_the_same_values():
    body = ast.parse(BODY).body
    after = reuse(body)
    assert _run(after) == _run(body)
    copies = _copies(after)
    assert copies["b0"] == "a0"   # F[r, 0] again: the first load's local
    assert copies["f2"] == "a0"   # a store into G does not change F
    assert copies["f4"] == "f3"   # after r changed, F[r, 0] is loaded again once
    assert copies["h1"] == "h0"   # H[k] and H[f3]: k copies f4, which copies f3
    assert "g1" not in copies     # G was stored in between (never forwarded)
    assert "f3" not in copies     # r was stored in between
    assert "f5" not in copies     # a call may change anything
    assert ast.unparse(ast.Module(body, [])) == ast.unparse(ast.parse(BODY))  # not changed


def test_branches_loops_and_overwritten_locals_make_the_load_again():
    src = """
x = F[i]
if c:
    F[i] = 7.0
y = F[i]
x = 2.0
z = F[i]
for j in range(2):
    w = 1.0
v = F[i]
q = F[i]
"""
    # y: loaded again after the branch; z: y's (x, overwritten, held it before); v: after the loop
    assert _copies(reuse(ast.parse(src).body)) == {"z": "y", "q": "v"}


def test_subscript_stores_through_tuples_and_augmented_stores_forget_the_array():
    src = "x = F[i]\nF[i] += 1.0\ny = F[i]\nz = G[j]\nG[j], w = (1.0, 2.0)\nu = G[j]\n"
    assert _copies(reuse(ast.parse(src).body)) == {}


def test_a_load_indexed_by_its_own_local_is_made_again():
    src = "x = F[x]\nx = F[x]\ny = F[i]\nz = F[i]\ni = 0\nw = F[i]\n"
    body = ast.parse(src).body
    assert _copies(reuse(body)) == {"z": "y"}
    scope = {"F": list(range(10, 0, -1)), "x": 3, "i": 1}
    before, after = dict(scope), dict(scope)
    exec(src, before)
    exec(ast.unparse(ast.Module(reuse(body), [])), after)
    assert {k: before[k] for k in "xyzw"} == {k: after[k] for k in "xyzw"}


COMPUTED = """
s = p0 + h0
t = h0 + p0
m = a * b
n = b * a
d = a - b
e = b - a
z = x * 0.0
w = x * -0.0
c = F[i] + 1.0
F[i] = 5.0
c2 = F[i] + 1.0
s2 = p0 + h0
p0 = 2.0
s3 = p0 + h0
acc = 0.0
for g in range(3):
    k = g + 5
    q = g + 5
    u = k * 2.0
    acc = acc + u + q
out[0] = (s, t, m, n, d, e, z, w, c, c2, s2, s3, acc)
"""


def test_repeated_arithmetic_reads_the_first_local_also_in_a_loop():
    body = ast.parse(COMPUTED).body
    after = reuse(body)
    copies = _copies(after)
    assert copies["t"] == "s" and copies["n"] == "m"  # a + b and b + a: the same bits
    assert copies["s2"] == "s"  # a store into F does not change p0 + h0
    assert not {"e", "w", "c2", "s3"} & set(copies)  # b - a; -0.0 not 0.0; F, p0 stored
    loop = next(s for s in after if isinstance(s, ast.For))
    assert _copies(loop.body) == {"q": "k"}  # the loop's own block, on its own
    scope = {"p0": 1.5, "h0": 0.25, "a": 3.0, "b": -0.5, "x": -2.0, "i": 1}
    want, got = (dict(scope, F=[1.0, 2.0], out=[None]) for _ in range(2))
    exec(COMPUTED, want)
    exec(ast.unparse(ast.Module(after, [])), got)
    assert repr(got["out"][0]) == repr(want["out"][0])  # (repr: -0.0 and 0.0 told apart)
    assert repr(want["out"][0][7]) == "0.0" and repr(want["out"][0][6]) == "-0.0"


def test_choices_and_compares_match_through_copies():
    src = """
a = G[i]
w = a if 0 <= a < n else a % n
b = G[i]
m = n
v = b if 0 <= b < m else b % m
c = b < m and a > 0
d = a < n and b > 0
out[0] = (w, v, c, d)
"""
    body = ast.parse(src).body
    after = reuse(body)
    copies = _copies(after)
    assert copies["b"] == "a" and copies["v"] == "w" and copies["d"] == "c"
    for g in ([7, 3], [2, -4]):
        want, got = {"G": g, "i": 0, "n": 5, "out": [None]}, {"G": g, "i": 0, "n": 5, "out": [None]}
        exec(src, want)
        exec(ast.unparse(ast.Module(after, [])), got)
        assert got["out"] == want["out"]
