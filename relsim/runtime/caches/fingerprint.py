"""Fingerprints of analysed kernels, for the caches that let a warm start skip work: a walk
that turns a value into a token stream, with every node, type and constant, the sharing of
nodes, and data-model objects (relations, fields, Globals, groupings) by their schema, never
their data. The objects met go to `table`, in the order met: two walks that give the same
tokens met corresponding objects in the same order, so a cache entry can name an object by
its place there. A value of a kind the walk does not know raises `Uncacheable`, so a new kind
of node cannot be fingerprinted by halves.

`analysis_cache` keys on the frontend's IR with the schema of every relation the kernel can
reach; `lowered_cache` on the analysed kernel (or on the analysis key when the analysis came
from the cache).
"""
from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path

import numpy as np

from ...relations.field import Field
from ...relations.globals import Global
from ...relations.grouping import Grouping
from ...relations.key_field import KeyField
from ...relations.relation import Relation
from ...types import ScalarType
from ..ir import Loc

_stamp: str | None = None


class Uncacheable(Exception):
    """The value holds something the fingerprint does not know."""


def digest(*parts: str) -> str:
    """A cache file name for `parts` (with relsim's source stamp)."""
    return hashlib.sha256("\0".join((source_stamp(),) + parts).encode()).hexdigest()[:32]


class Walk:
    """Appends a token stream describing a value to `out`; data-model objects go to `table`
    (described once, then referred to by index), IR nodes and Locs are memoised by identity
    (a node shared by the body and a layout's site is one node)."""

    def __init__(self):
        self.out: list = []
        self.table: list = []
        self.seen: dict = {}  # id(obj) -> token referring to it
        self.keep: list = []  # memoised objects, alive while ids are compared
        self.schemas: set = set()  # ids of the relations whose schema is described

    def analysed(self, a) -> None:
        """What lowering reads of an analysed kernel."""
        self.value(a.relation)
        for part in (a.kernel_name, a.param, a.body, tuple(a.locals.items()), a.layouts,
                     a.inserts, a.deletes, a.stencil, a.generated):
            self.value(part)

    def schema(self, *relations) -> None:
        """The schema of `relations` and of every relation reachable from them through key
        fields and groupings: each one's fields and groupings, in order (what the type checker
        may look up by name). Relations described already are not described again."""
        todo = list(relations)
        while todo:
            r = todo.pop(0)
            if id(r) in self.schemas:
                continue
            self.schemas.add(id(r))
            self.value(r)
            fields, groupings = tuple(r.fields.values()), tuple(r.groupings.values())
            self.value(fields)
            self.value(groupings)
            todo.extend(f.target for f in fields if isinstance(f, KeyField))
            todo.extend(g.source for g in groupings)

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
            if kind is _FLAT:  # a Loc, a scalar type: plain values only, memoised
                self.seen[id(v)] = ("@", len(self.keep))
                self.keep.append(v)
                out.append((t.__qualname__,) + tuple([getattr(v, n) for n in names]))
            elif kind is _RECORD:  # an IR node, layout, site, value type: memoised
                self.seen[id(v)] = ("@", len(self.keep))
                self.keep.append(v)
                out.append(t.__qualname__)
                for n in names:
                    x = getattr(v, n)
                    tx = type(x)
                    if x is None or tx is str or tx is int or tx is bool:  # as `value` would
                        out.append(x)
                    else:
                        self.value(x)
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
            # a grid by its axes' count and kinds: its shape is bound per launch
            self.out.append(("Relation", v.name, v.elastic, None if g is None else
                             (len(g.shape), g.periodic)))
        elif isinstance(v, KeyField):
            self.out.append(("KeyField", v.name, repr(v.type), v.arity))
            self.value(v.relation)
            self.value(v.target)
        elif isinstance(v, Field):
            self.out.append(("Field", v.name, repr(v.type), v.is_key))
            self.value(v.relation)
        elif isinstance(v, Global):  # (how it sums: an exact sum's lowering has lanes)
            self.out.append(("Global", repr(v.type), v.sum))
        else:
            self.out.append(("Grouping", v.name))
            self.value(v.key_field)
            self.value(v.target)


_FLAT, _RECORD, _MODEL, _KEY_TYPE, _SCALAR, _ARRAY = \
    "flat record", "record", "model", "key type", "scalar", "array"
# records whose fields are only strings and ints (the most frequent: one in one token)
_FLAT_TYPES = (Loc, ScalarType)
_KINDS: dict = {}  # type -> (kind, attribute names)


def _kind(t) -> tuple:
    """How the walk describes values of type `t` (decided once per type)."""
    if issubclass(t, (Relation, Field, Global, Grouping)):
        kind = (_MODEL, ())
    elif t in _FLAT_TYPES:
        kind = (_FLAT, tuple(f.name for f in dataclasses.fields(t)))
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


def source_stamp() -> str:
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
