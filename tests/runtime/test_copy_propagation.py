"""`lowering.copy_propagation.propagate`: a row body's top-level copies and float or bool
constants, of locals assigned once, are read where they are used (generated adjoints name every
intermediate: the implicit fem's tangent adjoint 6,066 -> 3,905 assignments), with the same
values; a local read before its assignment, assigned again (in a branch, a loop, by +=), an
integer constant, or a copy of a name stored afterwards keeps its statement."""
import ast

from relsim.runtime.lowering.copy_propagation import propagate

BODY = """
x = a
z = 0.0
flag = True
n = 3
y = x * 2.0 + z
w = b
b = b + 1.0
c2 = c
c = c + y
acc = 0.0
for j in range(n):
    acc = acc + y * j
if flag:
    out[0] = y + w + acc + c2
else:
    out[0] = -1.0
k = x
u = k
v = u
out[1] = v + c
"""


def _run(body, a):
    scope = {"a": a, "b": 0.5, "c": 10.0, "out": [None, None]}
    exec(ast.unparse(ast.Module(body, [])), scope)  # (generated code is unparsed too)
    return scope["out"], scope["b"], scope["c"]


def _assigned(body) -> set:
    return {s.targets[0].id for s in body if isinstance(s, ast.Assign) and
            isinstance(s.targets[0], ast.Name)}


def test_copies_and_constants_are_read_where_used_with_the_same_values():
    body = ast.parse(BODY).body
    after = propagate(body)
    for a in (0.25, -3.0):
        assert _run(after, a) == _run(body, a)
    assigned = _assigned(after)
    # dropped: copies of names never stored later (a; x, k, u: chains), float and bool constants
    assert not {"x", "z", "flag", "k", "u", "v"} & assigned
    assert "out[1] = a + c" in ast.unparse(ast.Module(after, []))
    # kept: a copy of a name stored afterwards (b, c), an integer, a local assigned again
    assert {"w", "c2", "n", "acc", "y"} <= assigned
    assert ast.unparse(ast.Module(body, [])) == ast.unparse(ast.parse(BODY))  # not changed


def test_a_local_read_before_its_assignment_or_kept_is_not_dropped():
    body = ast.parse("out[0] = t\nt = a\nout[1] = t\nq = a\nout[2] = q\n").body
    after = propagate(body, keep=frozenset({"q"}))
    assert _assigned(after) == {"t", "q"}
    scope = {"a": 2.0, "t": 1.0, "out": [None] * 3}
    exec(ast.unparse(ast.Module(after, [])), scope)
    assert scope["out"] == [1.0, 2.0, 2.0]


def test_copies_inside_loops_and_branches_go_unless_used_outside_or_carried():
    src = """
acc = 0.0
last = 0.0
for g in range(3):
    r = vals[g]
    G = r
    carried = acc
    acc = carried + G
    last = G
    seen = r
    if G > 1.0:
        big = G
        out[g] = big
out[3] = acc + last + seen
"""
    body = ast.parse(src).body
    after = propagate(body)
    loop = next(s for s in after if isinstance(s, ast.For))
    inner = _assigned(loop.body)
    assert "G" not in inner  # a copy read only after it, in the same iteration
    assert "carried" in inner  # a copy of acc, which the loop stores afterwards
    assert {"r", "acc", "last", "seen"} <= inner  # used after the loop: kept
    branch = next(s for s in loop.body if isinstance(s, ast.If))
    assert "big" not in _assigned(branch.body)
    for vals in ([0.5, 2.0, 3.0], [4.0, -1.0, 0.25]):
        want, got = {"vals": vals, "out": [None] * 4}, {"vals": vals, "out": [None] * 4}
        exec(src, want)
        exec(ast.unparse(ast.Module(after, [])), got)
        assert got["out"] == want["out"]
