"""Per-element geometry of LULESH's hexahedra as `@rs.func` helpers (inlined into the kernels).

An element's 8 node values travel as 8-vectors (``x[k]`` is node k of the element, LULESH's local
order); 3-vectors are points or directions. Every formula keeps the reference's floating-point
association exactly: Python parses ``a - b - c``, ``-a * b`` and ``a * b * c`` as C does, and
relsim's vector operations are component-wise (``rs.dot`` and ``rs.cross`` expand to the
reference's left-to-right sums and products). Comments name the reference's function.
"""
from __future__ import annotations

import math

import relsim as rs

TWELFTH = 1.0 / 12.0


@rs.func
def gather_x(n):
    return (n[0].x, n[1].x, n[2].x, n[3].x, n[4].x, n[5].x, n[6].x, n[7].x)


@rs.func
def gather_y(n):
    return (n[0].y, n[1].y, n[2].y, n[3].y, n[4].y, n[5].y, n[6].y, n[7].y)


@rs.func
def gather_z(n):
    return (n[0].z, n[1].z, n[2].z, n[3].z, n[4].z, n[5].z, n[6].z, n[7].z)


@rs.func
def gather_xd(n):
    return (n[0].xd, n[1].xd, n[2].xd, n[3].xd, n[4].xd, n[5].xd, n[6].xd, n[7].xd)


@rs.func
def gather_yd(n):
    return (n[0].yd, n[1].yd, n[2].yd, n[3].yd, n[4].yd, n[5].yd, n[6].yd, n[7].yd)


@rs.func
def gather_zd(n):
    return (n[0].zd, n[1].zd, n[2].zd, n[3].zd, n[4].zd, n[5].zd, n[6].zd, n[7].zd)


@rs.func
def corners(x, y, z):
    """The 8 corner points (rows) of an element from its coordinate 8-vectors."""
    return ((x[0], y[0], z[0]), (x[1], y[1], z[1]), (x[2], y[2], z[2]), (x[3], y[3], z[3]),
            (x[4], y[4], z[4]), (x[5], y[5], z[5]), (x[6], y[6], z[6]), (x[7], y[7], z[7]))


@rs.func
def triple(a, b, c):
    """The volume formula's triple product a . (b x c), in the reference's association."""
    return (a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2])) \
        + a[2] * (b[0] * c[1] - b[1] * c[0])


@rs.func
def elem_volume(p):
    """CalcElemVolume of the corners p: the 12-term hexahedron volume."""
    v = triple(p[3] - p[1] + (p[7] - p[2]), p[6] - p[3], p[2] - p[0]) \
        + triple(p[4] - p[3] + (p[5] - p[7]), p[6] - p[4], p[7] - p[0]) \
        + triple(p[1] - p[4] + (p[2] - p[5]), p[6] - p[1], p[5] - p[0])
    return v * TWELFTH


@rs.func
def area_face(p0, p1, p2, p3):
    """AreaFace: |f|^2 |g|^2 - (f.g)^2 with f, g the quad's diagonal difference and sum."""
    f = (p2 - p0) - (p3 - p1)
    g = (p2 - p0) + (p3 - p1)
    return rs.dot(f, f) * rs.dot(g, g) - rs.dot(f, g) * rs.dot(f, g)


@rs.func
def char_length(p, volume):
    """CalcElemCharacteristicLength: 4 V / sqrt(the largest face's AreaFace)."""
    m = 0.0
    m = max(area_face(p[0], p[1], p[2], p[3]), m)
    m = max(area_face(p[4], p[5], p[6], p[7]), m)
    m = max(area_face(p[0], p[1], p[5], p[4]), m)
    m = max(area_face(p[1], p[2], p[6], p[5]), m)
    m = max(area_face(p[2], p[3], p[7], p[6]), m)
    m = max(area_face(p[3], p[0], p[4], p[7]), m)
    return 4.0 * volume / math.sqrt(m)


@rs.func
def jacobian(c):
    """The three rows 0.125 * (xi, eta, zeta differences) of one coordinate's 8 values."""
    return (0.125 * ((c[6] - c[0]) + (c[5] - c[3]) - (c[7] - c[1]) - (c[4] - c[2])),
            0.125 * ((c[6] - c[0]) - (c[5] - c[3]) + (c[7] - c[1]) - (c[4] - c[2])),
            0.125 * ((c[6] - c[0]) + (c[5] - c[3]) + (c[7] - c[1]) + (c[4] - c[2])))


