"""The lowered-module cache: a kernel's generated source and parameter list, kept on disk and
keyed by a fingerprint (`fingerprint.Walk.analysed`) of everything its lowering reads, so a
warm start skips lowering and unparsing (about half a second of a LULESH start): the analysed
kernel's typed IR, its locals' types and its reduction and insert layouts, the schema of the
relations, fields, Globals and groupings they reach, the variant (target, fast math) and
relsim's own source stamp. An analysis that came from `analysis_cache` carries its key, which
determines it, and that key is used instead of walking again. A kernel the walk cannot
describe is lowered as before.

An entry holds the generated source and each parameter with its data-model object as an index
into the fingerprint's table of objects (and a layout as its index in the analysed kernel),
resolved against the kernel being compiled: the same fingerprint met the same objects in the
same order. Entries are written atomically; a damaged or foreign entry is lowered again, never
trusted.
"""
from __future__ import annotations

import dataclasses
import marshal
from pathlib import Path

from ..lowering import params as _params
from . import damaged, fingerprint, modules

FORMAT = "2"  # 2: parameters named by kind and position only
_PARAM_CLASSES = {c.__name__: c for c in vars(_params).values()
                  if isinstance(c, type) and issubclass(c, _params.Param)}


def lowered(analysed, options, variant: str, lower, debug: bool = False):
    """(source, params) of `analysed` lowered for `variant` (the backend's name and its
    options): from the cache when an entry matches, else `lower()`'s, stored for next time.
    A `debug` variant is always lowered: its lowering also records its check sites."""
    if debug:
        return lower()
    if analysed.key is not None:  # (digest, table) of the analysis that produced it
        key, table = analysed.key
        key = "analysis " + key
    else:
        try:
            walk = fingerprint.Walk()
            walk.analysed(analysed)
        except fingerprint.Uncacheable:
            return lower()
        key, table = repr(walk.out), walk.table
    name = fingerprint.digest(FORMAT, variant, key)
    path = Path(options.cache_path()) / "lowered" / f"{name}.marshal"
    hit = _load(path, table, analysed)
    if hit is not None:
        return hit
    source, params = lower()
    entry = _encode(source, params, table, analysed)
    if entry is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            modules.write_atomic(path, marshal.dumps(entry))
        except OSError as exc:
            damaged.unwritable(path.parent, exc)
    return source, params


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
            elif _position(v, analysed.layouts) is not None:
                fields.append((n, "l", _position(v, analysed.layouts)))
            elif _position(v, analysed.inserts) is not None:
                fields.append((n, "i", _position(v, analysed.inserts)))
            else:
                return None
        items.append((type(p).__name__, tuple(fields)))
    return (FORMAT, source, tuple(items))


def _load(path: Path, table, analysed):
    try:
        data = path.read_bytes()
    except OSError:  # not stored yet
        return None
    try:
        entry = marshal.loads(data)
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
    except (EOFError, ValueError, TypeError, KeyError, IndexError) as exc:
        damaged.drop(path, f"{type(exc).__name__}: {exc}")
        return None


def _position(obj, seq):
    """The index of `obj` itself (not an equal one) in `seq`, or None."""
    return next((i for i, x in enumerate(seq) if x is obj), None)


def _param_fields(cls) -> tuple:
    return tuple(f.name for f in dataclasses.fields(cls))
