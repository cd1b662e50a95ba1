"""Taichi peer of the tet heat step (bench/peers/heat_tet.py): CPU backend, f64 fields, the
edge scatter with Taichi's atomic ``+=`` / ``-=``, then the vertex update. Importing this module
imports taichi; `Heat(threads, ...)` calls ``ti.init`` (which resets any earlier Taichi program,
so a new thread count means a new `Heat`). No `from __future__ import annotations` here: Taichi
reads the kernels' annotations as objects."""

import numpy as np
import taichi as ti

VERSION = ti.__version__ if isinstance(ti.__version__, str) else ".".join(map(str, ti.__version__))


class Heat:
    """One Taichi program at `threads` CPU threads holding the mesh and the state."""

    def __init__(self, threads, head, tail, k, c, dt):
        ti.init(arch=ti.cpu, cpu_max_num_threads=threads, default_fp=ti.f64,
                log_level=ti.WARN)
        nv, ne = len(c), len(k)
        self.dt = float(dt)
        f = {name: ti.field(ti.f64, shape=nv) for name in ("c", "T", "Q", "flux")}
        ef = {"k": ti.field(ti.f64, shape=ne), "head": ti.field(ti.i32, shape=ne),
              "tail": ti.field(ti.i32, shape=ne)}
        ef["k"].from_numpy(np.ascontiguousarray(k, dtype=np.float64))
        ef["head"].from_numpy(np.asarray(head, dtype=np.int32))
        ef["tail"].from_numpy(np.asarray(tail, dtype=np.int32))
        f["c"].from_numpy(np.ascontiguousarray(c, dtype=np.float64))
        kf, hf, tf = ef["k"], ef["head"], ef["tail"]
        cf, Tf, Qf, ff = f["c"], f["T"], f["Q"], f["flux"]

        @ti.kernel
        def conduct():
            for e in range(ne):
                t = tf[e]
                h = hf[e]
                d = kf[e] * (Tf[h] - Tf[t])
                ff[t] += d  # atomic in a parallel loop
                ff[h] -= d

        @ti.kernel
        def update(dt: ti.f64):
            for v in range(nv):
                q = Qf[v] + dt * ff[v]
                Qf[v] = q
                ff[v] = 0.0
                Tf[v] = q / cf[v]

        self._conduct, self._update = conduct, update
        self.fields = f

    def load(self, T, Q) -> None:
        self.fields["T"].from_numpy(np.ascontiguousarray(T, dtype=np.float64))
        self.fields["Q"].from_numpy(np.ascontiguousarray(Q, dtype=np.float64))
        self.fields["flux"].fill(0.0)

    def step(self) -> None:
        self._conduct()
        self._update(self.dt)
        ti.sync()

    def state(self):
        return self.fields["T"].to_numpy(), self.fields["Q"].to_numpy()
