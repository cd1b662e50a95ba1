"""Where a kernel's text and names come from: its parsed source (positions mapped back to the
user's file) and the scopes its names resolve in (`Frontend` turns them into IR)."""
from __future__ import annotations

import ast
import builtins as _py_builtins
import inspect
import linecache
import textwrap
from dataclasses import dataclass

from ...errors import KernelNameError, KernelSyntaxError
from ...relations.globals import Global
from .. import ir
from ..builtin_table import MATH


@dataclass
class Source:
    """A parsed Python function and how to map its AST positions back to the user's file."""
    fn: object
    tree: ast.FunctionDef
    filename: str
    first_line: int
    dedent: int
    lines: list

    @classmethod
    def of(cls, fn) -> Source:
        try:
            filename = inspect.getsourcefile(fn) or "<unknown>"
            found = _definition(fn, filename)
            if found is None:
                lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as exc:
            raise KernelSyntaxError(f"cannot read the source of {fn.__qualname__!r} ({exc}); "
                                    f"kernels must be defined in a file") from None
        if found is not None:  # the definition's node in its file's tree: positions as they are
            fdef, all_lines = found
            first, dedent = 1, 0
        else:  # parsed alone: positions from its first line, its indentation removed
            text = "".join(lines)
            dedented = textwrap.dedent(text)
            first_text = next((ln for ln in lines if ln.strip()), "")
            dedent = len(first_text) - len(first_text.lstrip()) - \
                (len(dedented.splitlines()[0]) - len(dedented.splitlines()[0].lstrip()))
            fdef = ast.parse(dedented).body[0]
            all_lines = linecache.getlines(filename) or lines
        if not isinstance(fdef, ast.FunctionDef):
            raise KernelSyntaxError(f"{fn.__qualname__!r} is not a plain function definition")
        return cls(fn, fdef, filename, first, dedent, all_lines)

    def loc(self, node) -> ir.Loc:
        line = self.first_line + node.lineno - 1
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        col = node.col_offset + self.dedent
        end = (node.end_col_offset + self.dedent
               if getattr(node, "end_lineno", node.lineno) == node.lineno else len(text.rstrip()))
        return ir.Loc(self.filename, line, col, max(end, col + 1), text, self.fn.__name__)


def _definition(fn, filename):
    """(the syntax tree of `fn`'s definition, its file's lines), found in its file's tree
    (parsed once per file and text; read again when the file changed, as `inspect` does),
    instead of tokenizing the file from the definition on and parsing that alone (~1 ms per
    kernel and helper); None where the tree does not say (a lambda, a file that does not
    parse)."""
    code = getattr(fn, "__code__", None)
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    if code is None or not lines:
        return None
    fdef = _definitions(filename, lines).get((code.co_firstlineno, fn.__name__))
    return None if fdef is None else (fdef, lines)


_DEFINITIONS: dict = {}  # filename -> (text, {(first line, name): definition node})


def _definitions(filename, lines) -> dict:
    text = "".join(lines)
    known = _DEFINITIONS.get(filename)
    if known is not None and known[0] == text:
        return known[1]
    found = {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    for node in _statements(tree.body) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            found[(first, node.name)] = node
    _DEFINITIONS[filename] = (text, found)
    return found


class StaticObject:
    """A compile-time Python object met while resolving a name (module, function, type...);
    `name` and `fn` when it is a name `fn` captured (watched if it becomes a constant)."""

    def __init__(self, value, loc, name=None, fn=None):
        self.value, self.loc, self.name, self.fn = value, loc, name, fn


def visible_names(fn, scope) -> dict:
    """The names `fn` sees: its module's globals, the decorator's defining scope (`scope`), and
    its closure cells."""
    env = dict(fn.__globals__)
    env.update(scope)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:
                pass
    return env


class Scope:
    """The names one kernel or inlined @rs.func body resolves: its parameter, its locals
    (renamed apart when inlined), and what it captured; anything else is a NameError."""

    def __init__(self, src, captured, param, assigned, rename="", aliases=None):
        self.src, self.captured, self.param = src, captured, param
        self.rename = rename
        self.aliases = aliases or {}  # read-only @rs.func parameter -> the caller's local
        # names assigned in the body are locals, except captured Globals (reduction targets)
        self.locals = {n for n in assigned
                       if not isinstance(captured.get(n), Global)}
        self.static: dict = {}  # variables of the enclosing rs.static loops -> their item

    def is_static(self, name) -> bool:
        """Whether `name` is a compile-time object here (not the key, a local or a parameter)."""
        if name in self.static:
            return True
        return not (name == self.param or name in self.aliases or name in self.locals)

    def lookup(self, name):
        if name in self.static:
            return self.static[name]
        if name in self.captured:
            return self.captured[name]
        return getattr(_py_builtins, name, None)

    def is_global_target(self, name) -> bool:
        return name not in self.locals and isinstance(self.captured.get(name), Global)

    def global_ref(self, name, loc):
        g = self.captured[name]
        if g.name is None:
            g.name = name
        return ir.GlobalRead(loc, g)

    def name(self, name, loc, fe):
        if name == self.param:
            return ir.Centred(loc, name)
        if name in self.static:
            return StaticObject(self.static[name], loc)
        if name in self.aliases:
            return ir.Local(loc, self.aliases[name])
        if name in self.locals:
            return ir.Local(loc, self.rename + name)
        if name in self.captured or hasattr(_py_builtins, name):
            obj = self.lookup(name)
            if isinstance(obj, Global) and obj.name is None:
                obj.name = name
            if name in self.captured:
                return StaticObject(obj, loc, name, self.src.fn)
            return StaticObject(obj, loc)
        hint = f" (a math function: import it, `from math import {name}`, or write " \
            f"`math.{name}` or `np.{name}`)" if name in MATH else ""
        raise fe.error(KernelNameError, f"name {name!r} is not defined{hint}", loc)


def assigned_names(fdef, subscripts=False) -> set:
    """Names assigned in `fdef`; with `subscripts`, also those assigned through an index
    (``p[0] = x``). Memoised on the tree (an @rs.func's is walked at each of its calls)."""
    memo = fdef.__dict__.setdefault("_relsim_assigned", {})
    names = memo.get(subscripts)
    if names is None:
        names = memo[subscripts] = frozenset(_assigned_names(fdef, subscripts))
    return set(names)


def _assigned_names(fdef, subscripts) -> set:
    names = set()
    for node in _statements(fdef.body):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            todo = list(targets)
            while todo:
                t = todo.pop()
                if isinstance(t, (ast.Tuple, ast.List)):  # a, b = ...: each target
                    todo.extend(t.elts)
                    continue
                while subscripts and isinstance(t, ast.Subscript):
                    t = t.value
                if isinstance(t, ast.Name):
                    names.add(t.id)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _statements(stmts):
    """Every statement of the block `stmts` and of the blocks nested in it (compound
    statements' bodies, branches, handlers, cases; nested definitions' bodies): what
    `ast.walk` would reach of them, without visiting every expression node."""
    todo = list(reversed(stmts))
    while todo:
        s = todo.pop()
        yield s
        nested = []
        for name in ("body", "orelse", "finalbody"):
            block = getattr(s, name, None)
            if type(block) is list:
                nested.extend(block)
        for part in [*getattr(s, "handlers", ()), *getattr(s, "cases", ())]:
            nested.extend(part.body)
        todo.extend(reversed(nested))
