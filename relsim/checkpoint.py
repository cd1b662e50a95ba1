"""Checkpoint and restart: the state of relations and Globals in one HDF5 file, in global row
order, so that a file written on N ranks (or on any target) restarts on M ranks or on one
process, and the run continues with the same bits as if never interrupted.

* `checkpoint(path, relations, globals=None, meta=None)`: every field of the relations (key
  fields too, to recognise the mesh on restart), the Globals (value and arg row), and `meta`
  (JSON values: a cycle count, the time). On several ranks every rank must call it: the values
  are gathered on every rank (collective) and rank 0 writes. The file is never half-written: it
  is written to a temporary file beside `path`, flushed to disk, then renamed over `path`; a
  SHA-256 of every dataset is stored with it.
* `restart(path, relations, globals=None) -> meta`: checks the whole file first (readable, the
  format, the checksum, the same relations with the same sizes, fields, types and keys, the same
  Globals) and raises a DataError naming what does not match, changing nothing; then loads it.
* `interval(cost_s, mttf_s)`: Young's and Daly's first-order optimum time between checkpoints,
  sqrt(2 * cost * MTTF), and the fraction of time expected to be lost with it.

Elastic relations (whose size changes) are not supported yet: a DataError says so.
"""
from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np

from .errors import DataError
from .relations.globals import Global
from .relations.relation import Relation
from .runtime.parallel import world as _world

FORMAT = "relsim-checkpoint"
VERSION = 1


def checkpoint(path, relations, globals=None, meta=None) -> None:
    """Write the state of `relations` (Relations, or one), `globals` ({name: Global}) and `meta`
    (a dict of JSON values) to the HDF5 file `path`, atomically (see the module docstring)."""
    where = os.fspath(path)
    rels = _relations(relations, where)
    globs = _globals(globals, where)
    try:
        meta_text = json.dumps(meta or {})
    except TypeError as exc:
        raise DataError(f"checkpoint {where}: meta must hold JSON values ({exc})") from None
    arrays, layout = {}, {}
    for R in rels:  # on every rank: gathering the values is collective
        layout[R.name] = {"size": R.size, "fields": {}}
        for f in R.fields.values():
            a = np.ascontiguousarray(f.numpy(copy=True))
            arrays[f"relations/{R.name}/{f.name}"] = a
            layout[R.name]["fields"][f.name] = _describe(f, a)
    for name, g in globs.items():
        arrays[f"globals/{name}/value"] = np.ascontiguousarray(g.data.copy())
        arrays[f"globals/{name}/row"] = np.array([g.row], dtype=np.int64)
    w = _world.current()
    error = None
    if w is None or w.rank == 0:
        try:
            _write(where, arrays, {"format": FORMAT, "version": VERSION,
                                   "layout": json.dumps(layout), "meta": meta_text,
                                   "globals": json.dumps(sorted(globs)),
                                   "sha256": _digest(arrays)})
        except OSError as exc:
            error = f"checkpoint {where}: cannot write it: {exc}"
    if w is not None:
        error = w.comm.bcast(error, root=0)  # every rank fails alike, or none
    if error:
        raise DataError(error)


def restart(path, relations, globals=None) -> dict:
    """Load the state `checkpoint` wrote to `path` into `relations` and `globals` (the same
    names, sizes, fields, types and keys); returns its `meta`. Nothing changes unless the whole
    file checks out."""
    where = os.fspath(path)
    rels = _relations(relations, where)
    globs = _globals(globals, where)
    attrs, arrays = _read(where)
    if attrs.get("format") != FORMAT or attrs.get("version") != VERSION:
        raise DataError(f"restart {where}: not a relsim checkpoint (format "
                        f"{attrs.get('format')!r}, version {attrs.get('version')!r})")
    if attrs.get("sha256") != _digest(arrays):
        raise DataError(f"restart {where}: the checksum does not match: the file is corrupt")
    layout = json.loads(attrs["layout"])
    _check_layout(where, rels, layout, arrays)
    saved_globals = json.loads(attrs["globals"])
    if sorted(globs) != saved_globals:
        raise DataError(f"restart {where}: it holds the Globals {saved_globals}, but "
                        f"{sorted(globs)} were given")
    for name, g in globs.items():
        v = arrays[f"globals/{name}/value"]
        if v.dtype != g.data.dtype or v.shape != g.data.shape:
            raise DataError(f"restart {where}: Global {name!r} was saved as {v.dtype} "
                            f"{v.shape[1:]}, but is {g.data.dtype} {g.data.shape[1:]} now")
    for R in rels:  # everything checked: load
        for f in R.fields.values():
            if not f.is_key:
                f.load(arrays[f"relations/{R.name}/{f.name}"])
    for name, g in globs.items():
        v = arrays[f"globals/{name}/value"][0]
        g.value = v if v.ndim else v.item()
        g._row_data[0] = int(arrays[f"globals/{name}/row"][0])
    return json.loads(attrs["meta"])


