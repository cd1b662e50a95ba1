"""The Sedov blast problem on `hexmesh.box(s)`: fields, regions, initial state, and the time loop
(TimeIncrement in Python, everything per node and per element in relsim kernels).

The domain gives the relations ``nodes`` and ``elems`` with the reference's names: the 8 node
keys ``nodelist``, the 6 face-neighbour keys, ``elemBC``, the symmetry-plane node subsets
``symmX/Y/Z`` (mapped over by the boundary-condition kernels) and the node -> element-corner
grouping ``nodes.corners``. The port does not use the grouping: the reference needs it for its
OpenMP force gather, while relsim's reductions through keys build the equivalent inverse index
themselves and fold in the serial order. Regions are element subsets ``region1 ..``, runs of
consecutive elements drawn as the reference draws them (`regions`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

import relsim as rs
from relsim.domains import hexmesh

from . import elements, nodal
from .constants import DELTATIMEMULTLB, DELTATIMEMULTUB, DTFIXED, DTMAX, EBASE, STOPTIME
from .regions import region_numbers, repetitions

NODE_FIELDS = ("xd", "yd", "zd", "xdd", "ydd", "zdd", "nodalMass")
ELEM_FIELDS = ("e", "p", "q", "ql", "qq", "v", "volo", "delv", "vdov", "arealg", "ss",
               "elemMass", "vnew", "delv_xi", "delv_eta", "delv_zeta", "delx_xi", "delx_eta",
               "delx_zeta", "e_new", "p_new", "q_new")


class VolumeError(RuntimeError):
    """A negative element volume or relative volume (the reference exits with status 255)."""
    status = 255


class QStopError(RuntimeError):
    """The artificial viscosity q exceeded qstop (the reference exits with status 254)."""
    status = 254


@dataclass
class Globals:
    dt: rs.Global = field(default_factory=lambda: rs.Global(rs.f64, 0.0))
    dtcourant: rs.Global = field(default_factory=lambda: rs.Global(rs.f64, 1.0e20))
    dthydro: rs.Global = field(default_factory=lambda: rs.Global(rs.f64, 1.0e20))
    volume_error: rs.Global = field(default_factory=lambda: rs.Global(rs.bool_, False))
    qstop_error: rs.Global = field(default_factory=lambda: rs.Global(rs.bool_, False))


def _snapshot(f) -> np.ndarray:
    """Field `f`'s values, to load back: a copy (never `numpy()`'s view: see `__init__`), or
    for a field whose rows all hold the same bits (most are 0.0 before the first cycle) one
    row broadcast to every row: at s=50 the copies of every field took 36 MB, these 7.7 MB."""
    a = f.numpy(copy=True)
    rows = a.reshape(len(a), -1).view(np.uint8).reshape(len(a), -1)
    if len(a) and (rows == rows[:1]).all():
        return np.broadcast_to(a[:1].copy(), a.shape)
    return a.copy()


class Lulesh:
    """One LULESH domain of s^3 elements: `run()` advances it to the stop time (or `its`)."""

    def __init__(self, s: int = 30, num_reg: int = 11, balance: int = 1, cost: int = 1,
                 config: rs.Config | None = None):
        self.s, self.num_reg, self.balance, self.cost = s, num_reg, balance, cost
        self.cfg = config  # None: the process default (rs.configure)
        self.mesh = hexmesh.box(s, corners=False)  # (forces go through nodelist)
        self.nodes, self.elems = self.mesh.nodes, self.mesh.elems
        for name in NODE_FIELDS:
            self.nodes.new_field(name, rs.f64, init=0.0)
        self.nodes.new_field("f", rs.vec(3, rs.f64), init=0.0)  # the force (fx, fy, fz)
        for name in ELEM_FIELDS:
            self.elems.new_field(name, rs.f64, init=0.0)
        self.elems.v.fill(1.0)
        self.symm = [self.nodes.subsets[n] for n in ("symmX", "symmY", "symmZ")]
        # regions: runs of consecutive elements, numbered 1..num_reg as in the reference
        self.reg_num = region_numbers(s ** 3, num_reg, balance)
        self.regions = []  # (subset, rep) per region, ascending region index
        for r in range(num_reg):
            rows = np.flatnonzero(self.reg_num == r + 1)
            sub = self.elems.subset(f"region{r + 1}", rows) if len(rows) else None
            self.regions.append((sub, repetitions(r, num_reg, cost)))
        self.g = Globals()
        self.k = {**nodal.build(self.g), **elements.build(self.g)}
        self.checksums = elements.checksums(self.elems, self.nodes)
        # initial state; a launch made once runs its serial variant (the same bits), which
        # compiles in about a third of the time of the parallel one
        once = replace(config or rs.config.current(), parallel_threshold=1 << 62)
        self.elems.foreach(self.k["initial_mass"], once)
        scale = s / 45.0
        self.einit = EBASE * scale * scale * scale
        # copies in and out, never numpy()'s view: a field handed out must be kept current on
        # the host after every launch, which on target cuda is a download per launch
        e = self.elems.e.numpy(copy=True)
        e[0] = self.einit
        self.elems.e.load(e)
        volo0 = float(self.elems.volo.numpy(copy=True)[0])
        self.deltatime = (0.5 * float(np.cbrt(volo0))) / math.sqrt(2.0 * self.einit)
        self.time = 0.0
        self.cycle = 0
        self.dtcourant = 1.0e20
        self.dthydro = 1.0e20

    # -- the time loop ----------------------------------------------------------------------
    def time_increment(self) -> None:
        """TimeIncrement: the new dt from the constraints, ramped by at most 1.2x per cycle
        and cut so the run lands on the stop time."""
        targetdt = STOPTIME - self.time
        if DTFIXED <= 0.0 and self.cycle != 0:
            olddt = self.deltatime
            gnewdt = 1.0e20
            if self.dtcourant < gnewdt:
                gnewdt = self.dtcourant / 2.0
            if self.dthydro < gnewdt:
                gnewdt = self.dthydro * 2.0 / 3.0
            newdt = gnewdt
            ratio = newdt / olddt
            if ratio >= 1.0:
                if ratio < DELTATIMEMULTLB:
                    newdt = olddt
                elif ratio > DELTATIMEMULTUB:
                    newdt = olddt * DELTATIMEMULTUB
            if newdt > DTMAX:
                newdt = DTMAX
            self.deltatime = newdt
        if targetdt > self.deltatime and targetdt < 4.0 * self.deltatime / 3.0:
            targetdt = 2.0 * self.deltatime / 3.0
        if targetdt < self.deltatime:
            self.deltatime = targetdt
        self.time += self.deltatime
        self.cycle += 1

    def _check(self, what: str) -> None:
        if self.g.volume_error.value:
            raise VolumeError(f"VolumeError: a negative element volume ({what}) in cycle "
                              f"{self.cycle}")
        if self.g.qstop_error.value:
            raise QStopError(f"QStopError: the artificial viscosity q exceeded qstop in cycle "
                             f"{self.cycle}")

    def launches(self) -> list:
        """(kernel, relation or subset) of each launch of a cycle, in the order it makes them."""
        k, nodes, elems = self.k, self.nodes, self.elems
        return [(k["zero_forces"], nodes),
                (k["integrate_stress"], elems), (k["hourglass"], elems),
                (k["acceleration"], nodes), (k["symmetry_x"], self.symm[0]),
                (k["symmetry_y"], self.symm[1]), (k["symmetry_z"], self.symm[2]),
                (k["velocity"], nodes), (k["position"], nodes), (k["kinematics"], elems),
                (k["q_gradients"], elems), (k["q_limiter"], elems)] + \
            [(k["eos"], sub) for sub, _ in self.regions if sub is not None] + \
            [(k["finish"], elems)]

    def lagrange_leapfrog(self) -> None:
        k, g, nodes, elems, cfg = self.k, self.g, self.nodes, self.elems, self.cfg
        g.dt.value = self.deltatime
        # LagrangeNodal
        nodes.foreach(k["zero_forces"], cfg)
        elems.foreach(k["integrate_stress"], cfg)
        self._check("Jacobian determinant")
        elems.foreach(k["hourglass"], cfg)
        self._check("relative volume v")
        nodes.foreach(k["acceleration"], cfg)
        self.symm[0].foreach(k["symmetry_x"], cfg)
        self.symm[1].foreach(k["symmetry_y"], cfg)
        self.symm[2].foreach(k["symmetry_z"], cfg)
        nodes.foreach(k["velocity"], cfg)
        nodes.foreach(k["position"], cfg)
        # LagrangeElements
        elems.foreach(k["kinematics"], cfg)
        self._check("new relative volume")
        elems.foreach(k["q_gradients"], cfg)
        elems.foreach(k["q_limiter"], cfg)
        self._check("clamped relative volume")
        eos = k["eos"]
        for sub, rep in self.regions:
            if sub is not None:
                for _ in range(rep):
                    sub.foreach(eos, cfg)
        # UpdateVolumes + CalcTimeConstraintsForElems
        g.dtcourant.value = 1.0e20
        g.dthydro.value = 1.0e20
        elems.foreach(k["finish"], cfg)
        self.dtcourant = float(g.dtcourant.value)
        self.dthydro = float(g.dthydro.value)

    def warm_up(self, background: bool = False) -> int:
        """Compile (or load from the cache) every kernel by running one cycle, then restore the
        state exactly, so that the timed loop measures the simulation only. With `background`,
        kernels whose parallel variant is not in the cache run their serial one (same bits)
        while a worker compiles the parallel ones (`rs.precompile`): the run starts sooner, and
        its first cycles may run serial code. Returns what `rs.precompile` compiled (or
        started compiling) ahead."""
        fields = [f for rel in (self.nodes, self.elems) for f in rel.fields.values()
                  if not f.is_key]
        saved = [(f, _snapshot(f)) for f in fields]
        scalars = (self.time, self.cycle, self.deltatime, self.dtcourant, self.dthydro)
        # with a cold cache the cycle is mostly compilation: share it out over the cores
        ahead = rs.precompile(self.launches(), self.cfg, background=background)
        try:
            self.time_increment()
            self.lagrange_leapfrog()
        except (VolumeError, QStopError):
            pass  # the run itself will meet it again and report it
        for f, a in saved:
            f.load(a)
        self.time, self.cycle, self.deltatime, self.dtcourant, self.dthydro = scalars
        self.g.volume_error.value = False
        self.g.qstop_error.value = False
        return ahead

    # -- checkpoint / restart -----------------------------------------------------------------
    SCALARS = ("time", "cycle", "deltatime", "dtcourant", "dthydro")

    def state(self) -> tuple:
        """(relations, globals, meta): what `rs.checkpoint` saves for a restart."""
        globs = {name: getattr(self.g, name) for name in self.g.__dataclass_fields__}
        meta = {name: getattr(self, name) for name in self.SCALARS}
        meta["problem"] = [self.s, self.num_reg, self.balance, self.cost]
        return [self.nodes, self.elems], globs, meta

    def checkpoint(self, path) -> None:
        rs.checkpoint(path, *self.state())

    def restart(self, path) -> None:
        """Continue from the checkpoint at `path` (written by a run of the same problem, on any
        number of ranks)."""
        rels, globs, meta = self.state()
        saved = rs.restart(path, rels, globs)
        if saved["problem"] != meta["problem"]:
            raise rs.DataError(f"restart {path}: a checkpoint of problem (s, regions, balance, "
                               f"cost) = {saved['problem']}, not {meta['problem']}")
        for name in self.SCALARS:
            setattr(self, name, saved[name])

    def run(self, its: int = 9999999, on_cycle=None) -> None:
        while self.time < STOPTIME and self.cycle < its:
            self.time_increment()
            self.lagrange_leapfrog()
            if on_cycle is not None:
                on_cycle(self)

    # -- results ----------------------------------------------------------------------------
    def origin_energy(self) -> float:
        return float(self.elems.e.numpy(copy=True)[0])

    def symmetry(self) -> tuple:
        """The reference's plane-0 x<->y symmetry check of e: (MaxAbsDiff, TotalAbsDiff,
        MaxRelDiff); a 0/0 relative difference (NaN) is skipped, as the reference's
        comparisons do."""
        e = self.elems.e.numpy(copy=True)
        nx = self.s
        max_abs = total = max_rel = 0.0
        for j in range(nx):
            for k in range(j + 1, nx):
                d = abs(float(e[j * nx + k]) - float(e[k * nx + j]))
                total += d
                if max_abs < d:
                    max_abs = d
                den = float(e[k * nx + j])
                if den != 0.0:
                    rel = d / den
                else:  # C's division: 0/0 is NaN, d/0 is +-inf
                    rel = math.nan if d == 0.0 else math.copysign(math.inf, den)
                if max_rel < rel:
                    max_rel = rel
        return max_abs, total, max_rel
