"""Airfoil written as an explicit gather, for the benchmark: the hand-written Numba baseline's
algorithm expressed in relsim (the port users should read is `solver.py`).

Instead of reducing through keys, an edge kernel stores each face's flux once (``edges.flux``),
and one kernel per stage runs over the cells: it folds the fluxes of its faces (a grouping of
edges by ``pecell``, ascending edge index: +F as the first cell, -F as the second), then its
boundary faces' terms (a grouping of bedges by ``pbecell``), updates q and computes adt for the
next stage (loop fusion, as in the baseline; save_soln is fused into the first stage). The
flux, pressure and adt are `solver.py`'s own helpers (`face_flux`, `pressure`, `adt_value`) and
the folds keep its order, so the results are the same bits.
Comparing the two in `relsim bench airfoil` isolates what the automatic lowering of key
reductions (slots, then a separate fold pass) costs against a fused gather written by hand.
"""

from __future__ import annotations

import math

import numpy as np

import relsim as rs

from .solver import EPS, QINF, Airfoil, adt_value, face_flux, op2mesh, pressure


def build(mesh) -> Airfoil:
    m = op2mesh.mesh_relations(mesh)
    nodes, cells, edges, bedges = m.nodes, m.cells, m.edges, m.bedges
    cells.new_field("q", rs.vec(4, rs.f64)).load(np.tile(np.array(QINF), (cells.size, 1)))
    cells.new_field("qold", rs.vec(4, rs.f64))
    cells.new_field("adt", rs.f64)
    edges.new_field("flux", rs.vec(4, rs.f64))
    edges.group_by("pecell", "faces")
    bedges.group_by("pbecell", "bfaces")
    rms = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def adt_calc(c):
        c.adt = adt_value(c.q, c.pcell[0].x, c.pcell[1].x, c.pcell[2].x, c.pcell[3].x)

    @rs.kernel
    def flux_calc(e):
        mu = (0.5 * (e.pecell[0].adt + e.pecell[1].adt)) * EPS
        e.flux = face_flux(e.pedge[0].x, e.pedge[1].x, e.pecell[0].q, e.pecell[1].q, mu)

    @rs.func
    def residual(c, q, adt):
        r0 = 0.0
        r1 = 0.0
        r2 = 0.0
        r3 = 0.0
        for e in c.faces:
            f = e.flux
            if e.pecell[0] == c:
                r0 = r0 + f[0]
                r1 = r1 + f[1]
                r2 = r2 + f[2]
                r3 = r3 + f[3]
            else:
                r0 = r0 - f[0]
                r1 = r1 - f[1]
                r2 = r2 - f[2]
                r3 = r3 - f[3]
        for b in c.bfaces:  # bres_calc's terms
            x1 = b.pbedge[0].x
            x2 = b.pbedge[1].x
            if b.bound == 1:
                p1 = pressure(q, 1.0 / q[0])
                r1 = r1 + p1 * (x1[1] - x2[1])
                r2 = r2 + (-p1) * (x1[0] - x2[0])
            else:
                f = face_flux(x1, x2, q, QINF, adt * EPS)
                r0 = r0 + f[0]
                r1 = r1 + f[1]
                r2 = r2 + f[2]
                r3 = r3 + f[3]
        return (r0, r1, r2, r3)

    @rs.kernel
    def cell_stage1(c):  # res_calc's fold, bres_calc, save_soln, update, adt_calc
        q = c.q
        r = residual(c, q, c.adt)
        c.qold = q
        adti = 1.0 / c.adt
        c.q = (q[0] - adti * r[0], q[1] - adti * r[1], q[2] - adti * r[2], q[3] - adti * r[3])
        c.adt = adt_value(c.q, c.pcell[0].x, c.pcell[1].x, c.pcell[2].x, c.pcell[3].x)

    @rs.kernel
    def cell_stage2(c):  # res_calc's fold, bres_calc, update (with rms), adt_calc
        q = c.q
        r = residual(c, q, c.adt)
        o = c.qold
        adti = 1.0 / c.adt
        d0 = adti * r[0]
        d1 = adti * r[1]
        d2 = adti * r[2]
        d3 = adti * r[3]
        c.q = (o[0] - d0, o[1] - d1, o[2] - d2, o[3] - d3)
        rms += d0 * d0
        rms += d1 * d1
        rms += d2 * d2
        rms += d3 * d3
        c.adt = adt_value(c.q, c.pcell[0].x, c.pcell[1].x, c.pcell[2].x, c.pcell[3].x)

    kernels = dict(adt_calc=adt_calc, flux_calc=flux_calc, cell_stage1=cell_stage1,
                   cell_stage2=cell_stage2)
    return Airfoil(nodes, cells, edges, bedges, rms, kernels)


def solve(a: Airfoil, iterations: int, config=None, report=None, timings=None):
    """As `solver.solve`, with the fused kernels."""
    import time
    k = a.kernels
    adt_calc, flux_calc = k["adt_calc"], k["flux_calc"]
    stage1, stage2 = k["cell_stage1"], k["cell_stage2"]
    cells, edges, rms = a.cells, a.edges, a.rms
    ncell = cells.size
    history = np.empty(iterations)
    t0 = t1 = time.perf_counter()
    cells.foreach(adt_calc, config)
    for it in range(1, iterations + 1):
        edges.foreach(flux_calc, config)
        cells.foreach(stage1, config)
        edges.foreach(flux_calc, config)
        rms.value = 0.0
        cells.foreach(stage2, config)
        history[it - 1] = math.sqrt(rms.value / ncell)
        if it == 1:
            t1 = time.perf_counter()
        if report is not None:
            report(it, history[it - 1])
    if timings is not None:
        timings["first_s"] = t1 - t0
        timings["loop_s"] = time.perf_counter() - t1
    return history
