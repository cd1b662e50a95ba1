"""Lowering of typed kernels to Python `ast`.

Shared by every compiled target: `expr.py` (expressions, scalarised locals), `body.py` (the
statements of one row, reduction and insert slot writes, and the seam a target's driver
supplies), `params.py` (the arrays a generated function receives, as typed records).
The CPU's driver: `cpu_loops.py` (row loops, `targets_<k>`, absorbed folds), with
`pending_folds.py`; the CUDA driver: `cuda_rows.py` (grid-stride kernels, gathers), with
`cuda_libm.py`.
"""
from .body import BodyLowerer
from .cpu_loops import CpuLowerer
from .params import (
    DebugFirst,
    DebugValues,
    DeleteFlags,
    FieldStorage,
    GlobalStorage,
    GroupOffsets,
    GroupRows,
    InsertFlags,
    InsertValues,
    Param,
    Params,
    ReductionSlots,
    RelationSize,
    SlotPlaces,
)

__all__ = ["BodyLowerer", "CpuLowerer", "DebugFirst", "DebugValues", "DeleteFlags",
           "FieldStorage", "GlobalStorage", "GroupOffsets", "GroupRows", "InsertFlags",
           "InsertValues", "Param", "Params", "ReductionSlots", "RelationSize", "SlotPlaces"]
