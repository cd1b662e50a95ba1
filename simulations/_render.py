"""Gallery pictures, rendered headless (matplotlib's Agg) from a simulation's own output:

    python -m relsim_simulations._render SERIES.pvd PICTURE.png --field NAME [--step K]
                                         [--warp FIELD | --at FIELD] [--sphere X Y Z R]
                                         [--mask FIELD] [--title TEXT]
                                         [--window X0 X1 Y0 Y1]

Reads the VTU file of step K of the ParaView series (default: the step where the field's
largest magnitude peaks), draws the outer surface of its cells (the faces that belong to one
cell only) in perspective, coloured by the field's magnitude (a point field's mean over the
face's points, or a cell field's value), the points moved by the vector
field `--warp` when given (a displacement; the undeformed outline in grey), or placed at the
positions of the vector field `--at`; `--sphere` adds a sphere (an obstacle) in light grey. A
series of points only (particles) is drawn as dots, those where the field `--mask` is zero (walls)
in light grey. `--window` keeps the faces whose centre lies in an x, y range (a region of a large
2-D mesh); SERIES may also be one .vtu file.
Small PNGs for the docs' gallery (docs/gallery/) (``pip install matplotlib meshio``).
"""
from __future__ import annotations

import argparse
import os
import xml.etree.ElementTree as ET

import numpy as np

# faces of the cell types a simulation writes, as local vertex lists
_FACES = {"tetra": ((0, 2, 1), (0, 1, 3), (1, 2, 3), (0, 3, 2)),
          "hexahedron": ((0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5),
                         (2, 3, 7, 6), (3, 0, 4, 7)),
          "triangle": ((0, 1, 2),), "quad": ((0, 1, 2, 3),)}


def series_files(pvd: str) -> list:
    """(time, VTU path) of each step of a .pvd, in order (a single .vtu: one step at t = 0)."""
    if pvd.endswith(".vtu"):
        return [(0.0, pvd)]
    root = ET.parse(pvd).getroot()
    base = os.path.dirname(os.path.abspath(pvd))
    return [(float(d.get("timestep")), os.path.join(base, d.get("file")))
            for d in root.iter("DataSet")]


def surface(mesh, with_cells: bool = False) -> list:
    """The faces (vertex index tuples) that belong to exactly one cell; with `with_cells`,
    (face, index of its cell over all the mesh's cell blocks) pairs."""
    count, faces = {}, {}
    first = 0
    for block in mesh.cells:
        for c, cell in enumerate(block.data):
            for local in _FACES.get(block.type, ()):
                face = tuple(int(cell[i]) for i in local)
                key = tuple(sorted(face))
                count[key] = count.get(key, 0) + 1
                faces[key] = (face, first + c)
        first += len(block.data)
    out = [faces[k] for k, n in count.items() if n == 1]
    return out if with_cells else [f for f, _ in out]


