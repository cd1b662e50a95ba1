"""Random kernels and random data for the differential soak (`relsim.testing.soak`).

Everything here is a deterministic function of a seed (`random.Random` for programs, a NumPy
`Generator` for data), so a mismatch is reproduced from two numbers: the program seed and the
data index. Hypothesis is not needed (it is only a test extra).

A *program* is a fixed schema (relations ``V`` and ``E`` with the fields in `V_FIELDS` /
`E_FIELDS`, the Globals in `GLOBALS`), random relation sizes, a generated kernel module (one to
three kernels: edge kernels that read through key chains and reduce into vertex fields and
Globals, and vertex kernels that read reduced fields at their own key, loop over a grouping and
write), two subsets, and a *schedule*: launches over whole relations or subsets, interleaved with
host reads and writes of Globals and host reads of fields, and control steps
(`random_control`: Global arithmetic, loops and branches on Globals around launches). Data sets
only change values: sizes, subsets and the schedule are fixed per program, so its compiled
kernels are reused.

(Past 500 lines on purpose: one grammar, whose expression, statement and schedule rules refer to
each other and to the schema above; split, each part would need the others to be read.)
"""
from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field

import numpy as np

from . import random_control

# -- the schema ----------------------------------------------------------------------------
# value types: "f64" "f32" "i64" "i32" "bool" "v3" (vec(3, f64))
#: fields of V: name -> (type, role); reduced fields carry their reduction operator
V_FIELDS = {
    "a": ("f64", "in"), "b": ("f64", "in"), "c": ("f32", "in"), "i": ("i64", "in"),
    "j": ("i32", "in"), "p": ("v3", "in"),
    "acc": ("f64", "+"), "acc32": ("f32", "+"), "iacc": ("i64", "+"), "pacc": ("v3", "+"),
    "mx": ("f64", "max"), "mn": ("f32", "min"), "imn": ("i64", "min"), "prd": ("f64", "*"),
    "flag": ("bool", "or"),
    "vout": ("f64", "out"), "vo32": ("f32", "out"), "voi": ("i64", "out"),
}
#: fields of E
E_FIELDS = {
    "w": ("f64", "in"), "wf": ("f32", "in"), "n": ("i32", "in"), "m": ("i64", "in"),
    "out": ("f64", "out"), "o32": ("f32", "out"), "oi": ("i64", "out"), "oi32": ("i32", "out"),
    "ov": ("v3", "out"), "eacc": ("f64", "out"),
}
#: key fields: (relation, name) -> (target, arity or None)
KEY_FIELDS = {("E", "head"): ("V", None), ("E", "tail"): ("V", None), ("E", "vs"): ("V", 3),
              ("V", "nb"): ("V", None)}
#: Globals: name -> (type, reduction operator or None for read-only)
GLOBALS = {
    "g_in": ("f64", None), "g32": ("f32", None), "gi": ("i64", None),
    "total": ("f64", "+"), "tot32": ("f32", "+"), "itot": ("i64", "+"), "lo": ("f64", "min"),
    "hi": ("f64", "max"), "amin": ("f64", "argmin"), "amax": ("f64", "argmax"),
    "prod": ("i64", "*"), "anyneg": ("bool", "or"), "allpos": ("bool", "and"),
    "vsum": ("v3", "+"), "imx": ("i32", "max"),
}
REDUCIBLE_V = [n for n, (_, role) in V_FIELDS.items() if role not in ("in", "out")]
REDUCIBLE_G = [n for n, (_, op) in GLOBALS.items() if op is not None]
GROUPING = "ein"  # E.group_by("head", "ein"): v.ein loops over the edges whose head is v
# the spaces a launch inside a control step takes, per relation (the whole one more often)
CONTROL_SPACES = {"V": ("V", "V", "V.vsub"), "E": ("E", "E", "E.esub")}


