"""LagrangeElements and the time constraints as relsim kernels: kinematics, monotonic Q
(gradients, then the limiter over the face neighbours), the EOS (run `rep` times per region),
and a last pass that stores the EOS results, updates the volumes and min-reduces the Courant and
hydro time constraints. Every formula keeps the reference's floating-point association.
"""
from __future__ import annotations

import math

import numpy as np

import relsim as rs
from relsim.domains.hexmesh import (
    ETA_M,
    ETA_M_FREE,
    ETA_M_SYMM,
    ETA_P,
    ETA_P_FREE,
    ETA_P_SYMM,
    XI_M,
    XI_M_FREE,
    XI_M_SYMM,
    XI_P,
    XI_P_FREE,
    XI_P_SYMM,
    ZETA_M,
    ZETA_M_FREE,
    ZETA_M_SYMM,
    ZETA_P,
    ZETA_P_FREE,
    ZETA_P_SYMM,
)

from .constants import (
    C1S,
    DVOVMAX,
    E_CUT,
    EMIN,
    EOSVMAX,
    EOSVMIN,
    MONOQ_LIMITER_MULT,
    MONOQ_MAX_SLOPE,
    P_CUT,
    PMIN,
    PTINY,
    Q_CUT,
    QLC_MONOQ,
    QQC,
    QQC_MONOQ,
    QSTOP,
    REFDENS,
    SIXTH,
    SSC_FLOOR,
    SSC_MIN,
    V_CUT,
)
from .geometry import (
    char_length,
    corners,
    elem_volume,
    gather_x,
    gather_xd,
    gather_y,
    gather_yd,
    gather_z,
    gather_zd,
    shape_derivatives,
    velocity_gradient,
)

QQC2 = 64.0 * QQC * QQC


@rs.func
def clamp_v(v):
    """vnew (or v) bounded by eosvmin / eosvmax."""
    c = v
    if c < EOSVMIN:
        c = EOSVMIN
    if c > EOSVMAX:
        c = EOSVMAX
    return c


@rs.func
def pressure(e, compression, vnewc):
    """CalcPressureForElems: (p, bvc) of the ideal gas; pbvc is the constant C1S."""
    bvc = C1S * (compression + 1.0)
    p = bvc * e
    if abs(p) < P_CUT:
        p = 0.0
    if vnewc >= EOSVMAX:
        p = 0.0
    if p < PMIN:
        p = PMIN
    return (p, bvc)


@rs.func
def sound_speed(e, v, bvc, p):
    """sqrt((pbvc e + v^2 bvc p) / rho0), floored."""
    ssc = (C1S * e + v * v * bvc * p) / REFDENS
    if ssc <= SSC_FLOOR:
        ssc = SSC_MIN
    else:
        ssc = math.sqrt(ssc)
    return ssc


@rs.func
def phi(delv, delvm, delvp):
    """The monotonic limiter of one direction, from the element's and its neighbours' delv."""
    norm = 1.0 / (delv + PTINY)
    dm = delvm * norm
    dp = delvp * norm
    ph = 0.5 * (dm + dp)
    dm = dm * MONOQ_LIMITER_MULT
    dp = dp * MONOQ_LIMITER_MULT
    if dm < ph:
        ph = dm
    if dp < ph:
        ph = dp
    if ph < 0.0:
        ph = 0.0
    if ph > MONOQ_MAX_SLOPE:
        ph = MONOQ_MAX_SLOPE
    return ph