@rs.func
def shape_derivatives(x, y, z):
    """CalcElemShapeFunctionDerivatives: (b_x[0..3], b_y[0..3], b_z[0..3], detJ); b[4..7]
    are the negatives of b[2], b[3], b[0], b[1]."""
    fx = jacobian(x)
    fy = jacobian(y)
    fz = jacobian(z)
    cjxxi = (fy[1] * fz[2]) - (fz[1] * fy[2])
    cjxet = -(fy[0] * fz[2]) + (fz[0] * fy[2])
    cjxze = (fy[0] * fz[1]) - (fz[0] * fy[1])
    cjyxi = -(fx[1] * fz[2]) + (fz[1] * fx[2])
    cjyet = (fx[0] * fz[2]) - (fz[0] * fx[2])
    cjyze = -(fx[0] * fz[1]) + (fz[0] * fx[1])
    cjzxi = (fx[1] * fy[2]) - (fy[1] * fx[2])
    cjzet = -(fx[0] * fy[2]) + (fy[0] * fx[2])
    cjzze = (fx[0] * fy[1]) - (fy[0] * fx[1])
    det = 8.0 * (fx[1] * cjxet + fy[1] * cjyet + fz[1] * cjzet)
    return (-cjxxi - cjxet - cjxze, cjxxi - cjxet - cjxze, cjxxi + cjxet - cjxze,
            -cjxxi + cjxet - cjxze,
            -cjyxi - cjyet - cjyze, cjyxi - cjyet - cjyze, cjyxi + cjyet - cjyze,
            -cjyxi + cjyet - cjyze,
            -cjzxi - cjzet - cjzze, cjzxi - cjzet - cjzze, cjzxi + cjzet - cjzze,
            -cjzxi + cjzet - cjzze,
            det)


@rs.func
def jacobian_volume(x, y, z):
    """Only detJ of `shape_derivatives` (what the stress integration keeps of it)."""
    fx = jacobian(x)
    fy = jacobian(y)
    fz = jacobian(z)
    cjxet = -(fy[0] * fz[2]) + (fz[0] * fy[2])
    cjyet = (fx[0] * fz[2]) - (fz[0] * fx[2])
    cjzet = -(fx[0] * fy[2]) + (fy[0] * fx[2])
    return 8.0 * (fx[1] * cjxet + fy[1] * cjyet + fz[1] * cjzet)


@rs.func
def face_normal(pa, pb, pc, pd):
    """SumElemFaceNormal's area vector of the face (a, b, c, d) (added to its 4 nodes)."""
    b0 = 0.5 * (pd + pc - pb - pa)
    b1 = 0.5 * (pc + pb - pd - pa)
    return 0.25 * rs.cross(b0, b1)


@rs.func
def velocity_gradient(b0, b1, b2, b3, u, inv):
    """One diagonal term of CalcElemVelocityGradient: a row b of the derivatives against u."""
    return inv * (b0 * (u[0] - u[6]) + b1 * (u[1] - u[7]) + b2 * (u[2] - u[4])
                  + b3 * (u[3] - u[5]))


@rs.func
def volu_der(a0, a1, a2, a3, a4, a5):
    """VoluDer of the 6 points a0 .. a5: the volume's derivative (dvdx, dvdy, dvdz) at one
    node (CalcElemVolumeDerivative passes each node's permutation)."""
    dvdx = (a1[1] + a2[1]) * (a0[2] + a1[2]) - (a0[1] + a1[1]) * (a1[2] + a2[2]) \
        + (a0[1] + a4[1]) * (a3[2] + a4[2]) - (a3[1] + a4[1]) * (a0[2] + a4[2]) \
        - (a2[1] + a5[1]) * (a3[2] + a5[2]) + (a3[1] + a5[1]) * (a2[2] + a5[2])
    dvdy = - (a1[0] + a2[0]) * (a0[2] + a1[2]) + (a0[0] + a1[0]) * (a1[2] + a2[2]) \
        - (a0[0] + a4[0]) * (a3[2] + a4[2]) + (a3[0] + a4[0]) * (a0[2] + a4[2]) \
        + (a2[0] + a5[0]) * (a3[2] + a5[2]) - (a3[0] + a5[0]) * (a2[2] + a5[2])
    dvdz = - (a1[1] + a2[1]) * (a0[0] + a1[0]) + (a0[1] + a1[1]) * (a1[0] + a2[0]) \
        - (a0[1] + a4[1]) * (a3[0] + a4[0]) + (a3[1] + a4[1]) * (a0[0] + a4[0]) \
        + (a2[1] + a5[1]) * (a3[0] + a5[0]) - (a3[1] + a5[1]) * (a2[0] + a5[0])
    return (dvdx * TWELFTH, dvdy * TWELFTH, dvdz * TWELFTH)