@dataclass
class Program:
    """One random program: kernel module source, sizes, subsets and schedule."""
    seed: int
    nv: int
    ne: int
    source: str  # the kernel module (defines make(<globals>) -> {name: kernel})
    kernels: dict  # kernel name -> relation it runs over ("V" or "E")
    schedule: list  # steps: ("launch", kernel, space) | ("read", g) | ("set", g, src) |
    #                        ("reset", g) | ("peek", "R.f")   (space: "V" "E" "V.vsub" "E.esub")
    #                        | the control steps of `random_control`
    vsub: np.ndarray  # rows of subset V.vsub
    esub: np.ndarray  # rows of subset E.esub
    exposed: list = field(default_factory=list)  # "R.f": numpy() handed out once at build
    grouping: bool = False

    def describe(self) -> str:
        lines = [f"program seed {self.seed}: |V| = {self.nv}, |E| = {self.ne}, "
                 f"|V.vsub| = {len(self.vsub)}, |E.esub| = {len(self.esub)}"
                 + (f", exposed {', '.join(self.exposed)}" if self.exposed else "")]
        for i, step in enumerate(self.schedule):
            lines.append(f"  step {i}: {format_step(step)}")
        return "\n".join(lines)


def format_step(step) -> str:
    kind = step[0]
    if kind in random_control.KINDS:
        return random_control.format_step(step, format_step)
    if kind == "launch":
        return f"{step[2]}.foreach({step[1]})"
    if kind == "read":
        return f"read {step[1]}.value"
    if kind == "set":
        return f"{step[1]}.value = f({step[2]}.value)"
    if kind == "reset":
        return f"{step[1]}.value = <initial>"
    return f"read {step[1]}.numpy(copy=True)"


# -- expressions ---------------------------------------------------------------------------
F64_LIT = ["0.5", "-1.25", "3.0", "1e-3", "2.0", "0.0", "-0.0", "1e300", "7.5"]
F32_LIT = ["0.5", "-1.5", "2.0", "0.25", "0.0"]
INT_LIT = ["3", "-2", "0", "1", "7"]


