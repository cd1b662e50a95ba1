"""LagrangeNodal as relsim kernels: nodal forces (stress, then hourglass), acceleration, symmetry
boundary conditions, velocity and position.

The nodal force f = (fx, fy, fz) is a reduction from elements through their 8 node keys
(``nl[k].f += ...``). relsim folds each node's contributions in ascending element order, after
the value the node already holds, so zeroing the forces, then ``integrate_stress`` over the
elements, then ``hourglass`` over the elements gives f = ((0 + s1) + ... + s8) + h1 + ... + h8:
the reference's serial (1-thread) order, bit for bit, on any number of threads.
"""
from __future__ import annotations

import numpy as np

import relsim as rs

from .constants import HGCOEF, U_CUT
from .geometry import (
    corners,
    face_normal,
    gather_x,
    gather_xd,
    gather_y,
    gather_yd,
    gather_z,
    gather_zd,
    jacobian_volume,
    volu_der,
)

# Flanagan-Belytschko hourglass base vectors gamma_m[k]
GAMMA0 = (1.0, 1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0)
GAMMA1 = (1.0, -1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0)
GAMMA2 = (1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0)
GAMMA3 = (-1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0)


def build(g):
    """The nodal kernels; `g` holds the Globals they read (dt) or reduce into (volume_error)."""
    dt = g.dt
    volume_error = g.volume_error

    @rs.kernel
    def zero_forces(n):
        n.f = (0.0, 0.0, 0.0)

    @rs.kernel
    def integrate_stress(el):
        """IntegrateStressForElems: corner forces -(sigma n_k) from the node normals."""
        nl = el.nodelist
        x = gather_x(nl)
        y = gather_y(nl)
        z = gather_z(nl)
        volume_error |= jacobian_volume(x, y, z) <= 0.0
        p = corners(x, y, z)
        f0 = face_normal(p[0], p[1], p[2], p[3])
        f1 = face_normal(p[0], p[4], p[5], p[1])
        f2 = face_normal(p[1], p[5], p[6], p[2])
        f3 = face_normal(p[2], p[6], p[7], p[3])
        f4 = face_normal(p[3], p[7], p[4], p[0])
        f5 = face_normal(p[4], p[7], p[6], p[5])
        o = (0.0, 0.0, 0.0)
        sig = -el.p - el.q
        # corner force of node k: its normal sums its three faces in face order
        c0 = -(sig * (o + f0 + f1 + f4))
        c1 = -(sig * (o + f0 + f1 + f2))
        c2 = -(sig * (o + f0 + f2 + f3))
        c3 = -(sig * (o + f0 + f3 + f4))
        c4 = -(sig * (o + f1 + f4 + f5))
        c5 = -(sig * (o + f1 + f2 + f5))
        c6 = -(sig * (o + f2 + f3 + f5))
        c7 = -(sig * (o + f3 + f4 + f5))
        nl[0].f += c0
        nl[1].f += c1
        nl[2].f += c2
        nl[3].f += c3
        nl[4].f += c4
        nl[5].f += c5
        nl[6].f += c6
        nl[7].f += c7

    @rs.kernel
    def hourglass(el):
        """CalcHourglassControlForElems + CalcFBHourglassForceForElems (old positions and
        velocities, the previous cycle's sound speed)."""
        nl = el.nodelist
        x = gather_x(nl)
        y = gather_y(nl)
        z = gather_z(nl)
        p = corners(x, y, z)
        d0 = volu_der(p[1], p[2], p[3], p[4], p[5], p[7])
        d1 = volu_der(p[2], p[3], p[0], p[5], p[6], p[4])
        d2 = volu_der(p[3], p[0], p[1], p[6], p[7], p[5])
        d3 = volu_der(p[0], p[1], p[2], p[7], p[4], p[6])
        d4 = volu_der(p[7], p[6], p[5], p[0], p[3], p[1])
        d5 = volu_der(p[4], p[7], p[6], p[1], p[0], p[2])
        d6 = volu_der(p[5], p[4], p[7], p[2], p[1], p[3])
        d7 = volu_der(p[6], p[5], p[4], p[3], p[2], p[0])
        dvdx = (d0[0], d1[0], d2[0], d3[0], d4[0], d5[0], d6[0], d7[0])
        dvdy = (d0[1], d1[1], d2[1], d3[1], d4[1], d5[1], d6[1], d7[1])
        dvdz = (d0[2], d1[2], d2[2], d3[2], d4[2], d5[2], d6[2], d7[2])
        volume_error |= el.v <= 0.0
        determ = el.volo * el.v
        volinv = 1.0 / determ
        # hourglass shape vectors Gamma[k][m], one 8-vector per mode m
        g0 = GAMMA0 - volinv * (dvdx * rs.dot(x, GAMMA0) + dvdy * rs.dot(y, GAMMA0)
                                + dvdz * rs.dot(z, GAMMA0))
        g1 = GAMMA1 - volinv * (dvdx * rs.dot(x, GAMMA1) + dvdy * rs.dot(y, GAMMA1)
                                + dvdz * rs.dot(z, GAMMA1))
        g2 = GAMMA2 - volinv * (dvdx * rs.dot(x, GAMMA2) + dvdy * rs.dot(y, GAMMA2)
                                + dvdz * rs.dot(z, GAMMA2))
        g3 = GAMMA3 - volinv * (dvdx * rs.dot(x, GAMMA3) + dvdy * rs.dot(y, GAMMA3)
                                + dvdz * rs.dot(z, GAMMA3))
        coefficient = -HGCOEF * 0.01 * el.ss * el.elemMass / np.cbrt(determ)
        xd = gather_xd(nl)
        hx = coefficient * (g0 * rs.dot(g0, xd) + g1 * rs.dot(g1, xd) + g2 * rs.dot(g2, xd)
                            + g3 * rs.dot(g3, xd))
        yd = gather_yd(nl)
        hy = coefficient * (g0 * rs.dot(g0, yd) + g1 * rs.dot(g1, yd) + g2 * rs.dot(g2, yd)
                            + g3 * rs.dot(g3, yd))
        zd = gather_zd(nl)
        hz = coefficient * (g0 * rs.dot(g0, zd) + g1 * rs.dot(g1, zd) + g2 * rs.dot(g2, zd)
                            + g3 * rs.dot(g3, zd))
        nl[0].f += (hx[0], hy[0], hz[0])
        nl[1].f += (hx[1], hy[1], hz[1])
        nl[2].f += (hx[2], hy[2], hz[2])
        nl[3].f += (hx[3], hy[3], hz[3])
        nl[4].f += (hx[4], hy[4], hz[4])
        nl[5].f += (hx[5], hy[5], hz[5])
        nl[6].f += (hx[6], hy[6], hz[6])
        nl[7].f += (hx[7], hy[7], hz[7])

    @rs.kernel
    def acceleration(n):
        n.xdd = n.f[0] / n.nodalMass
        n.ydd = n.f[1] / n.nodalMass
        n.zdd = n.f[2] / n.nodalMass

    @rs.kernel
    def symmetry_x(n):
        n.xdd = 0.0

    @rs.kernel
    def symmetry_y(n):
        n.ydd = 0.0

    @rs.kernel
    def symmetry_z(n):
        n.zdd = 0.0

    @rs.kernel
    def velocity(n):
        xd = n.xd + n.xdd * dt
        if abs(xd) < U_CUT:
            xd = 0.0
        n.xd = xd
        yd = n.yd + n.ydd * dt
        if abs(yd) < U_CUT:
            yd = 0.0
        n.yd = yd
        zd = n.zd + n.zdd * dt
        if abs(zd) < U_CUT:
            zd = 0.0
        n.zd = zd

    @rs.kernel
    def position(n):
        n.x += n.xd * dt
        n.y += n.yd * dt
        n.z += n.zd * dt

    return dict(zero_forces=zero_forces, integrate_stress=integrate_stress, hourglass=hourglass,
                acceleration=acceleration, symmetry_x=symmetry_x, symmetry_y=symmetry_y,
                symmetry_z=symmetry_z, velocity=velocity, position=position)
