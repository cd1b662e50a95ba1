"""Programs the MPI tests run under ``mpiexec -n N`` (and on one process, for the answer they
must equal): ``python programs.py NAME TARGET OUTDIR``. Each rank writes ``OUTDIR/<rank>.json``:
digests of every field and Global it computed, gathered to every rank as the host sees them."""
from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np

import relsim as rs


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:20]


def shuffled_graph(n_v=300, n_e=1100, seed=3):
    """A random graph (vertices and edges in no spatial order), with positions."""
    rng = np.random.default_rng(seed)
    V = rs.Relation("V", n_v)
    E = rs.Relation("E", n_e)
    V.new_field("pos", rs.vec(2, rs.f64)).load(rng.random((n_v, 2)))
    E.new_key_field("tail", V).load(rng.integers(0, n_v, n_e))
    E.new_key_field("head", V).load(rng.integers(0, n_v, n_e))
    E.new_field("k", rs.f64).load(rng.random(n_e) + 0.5)
    V.new_field("T", rs.f64).load(rng.random(n_v))
    V.new_field("flux", rs.f64)
    V.new_field("count", rs.i64)
    return V, E


def design(outdir):
    """The design sketch's script, as written there (on a generated box mesh)."""
    from relsim.domains import tetmesh
    mesh = tetmesh.box(5)
    V, E = mesh.vertices, mesh.edges
    V.new_field("T", rs.f64, init=0.0)
    V.new_field("flux", rs.f64, init=0.0)
    E.new_field("k", rs.f64, init=1.0)
    V.T.load(np.sin(7.0 * V.pos.numpy(copy=True)).sum(axis=1) ** 2)
    dt = rs.Global(rs.f64, 1e-3)
    heat = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def conduct(e):
        d = e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux += -d

    @rs.kernel
    def update(v):
        v.T += dt * v.flux
        v.flux = 0.0
        heat += v.T

    history = []
    for _ in range(50):
        heat.value = 0.0
        E.foreach(conduct)
        V.foreach(update)
        history.append(heat.value.hex())
    local = V.T.numpy(local=True)
    assert len(local) == V.partition.owned if V.partition else len(local) == V.size
    if rs.ranks().size > 1:  # rs.explain shows this rank's share and ghosts
        text = rs.explain(conduct, E)
        assert f"-- on MPI rank {rs.ranks().rank} of {rs.ranks().size}" in text, text
        assert "ghosts of vertices:" in text and "via e.head.T, e.tail.T; 1 key hop(s)" in text
        # with debug checks: the wrapped launch's checks are listed too
        text = rs.explain(conduct, E, rs.Config(target=rs.config.current().target, debug=True))
        assert f"-- on MPI rank {rs.ranks().rank}" in text, text
        checks = text.split("-- debug checks (number: check, line)\n")[1].splitlines()
        assert checks and checks[0].startswith("  1: "), text
    return {"T": digest(V.T.numpy()), "heat": history}


def local_load(outdir):
    """Each rank loads the rows it owns (rs.partition made before any kernel ran); kernels
    then read other ranks' rows as ghosts, and the host sees every row."""
    V, E = shuffled_graph()
    part = rs.partition(V, "blocks")
    rows = np.arange(V.size) if part is None else part.owned_rows
    V.new_field("w", rs.f64)
    V.w.load(np.sqrt(rows + 1.0), local=True)
    total = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def spread(e):
        e.head.flux += e.tail.w * e.k

    @rs.kernel
    def add(v):
        total += v.w + v.flux

    E.foreach(spread)
    V.foreach(add)
    return {"w": digest(V.w.numpy()), "flux": digest(V.flux.numpy()), "total": total.value.hex()}


def heat(outdir):
    """The DESIGN example (edges conduct, vertices update, a Global sum), plus every kind of
    Global reduction, a subset launch, a grouping loop, and keys through locals."""
    V, E = shuffled_graph()
    E.group_by("tail", "out")
    dt = rs.Global(rs.f64, 0.1)
    total = rs.Global(rs.f64, 0.0)
    hottest = rs.Global(rs.f64, 0.0)
    coldest = rs.Global(rs.f64, 10.0)
    nedges = rs.Global(rs.i64, 0)
    any_hot = rs.Global(rs.bool_, False)
    top = rs.Global(rs.vec(2, rs.f64), 0.0)
    drift = rs.Global(rs.f64, 0.0, sum="ordered")  # (added in row order over every rank)
    reach = rs.Global(rs.f64, 0.0, sum="ordered")

    @rs.kernel
    def conduct(e):
        a = e.tail
        d = e.k * (e.head.T - a.T)
        a.flux += d
        e.head.flux -= d
        e.head.count += 1

    @rs.kernel
    def update(v):
        v.T += dt * v.flux
        drift += v.T * 1e8
        drift -= v.flux
        v.flux = 0.0
        total += v.T
        rs.reduce_argmax(hottest, v.T)
        coldest = min(coldest, v.T)
        any_hot |= v.T > 0.9
        top = max(top, v.pos * v.T)

    @rs.kernel
    def fan_out(v):
        s = 0.0
        for e in v.out:
            s += e.k * e.head.T
        v.flux = s * 1e-3

    @rs.kernel
    def count_edges(e):
        nedges += 1
        reach += e.k * 1e-3 + e.head.T

    history = []
    left = E.subset("left", E.tail.numpy() < 150)
    for _ in range(12):
        total.value = 0.0
        E.foreach(conduct)
        V.foreach(update)
        V.foreach(fan_out)
        left.foreach(count_edges)
        history.append((total.value, hottest.value, hottest.row, coldest.value,
                        nedges.value, any_hot.value, *top.value, drift.value, reach.value))
    return {"T": digest(V.T.numpy()), "flux": digest(V.flux.numpy()),
            "count": digest(V.count.numpy()), "history": repr(history)}


