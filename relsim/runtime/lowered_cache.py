"""The lowered-module cache: a kernel's generated source and parameter list, kept on disk and
keyed by a fingerprint of everything its lowering reads, so a warm start skips lowering and
unparsing (about half a second of a LULESH start).

The fingerprint (`fingerprint`) is a walk over the analysed kernel's typed IR, its locals'
types and its reduction and insert layouts (every node, type and constant, with the sharing of
nodes between them), the relations, fields, Globals and groupings they reach (by schema: names,
types, key targets, grid shape; never data), the variant (target, fast math) and the stamp of
relsim's own source files. Anything the walk does not know makes the kernel uncacheable (it is
lowered as before), so a new kind of node cannot be fingerprinted by halves.

An entry holds the generated source and each parameter with its data-model object as an index
into the walk's table of objects (and a layout as its index in the analysed kernel), resolved
against the kernel being compiled: the same fingerprint walks the same objects in the same
order. Entries are written atomically; a damaged or foreign entry is lowered again, never
trusted.
"""
from __future__ import annotations

import dataclasses
import hashlib
import marshal
import sys
from pathlib import Path

import numpy as np

from ..relations.field import Field, KeyField
from ..relations.globals import Global
from ..relations.grouping import Grouping
from ..relations.relation import Relation
from . import cache
from .lowering import params as _params

FORMAT = "1"
_PARAM_CLASSES = {c.__name__: c for c in vars(_params).values()
                  if isinstance(c, type) and issubclass(c, _params.Param)}
_stamp: str | None = None


class Uncacheable(Exception):
    """The analysed kernel holds something the fingerprint does not know."""


def lowered(analysed, options, variant: str, lower):
    """(source, params) of `analysed` lowered for `variant` (the backend's name and its
    options): from the cache when an entry matches, else `lower()`'s, stored for next time."""
    try:
        walk = _Walk()
        walk.analysed(analysed)
    except Uncacheable:
        return lower()
    digest = hashlib.sha256("\0".join((FORMAT, _source_stamp(), variant,
                                       repr(walk.out))).encode()).hexdigest()[:32]
    path = Path(options.cache_path()) / "lowered" / f"{digest}.marshal"
    hit = _load(path, walk.table, analysed)
    if hit is not None:
        return hit
    source, params = lower()
    entry = _encode(source, params, walk.table, analysed)
    if entry is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        cache.write_atomic(path, marshal.dumps(entry))
    return source, params


# -- the fingerprint -----------------------------------------------------------------------
class _Walk:
    """Appends a token stream describing a value to `out`; data-model objects go to `table`
    (described once, then referred to by index), IR nodes and Locs are memoised by identity
    (a node shared by the body and a layout's site is one node)."""

    def __init__(self):
        self.out: list = []
        self.table: list = []
        self.seen: dict = {}  # id(obj) -> token referring to it
        self.keep: list = []  # memoised objects, alive while ids are compared

    def analysed(self, a) -> None:
        self.value(a.relation)
        for part in (a.kernel_name, a.param, a.body, tuple(a.locals.items()), a.layouts,
                     a.inserts, a.deletes, a.stencil):
            self.value(part)

    def value(self, v) -> None:
        out = self.out
        t = type(v)
        if v is None or t is bool or t is int or t is str:
            out.append(v)
        elif t is float:
            out.append(v.hex())  # signed zeros, NaN and every bit
        elif t is tuple or t is list:
            out.append(("(", len(v)))
            for x in v:
                self.value(x)
        else:
            ref = self.seen.get(id(v))
            if ref is not None:
                out.append(ref)
                return
            kind, names = _KINDS.get(t) or _kind(t)
            if kind is _RECORD:  # an IR node, Loc, layout, site, value type: memoised
                self.seen[id(v)] = ("@", len(self.keep))
                self.keep.append(v)
                out.append(t.__qualname__)
                for n in names:
                    self.value(getattr(v, n))
            elif kind is _MODEL:
                self.seen[id(v)] = ("#", len(self.table))
                self.keep.append(v)
                self.table.append(v)
                self.describe(v)
            elif kind is _KEY_TYPE:
                out.append(t.__qualname__)
                for n in names:
                    self.value(getattr(v, n))
            elif kind is _SCALAR:
                out.append(("np", v.dtype.str, v.tobytes()))
            else:
                out.append(("nd", v.dtype.str, v.shape, v.tobytes()))

    def describe(self, v) -> None:
        """A data-model object by its schema: what lowering may read of it, never its data."""
        if isinstance(v, Relation):
            g = v.grid
            self.out.append(("Relation", v.name, v.elastic, None if g is None else
                             (g.shape, g.periodic, g.strides)))
        elif isinstance(v, KeyField):
            self.out.append(("KeyField", v.name, repr(v.type), v.arity))
            self.value(v.relation)
            self.value(v.target)
        elif isinstance(v, Field):
            self.out.append(("Field", v.name, repr(v.type), v.is_key))
            self.value(v.relation)
        elif isinstance(v, Global):
            self.out.append(("Global", repr(v.type)))
        else:
            self.out.append(("Grouping", v.name))
            self.value(v.key_field)
            self.value(v.target)


