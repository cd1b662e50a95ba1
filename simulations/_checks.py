"""What every simulation checks before it reports a pass: no NaN and no infinity in its result
(a NaN compares false with every tolerance, so "drift > tol" alone lets it through)."""
from __future__ import annotations

import numpy as np


def nonfinite(**arrays) -> list:
    """One message per named array that holds a NaN or an infinity: how many values, and the
    first row holding one (arrays are indexed by row along their first axis)."""
    out = []
    for name, values in arrays.items():
        a = np.asarray(values)
        bad = ~np.isfinite(a)
        if not bad.any():
            continue
        first = int(np.flatnonzero(bad.reshape(len(a), -1).any(axis=1))[0]) if a.ndim else 0
        out.append(f"{name}: {int(bad.sum())} NaN or infinite value(s), the first at row {first}")
    return out


def ranks_note() -> str:
    """", on N MPI ranks" when the run is distributed (for the report's target line)."""
    import relsim as rs
    n = rs.ranks().size
    return f", on {n} MPI ranks" if n > 1 else ""