class ExprGen:
    """Typed random expressions over a pool of leaves (strings) per type."""

    def __init__(self, rng: random.Random, leaves: dict, max_depth: int = 3):
        self.r = rng
        self.leaves = {t: list(v) for t, v in leaves.items()}
        self.max_depth = max_depth

    def add(self, t: str, leaf: str) -> None:
        self.leaves.setdefault(t, []).append(leaf)

    def _leaf(self, t: str, lits) -> str:
        pool = self.leaves.get(t, [])
        if pool and self.r.random() < 0.8:
            return self.r.choice(pool)
        return self.r.choice(lits)

    def _stop(self, d: int) -> bool:
        return d >= self.max_depth or self.r.random() < 0.25 + 0.15 * d

    def of(self, t: str, d: int = 0) -> str:
        return {"f64": self.f64, "f32": self.f32, "i64": self.i64, "i32": self.i32,
                "bool": self.cond, "v3": self.v3}[t](d)

    def f64(self, d: int = 0) -> str:
        r = self.r
        if self._stop(d):
            k = r.randrange(10)
            if k == 0:
                return f"float({self.i64(d + 1)})"
            if k == 1:
                return f"float({self.f32(d + 1)})"
            if k == 2 and self.leaves.get("v3"):
                return f"{r.choice(self.leaves['v3'])}[{r.randrange(3)}]"
            return self._leaf("f64", F64_LIT)
        a, b = self.f64(d + 1), self.f64(d + 1)
        forms = [f"({a} + {b})", f"({a} - {b})", f"({a} * {b})", f"({a} / {b})", f"(-{a})",
                 f"math.sqrt(abs({a}))", f"min({a}, {b})", f"max({a}, {b}, 0.25)",
                 f"({a} if {self.cond(d + 1)} else {b})", f"math.exp(min({a}, 3.0))",
                 f"math.sin({a})", f"np.cos({a})", f"math.atan2({a}, {b})",
                 f"math.hypot({a}, {b})", f"math.log1p(abs({a}))", f"math.tanh({a})",
                 f"math.floor({a})", f"np.ceil({a})", f"math.copysign({a}, {b})",
                 f"({a} ** 2)", f"({a} ** 3)", f"pow(abs({a}), 1.5)", f"abs({a})",
                 f"math.log(abs({a}) + 0.5)", f"math.cbrt({a})", f"np.trunc({a})",
                 f"rs.f64({self.f32(d + 1)})"]
        if self.leaves.get("v3"):
            u, v = self.v3(d + 1), self.v3(d + 1)
            forms += [f"rs.dot({u}, {v})", f"rs.norm({u})"]
        return r.choice(forms)

    def f32(self, d: int = 0) -> str:
        r = self.r
        if self._stop(d):
            if r.random() < 0.1:
                return f"rs.f32({self._leaf('f64', F64_LIT)})"
            return self._leaf("f32", F32_LIT) if self.leaves.get("f32") else \
                f"rs.f32({self._leaf('f64', F64_LIT)})"
        a, b = self.f32(d + 1), self.f32(d + 1)
        forms = [f"({a} * {b})", f"({a} + 0.5 * {b})", f"math.sin({a})", f"({a} - {b})",
                 f"abs({a})", f"({a} / {b})", f"min({a}, {b})", f"max({a}, {b})",
                 f"math.sqrt(abs({a}))", f"({a} if {self.cond(d + 1)} else {b})",
                 f"math.exp(min({a}, 2.0))", f"rs.f32({self.f64(d + 1)})", f"(-{a})",
                 f"math.floor({a})", f"math.atan2({a}, {b})"]
        return r.choice(forms)

    def _int(self, t: str, d: int) -> str:
        r = self.r
        if self._stop(d):
            if t == "i64" and r.random() < 0.12 and self.leaves.get("f64"):
                # a guarded float -> int conversion (outside i64 range it is undefined); a
                # run-time operand so no constant is folded
                x = f"({r.choice(self.leaves['f64'])} + {self.f64(d + 1)})"
                return f"(int({x}) if abs({x}) < 1e6 else -7)"
            if t == "i64" and r.random() < 0.3 and self.leaves.get("i32"):
                return r.choice(self.leaves["i32"])
            return self._leaf(t, INT_LIT)
        a, b = self._int(t, d + 1), self._int(t, d + 1)
        forms = [f"({a} + {b})", f"({a} * {b})", f"({a} // 3)", f"({a} % 5)", f"max({a}, {b})",
                 f"({a} - {b})", f"min({a}, {b})", f"abs({a})", f"(-{a})", f"({a} & 7)",
                 f"({a} ^ {b})", f"({a} | 2)", f"({a} if {self.cond(d + 1)} else {b})"]
        if t == "i32":
            forms.append(f"rs.i32({self.i64(d + 1)})")
        return r.choice(forms)

    def i64(self, d: int = 0) -> str:
        return self._int("i64", d)

    def i32(self, d: int = 0) -> str:
        return self._int("i32", d)

    def cond(self, d: int = 0) -> str:
        r = self.r
        k = r.randrange(12)
        if k == 0 and self.leaves.get("bool"):
            return r.choice(self.leaves["bool"])
        if k == 1 and d < self.max_depth:
            return f"({self.cond(d + 1)} and {self.cond(d + 1)})"
        if k == 2 and d < self.max_depth:
            return f"({self.cond(d + 1)} or not {self.cond(d + 1)})"
        if k == 3:
            return f"math.isnan({self.f64(d + 1)})"
        if k == 4:
            return f"math.isfinite({self.f64(d + 1)})"
        if k == 5:
            return f"({self.i64(d + 1)} % 2 == 0)"
        if k == 6:
            return f"({self.f32(d + 1)} < {self.f32(d + 1)})"
        op = r.choice(["<", "<=", ">", ">=", "!=", "=="])
        return f"({self.f64(d + 1)} {op} {self.f64(d + 1)})"

    def v3(self, d: int = 0) -> str:
        r = self.r
        pool = self.leaves.get("v3", [])
        if self._stop(d) or not pool:
            if pool and r.random() < 0.7:
                return r.choice(pool)
            return f"({self.f64(d + 2)}, {self.f64(d + 2)}, {r.choice(F64_LIT)})"
        u, v = self.v3(d + 1), self.v3(d + 1)
        return r.choice([f"({u} + {v})", f"({u} - {v})", f"({u} * {self.f64(d + 1)})",
                         f"rs.cross({u}, {v})", f"(-{u})", f"({u} * 0.5)"])


