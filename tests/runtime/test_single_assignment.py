"""`lowering.single_assignment.rename`: a row body's locals assigned again at its top level get
one name per assignment (Numba's SSA reconstruction costs about their number times the
function's size: the implicit fem energy's tangent adjoint compiled in 28 s, 15.7 s renamed),
with the same values; locals assigned in a branch or an inner loop, or read before their first
assignment, keep their names."""
import ast
from collections import Counter

from relsim.runtime.lowering.single_assignment import rename

BODY = """
d = 0.0
d = a * 2.0
e = d + 1.0
if a > 0.5:
    f = d * 3.0
else:
    f = -d
d = e + f
c = c + d
s = 0.0
for j in range(3):
    s = s + d * j
g = 1.0
if a > 0.0:
    g = 2.0
out[0] = d + s + g + c
"""


def _run(body, a):
    scope = {"a": a, "c": 10.0, "out": [None]}
    exec(ast.unparse(ast.Module(body, [])), scope)  # (generated code is unparsed too)
    return scope["out"][0], scope["c"]


def _stores(body) -> Counter:
    return Counter(n.id for s in body for n in ast.walk(s)
                   if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))


def test_reassigned_locals_get_one_name_each_with_the_same_values():
    body = ast.parse(BODY).body
    text = ast.unparse(ast.Module(body, []))
    renamed = rename(body)
    assert ast.unparse(ast.Module(body, [])) == text  # the original is left alone
    for a in (0.25, 0.75, -1.0):
        assert _run(renamed, a) == _run(body, a)
    stores = _stores(renamed)
    assert stores["d"] == stores["d__2"] == stores["d__3"] == 1
    # in a branch or a loop (f, s, g), or read before assigned (c): kept
    assert stores["s"] == 2 and stores["g"] == 2 and stores["c"] == 1 and stores["f"] == 2


def test_names_used_elsewhere_are_kept():
    body = ast.parse(BODY).body
    assert _stores(rename(body, frozenset({"d"})))["d"] == 3