_RECORD, _MODEL, _KEY_TYPE, _SCALAR, _ARRAY = "record", "model", "key type", "scalar", "array"
_KINDS: dict = {}  # type -> (kind, attribute names)


def _kind(t) -> tuple:
    """How the walk describes values of type `t` (decided once per type)."""
    if issubclass(t, (Relation, Field, Global, Grouping)):
        kind = (_MODEL, ())
    elif dataclasses.is_dataclass(t):
        kind = (_RECORD, tuple(f.name for f in dataclasses.fields(t)))
    elif t.__module__ == "relsim.types" and hasattr(t, "__slots__"):
        kind = (_KEY_TYPE, tuple(t.__slots__))
    elif issubclass(t, np.generic):
        kind = (_SCALAR, ())
    elif t is np.ndarray:
        kind = (_ARRAY, ())
    else:
        raise Uncacheable(t.__qualname__)
    _KINDS[t] = kind
    return kind


def _source_stamp() -> str:
    """relsim's own source files (path, size, modification time): generated code depends on the
    version of the code that lowered it."""
    global _stamp
    if _stamp is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256(f"{sys.version_info[:2]}".encode())
        for p in sorted(root.rglob("*.py")):
            st = p.stat()
            h.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _stamp = h.hexdigest()[:16]
    return _stamp


# -- entries -------------------------------------------------------------------------------
def _encode(source, params, table, analysed):
    """The entry (plain values only) for `source` and `params`, or None when a parameter
    refers to an object outside the table."""
    index = {id(o): i for i, o in enumerate(table)}
    items = []
    for p in params:
        fields = []
        for n in _param_fields(type(p)):
            v = getattr(p, n)
            if type(v) in (int, str) or v is None:
                fields.append((n, "v", v))
            elif id(v) in index:
                fields.append((n, "o", index[id(v)]))
            elif any(v is lay for lay in analysed.layouts):
                fields.append((n, "l", [i for i, x in enumerate(analysed.layouts) if x is v][0]))
            elif any(v is lay for lay in analysed.inserts):
                fields.append((n, "i", [i for i, x in enumerate(analysed.inserts) if x is v][0]))
            else:
                return None
        items.append((type(p).__name__, tuple(fields)))
    return (FORMAT, source, tuple(items))


def _load(path: Path, table, analysed):
    try:
        entry = marshal.loads(path.read_bytes())
        fmt, source, items = entry
        if fmt != FORMAT or type(source) is not str:
            return None
        params = []
        for cls_name, fields in items:
            binds = {}
            for n, kind, v in fields:
                binds[n] = v if kind == "v" else table[v] if kind == "o" else \
                    analysed.layouts[v] if kind == "l" else analysed.inserts[v]
            params.append(_PARAM_CLASSES[cls_name](**binds))
        return source, params
    except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError):
        return None


def _param_fields(cls) -> tuple:
    return tuple(f.name for f in dataclasses.fields(cls))