# -- statements ----------------------------------------------------------------------------
def _key_paths(r: random.Random) -> str:
    return r.choice(["e.head", "e.tail", "e.head", "e.tail", "e.vs[0]", "e.vs[2]", "e.head.nb"])


def _reduce_stmt(r: random.Random, g: ExprGen, target: str, typ: str, op: str) -> str:
    """One reduction of `op` into `target` (a key path + field, or a Global)."""
    if op == "+":
        if typ == "v3":
            if "." in target and r.random() < 0.4:  # a component of a field (not a Global)
                return f"{target}[{r.randrange(3)}] {r.choice(['+=', '-='])} {g.f64(1)}"
            return f"{target} += {g.v3(1)}"
        val = g.of(typ, 1) if typ != "f32" or r.random() < 0.7 else g.f64(1)
        return f"{target} {r.choice(['+=', '-='])} {val}"
    if op == "*":
        return f"{target} *= {g.of(typ, 1)}"
    if op in ("min", "max"):
        val = g.of(typ, 1)
        if r.random() < 0.5:
            return f"rs.reduce_{op}({target}, {val})"
        return f"{target} = {op}({target}, {val})"
    if op in ("argmin", "argmax"):
        return f"rs.reduce_{op}({target}, {g.of(typ, 1)})"
    if op == "or":
        return f"{target} |= {g.cond(1)}"
    if op == "and":
        return f"{target} &= {g.cond(1)}"
    raise ValueError(op)


def _indent(lines, n=1) -> list:
    return ["    " * n + ln for ln in lines]


def _wrap_branches(r: random.Random, g: ExprGen, stmts: list) -> list:
    """Lay statements (each a list of lines) out, some of them inside if/elif/else blocks."""
    out, i = [], 0
    while i < len(stmts):
        k = r.random()
        if k < 0.3 and i + 1 <= len(stmts):
            n = r.randint(1, min(3, len(stmts) - i))
            chunk = stmts[i:i + n]
            split = r.randint(0, n)
            then = [ln for s in chunk[:split] for ln in s] or ["pass"]
            other = [ln for s in chunk[split:] for ln in s]
            out.append(f"if {g.cond(1)}:")
            out += _indent(then)
            if other:
                if r.random() < 0.3:
                    out.append(f"elif {g.cond(1)}:")
                    out += _indent(other)
                    out.append("else:")
                    out += _indent(["pass"] if r.random() < 0.5 else other)
                else:
                    out.append("else:")
                    out += _indent(other)
            i += n
        else:
            out += stmts[i]
            i += 1
    return out


def _pick_some(r: random.Random, items, lo: int, hi: int) -> list:
    items = list(items)
    return r.sample(items, min(len(items), r.randint(lo, hi)))


