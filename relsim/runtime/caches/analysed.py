"""The analysis cache: what the type checker and the access, phase, slot and stencil passes
make of a kernel, kept on disk and keyed by what they read, so a warm start runs only the
frontend (which resolves the kernel's names and captures, and must see the program as it is
now).

The key is the fingerprint (`fingerprint.Walk`) of the frontend's IR (and, for a fused
kernel, of each part's) and of the schema of every relation the kernel can reach through key
fields and groupings or names itself (`rs.insert`), with relsim's source stamp. The passes are
functions of these: they read no field data and no sizes (a launch checks its space against
the sizes, `affine.check_launch_space`). An entry is the pickled result, with every relation,
field, Global and grouping in it replaced by its place in the key's table of objects, resolved
against the kernel being analysed; pickling one that is not in the table, or anything else the
cache does not know, stores nothing. A kernel whose analysis fails stores nothing (the next
run reports its error again). Entries are written atomically; a damaged, foreign or
mis-shaped entry is analysed again, never trusted.
"""
from __future__ import annotations

import io
import pickle
from pathlib import Path

from ...relations.field import Field
from ...relations.globals import Global
from ...relations.grouping import Grouping
from ...relations.relation import Relation
from . import damaged, fingerprint, modules

FORMAT = "1"
_MODEL = (Relation, Field, Global, Grouping)
# where the classes of an entry may come from (anything else: the entry is refused)
_MODULES = ("relsim.", "numpy")


class Key:
    """The fingerprint of one kernel's analysis inputs: `name` (the cache file's) and `table`
    (the data-model objects met, in order), or None when the inputs cannot be described."""

    def __init__(self, name, relation, param, untyped, parts_bodies, cache_dir):
        self.name, self.table, self.path = None, None, None
        try:
            walk = fingerprint.Walk()
            walk.schema(relation)
            walk.value((name, param, untyped, parts_bodies))
            # relations the kernel names itself (rs.insert's): their schemas too
            walk.schema(*[o for o in walk.table if isinstance(o, Relation)])
        except fingerprint.Uncacheable:
            return
        self.table = walk.table
        self.name = fingerprint.digest(FORMAT, repr(walk.out))
        self.path = Path(cache_dir) / "analysed" / f"{self.name}.pickle"

    def load(self):
        """The cached analysis (as `store` was given it; the caller checks its shape), or
        None."""
        if self.path is None:
            return None
        try:
            data = self.path.read_bytes()
        except OSError:
            return None
        try:
            entry = _Unpickler(io.BytesIO(data), self.table).load()
        except Exception as exc:  # noqa: BLE001 - damaged or foreign: dropped, analysed again
            damaged.drop(self.path, f"{type(exc).__name__}: {exc}")
            return None
        if type(entry) is not tuple or len(entry) != 2 or entry[0] != FORMAT:
            return None
        return entry[1]

    def store(self, result: tuple) -> None:
        if self.path is None:
            return
        buf = io.BytesIO()
        try:
            _Pickler(buf, {id(o): i for i, o in enumerate(self.table)}).dump((FORMAT, result))
        except (fingerprint.Uncacheable, pickle.PicklingError, TypeError, AttributeError):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            modules.write_atomic(self.path, buf.getvalue())
        except OSError as exc:
            damaged.unwritable(self.path.parent, exc)


class _Pickler(pickle.Pickler):
    def __init__(self, file, index):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.index = index

    def persistent_id(self, obj):
        i = self.index.get(id(obj))
        if i is None and isinstance(obj, _MODEL):  # never a copy of live program data
            raise fingerprint.Uncacheable(f"{type(obj).__name__} outside the key")
        return i


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, table):
        super().__init__(file)
        self.table = table

    def persistent_load(self, pid):
        return self.table[pid]

    def find_class(self, module, name):
        if not module.startswith(_MODULES):
            raise pickle.UnpicklingError(f"{module}.{name} is not part of an analysis")
        return super().find_class(module, name)
