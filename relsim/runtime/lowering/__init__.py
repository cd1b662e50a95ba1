"""Lowering of typed kernels to Python `ast`.

Shared by every compiled target: `expr.py` (expressions, scalarised locals), `body.py` (the
statements of one row, reduction and insert slot writes, and the seam a target's driver
supplies), `params.py` (the arrays a generated function receives, as typed records).
`pending_folds.py` (a row's pending folds, absorbed before its body). Each backend's driver lives in
its room: `backends/cpu/loops.py` (row loops, `targets_<k>`, absorbed folds, grid loops),
`backends/cuda/rows.py` (grid-stride kernels, gathers).
"""
from .body import BodyLowerer
from .params import (
    DebugFirst,
    DebugValues,
    DeleteFlags,
    FieldStorage,
    GlobalStorage,
    GridShape,
    GroupOffsets,
    GroupRows,
    InsertFlags,
    InsertValues,
    Param,
    Params,
    PrintFlags,
    PrintValues,
    ReductionSlots,
    RelationSize,
    SlotPlaces,
)

__all__ = ["BodyLowerer", "DebugFirst", "DebugValues", "DeleteFlags",
           "FieldStorage", "GlobalStorage", "GridShape", "GroupOffsets", "GroupRows", "InsertFlags",
           "InsertValues", "Param", "Params", "PrintFlags", "PrintValues", "ReductionSlots",
           "RelationSize", "SlotPlaces"]