def _edge_kernel(r: random.Random, name: str, helpers: list) -> tuple[str, list]:
    """A kernel over E: reads through key chains, reduces into V fields through keys and into
    Globals, writes its own row. Returns (source, V fields reduced)."""
    red_v = _pick_some(r, REDUCIBLE_V, 1, 4)
    red_g = _pick_some(r, REDUCIBLE_G, 0, 3)
    read_v = [f for f in V_FIELDS if f not in red_v]
    leaves: dict = {}
    for f in read_v:
        typ = V_FIELDS[f][0]
        for kp in ("e.head", "e.tail"):
            if r.random() < 0.5:
                leaves.setdefault(typ, []).append(f"{kp}.{f}")
        if r.random() < 0.2:
            leaves.setdefault(typ, []).append(f"{r.choice(['e.vs[1]', 'e.head.nb'])}.{f}")
    for f, (typ, _) in E_FIELDS.items():
        if r.random() < 0.6:
            leaves.setdefault(typ, []).append(f"e.{f}")
    for gname, (typ, _) in GLOBALS.items():
        if gname not in red_g and r.random() < 0.3:
            leaves.setdefault(typ, []).append(gname)
    leaves.setdefault("f64", []).append("e.w")
    g = ExprGen(r, leaves)

    pre, stmts = [], []
    for k in range(r.randint(1, 3)):  # locals
        typ = r.choice(["f64", "f64", "f64", "f32", "i64", "v3"])
        pre.append(f"x{k} = {g.of(typ)}")
        g.add(typ, f"x{k}")
    pre += _helper_calls(r, g, helpers, "hx")
    if r.random() < 0.35:  # a loop over a key vector, reading through its keys
        f = r.choice([f for f in read_v if V_FIELDS[f][0] in ("f64", "f32", "i64", "i32")])
        pre += ["s = 0.0", "for k in e.vs:", f"    s += float(k.{f}) * 0.5"]
        g.add("f64", "s")
    if r.random() < 0.15:  # a while loop with a run-time trip count (no reductions inside)
        pre += ["t = 0", "u = 0.0", "while t < (e.n % 4):", f"    u += {g.f64(1)} * float(t)",
                "    t += 1"]
        g.add("f64", "u")

    for f in red_v:
        typ, op = V_FIELDS[f]
        for _ in range(r.randint(1, 2)):
            stmts.append([_reduce_stmt(r, g, f"{_key_paths(r)}.{f}", typ, op)])
    for gname in red_g:
        typ, op = GLOBALS[gname]
        stmts.append([_reduce_stmt(r, g, gname, typ, op)])
    for f in _pick_some(r, [f for f, (_, role) in E_FIELDS.items() if role == "out"], 1, 3):
        typ = E_FIELDS[f][0]
        if f == "eacc" and r.random() < 0.5:
            stmts.append([f"e.eacc += {g.f64(1)}"])  # a centred reduction: any mix is fine
        elif typ == "f32" and r.random() < 0.5:
            stmts.append([f"e.{f} = {g.f64(1)}"])  # narrowing on assignment
        else:
            stmts.append([f"e.{f} = {g.of(typ, 1)}"])
    if r.random() < 0.2:
        stmts.append([f"e.w = e.w * 0.5 + {g.f64(1)}"])
    r.shuffle(stmts)

    if r.random() < 0.4:  # reductions in a loop with a compile-time trip count
        body = []
        if r.random() < 0.3:
            body += [f"if {g.cond(2)}:", "    " + r.choice(["break", "continue"])]
        ring = [f for f in red_v if V_FIELDS[f][1] in ("+", "min", "max")]
        if ring:
            f = r.choice(ring)
            typ, op = V_FIELDS[f]
            body.append(_reduce_stmt(r, g, f"e.vs[i].{f}", typ, op))
        else:
            body.append(f"e.eacc += {g.f64(2)} * float(i)")
        stmts.insert(r.randrange(len(stmts) + 1), ["for i in range(3):"] + _indent(body))
    lines = pre + _wrap_branches(r, g, stmts)
    if r.random() < 0.15:  # an early return outside loops
        at = len(pre)
        lines[at:at] = [f"if {g.cond(1)}:", "    return"]
    return _kernel_src(name, "e", lines), red_v


_TO_F64 = {"f64": "{}", "f32": "float({})", "i64": "float({})", "i32": "float({})",
           "v3": "rs.norm({})", "bool": "(1.0 if {} else -1.0)"}