def build(g):
    """The element kernels; `g` holds the Globals (dt, dtcourant, dthydro, error flags)."""
    dt = g.dt
    dtcourant = g.dtcourant
    dthydro = g.dthydro
    volume_error = g.volume_error
    qstop_error = g.qstop_error

    @rs.kernel
    def initial_mass(el):
        """Reference volume and mass of each element; nodal mass: an eighth of each adjacent
        element's, in element order."""
        nl = el.nodelist
        v = elem_volume(corners(gather_x(nl), gather_y(nl), gather_z(nl)))
        el.volo = v
        el.elemMass = v
        for k in range(8):
            nl[k].nodalMass += v / 8.0

    @rs.kernel
    def kinematics(el):
        """CalcKinematicsForElems + the strain-rate loop of CalcLagrangeElements."""
        nl = el.nodelist
        x = gather_x(nl)
        y = gather_y(nl)
        z = gather_z(nl)
        p = corners(x, y, z)
        volume = elem_volume(p)
        vnew = volume / el.volo
        el.vnew = vnew
        el.delv = vnew - el.v
        el.arealg = char_length(p, volume)
        xd = gather_xd(nl)
        yd = gather_yd(nl)
        zd = gather_zd(nl)
        dt2 = 0.5 * dt
        b = shape_derivatives(x - dt2 * xd, y - dt2 * yd, z - dt2 * zd)
        inv = 1.0 / b[12]
        el.vdov = velocity_gradient(b[0], b[1], b[2], b[3], xd, inv) \
            + velocity_gradient(b[4], b[5], b[6], b[7], yd, inv) \
            + velocity_gradient(b[8], b[9], b[10], b[11], zd, inv)
        volume_error |= vnew <= 0.0

    @rs.kernel
    def q_gradients(el):
        """CalcMonotonicQGradientsForElems: delv and delx in the xi, eta, zeta directions."""
        nl = el.nodelist
        x = gather_x(nl)
        y = gather_y(nl)
        z = gather_z(nl)
        p = corners(x, y, z)
        u = corners(gather_xd(nl), gather_yd(nl), gather_zd(nl))
        vol = el.volo * el.vnew
        norm = 1.0 / (vol + PTINY)
        dj = -0.25 * ((p[0] + p[1] + p[5] + p[4]) - (p[3] + p[2] + p[6] + p[7]))
        di = 0.25 * ((p[1] + p[2] + p[6] + p[5]) - (p[0] + p[3] + p[7] + p[4]))
        dk = 0.25 * ((p[4] + p[5] + p[6] + p[7]) - (p[0] + p[1] + p[2] + p[3]))
        a = rs.cross(di, dj)
        el.delx_zeta = vol / math.sqrt(rs.dot(a, a) + PTINY)
        dv = 0.25 * ((u[4] + u[5] + u[6] + u[7]) - (u[0] + u[1] + u[2] + u[3]))
        el.delv_zeta = rs.dot(a * norm, dv)
        a = rs.cross(dj, dk)
        el.delx_xi = vol / math.sqrt(rs.dot(a, a) + PTINY)
        dv = 0.25 * ((u[1] + u[2] + u[6] + u[5]) - (u[0] + u[3] + u[7] + u[4]))
        el.delv_xi = rs.dot(a * norm, dv)
        a = rs.cross(dk, di)
        el.delx_eta = vol / math.sqrt(rs.dot(a, a) + PTINY)
        dv = -0.25 * ((u[0] + u[1] + u[5] + u[4]) - (u[3] + u[2] + u[6] + u[7]))
        el.delv_eta = rs.dot(a * norm, dv)

    @rs.kernel
    def q_limiter(el):
        """CalcMonotonicQRegionForElems (ql, qq), the qstop check on the current q and
        ApplyMaterialProperties' check of the clamped old volume. The boundary mask decides
        each neighbour: its delv (no bit), the element's own (SYMM) or 0 (FREE)."""
        bc = el.elemBC
        m = bc & XI_M
        dm = el.delv_xi if m == XI_M_SYMM else (0.0 if m == XI_M_FREE else el.lxim.delv_xi)
        m = bc & XI_P
        dp = el.delv_xi if m == XI_P_SYMM else (0.0 if m == XI_P_FREE else el.lxip.delv_xi)
        phixi = phi(el.delv_xi, dm, dp)
        m = bc & ETA_M
        dm = el.delv_eta if m == ETA_M_SYMM else (0.0 if m == ETA_M_FREE else el.letam.delv_eta)
        m = bc & ETA_P
        dp = el.delv_eta if m == ETA_P_SYMM else (0.0 if m == ETA_P_FREE else el.letap.delv_eta)
        phieta = phi(el.delv_eta, dm, dp)
        m = bc & ZETA_M
        dm = el.delv_zeta if m == ZETA_M_SYMM else (
            0.0 if m == ZETA_M_FREE else el.lzetam.delv_zeta)
        m = bc & ZETA_P
        dp = el.delv_zeta if m == ZETA_P_SYMM else (
            0.0 if m == ZETA_P_FREE else el.lzetap.delv_zeta)
        phizeta = phi(el.delv_zeta, dm, dp)
        if el.vdov > 0.0:
            el.ql = 0.0
            el.qq = 0.0
        else:
            dxi = el.delv_xi * el.delx_xi
            deta = el.delv_eta * el.delx_eta
            dzeta = el.delv_zeta * el.delx_zeta
            if dxi > 0.0:
                dxi = 0.0
            if deta > 0.0:
                deta = 0.0
            if dzeta > 0.0:
                dzeta = 0.0
            rho = el.elemMass / (el.volo * el.vnew)
            el.ql = -QLC_MONOQ * rho * (dxi * (1.0 - phixi) + deta * (1.0 - phieta)
                                        + dzeta * (1.0 - phizeta))
            el.qq = QQC_MONOQ * rho * (dxi * dxi * (1.0 - phixi * phixi)
                                       + deta * deta * (1.0 - phieta * phieta)
                                       + dzeta * dzeta * (1.0 - phizeta * phizeta))
        qstop_error |= el.q > QSTOP
        volume_error |= clamp_v(el.v) <= 0.0

    @rs.kernel
    def eos(el):
        """EvalEOSForElems for one element: CalcEnergyForElems with its three pressure
        evaluations, then the sound speed. It reads only the persistent state (e, p, q, ...)
        and writes e_new, p_new, q_new and ss, so each of a region's `rep` evaluations
        recomputes the same values, as in the reference."""
        vnewc = clamp_v(el.vnew)
        e_old = el.e
        delvc = el.delv
        p_old = el.p
        q_old = el.q
        qq_old = el.qq
        ql_old = el.ql
        compression = 1.0 / vnewc - 1.0
        vchalf = vnewc - delvc * 0.5
        comp_half = 1.0 / vchalf - 1.0
        if vnewc <= EOSVMIN:
            comp_half = compression
        if vnewc >= EOSVMAX:
            p_old = 0.0
            compression = 0.0
            comp_half = 0.0
        work = 0.0
        e_new = e_old - 0.5 * delvc * (p_old + q_old) + 0.5 * work
        if e_new < EMIN:
            e_new = EMIN
        ph = pressure(e_new, comp_half, vnewc)
        p_half = ph[0]
        vhalf = 1.0 / (1.0 + comp_half)
        if delvc > 0.0:
            q_new = 0.0
        else:
            q_new = sound_speed(e_new, vhalf, ph[1], p_half) * ql_old + qq_old
        e_new = e_new + 0.5 * delvc * (3.0 * (p_old + q_old) - 4.0 * (p_half + q_new))
        e_new += 0.5 * work
        if abs(e_new) < E_CUT:
            e_new = 0.0
        if e_new < EMIN:
            e_new = EMIN
        pn = pressure(e_new, compression, vnewc)
        if delvc > 0.0:
            q_tilde = 0.0
        else:
            q_tilde = sound_speed(e_new, vnewc, pn[1], pn[0]) * ql_old + qq_old
        e_new = e_new - (7.0 * (p_old + q_old) - 8.0 * (p_half + q_new)
                         + (pn[0] + q_tilde)) * delvc * SIXTH
        if abs(e_new) < E_CUT:
            e_new = 0.0
        if e_new < EMIN:
            e_new = EMIN
        pn = pressure(e_new, compression, vnewc)
        if delvc <= 0.0:
            q_new = sound_speed(e_new, vnewc, pn[1], pn[0]) * ql_old + qq_old
            if abs(q_new) < Q_CUT:
                q_new = 0.0
        el.p_new = pn[0]
        el.e_new = e_new
        el.q_new = q_new
        el.ss = sound_speed(e_new, vnewc, pn[1], pn[0])

    @rs.kernel
    def finish(el):
        """Store the EOS results, UpdateVolumesForElems, and CalcTimeConstraintsForElems
        (Courant and hydro constraints as exact min-reductions)."""
        el.p = el.p_new
        el.e = el.e_new
        el.q = el.q_new
        v = el.vnew
        if abs(v - 1.0) < V_CUT:
            v = 1.0
        el.v = v
        vdov = el.vdov
        if vdov != 0.0:
            arealg = el.arealg
            f = el.ss * el.ss
            if vdov < 0.0:
                f = f + QQC2 * arealg * arealg * vdov * vdov
            f = arealg / math.sqrt(f)
            dtcourant = min(dtcourant, f)
            dthydro = min(dthydro, DVOVMAX / (abs(vdov) + 1.0e-20))

    return dict(initial_mass=initial_mass, kinematics=kinematics, q_gradients=q_gradients,
                q_limiter=q_limiter, eos=eos, finish=finish)


def checksums(elems, nodes):
    """A function computing {name: value} for the end state's sums of e, p, q, v, ss, x+y+z and
    xd+yd+zd as the reference computes them: one running sum in index order, left to right. They
    are host-side (np.cumsum adds in sequence): a float Global sum in relsim is exact and
    order-free, which the reference's checksums are not."""

    def running(a) -> float:
        return float(np.cumsum(a)[-1]) if len(a) else 0.0

    def compute() -> dict:
        f = {n: elems.field(n).numpy(copy=True) for n in ("e", "p", "q", "v", "ss")}
        g = {n: nodes.field(n).numpy(copy=True) for n in ("x", "y", "z", "xd", "yd", "zd")}
        out = {n: running(a) for n, a in f.items()}
        out["x+y+z"] = running(g["x"] + g["y"] + g["z"])  # (x + y) + z per node, as the kernel
        out["xd+yd+zd"] = running(g["xd"] + g["yd"] + g["zd"])
        return out

    return compute