def interval(cost_s: float, mttf_s: float) -> tuple:
    """(seconds between checkpoints, expected fraction of time lost): Young's first-order
    optimum sqrt(2 C M) for checkpoint cost C and mean time to failure M (Daly's refinement
    subtracts C), and the loss C / tau + (tau + C) / (2 M): time writing checkpoints plus, per
    failure, half an interval of work redone."""
    if cost_s <= 0 or mttf_s <= 0:
        raise DataError(f"checkpoint interval: cost and MTTF must be positive, got {cost_s} s "
                        f"and {mttf_s} s")
    tau = max(math.sqrt(2.0 * cost_s * mttf_s) - cost_s, cost_s)
    return tau, cost_s / tau + (tau + cost_s) / (2.0 * mttf_s)


# -- helpers ----------------------------------------------------------------------------------
def _relations(relations, where) -> list:
    rels = [relations] if isinstance(relations, Relation) else list(relations)
    for R in rels:
        if not isinstance(R, Relation):
            raise DataError(f"checkpoint {where}: relations must be Relations, got {R!r}")
        if R.elastic:
            raise DataError(f"checkpoint {where}: {R.name} is elastic; checkpoints of elastic "
                            f"relations are not supported yet")
    names = [R.name for R in rels]
    if len(set(names)) != len(names):
        raise DataError(f"checkpoint {where}: relation names must differ, got {names}")
    return rels


def _globals(globs, where) -> dict:
    out = dict(globs or {})
    for name, g in out.items():
        if not isinstance(g, Global) or not isinstance(name, str) or "/" in name:
            raise DataError(f"checkpoint {where}: globals must map names to Globals, got "
                            f"{name!r}: {g!r}")
    return out


def _describe(f, a) -> dict:
    return {"dtype": a.dtype.str, "shape": list(a.shape[1:]), "key": bool(f.is_key)}


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = arrays[name]
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _write(where, arrays, attrs) -> None:
    import h5py
    directory = os.path.dirname(os.path.abspath(where))
    tmp = os.path.join(directory, f".{os.path.basename(where)}.{os.getpid()}.tmp")
    try:
        with h5py.File(tmp, "w") as h:
            for k, v in attrs.items():
                h.attrs[k] = v
            for name, a in arrays.items():
                h.create_dataset(name, data=a)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, where)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read(where):
    import h5py
    if not os.path.exists(where):
        raise DataError(f"restart {where}: no such file")
    try:
        with h5py.File(where, "r") as h:
            attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in h.attrs.items()}
            arrays = {}
            h.visititems(lambda name, obj: arrays.__setitem__(name, obj[()])
                         if isinstance(obj, h5py.Dataset) else None)
    except (OSError, KeyError, ValueError) as exc:
        raise DataError(f"restart {where}: not a readable HDF5 file (truncated or corrupt?): "
                        f"{exc}") from None
    for k in ("layout", "meta", "globals", "sha256"):
        if k not in attrs:
            raise DataError(f"restart {where}: not a relsim checkpoint (no {k!r})")
    return attrs, arrays


def _check_layout(where, rels, layout, arrays) -> None:
    names = [R.name for R in rels]
    if sorted(layout) != sorted(names):
        raise DataError(f"restart {where}: it holds the relations {sorted(layout)}, but "
                        f"{sorted(names)} were given")
    for R in rels:
        saved = layout[R.name]
        if saved["size"] != R.size:
            raise DataError(f"restart {where}: {R.name} had {saved['size']} rows, it has "
                            f"{R.size} now")
        if sorted(saved["fields"]) != sorted(R.fields):
            raise DataError(f"restart {where}: {R.name} had the fields "
                            f"{sorted(saved['fields'])}, it has {sorted(R.fields)} now")
        for f in R.fields.values():
            a = arrays[f"relations/{R.name}/{f.name}"]
            want = {"dtype": f._stored().dtype.str, "shape": list(f.type.shape),
                    "key": bool(f.is_key)}
            if saved["fields"][f.name] != want or a.shape[0] != R.size:
                raise DataError(f"restart {where}: field {f.qualname} was "
                                f"{saved['fields'][f.name]}, it is {want} now")
            if f.is_key and not np.array_equal(a, f.numpy(copy=True)):
                raise DataError(f"restart {where}: the keys of {f.qualname} differ from the "
                                f"saved ones: not the same mesh")
