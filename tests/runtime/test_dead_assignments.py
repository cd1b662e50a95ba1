"""`lowering.dead_assignments.drop`: a row body's top-level assignments whose locals nothing
reads are dropped, again until none is left (a dead load's index goes too), when their values
are pure; a local read anywhere in the body (in a branch, a loop, before its assignment), kept
by the caller, or assigned by a call keeps its statement."""
import ast

from relsim.runtime.lowering.dead_assignments import drop

BODY = """
i = _u64(r)
v0 = F[i, 0]
v1 = F[i, 1]
v2 = F[i, 2]
j = _u64(r + 1)
w = F[j, 0] * 2.0
s = v0 + v1
t = step(s)
u = s * 3.0
if s > 0.0:
    out[0] = v2
n = later
later = 1.0
kept = s
out[1] = s
"""


def _assigned(body) -> set:
    return {s.targets[0].id for s in body if isinstance(s, ast.Assign) and
            isinstance(s.targets[0], ast.Name)}


def test_unread_pure_assignments_go_until_none_is_left():
    body = ast.parse(BODY).body
    after = drop(body, keep=frozenset({"kept"}))
    assigned = _assigned(after)
    # j: read only by w's load; later: only by n, before it
    assert not {"w", "j", "u", "n", "later"} & assigned
    assert {"i", "v0", "v1", "v2", "s", "t", "kept"} <= assigned
    assert ast.unparse(ast.Module(body, [])) == ast.unparse(ast.parse(BODY))  # not changed
    scope = {"F": {(k, c): 10.0 * k + c for k in range(3) for c in range(3)}, "r": 1, "later": 0.0,
             "out": [None, None], "_u64": int, "step": lambda s: s}
    before = dict(scope, out=[None, None])
    exec(ast.unparse(ast.Module(body, [])), before)
    exec(ast.unparse(ast.Module(after, [])), scope)
    assert scope["out"] == before["out"]


def test_a_local_read_only_before_its_assignment_is_kept():
    after = drop(ast.parse("out[0] = acc\nacc = x + 1.0\n").body)
    assert _assigned(after) == {"acc"}