_ZERO = {"f64": "0.0", "f32": "0.0", "i64": "0", "i32": "0", "v3": "(0.0, 0.0, 0.0)",
         "bool": "False"}


def _vertex_kernel(r: random.Random, name: str, helpers: list, grouping: bool,
                   reduced: list) -> str:
    """A kernel over V: reads fields an edge kernel reduced into at its own key (absorbing
    their pending folds), loops over the grouping v.ein, writes and resets its own row,
    reduces into Globals."""
    red_g = _pick_some(r, REDUCIBLE_G, 0, 2)
    writable = ["vout", "vo32", "voi", "a", "acc", "pacc", "mx", "mn", "flag", "iacc"]
    written = _pick_some(r, writable, 1, 4)
    consumed = _pick_some(r, reduced, 1, 2) if r.random() < 0.8 else []
    reset = [f for f in consumed if r.random() < 0.5]
    written += [f for f in reset + (["vout"] if consumed else []) if f not in written]
    through = [f for f in V_FIELDS if f not in written and f not in consumed]
    leaves: dict = {}
    for f, (typ, _) in V_FIELDS.items():
        if r.random() < 0.6 or f in ("acc", "mx"):
            leaves.setdefault(typ, []).append(f"v.{f}")
    for f in through:
        if r.random() < 0.15:
            leaves.setdefault(V_FIELDS[f][0], []).append(f"v.nb.{f}")
    for gname, (typ, _) in GLOBALS.items():
        if gname not in red_g and r.random() < 0.4:
            leaves.setdefault(typ, []).append(gname)
    g = ExprGen(r, leaves)
    pre = []
    for k in range(r.randint(0, 2)):
        typ = r.choice(["f64", "f64", "f32", "i64"])
        pre.append(f"y{k} = {g.of(typ)}")
        g.add(typ, f"y{k}")
    pre += _helper_calls(r, g, helpers, "hy")
    for k, f in enumerate(consumed):  # read at its own key: pending folds are absorbed
        val = _TO_F64[V_FIELDS[f][0]].format(f"v.{f}")
        pre.append(f"c{k} = {val} * 0.5 + {g.f64(2)}")
        g.add("f64", f"c{k}")
    if grouping:
        eleaves = {"f64": ["e.w", "e.out", "e.eacc"], "f32": ["e.wf", "e.o32"],
                   "i32": ["e.n"], "i64": ["e.m", "e.oi"], "v3": ["e.ov"]}
        for f in through:
            if r.random() < 0.3:
                eleaves.setdefault(V_FIELDS[f][0], []).append(f"e.tail.{f}")
        ge = ExprGen(r, {t: leaves.get(t, []) + eleaves.get(t, []) for t in
                         set(leaves) | set(eleaves)})
        loop = []
        if r.random() < 0.3:
            loop += [f"if {ge.cond(2)}:", "    " + r.choice(["continue", "break"])]
        loop += [f"sg = sg + {ge.f64(1)}", "cnt += 1"]
        pre += ["sg = 0.0", "cnt = 0", f"for e in v.{GROUPING}:"] + _indent(loop)
        g.add("f64", "sg")
        g.add("i64", "cnt")
    stmts = []
    for f in written:
        typ, role = V_FIELDS[f]
        if role == "+" and r.random() < 0.5:
            stmts.append([f"v.{f} += {g.of(typ, 1)}"])  # centred: read, write, reduce mix
        elif typ == "f32" and r.random() < 0.5:
            stmts.append([f"v.{f} = {g.f64(1)}"])
        else:
            stmts.append([f"v.{f} = {g.of(typ, 1)}"])
    for gname in red_g:
        typ, op = GLOBALS[gname]
        stmts.append([_reduce_stmt(r, g, gname, typ, op)])
    if consumed:
        stmts.append([f"v.vout = {' + '.join(f'c{k}' for k in range(len(consumed)))}"])
    r.shuffle(stmts)
    lines = pre + _wrap_branches(r, g, stmts)
    lines += [f"v.{f} = {_ZERO[V_FIELDS[f][0]]}" for f in reset]  # consumed: start again
    return _kernel_src(name, "v", lines)


