"""Airfoil written as an explicit gather, for the benchmark: the hand-written Numba baseline's
algorithm expressed in relsim (the port users should read is `solver.py`).

Instead of reducing through keys, an edge kernel stores each face's flux once (``edges.flux``),
and one kernel per stage runs over the cells: it folds the fluxes of its faces (a grouping of
edges by ``pecell``, ascending edge index: +F as the first cell, -F as the second), then its
boundary faces' terms (a grouping of bedges by ``pbecell``), updates q and computes adt for the
next stage (loop fusion, as in the baseline; save_soln is fused into the first stage). The
rounded operations and their order are those of `solver.py`, so the results are the same bits.
Comparing the two in `relsim bench airfoil` isolates what the automatic lowering of key
reductions (slots, then a separate fold pass) costs against a fused gather written by hand.
"""

from __future__ import annotations

import math

import numpy as np

import relsim as rs

from .solver import CFL, EPS, GAM, GM1, QINF, QINF0, QINF1, QINF2, QINF3, Airfoil, op2mesh


@rs.func
def adt_value(q, x1, x2, x3, x4):
    ri = 1.0 / q[0]
    u = ri * q[1]
    v = ri * q[2]
    cs = math.sqrt((GAM * GM1) * (ri * q[3] - 0.5 * (u * u + v * v)))
    dx = x2[0] - x1[0]
    dy = x2[1] - x1[1]
    a = abs(u * dy - v * dx) + cs * math.sqrt(dx * dx + dy * dy)
    dx = x3[0] - x2[0]
    dy = x3[1] - x2[1]
    a = a + (abs(u * dy - v * dx) + cs * math.sqrt(dx * dx + dy * dy))
    dx = x4[0] - x3[0]
    dy = x4[1] - x3[1]
    a = a + (abs(u * dy - v * dx) + cs * math.sqrt(dx * dx + dy * dy))
    dx = x1[0] - x4[0]
    dy = x1[1] - x4[1]
    a = a + (abs(u * dy - v * dx) + cs * math.sqrt(dx * dx + dy * dy))
    return a / CFL


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
        x1 = e.pedge[0].x
        x2 = e.pedge[1].x
        q1 = e.pecell[0].q
        q2 = e.pecell[1].q
        dx = x1[0] - x2[0]
        dy = x1[1] - x2[1]
        ri1 = 1.0 / q1[0]
        p1 = GM1 * (q1[3] - (0.5 * ri1) * (q1[1] * q1[1] + q1[2] * q1[2]))
        vol1 = ri1 * (q1[1] * dy - q1[2] * dx)
        ri2 = 1.0 / q2[0]
        p2 = GM1 * (q2[3] - (0.5 * ri2) * (q2[1] * q2[1] + q2[2] * q2[2]))
        vol2 = ri2 * (q2[1] * dy - q2[2] * dx)
        mu = (0.5 * (e.pecell[0].adt + e.pecell[1].adt)) * EPS
        f0 = 0.5 * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0])
        f1 = 0.5 * (((vol1 * q1[1] + p1 * dy) + vol2 * q2[1]) + p2 * dy) + mu * (q1[1] - q2[1])
        f2 = 0.5 * (((vol1 * q1[2] - p1 * dx) + vol2 * q2[2]) - p2 * dx) + mu * (q1[2] - q2[2])
        f3 = 0.5 * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2)) + mu * (q1[3] - q2[3])
        e.flux = (f0, f1, f2, f3)

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
        for b in c.bfaces:
            x1 = b.pbedge[0].x
            x2 = b.pbedge[1].x
            dx = x1[0] - x2[0]
            dy = x1[1] - x2[1]
            ri1 = 1.0 / q[0]
            p1 = GM1 * (q[3] - (0.5 * ri1) * (q[1] * q[1] + q[2] * q[2]))
            if b.bound == 1:
                r1 = r1 + p1 * dy
                r2 = r2 + (-p1) * dx
            else:
                vol1 = ri1 * (q[1] * dy - q[2] * dx)
                ri2 = 1.0 / QINF0
                p2 = GM1 * (QINF3 - (0.5 * ri2) * (QINF1 * QINF1 + QINF2 * QINF2))
                vol2 = ri2 * (QINF1 * dy - QINF2 * dx)
                mu = adt * EPS
                r0 = r0 + (0.5 * (vol1 * q[0] + vol2 * QINF0) + mu * (q[0] - QINF0))
                r1 = r1 + (0.5 * (((vol1 * q[1] + p1 * dy) + vol2 * QINF1) + p2 * dy)
                           + mu * (q[1] - QINF1))
                r2 = r2 + (0.5 * (((vol1 * q[2] - p1 * dx) + vol2 * QINF2) - p2 * dx)
                           + mu * (q[2] - QINF2))
                r3 = r3 + (0.5 * (vol1 * (q[3] + p1) + vol2 * (QINF3 + p2))
                           + mu * (q[3] - QINF3))
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