def magnitude(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return np.linalg.norm(v, axis=1) if v.ndim == 2 else np.abs(v)


def render(pvd: str, png: str, field: str, step: int | None = None, warp: str | None = None,
           title: str | None = None, at: str | None = None, sphere=None,
           view=(20.0, -70.0), mask: str | None = None, window=None) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import meshio
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    files = series_files(pvd)
    meshes = [meshio.read(path) for _, path in files]
    def values(m):
        return m.point_data[field] if field in m.point_data else np.concatenate(
            m.cell_data[field])

    if step is None:  # the step where the field peaks
        step = int(np.argmax([magnitude(values(m)).max() for m in meshes]))
    if not -len(files) <= step < len(files):
        raise SystemExit(f"{pvd} has {len(files)} steps (0 to {len(files) - 1}): no step {step}")
    mesh, (time, _) = meshes[step], files[step]
    faced = surface(mesh, with_cells=True)
    rest = mesh.points
    moved = rest + mesh.point_data[warp] if warp else rest
    if at:
        rest = moved = np.asarray(mesh.point_data[at], dtype=float)
    if window is not None:  # only the faces whose centre is inside x0 <= x <= x1, y0 <= y <= y1
        x0, x1, y0, y1 = window
        centre = [moved[list(f)].mean(axis=0) for f, _ in faced]
        faced = [fc for fc, c in zip(faced, centre) if x0 <= c[0] <= x1 and y0 <= c[1] <= y1]
        if not faced:
            raise SystemExit(f"--window {x0} {x1} {y0} {y1}: no face of {pvd} is inside it")
        inside = np.unique(np.concatenate([list(f) for f, _ in faced]))
        rest, moved = rest[inside], moved[inside]
        renumber = {int(old): new for new, old in enumerate(inside)}
        faced = [(tuple(renumber[i] for i in f), c) for f, c in faced]
    faces = [f for f, _ in faced]
    per_cell = field not in mesh.point_data  # a cell field: each face takes its cell's value
    value = magnitude(np.concatenate(mesh.cell_data[field]) if per_cell
                      else mesh.point_data[field])
    if window is not None and not per_cell:
        value = value[inside]  # (the points were renumbered)
    fig = plt.figure(figsize=(6.4, 3.0), dpi=100)
    ax = fig.add_axes((-0.08, -0.12, 0.98, 1.1), projection="3d")
    if warp:
        outline = Poly3DCollection([rest[list(f)] for f in faces], facecolors="none",
                                   edgecolors=(0.6, 0.6, 0.6, 0.25), linewidths=0.3)
        ax.add_collection3d(outline)
    extra = []
    if sphere is not None:
        cx, cy, cz, r = sphere
        u, w = np.meshgrid(np.linspace(0, 2 * np.pi, 40), np.linspace(0, np.pi, 20))
        sx, sy, sz = (cx + r * np.cos(u) * np.sin(w), cy + r * np.sin(u) * np.sin(w),
                      cz + r * np.cos(w))
        ax.plot_surface(sx, sy, sz, color=(0.8, 0.8, 0.8), alpha=0.6, linewidth=0)
        extra = [np.column_stack([sx.ravel(), sy.ravel(), sz.ravel()])]
    if faces:
        shade = [value[c] for _, c in faced] if per_cell else \
            [value[list(f)].mean() for f in faces]
        colours = plt.cm.viridis(np.array(shade) / max(value.max(), 1e-300))
        shape = Poly3DCollection([moved[list(f)] for f in faces], facecolors=colours,
                                 edgecolors=(0, 0, 0, 0.15), linewidths=0.2)
        ax.add_collection3d(shape)
    else:  # particles: dots, the masked-out ones (walls) in light grey
        on = np.ones(len(moved), bool) if mask is None else \
            np.asarray(mesh.point_data[mask]).reshape(len(moved)) != 0
        ax.scatter(*moved[~on].T, color=(0.75, 0.75, 0.75), s=1.0, depthshade=False)
        ax.scatter(*moved[on].T, c=value[on], cmap="viridis", vmin=0.0,
                   vmax=max(value.max(), 1e-300), s=2.0, depthshade=True)
    both = np.vstack([rest, moved, *extra])
    lo, hi = both.min(axis=0), both.max(axis=0)
    flat = hi - lo <= 1e-12 * max((hi - lo).max(), 1e-300)  # a flat mesh: a sliver of depth
    lo, hi = np.where(flat, lo - 1e-3 * (hi - lo).max(), lo), \
        np.where(flat, hi + 1e-3 * (hi - lo).max(), hi)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_zlim(lo[2], hi[2])
    ax.set_box_aspect(np.maximum(hi - lo, 1e-9 * (hi - lo).max()), zoom=1.0)
    ax.view_init(elev=view[0], azim=view[1])
    ax.set_axis_off()
    mappable = plt.cm.ScalarMappable(cmap="viridis",
                                     norm=plt.Normalize(0.0, max(value.max(), 1e-300)))
    fig.colorbar(mappable, cax=fig.add_axes((0.87, 0.15, 0.02, 0.65)), label=f"|{field}|")
    fig.suptitle(title or f"{os.path.basename(pvd)}, t = {time:.3g}", fontsize=9, y=0.97)
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png)
    plt.close(fig)
    return png


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m relsim_simulations._render",
                                description=__doc__.splitlines()[0])
    p.add_argument("pvd")
    p.add_argument("png")
    p.add_argument("--field", required=True, help="point field to colour by (its magnitude)")
    p.add_argument("--step", type=int, default=None, help="step of the series (default: the "
                   "one where the field peaks)")
    p.add_argument("--warp", default=None, help="vector point field to move the points by")
    p.add_argument("--at", default=None, help="vector point field holding the positions")
    p.add_argument("--sphere", type=float, nargs=4, default=None, metavar=("X", "Y", "Z", "R"),
                   help="draw a sphere (an obstacle)")
    p.add_argument("--view", type=float, nargs=2, default=(20.0, -70.0),
                   metavar=("ELEVATION", "AZIMUTH"), help="camera angles in degrees")
    p.add_argument("--mask", default=None,
                   help="particles: point field, zero where a point is drawn in grey")
    p.add_argument("--title", default=None)
    p.add_argument("--window", type=float, nargs=4, default=None, metavar=("X0", "X1", "Y0", "Y1"),
                   help="draw only the faces whose centre lies in this x, y range")
    a = p.parse_args(argv)
    print(render(a.pvd, a.png, a.field, a.step, a.warp, a.title, a.at, a.sphere, a.view,
                 a.mask, a.window))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