def _kernel_src(name: str, param: str, lines: list) -> str:
    return f"@rs.kernel\ndef {name}({param}):\n" + "\n".join(_indent(lines)) + "\n"


def _helper_calls(r: random.Random, g: ExprGen, helpers: list, prefix: str) -> list:
    """Locals defined by @rs.func calls (f64 or f32 arguments: the helper is specialised)."""
    out = []
    for k, h in enumerate(helpers):
        typ = r.choice(["f64", "f64", "f32"])
        out.append(f"{prefix}{k} = {h}({g.of(typ, 1)}, {g.of(typ, 1)})")
        g.add(typ, f"{prefix}{k}")
    return out


def _helper(r: random.Random, name: str) -> str:
    # only operations that keep the argument type (helpers are specialised per call site)
    body = r.choice(["x * 0.5 + y", "min(x, y) - x", "abs(x - y) * 2.0",
                     "(x if x > y else y * 0.25)", "math.sqrt(abs(x)) + y", "max(y, x, 1.0)"])
    return f"@rs.func\ndef {name}(x, y):\n    return {body}\n"


def program(seed: int, min_rows: int = 20, max_rows: int = 300) -> Program:
    """The random program for `seed`."""
    r = random.Random(seed)
    nv = r.randint(min_rows, max_rows)
    ne = r.randint(min_rows, max_rows)
    helpers = [f"h{k}" for k in range(r.choice([0, 0, 1, 2]))]
    parts = [_helper(r, h) for h in helpers]
    kernels = {}
    grouping = r.random() < 0.6
    src, reduced = _edge_kernel(r, "scatter", helpers)
    parts.append(src)
    kernels["scatter"] = "E"
    if r.random() < 0.75:
        parts.append(_vertex_kernel(r, "gather", helpers, grouping, reduced))
        kernels["gather"] = "V"
    else:
        grouping = False
    if r.random() < 0.4:
        src, _ = _edge_kernel(r, "scatter2", helpers)
        parts.append(src)
        kernels["scatter2"] = "E"
    gnames = list(GLOBALS)
    body = "\n".join(textwrap.indent(p, "    ") for p in parts)
    ret = ", ".join(f"{k!r}: {k}" for k in kernels)
    source = ("import math\n\nimport numpy as np\n\nimport relsim as rs\n\n\n"
              f"def make({', '.join(gnames)}):\n{body}\n    return {{{ret}}}\n")

    def space(k):
        rel = kernels[k]
        if r.random() < 0.3:
            return f"{rel}.{'vsub' if rel == 'V' else 'esub'}"
        return rel

    schedule = [("launch", "scatter", space("scatter"))]
    schedule.append(r.choice([("read", r.choice(REDUCIBLE_G)), ("set", "g_in", "total"),
                              ("set", "gi", "itot"), ("set", "g32", "tot32")]))
    schedule.append(("launch", "scatter", "E"))
    if "gather" in kernels and r.random() < 0.6:  # consume what the scatter left pending
        schedule.append(("launch", "gather", "V"))
    for _ in range(r.randint(1, 5)):
        k = r.random()
        if k < 0.15:
            schedule.append(("read", r.choice(REDUCIBLE_G)))
        elif k < 0.25:
            schedule.append(("set", "g_in", r.choice(["total", "lo", "hi", "amin", "prod"])))
        elif k < 0.3:
            schedule.append(("reset", r.choice(REDUCIBLE_G)))
        elif k < 0.38:
            schedule.append(("peek", "V." + r.choice(REDUCIBLE_V)))
        schedule.append(("launch", (name := r.choice(list(kernels))), space(name)))
    tail = schedule[4:]
    r.shuffle(tail)  # host steps may also come first among the later launches
    schedule[4:] = tail

    def rows(n):
        k = r.random()
        if k < 0.08:
            return np.zeros(0, dtype=np.int64)
        if k < 0.16:
            return np.arange(n, dtype=np.int64)
        frac = r.uniform(0.1, 0.9)
        return np.array(sorted(r.sample(range(n), max(1, int(n * frac)))), dtype=np.int64)

    vsub, esub = rows(nv), rows(ne)
    exposed = [f"V.{f}" for f in REDUCIBLE_V if r.random() < 0.08]
    schedule = random_control.with_control(seed, schedule, kernels, CONTROL_SPACES)
    return Program(seed, nv, ne, source, kernels, schedule, vsub, esub, exposed, grouping)


