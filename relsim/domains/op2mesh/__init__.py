"""OP2 Airfoil meshes: the ASCII file format and the NACA0012 generator (pure NumPy)."""

from .naca import (
    STANDARD_SHA256,
    airfoil_curve,
    naca_mesh,
    naca_sizes,
    not_a_knot_spline,
)
from .reader import (
    INDEX_DTYPE,
    MeshFormatError,
    Op2Mesh,
    format_op2,
    read_op2,
    round_f6,
    write_op2,
)

__all__ = [
    "INDEX_DTYPE",
    "STANDARD_SHA256",
    "MeshFormatError",
    "Op2Mesh",
    "airfoil_curve",
    "format_op2",
    "naca_mesh",
    "naca_sizes",
    "not_a_knot_spline",
    "read_op2",
    "round_f6",
    "write_op2",
]
