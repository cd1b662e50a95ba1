"""OP2 Airfoil meshes as relsim relations (built with the public API only).

This module is the whole "mesh domain" glue: it turns an `Op2Mesh` (read from a file or
generated) into relations with key fields, exactly as OP2's ``op_decl_set`` / ``op_decl_map``
/ ``op_decl_dat`` declare them. It imports nothing from relsim but ``import relsim as rs``, so
it doubles as the template for a third-party domain (see the package docstring).

>>> from relsim.domains import op2mesh
>>> m = op2mesh.mesh_relations(op2mesh.naca_mesh(20, 30))   # or op2mesh.load("new_grid.dat.gz")
>>> m.nodes, m.cells, m.edges, m.bedges
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import relsim as rs

from .naca import naca_mesh
from .reader import Op2Mesh, read_op2


@dataclass(frozen=True, eq=False)
class Op2Relations:
    """The four OP2 sets as relations, plus the mesh they were built from.

    * ``nodes``: ``x`` (vec2 f64, coordinates);
    * ``cells``: ``pcell`` (key vector, 4 nodes, counter-clockwise);
    * ``edges``: ``pedge`` (key vector, 2 nodes n1, n2) and ``pecell`` (key vector, 2 cells
      c1, c2; the face's normal (dy, -dx) with d = x[n1] - x[n2] points from c1 to c2);
    * ``bedges``: ``pbedge`` (key vector, 2 nodes), ``pbecell`` (key, the interior cell) and
      ``bound`` (i32: 1 = wall, otherwise far field).
    """

    nodes: rs.Relation
    cells: rs.Relation
    edges: rs.Relation
    bedges: rs.Relation
    mesh: Op2Mesh

    def __iter__(self):
        return iter((self.nodes, self.cells, self.edges, self.bedges))


def mesh_relations(mesh: Op2Mesh) -> Op2Relations:
    """Relations ``nodes cells edges bedges`` with the OP2 Airfoil maps as key fields."""
    nodes = rs.Relation("nodes", mesh.nnode)
    cells = rs.Relation("cells", mesh.ncell)
    edges = rs.Relation("edges", mesh.nedge)
    bedges = rs.Relation("bedges", mesh.nbedge)
    nodes.new_field("x", rs.vec(2, rs.f64)).load(mesh.x)
    cells.new_key_field("pcell", nodes, 4).load(mesh.cell)
    edges.new_key_field("pedge", nodes, 2).load(mesh.edge)
    edges.new_key_field("pecell", cells, 2).load(mesh.ecell)
    bedges.new_key_field("pbedge", nodes, 2).load(mesh.bedge)
    bedges.new_key_field("pbecell", cells).load(mesh.becell)
    bedges.new_field("bound", rs.i32).load(mesh.bound)
    return Op2Relations(nodes, cells, edges, bedges, mesh)


def load(path) -> Op2Relations:
    """Read an OP2 ASCII mesh file (plain or gzip) into relations."""
    return mesh_relations(read_op2(os.fspath(path)))


def naca(I: int = 400, J: int = 600) -> Op2Relations:  # noqa: E741
    """The NACA0012 mesh generated in-process (400 x 600 is the standard 720 000-cell mesh)."""
    return mesh_relations(naca_mesh(I, J))


__all__ = ["Op2Relations", "load", "mesh_relations", "naca"]