# -- data ------------------------------------------------------------------------------------
@dataclass
class Data:
    """Values for one case: fields "R.f" -> array, keys "R.k" -> rows, Globals name -> value."""
    index: int
    fields: dict
    keys: dict
    globals: dict


def _floats(rng: np.random.Generator, shape, dtype, specials: bool) -> np.ndarray:
    n = int(np.prod(shape))
    kind = rng.integers(0, 4)
    if kind == 0:
        x = rng.normal(size=n)
    elif kind == 1:
        x = rng.uniform(-3, 3, n)
    elif kind == 2:
        x = rng.normal(size=n) * 10.0 ** rng.integers(-5, 6, n)
    else:
        x = rng.integers(-4, 5, n).astype(np.float64) * 0.5  # many exact ties and zeros
    x[rng.random(n) < 0.08] = 0.0
    x[rng.random(n) < 0.03] = -0.0
    if specials:
        pick = rng.random(n)
        x[pick < 0.02] = np.inf
        x[(pick >= 0.02) & (pick < 0.04)] = -np.inf
        x[(pick >= 0.04) & (pick < 0.06)] = np.nan
    return x.astype(dtype).reshape(shape)


_DTYPES = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "i32": np.int32,
           "bool": np.bool_, "v3": np.float64}


def random_values(rng: np.random.Generator, typ: str, n: int, specials: bool):
    shape = (n, 3) if typ == "v3" else (n,)
    if typ in ("f64", "v3"):
        return _floats(rng, shape, np.float64, specials)
    if typ == "f32":
        return _floats(rng, shape, np.float32, specials and rng.random() < 0.5)
    if typ == "bool":
        return rng.random(n) < 0.5
    lim = int(rng.choice([3, 10, 100, 1000]))
    return rng.integers(-lim, lim + 1, n).astype(_DTYPES[typ])


def data(prog: Program, index: int) -> Data:
    """The data of case `index` of program `prog`."""
    rng = np.random.default_rng([prog.seed, index])
    specials = rng.random() < 0.35  # some cases put inf / -inf / nan into f64 inputs
    sizes = {"V": prog.nv, "E": prog.ne}
    fields = {}
    for rel, table in (("V", V_FIELDS), ("E", E_FIELDS)):
        for f, (typ, role) in table.items():
            fields[f"{rel}.{f}"] = random_values(rng, typ, sizes[rel],
                                                 specials and role == "in")
    keys = {}
    for (rel, name), (target, arity) in KEY_FIELDS.items():
        n, nt = sizes[rel], sizes[target]
        hot = rng.random() < 0.25  # contention: many rows point at a few targets
        high = int(rng.integers(1, min(nt, 5) + 1)) if hot else nt
        shape = (n,) if arity is None else (n, arity)
        keys[f"{rel}.{name}"] = rng.integers(0, high, shape).astype(np.int64)
    globals_ = {}
    for gname, (typ, _) in GLOBALS.items():
        v = random_values(rng, typ, 1, specials and typ == "f64" and rng.random() < 0.3)
        globals_[gname] = v[0]
    return Data(index, fields, keys, globals_)
