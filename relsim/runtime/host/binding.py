"""What every compiled backend's binding needs of the generated function's parameters
(`lowering/params.py`), whatever memory it binds them to: the relations whose storage a launch
depends on, and a reduction's slot array filled with its operator's identity."""
from __future__ import annotations

import numpy as np

from ...types import elem_of
from ..analysis.slots import identity
from ..lowering import FieldStorage, GridShape, GroupOffsets, GroupRows, RelationSize


def relations_of(analysed, params) -> tuple:
    """The relations a launch of `analysed` with parameters `params` must re-bind for when
    their storage changes: the launched one, every field's relation, both ends of every
    grouping, every relation whose size or grid shape is bound."""
    rels = {id(analysed.relation): analysed.relation}
    for p in params:
        match p:
            case FieldStorage(field=f):
                rels[id(f.relation)] = f.relation
            case GroupOffsets(grouping=g) | GroupRows(grouping=g):
                rels[id(g.source)] = g.source
                rels[id(g.target)] = g.target
            case RelationSize(relation=r) | GridShape(relation=r):
                rels[id(r)] = r
    return tuple(rels.values())


def slot_array(layout, n: int, per_row: int | None = None) -> np.ndarray:
    """Host slots of reduction `layout` for `n` rows (`per_row` each; default: the values it
    stores per row), every slot the operator's exact identity (folding it changes nothing)."""
    t = layout.target.type
    et = elem_of(t)
    arr = np.empty((n * (per_row or layout.stored_per_row), t.ncomp), dtype=et.dtype)
    arr.fill(identity(layout.op, et))
    return arr
