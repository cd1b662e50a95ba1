"""XDMF time series whose geometry may change from step to step: a moving mesh, particles that
move, are inserted and are deleted.

One XDMF 3 file, a temporal collection with one uniform grid per step, each with its own
topology, geometry and attributes; the heavy data in one HDF5 file beside it (``<stem>.h5``).
A step whose points (or cells) are those of the step before refers to that step's datasets
instead of storing them again, so a fixed mesh is stored once, as before. The XML is rewritten
after every step, so the files are complete whenever a run stops. ParaView's XDMF readers play
it; meshio's `TimeSeriesReader` reads the first step's mesh and every step's data from it.
"""
from __future__ import annotations

import hashlib
import os
from xml.sax.saxutils import quoteattr

import numpy as np

# meshio cell type -> (XDMF topology type, nodes per element when the type needs it)
TOPOLOGY = {"vertex": ("Polyvertex", 1), "line": ("Polyline", 2), "triangle": ("Triangle", None),
            "quad": ("Quadrilateral", None), "tetra": ("Tetrahedron", None),
            "hexahedron": ("Hexahedron", None), "wedge": ("Wedge", None),
            "pyramid": ("Pyramid", None)}
NUMBERS = {"f": "Float", "i": "Int", "u": "UInt"}


class XdmfSeries:
    def __init__(self, path: str):
        import h5py
        self.path = path
        self.h5_path = os.path.splitext(path)[0] + ".h5"
        self.h5 = h5py.File(self.h5_path, "w")
        self.grids: list = []
        self.last: dict = {}  # "points" / "cells" -> (digest, the dataset's reference)

    def write(self, t: float, points, cells, cell_type: str, point_data: dict,
              cell_data: dict) -> None:
        """Append one step: points (n, 3), cells (m, k) of `cell_type`, fields per point or
        per cell (one array per name)."""
        if cell_type not in TOPOLOGY:
            raise ValueError(f"cells of type {cell_type!r} have no XDMF topology here; known: "
                             f"{', '.join(sorted(TOPOLOGY))}")
        k = len(self.grids)
        cells = np.ascontiguousarray(cells, dtype=np.int64)
        kind, per = TOPOLOGY[cell_type]
        per_attr = f' NodesPerElement="{per}"' if per is not None else ""
        lines = [f'    <Grid Name="step_{k}" GridType="Uniform">',
                 f'      <Time Value="{float(t)!r}"/>',
                 f'      <Topology TopologyType="{kind}" NumberOfElements="{len(cells)}"'
                 f'{per_attr}>',
                 "        " + self._item(self._stored("cells", k, cells), cells),
                 "      </Topology>",
                 '      <Geometry GeometryType="XYZ">',
                 "        " + self._item(self._stored("points", k, points), points),
                 "      </Geometry>"]
        for center, data in (("Node", point_data), ("Cell", cell_data)):
            for name, arr in data.items():
                arr = np.ascontiguousarray(arr)
                lines += [f"      <Attribute Name={quoteattr(name)} "
                          f'AttributeType="{_attribute_type(arr)}" Center="{center}">',
                          "        " + self._item(self._stored(None, k, arr, name), arr),
                          "      </Attribute>"]
        lines.append("    </Grid>")
        self.grids.append("\n".join(lines))
        self.h5.flush()
        self._write_xml()

    def _stored(self, reuse: str | None, k: int, arr, name: str | None = None) -> str:
        """The reference of `arr` in the HDF5 file: stored as step k's dataset, or, for points
        and cells equal to the previous step's, that step's."""
        digest = None
        if reuse is not None:
            digest = (arr.shape, str(arr.dtype), hashlib.sha256(arr.tobytes()).hexdigest())
            held = self.last.get(reuse)
            if held is not None and held[0] == digest:
                return held[1]
        dataset = f"step_{k}/{reuse or 'data/' + name}"
        self.h5.create_dataset(dataset, data=arr)
        ref = f"{os.path.basename(self.h5_path)}:/{dataset}"
        if reuse is not None:
            self.last[reuse] = (digest, ref)
        return ref

    @staticmethod
    def _item(ref: str, arr) -> str:
        kind = NUMBERS[arr.dtype.kind] if arr.dtype.kind in NUMBERS else "UChar"
        dims = " ".join(str(d) for d in arr.shape)
        return (f'<DataItem DataType="{kind}" Dimensions="{dims}" Format="HDF" '
                f'Precision="{arr.dtype.itemsize}">{ref}</DataItem>')

    def _write_xml(self) -> None:
        text = "\n".join(['<?xml version="1.0"?>', '<Xdmf Version="3.0">', "  <Domain>",
                          '  <Grid Name="TimeSeries" GridType="Collection" '
                          'CollectionType="Temporal">', *self.grids, "  </Grid>", "  </Domain>",
                          "</Xdmf>", ""])
        tmp = self.path + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, self.path)  # (a reader never sees half a file)

    def close(self) -> None:
        if self.h5 is not None:
            self.h5.close()
            self.h5 = None


def _attribute_type(arr) -> str:
    cols = 1 if arr.ndim == 1 else int(np.prod(arr.shape[1:]))
    return {1: "Scalar", 3: "Vector", 6: "Tensor6", 9: "Tensor"}.get(cols, "Matrix")
