"""OP2 Airfoil meshes: the ASCII file format, the NACA0012 generator (pure NumPy), and the
relations built from them (`mesh_relations`, `load`, `naca`).

This is also the worked example of a mesh domain plugin. A domain is any importable module that
builds relations with the public API (``import relsim as rs``); `relations.py` is all the relsim
glue this one needs. relsim finds bundled domains by name (``relsim.domains.get("op2mesh")``);
a third-party package registers the same way through an entry point::

    [project.entry-points."relsim.domains"]
    mymesh = "mypackage.mymesh"

The file format and generator do not need relsim (the hand-written benchmark in ``bench/``
imports them on their own), so the relations are imported only when relsim is importable.
"""

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

try:
    import relsim as _rs  # noqa: F401
except ImportError:  # pragma: no cover - standalone use of the format and generator
    pass
else:
    from .relations import Op2Relations, load, mesh_relations, naca

    __all__ += ["Op2Relations", "load", "mesh_relations", "naca"]