def lane_sums(outdir):
    """Float64 Global sums a cpu launch folds in lanes, merged over ranks: sums the lanes
    decide, and an exact tie and a complete cancellation, which they leave to the slots (a
    kernel with no other effect runs again with them; one that writes a field wrote them), a
    vector sum, and a subset launch of rows of one rank only. "paths": how this process merged
    them (`global_merge.PATHS`)."""
    from relsim.runtime.parallel import global_merge
    n = 40_000  # (a few chunks of lanes on each rank)
    # a rank sends its first chunk of lanes with its count, the rest in a second message (2
    # ranks: two chunks each; 3 ranks: one)
    global_merge.INLINE_CHUNKS = 1
    rng = np.random.default_rng(11)
    V = rs.Relation("V", n)
    x = rng.standard_normal(n)
    V.new_field("x", rs.f64)
    V.new_field("y", rs.f64)
    V.new_field("p", rs.vec(2, rs.f64)).load(rng.random((n, 2)))
    s, t = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
    w = rs.Global(rs.vec(2, rs.f64), 0.0)

    @rs.kernel
    def sums(v):  # (no other effect)
        s += v.x
        w += v.p * v.x

    @rs.kernel
    def doubled(v):
        v.y = 2.0 * v.x
        t += v.y

    tie = np.zeros(n)
    tie[0], tie[-1] = 2.0 ** 53, 1.0  # 2**53 + 1: halfway, rounds to even
    half = x[: n // 2]
    cases = {"random": x, "tie": tie, "cancel": np.concatenate([half, -half[::-1]])}
    history = []
    for case, values in cases.items():
        V.x.load(values)
        for _ in range(2):
            s.value, t.value, w.value = 0.0, 0.0, (0.0, 0.0)
            V.foreach(sums)
            V.foreach(doubled)
            history.append((case, s.value.hex(), t.value.hex(), *(c.hex() for c in w.value)))
    first = V.subset("first", np.arange(n) < 50)
    first.foreach(sums)
    history.append(("subset", s.value.hex(), *(c.hex() for c in w.value)))
    # min/max, arg-max and integer sums, folded per chunk in lanes: their candidates merged
    # over ranks (signed zeros, ties and NaNs: the lowest row's wins)
    lo, top = rs.Global(rs.f64, 1.0), rs.Global(rs.f64, -1.0)
    hi, count = rs.Global(rs.vec(2, rs.f64), 0.0), rs.Global(rs.i64, 0)

    @rs.kernel
    def extremes(v):
        lo = min(lo, v.x)
        hi = max(hi, v.p * v.x)
        rs.reduce_argmax(top, v.x)
        count += 1

    nan = np.abs(x)
    nan[[3 * n // 4, n // 2 + 1, 3 * n // 4 + 5]] = np.nan
    zeros = np.where(rng.random(n) < 0.5, 0.0, -0.0)
    for case, values in {"zeros": zeros, "nan": nan, "ties": np.floor(4 * rng.random(n)),
                         "random": x}.items():
        V.x.load(values)
        lo.value, top.value, hi.value = 1.0, -1.0, (0.0, 0.0)
        V.foreach(extremes)
        history.append((case, lo.value.hex(), top.value.hex(), top.row,
                        *(c.hex() for c in hi.value), int(count.value)))
    return {"history": history, "y": digest(V.y.numpy()), "paths": global_merge.PATHS}


def tetheat(outdir):
    """tetheat on a box mesh whose vertices and tets are shuffled (no locality in row order),
    vertices partitioned by METIS, writing a .pvd (VTU) and an .xdmf (HDF5) time series to
    `outdir`/files."""
    from relsim.domains import tetmesh
    from relsim_simulations import tetheat as sim
    points, tets = tetmesh.box_arrays(5, 4, 3)
    rng = np.random.default_rng(7)
    perm = rng.permutation(len(points))
    inverse = np.argsort(perm)
    mesh = tetmesh.from_arrays(points[perm], inverse[tets][rng.permutation(len(tets))])
    rs.partition(mesh.vertices, "metis")
    initial, history, dt = sim.simulate(mesh, steps=15, output=os.path.join(outdir, "files"),
                                        every=5)
    return {"T": digest(mesh.vertices.T.numpy()), "history": [h.hex() for h in history],
            "dt": dt.hex()}


def fem(outdir):
    """The gallery's Neo-Hookean beam (simulations/fem.py), its vertices partitioned by
    METIS: forces reduced into vertices owned by other ranks, a subset (the free vertices),
    exact energy sums, and a VTU series."""
    from relsim_simulations import fem as sim
    mesh = sim.beam(2)
    rs.partition(mesh.vertices, "metis")
    history = sim.simulate(mesh, sim.time_step(2), steps=40, every=10,
                           output=os.path.join(outdir, "files"))
    return {"x": digest(mesh.vertices.x.numpy()), "vel": digest(mesh.vertices.vel.numpy()),
            "history": {k: [v.hex() for v in h] for k, h in history.items()}}


def cloth(outdir):
    """The gallery's cloth (simulations/cloth.py), its vertices partitioned by METIS: spring
    forces reduced into vertices of other ranks, min / max Globals, and a VTU series."""
    from relsim_simulations import cloth as sim
    mesh, pairs = sim.sheet(4)
    rs.partition(mesh.vertices, "metis")
    history, _ = sim.simulate(mesh, pairs, frames=3, substeps=10,
                              output=os.path.join(outdir, "files"))
    return {"x": digest(mesh.vertices.x.numpy()),
            "history": {k: [v.hex() for v in h] for k, h in history.items()}}


def md(outdir):
    """The gallery's Lennard-Jones gas (simulations/md.py) on several ranks: particles binned
    into a periodic grid, neighbour-cell loops, Global sums."""
    from relsim_simulations import md as sim
    atoms, history = sim.simulate(3, steps=3, every=1, density=0.2)
    return {"pos": digest(atoms.rel.pos.numpy()),
            "history": {k: [v.hex() for v in h] for k, h in history.items()}}


def smoke(outdir):
    """The gallery's stable fluids (simulations/smoke.py) on several ranks: advection at
    computed offsets, a subset launch, Global sums and max, linalg.cg, a VTU series."""
    from relsim_simulations import smoke as sim
    C, history = sim.simulate(16, steps=3, every=1, output=os.path.join(outdir, "files"))
    return {"state": digest(*(C.field(f).numpy() for f in ("ux", "uy", "d", "p"))),
            "history": {k: [repr(v) for v in h] for k, h in history.items()}}


def sph(outdir):
    """The gallery's dam break (simulations/sph.py) on several ranks: fluid and wall particles
    binned into a grid periodic on one axis, neighbour-cell loops, Global max and sums, a VTU
    series of the particles."""
    from relsim_simulations import sph as sim
    parts, _, history = sim.simulate(3, until=0.2, every=5, tank=1.5,
                                     output=os.path.join(outdir, "files"))
    return {"pos": digest(parts.rel.pos.numpy()), "rho": digest(parts.rel.rho.numpy()),
            "history": {k: [repr(v) for v in h] for k, h in history.items()}}


def tape(outdir):
    """rs.Tape on several ranks: gradients through key reads and reductions (ghosts), a branch,
    Global sums and reads, loops over a grouping and constant ranges, with and without
    checkpoints (tests/test_tape.py's programs, larger), min/max into fields through keys,
    transposed grouping loops (cell lists and gathers)."""
    from tests.test_tape import Gather, Graph
    g = Graph(nv=80, ne=300, seed=5)
    dT, dk, dkappa = g.gradients()
    out = {"dT": digest(dT), "dk": digest(dk), "dkappa": dkappa.hex()}
    g.V.T.load(g.T0)
    with rs.Tape(checkpoint_every=3) as t:
        for _ in range(3):
            g.E.foreach(g.conduct)
            g.V.foreach(g.update)
        g.loss.value = 0.0
        g.V.foreach(g.misfit)
    t.backward(g.loss)
    out["checkpointed"] = digest(g.V.T.grad.numpy(), g.E.k.grad.numpy())
    assert out["checkpointed"] == digest(dT, dk)
    dT2, dk2 = Gather().gradients()
    out["gather"] = digest(dT2, dk2)
    from tests.runtime.test_adjoint_field_picks import graph
    for op in ("min", "max"):  # min/max into fields through keys: the chosen rows' ghosts
        run, *_ = graph(op)
        out[f"field {op}"] = digest(*run(tape=rs.Tape()))
    from tests.runtime.test_adjoint_transpose import cells, gather
    run = cells(seed=3, n=60, fluid_only=True)  # transposed loops: kept adjoints' ghosts
    out["cells"] = digest(*run(run.x0, rs.Tape()))
    run = gather(seed=2)
    out["gather"] = digest(*run(run.k0, rs.Tape()))
    return out


def tangents(outdir):
    """rs.Tangents on several ranks (tangent reads through keys into other ranks' rows, min/max
    reductions' chosen contributions, Global tangents) and relsim.optimize's least squares on
    them (the dense and the matrix-free inner solve)."""
    import numpy as np

    from relsim import optimize
    from tests.optimize.test_least_squares import _fit, _smoothing
    from tests.test_tangents import _direction, _graph, _outputs, _program
    V, E = _graph(n=40, seed=6)
    run = _program(V, E)
    with rs.Tangents(_direction(V, E, np.random.default_rng(9))) as tan:
        run()
    out = {"tangents": digest(*[np.asarray(tan.of(t)) for t in _outputs(V)])}
    for inner in ("sparse", "cg"):
        V, E, run, _ = _smoothing(50)
        info = optimize.least_squares(run, [V.rd, E.rs_], V.u, inner=inner, max_iterations=15)
        out[f"smoothing {inner}"] = digest(V.u.numpy(), np.array(info.costs))
    obs, b, resid, _ = _fit()
    info = optimize.least_squares(lambda: obs.foreach(resid), obs.r, b)
    out["fit"] = digest(np.asarray(b.value), np.array(info.costs))
    return out


def exposed(outdir):
    """A kernel writing many fields whose arrays the host holds (numpy() called: each is
    gathered after every launch), launched again after fields are added: every rank must
    gather them in one order (they were gathered in the order of a set: values swapped)."""
    import numpy as np
    n = 30
    V = rs.Relation("V", n)
    E = rs.Relation("E", n - 1)
    E.new_key_field("tail", V, values=np.arange(n - 1))
    E.new_key_field("head", V, values=np.arange(1, n))
    V.new_field("u", rs.f64).load(np.arange(n) * 1.0)
    V.new_field("rowno", rs.i64).load(np.arange(n))
    names = [f"o{i}" for i in range(10)]
    for i, name in enumerate(names):
        E.new_field(name, rs.f64 if i % 2 else rs.i64)
    body = "\n".join(f"    e.{name} = e.head.u * {i}" if i % 2 else
                      f"    e.{name} = e.head.rowno + {i}" for i, name in enumerate(names))
    kernel = _kernel_from_source(f"def many(e):\n{body}\n", "many", outdir)
    out = {}
    for round_ in range(3):
        E.foreach(kernel)
        held = [E.field(name).numpy() for name in names]  # (exposed: gathered after launches)
        for i, values in enumerate(held):
            want = np.arange(1, n) * float(i) if i % 2 else np.arange(1, n) + i
            assert np.array_equal(values, want), (round_, names[i], values[:4], want[:4])
        E.new_field(f"extra{round_}", rs.f64)  # (a schema change between launches)
        out[f"round {round_}"] = digest(*held)
    return out


def _kernel_from_source(text, name, outdir):
    """A kernel defined in a file of its own (kernels need source)."""
    import importlib.util
    import os
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(str(outdir), f"{name}_{rs.ranks().rank}.py")
    with open(path, "w") as fh:
        fh.write("import relsim as rs\n\n@rs.kernel\n" + text)
    spec = importlib.util.spec_from_file_location(f"prog_{name}_{rs.ranks().rank}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def diffusion2d(outdir):
    from relsim_simulations import diffusion2d as sim
    err, steps = sim.run(20, t_end=0.003)
    return {"error": err.hex(), "steps": steps}


def failing(outdir):
    """Rank 1 raises a RelsimError in the middle of a run; the others go on to a collective."""
    V, E = shuffled_graph()

    @rs.kernel
    def conduct(e):
        e.head.flux += e.k * e.tail.T

    E.foreach(conduct)
    if rs.ranks().rank == 1:
        V.new_field("T", rs.f64)  # a SchemaError: T exists
    V.flux.numpy()  # the others wait here for rank 1
    return {}


def small(outdir):
    """Fewer rows than ranks, a bounded 3-D grid with an interior stencil and boundary writes,
    and a scatter through grid offsets."""
    from relsim.domains import grid
    R = rs.Relation("R", 2)
    R.new_field("x", rs.f64).load([2.5, -1.0])
    low = rs.Global(rs.f64, 0.0)
    n = rs.Global(rs.i64, 0)

    @rs.kernel
    def smallest(r):
        rs.reduce_argmin(low, r.x)
        n += 1

    R.foreach(smallest)
    g = grid.Grid((7, 5, 4), spacing=0.1)
    C = g.cells
    C.new_field("u", rs.f64).load(np.sin(np.arange(C.size) * 0.37))
    C.new_field("lap", rs.f64)
    C.new_field("w", rs.f64)

    @rs.kernel
    def laplace(c):
        c.lap = c(1, 0, 0).u + c(-1, 0, 0).u + c(0, 1, 0).u + c(0, -1, 0).u + c(0, 0, 1).u \
            + c(0, 0, -1).u - 6.0 * c.u

    @rs.kernel
    def edge_value(c):
        c.lap = -c.u

    @rs.kernel
    def spread(c):
        c(1, 0, 0).w += 0.5 * c.lap
        c(0, 1, 0).w += 0.25 * c.lap

    for _ in range(3):
        g.interior(1).foreach(laplace)
        g.boundary(1).foreach(edge_value)
        g.interior(1).foreach(spread)
        C.u.swap(C.lap)
    return {"low": [low.value, low.row], "n": n.value, "u": digest(C.u.numpy()),
            "w": digest(C.w.numpy())}


def _checkpointed():
    V, E = shuffled_graph()
    total = rs.Global(rs.f64, 0.0)
    hottest = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def conduct(e):
        d = e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux -= d

    @rs.kernel
    def update(v):
        v.T += 0.1 * v.flux
        v.flux = 0.0
        total += v.T
        rs.reduce_argmax(hottest, v.T)

    def step(conduct_config=None, update_config=None):
        total.value = 0.0
        E.foreach(conduct, conduct_config)
        V.foreach(update, update_config)
    return [V, E], {"total": total, "hottest": hottest}, step


def checkpoint_write(outdir):
    """5 steps, a checkpoint (outdir/../state.h5), 5 more steps."""
    rels, globs, step = _checkpointed()
    for _ in range(5):
        step()
    rs.checkpoint(os.path.join(outdir, "..", "state.h5"), rels, globs, meta={"step": 5})
    for _ in range(5):
        step()
    return {"T": digest(rels[0].T.numpy(copy=True)), "total": globs["total"].value.hex(),
            "row": globs["hottest"].row}


def checkpoint_read(outdir):
    """From the checkpoint outdir/../state.h5, the last 5 steps."""
    rels, globs, step = _checkpointed()
    meta = rs.restart(os.path.join(outdir, "..", "state.h5"), rels, globs)
    for _ in range(10 - meta["step"]):
        step()
    return {"T": digest(rels[0].T.numpy(copy=True)), "total": globs["total"].value.hex(),
            "row": globs["hottest"].row}


def waiting(outdir):
    """`World.waiting_barrier`, where the other ranks wait while rank 0 compiles a first
    launch: rank 0 sleeps 1.5 s (as if compiling); the CPU time each rank spends waiting."""
    import time

    from relsim.runtime.parallel import world
    w = world.current()
    if w.rank == 0:
        time.sleep(1.5)
    start = time.process_time()
    w.waiting_barrier()
    return {"cpu": time.process_time() - start}


def tiered(outdir):
    """Tiered start-up (`rs.precompile(..., background=True)`) on every rank, with a cache of
    its own: each rank runs the serial variants until its background worker has the parallel
    ones in the disk cache, then binds those; the same bits as one process."""
    import time

    from relsim.runtime import execute
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=os.path.join(outdir, "cache"))
    V, E = shuffled_graph()

    @rs.kernel
    def conduct(e):
        d = 0.0625 * e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux += -d

    @rs.kernel
    def update(v):
        v.T += 0.25 * v.flux
        v.flux = 0.0

    def step():
        E.foreach(conduct, cfg)
        V.foreach(update, cfg)

    launches = [(conduct, E), (update, V)]
    rs.precompile(launches, cfg, background=True)
    exes = [execute.executable(k, R, cfg) for k, R in launches]
    cpu = [getattr(exe, "inner", exe) for exe in exes]  # (on several ranks: the wrapped launch)
    first = cpu[1].tier0  # update runs its serial variant first
    step()
    deadline = time.monotonic() + 300
    while not all(exe.tier_done is None or exe.tier_done() for exe in exes):
        assert time.monotonic() < deadline, "the background worker did not finish"
        time.sleep(0.2)
    for _ in range(3):
        step()
    return {"T": digest(V.T.numpy()), "serial_first": first,
            "parallel_after": not cpu[1].tier0 and cpu[1].bindings[next(iter(cpu[1].bindings))]
            .parallel}


def krylov(outdir):
    """relsim.linalg's CG (with and without Jacobi), BiCGSTAB and GMRES on a random graph, with
    exact and ordered dots: the residual histories and solutions of one process, on any rank
    count."""
    from relsim import linalg
    from tests.linalg import systems
    out = {}
    for name, w, M in (("cg", 0.0, False), ("pcg", 0.0, True), ("bicgstab", 0.7, False),
                       ("gmres", 0.7, False)):
        V, E = systems.graph(300, 900)
        V.b.load(np.random.default_rng(1).standard_normal(V.size))
        if M:
            V.diag.load(systems.matrix(V, E, c=0.5).diagonal())
        A = systems.operator(V, E, c=0.5, w=w)
        solve = {"bicgstab": linalg.bicgstab, "gmres": linalg.gmres}.get(name, linalg.cg)
        for dots in ("exact", "ordered"):
            kw = {"M": V.diag} if M else {"restart": 10} if name == "gmres" else {}
            info = solve(A, V.b, V.x, rtol=1e-12, dots=dots, **kw)
            out[f"{name}-{dots}"] = [info.iterations, [r.hex() for r in info.residuals],
                                     digest(V.x.numpy())]
            V.x.fill(0.0)
    # an assembled matrix: P1 Poisson on a tet mesh (element kernel, Dirichlet sides, CG)
    from tests.linalg import fem
    mesh, K, V, sides = fem.poisson(3, lambda P: np.sin(3.0 * P).sum(axis=1))
    K.dirichlet(sides, b=V.b, values=1.0)
    info = linalg.cg(K, V.b, V.x, rtol=1e-12)
    out["sparse"] = [digest(K.entries.a.numpy()), info.iterations,
                     [r.hex() for r in info.residuals], digest(V.x.numpy())]
    # solved again: the second solve records the whole loop as one captured step
    # (`rs.while_loop` on the residual), the third replays it (on several ranks one compiled
    # segment making its exchanges and merges itself): the same iterates
    for n in (2, 3):
        V.x.fill(0.0)
        again = linalg.cg(K, V.b, V.x, rtol=1e-12)
        assert [again.iterations, [r.hex() for r in again.residuals], digest(V.x.numpy())] \
            == out["sparse"][1:], f"solve {n} differs from the first"
    return out


def minife(outdir):
    """The miniFE port on a 4 x 3 x 2 brick: assembly through keys, Dirichlet faces, CG with
    exact and with ordered dot products."""
    from relsim_simulations.minife.problem import MiniFE
    fe = MiniFE(4, 3, 2)
    fe.assemble()
    info = fe.solve(40)
    out = {"A": digest(fe.A.entries.a.numpy()), "b": digest(fe.nodes.b.numpy()),
           "residuals": [r.hex() for r in info.residuals], "x": digest(fe.nodes.x.numpy())}
    info = fe.solve(40, dots="ordered")  # (the serial reference's sums, over 2 ranks too)
    out.update(ordered=[r.hex() for r in info.residuals], x_ordered=digest(fe.nodes.x.numpy()))
    return out


def advection(outdir):
    """Semi-Lagrangian advection on a periodic grid: reads at offsets computed from the
    velocity (tests/advection.py), which the layer cannot bound, so every rank is sent every
    row it does not own (still the same bits)."""
    from tests import advection as adv
    C, advect, copy = adv.build(16, 11)
    q = adv.run(C, advect, copy, 4)
    # and keys from computed rows of another relation (rs.at)
    V = rs.Relation("atV", 13)
    V.new_field("x", rs.f64).load(np.sqrt(np.arange(13.0)))
    R = rs.Relation("atR", 29)
    R.new_field("j", rs.i64).load((np.arange(29) * 5) % 13)
    R.new_field("y", rs.f64)

    @rs.kernel
    def pick(r):
        r.y = rs.at(V, r.j).x * rs.at(V, (r.j * 3) % 13).x

    R.foreach(pick)
    return {"q": digest(q), "y": digest(R.y.numpy())}


def coloured(outdir):
    """Red-black SOR on a grid and graph-coloured Gauss-Seidel on a tet mesh (tests/coloured.py):
    in-place smoothers over colour subsets."""
    from tests import coloured as col
    C, red, black, sor, _, _ = col.red_black()
    for _ in range(20):
        red.foreach(sor)
        black.foreach(sor)
    V, colours, sweep, _, _ = col.mesh_gauss_seidel(3)
    for _ in range(10):
        for c in colours:
            c.foreach(sweep)
    return {"rb": digest(C.u.numpy()), "mesh": digest(V.u.numpy()), "colours": len(colours)}


def printing(outdir):
    """print() in an edge kernel that scatters (halo edges run on several ranks: their lines
    are their owner's) and in a vertex kernel over a subset: rank 0 writes every line once, in
    row order."""
    from tests import heat_graph
    V, E = heat_graph.random_graph(23, 41, seed=5)

    @rs.kernel
    def conduct(e):
        d = e.head.T - e.tail.T
        e.tail.flux += d
        e.head.flux -= d
        if d > 1.0:
            print("steep edge", e.head, e.tail, d)

    @rs.kernel
    def update(v):
        v.T += 0.1 * v.flux
        v.flux = 0.0
        if v.T < -1.0:
            print("cold", v.T)
        print(rs.vec(2)(v.T, 2.0 * v.T))

    odd = V.subset("odd", np.arange(1, 23, 2))
    for _ in range(2):
        E.foreach(conduct)
        odd.foreach(update)
    return {"T": digest(V.T.numpy())}


def captured(outdir):
    """A step captured with `rs.capture` (a key reduction over a subset, a double buffer, a
    Global sum), run 21 times (recorded once, replayed 20 times), and the same 21 steps
    uncaptured on a second copy of the graph: the same bits (checked here), and one process's
    (the test). Captured twice: compiled at once on every rank (each replay one compiled
    segment, back on the host for ghost exchanges and Global merges), and compiled on rank 0
    only, the others replaying launch by launch (the same collectives in the same order). A
    second Global sum is a tie the lanes leave undecided (2**53 + 1, on two ranks' rows): its
    merge takes the exact path from the slots. A field whose array the host holds (`numpy()`)
    is written by the step: every rank's copy is current after each replay. Where compiled,
    the MPI calls run inside the segment (`captured_mpi`): no ghost exchange is made from
    the host during the replays."""
    from relsim.runtime.parallel import exchange
    rank = rs.ranks().rank
    out = {}
    for mode in ("every", "rank0", "uncaptured"):
        V, E = shuffled_graph()
        V.new_field("Tn", rs.f64)
        held = V.new_field("mark", rs.f64).numpy()  # (exposed: gathered after each write)
        _tied_weights(V)
        total, tied = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
        odd = E.subset("odd", np.arange(1, E.size, 2))
        cfg = rs.Config(segments="now" if mode == "every" or rank == 0 else "off")

        @rs.kernel
        def conduct(e):
            d = e.k * (e.head.T - e.tail.T)
            e.tail.flux += d
            e.head.flux -= d

        @rs.kernel
        def relax(v):
            v.Tn = v.T + 0.05 * v.flux
            v.flux = 0.0

        @rs.kernel
        def add(v):
            total += v.T

        @rs.kernel
        def tally(v):
            tied += v.w

        @rs.kernel
        def note(v):
            v.mark = v.T + v.flux

        def step(V=V, odd=odd, cfg=cfg, tied=tied):
            odd.foreach(conduct, cfg)
            V.foreach(relax, cfg)
            V.T.swap(V.Tn)
            V.foreach(add, cfg)
            rs.assign(tied, 0.0)
            V.foreach(tally, cfg)
            V.foreach(note, cfg)

        if mode != "uncaptured":
            with rs.capture() as replay:
                step()
            replay()
            exchange.traffic()  # (what compiled code counted so far: into TRAFFIC)
            host = exchange.TRAFFIC["ghost_messages"]
            for _ in range(19):
                replay()
            compiled = replay.compiled()
            assert compiled is (None if cfg.segments == "off" else True), (mode, compiled)
            if cfg.segments != "off" and rs.ranks().size > 1:  # (rank 0's ghost rows
                # received in compiled code)
                assert exchange.TRAFFIC["ghost_messages"] == host, "received from the host"
                assert exchange.COMPILED[0] > 0 or rank != 0
                _compiled_ahead(replay)
        else:
            for _ in range(21):
                step()
        got = {"T": digest(V.T.numpy()), "total": total.value.hex(), "tied": tied.value.hex(),
               "mark": digest(held)}
        assert tied.value == 2.0 ** 53  # (2**53 + 1 rounds to even)
        assert not out or got == out, (mode, got, out)
        out = got
    return out


def launch_exchanges(outdir):
    """Launches (not captured) exchanging ghost rows and merging float64 Global sums through
    mpi4py (as when relsim's compiled MPI helpers are not in the disk cache yet), then the
    same steps through the helpers: the same bits either way, and one process's. A second
    sum is a tie its lanes leave undecided (2**53 + 1 on two ranks' rows): a compiled merge
    leaves it to the host, which goes on from the gathered messages."""
    from relsim.runtime.parallel import compiled_mpi, exchange, global_merge
    out = {}
    routes, merges = exchange._compiled, global_merge._helpers_at_hand
    for mode in ("mpi4py", "compiled"):
        exchange._compiled = (lambda *a: None) if mode == "mpi4py" else routes
        global_merge._helpers_at_hand = (lambda w: False) if mode == "mpi4py" else merges
        if mode == "compiled" and rs.ranks().size > 1:  # (every rank, each under its lock)
            for fn, signature in compiled_mpi.signatures():
                fn.compile(signature)
        before = dict(exchange.PATHS), dict(global_merge.PATHS), global_merge.COMPILED["merges"]
        V, E = shuffled_graph()
        _tied_weights(V)
        total, tied = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)

        @rs.kernel
        def conduct(e):
            d = e.k * (e.head.T - e.tail.T)
            e.tail.flux += d
            e.head.flux -= d

        @rs.kernel
        def relax(v):
            v.T = v.T + 0.05 * v.flux
            v.flux = 0.0
            total += v.T
            tied += v.w

        for _ in range(5):
            E.foreach(conduct)
            rs.assign(tied, 0.0)
            V.foreach(relax)
        got = {"T": digest(V.T.numpy()), "total": total.value.hex(), "tied": tied.value.hex()}
        assert tied.value == 2.0 ** 53
        if rs.ranks().size > 1:
            made = {k: exchange.PATHS[k] - before[0][k] for k in before[0]}
            assert made[mode] > 0 and not made[({"mpi4py", "compiled"} - {mode}).pop()], made
            merged = {k: global_merge.PATHS[k] - before[1][k] for k in before[1]}
            assert merged == {"lanes": 5, "exact": 5}, merged
            compiled = global_merge.COMPILED["merges"] - before[2]  # (the ties: on the host)
            assert compiled == (5 if mode == "compiled" else 0), compiled
        assert not out or got == out, (mode, got, out)
        out = got
    return out


def _tied_weights(V) -> None:
    """V.w: 2**53 on the first row, 1 on the last, 0 elsewhere; their sum is a tie that the
    lanes leave undecided when the two rows are on different ranks."""
    w = np.zeros(V.size)
    w[0], w[-1] = 2.0 ** 53, 1.0
    V.new_field("w", rs.f64).load(w)


def _compiled_ahead(replay) -> None:
    """Every compiled MPI call of the replay's segments is one `compiled_mpi.ahead` compiles
    in the background (the same helper for the same argument types)."""
    from numba import typeof

    from relsim.runtime.backends.base import CompiledStop
    from relsim.runtime.parallel import compiled_mpi
    ahead = set(compiled_mpi.signatures())
    calls = [(fn, tuple(typeof(a) for a in args)) for plan in replay.plans.values()
             for segment in plan.segments for stop in segment.positions
             if isinstance(stop, CompiledStop) for fn, args in stop.calls]
    assert calls and all(call in ahead for call in calls), set(calls) - ahead


def whole(outdir):
    """Launches with Config(distributed=False) (every rank runs every row) between distributed
    ones, on the fields they left current only at each rank's own rows: the whole launch
    first gathers them (it once read stale ghost rows), and the distributed launches after it
    read its results."""
    (V, _), globs, step = _checkpointed()
    whole = rs.Config(distributed=False)
    history = []
    for n in range(6):  # distributed, distributed, whole, ...; and a whole update after a
        cfg = whole if n % 3 == 2 else None  # distributed conduct
        step(cfg, cfg if n != 4 else whole)
        history.append((globs["total"].value.hex(), globs["hottest"].row))
    return {"T": digest(V.T.numpy()), "history": repr(history)}


PROGRAMS = {"checkpoint_write": checkpoint_write, "checkpoint_read": checkpoint_read,
            "small": small, "design": design, "local_load": local_load, "heat": heat,
            "tetheat": tetheat, "fem": fem, "cloth": cloth, "md": md, "smoke": smoke, "sph": sph,
            "tape": tape, "tangents": tangents, "exposed": exposed,
            "diffusion2d": diffusion2d, "failing": failing, "tiered": tiered,
            "krylov": krylov, "minife": minife, "advection": advection,
            "coloured": coloured, "printing": printing, "captured": captured,
            "whole": whole, "waiting": waiting, "lane_sums": lane_sums,
            "launch_exchanges": launch_exchanges}


def main(argv) -> None:
    name, target, outdir = argv
    rs.configure(target=target)
    compiled = _compilations() if os.environ.get("RELSIM_TEST_COMPILED") else None
    out = PROGRAMS[name](outdir)
    r = rs.ranks()
    if compiled is not None:  # what Numba compiled here, after the background worker ended
        from relsim.runtime.host import compile_jobs
        for worker in compile_jobs._background.values():
            worker.close()
            worker.proc.wait(timeout=300)
        out["compiled"] = compiled
    with open(os.path.join(outdir, f"{r.rank}.json"), "w") as f:
        json.dump({"rank": r.rank, "size": r.size, **out}, f)


def _compilations() -> list:
    """The names of the functions Numba compiles in this process from now on (loads from its
    disk cache are not compilations)."""
    from numba.core import event
    names: list = []

    class Listener(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            fn = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
            names.append(getattr(fn, "__qualname__", "?"))

    event.register("numba:compile", Listener())
    return names


if __name__ == "__main__":
    main(sys.argv[1:])
