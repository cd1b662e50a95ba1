"""rs.Tangents (forward mode): each launch's tangent kernel computes the kernel's values and
their directional derivative J v, which agrees with central differences and with the tape's
J^T w (w . J v = J^T w . v), for every construct: key reads and reductions, groupings, grid
offsets, branches, loops carrying state, early exits, vectors and matrices, min/max
reductions, random draws; the same bits on every target; host writes, swaps and copies; and
what it refuses, by name."""
import math

import numpy as np
import pytest

import relsim as rs
from relsim import linalg
from tests.conftest import configured


def _graph(n=9, seed=2):
    rng = np.random.default_rng(seed)
    V = rs.Relation("V", n)
    E = rs.Relation("E", 2 * n)
    E.new_key_field("tail", V, values=rng.integers(0, n, 2 * n))
    E.new_key_field("head", V, values=rng.integers(0, n, 2 * n))
    E.group_by("head", "ins")
    V.new_field("x", rs.f64).load(rng.uniform(0.2, 1.4, n))
    V.new_field("p", rs.vec(3)).load(rng.standard_normal((n, 3)))
    V.new_field("f", rs.f64)
    V.new_field("y", rs.f64)
    V.new_field("lo", rs.f64)
    V.new_field("q", rs.vec(3))
    V.new_field("m", rs.i64).load(rng.integers(0, 4, n))
    E.new_field("w", rs.f64).load(rng.uniform(0.5, 1.5, 2 * n))
    return V, E


k = rs.Global(rs.f64, 0.7, name="k")
loss = rs.Global(rs.f64, 0.0, name="loss")
peak = rs.Global(rs.f64, 0.0, name="peak")


@rs.kernel
def springs(e):
    d = e.head.p - e.tail.p
    L = rs.norm(d) + 0.1
    s = k * e.w * (L - 1.0) * math.exp(-e.tail.x) + math.sin(e.head.x) ** 2
    if e.tail.x > 0.6:
        s = s / (1.0 + e.head.x * e.head.x)
    e.tail.f += s
    e.head.f -= 0.5 * s
    rs.reduce_min(e.head.lo, s * e.tail.x)  # a min reduction through a key


@rs.kernel
def vertices(v):
    acc = 0.0
    for e in v.ins:                     # a grouping loop reading its rows' fields
        acc += e.w * e.w * v.x
    A = rs.mat(3, 3)(v.p, rs.cross(v.p, rs.vec(3)(0.0, 0.0, 1.0)), rs.vec(3)(1.0, v.x, 0.5))
    B = A @ rs.transpose(A) + rs.eye(3)
    z = rs.inverse(B) @ v.p
    t = 0.0
    i = 0
    while i < v.m + 2:                  # a loop carrying state, of run-time length
        t = math.tanh(t + 0.3 * v.x) + 0.1 * acc
        i += 1
    g = rs.det(B) * 1e-2 + rs.dot(z, v.p) + math.hypot(v.x, t) + math.atan2(t, v.x + 2.0)
    g += abs(v.f - 0.2) + max(v.f, v.x) + math.log(1.0 + v.x * v.x) + v.x ** 1.5
    g += rs.uniform(v, 3) * v.x         # a draw times a value
    v.y = g if v.m != 3 else g * g
    v.q = rs.outer(z, v.p) @ z
    loss += v.y * v.y + rs.dot(v.q, v.q) + v.lo
    rs.reduce_max(peak, v.y)


def _program(V, E):
    def run(config=None):
        V.f.fill(0.0)
        V.lo.fill(10.0)
        loss.value = 0.0
        peak.value = -1e300
        E.foreach(springs, config)
        V.foreach(vertices, config)
    return run


def _direction(V, E, rng):
    return {V.x: rng.standard_normal(V.size), V.p: rng.standard_normal((V.size, 3)),
            E.w: rng.standard_normal(E.size), k: float(rng.standard_normal())}


OUTPUTS = ("y", "q", "f", "lo")


def _outputs(V):
    return [V.y, V.q, V.f, V.lo, loss, peak]


def _values(V):
    return [t.numpy(copy=True) if isinstance(t, rs.Field) else t.value for t in _outputs(V)]


def test_forward_mode_agrees_with_central_differences_and_with_the_tape():
    V, E = _graph()
    run = _program(V, E)
    rng = np.random.default_rng(11)
    u = _direction(V, E, rng)
    run()
    plain = _values(V)
    with rs.Tangents(u) as tan:
        run()
    assert all(np.array_equal(a, b) for a, b in zip(_values(V), plain))  # the values themselves
    jv = [np.asarray(tan.of(t), dtype=float) for t in _outputs(V)]
    x0 = {t: (t.numpy(copy=True) if isinstance(t, rs.Field) else t.value) for t in u}

    def at(h):
        for t, d in u.items():
            if isinstance(t, rs.Field):
                t.load(x0[t] + h * d)
            else:
                t.value = x0[t] + h * d
        run()
        return [np.asarray(v, dtype=float) for v in _values(V)]

    h = 1e-6
    up, down = at(h), at(-h)
    at(0.0)
    for name, d, a, b in zip(OUTPUTS + ("loss", "peak"), jv, up, down):
        fd = (a - b) / (2 * h)
        assert np.allclose(d, fd, rtol=1e-5, atol=1e-5), (name, d, fd)
    assert np.abs(jv[0]).max() > 1e-3 and abs(float(jv[4])) > 1e-3  # (derivatives flow)

    w = [rng.standard_normal(np.shape(v)) for v in jv]  # w . J v against J^T w . u
    with rs.Tape() as tape:
        run()
    tape.backward({t: wi for t, wi in zip(_outputs(V), w)})
    left = sum(float(np.sum(wi * d)) for wi, d in zip(w, jv))
    right = sum(float(np.sum((t.grad.numpy() if isinstance(t, rs.Field) else t.grad) * d))
                for t, d in u.items())
    assert abs(left - right) <= 1e-11 * max(1.0, abs(left)), (left, right)


@pytest.mark.device_sized  # (the cuda target in the simulator too)
def test_forward_mode_is_the_same_bits_on_every_target(target):
    def tangents(config):
        V, E = _graph()
        run = _program(V, E)
        with rs.Tangents(_direction(V, E, np.random.default_rng(4))) as tan:
            run(config)
        return [np.asarray(tan.of(t)).tobytes() for t in _outputs(V)] + \
            [np.asarray(v).tobytes() for v in _values(V)]

    with configured(target="interp"):
        want = tangents(None)
    assert tangents(target) == want


def test_forward_mode_takes_loops_and_exits_the_tape_refuses():
    """A grouping loop reading fields through its rows' keys (the reverse mode refuses it: its
    adjoint would reduce through those keys inside the loop), a break and an early return are
    plain control flow forward."""
    V, E = _graph()

    @rs.kernel
    def gather(v):
        v.y = 0.0
        if v.m == 2:
            return
        s = 0.0
        for e in v.ins:
            s += e.w * math.sin(e.tail.x)
            if s > 1.5:
                break
        v.y = s * v.x

    dx = np.random.default_rng(3).standard_normal(V.size)
    with rs.Tangents({V.x: dx}) as tan:
        V.foreach(gather)
    x0 = V.x.numpy(copy=True)
    y = []
    for h in (1e-6, -1e-6):
        V.x.load(x0 + h * dx)
        V.foreach(gather)
        y.append(V.y.numpy(copy=True))
    assert np.allclose(tan.of(V.y), (y[0] - y[1]) / 2e-6, rtol=1e-6, atol=1e-7)
    assert np.abs(tan.of(V.y)).max() > 1e-3
    with pytest.raises(rs.GradientError, match="cannot differentiate"):
        with rs.Tape() as tape:
            V.foreach(gather)
        tape.backward({V.y: np.ones(V.size)})


def test_host_writes_are_constants_and_swaps_and_copies_carry_tangents():
    V = rs.Relation("hw", 4)
    for name in ("a", "b", "c", "out"):
        V.new_field(name, rs.f64)
    V.a.load([1.0, 2.0, 3.0, 4.0])
    g = rs.Global(rs.f64, 2.0, name="hw_g")

    @rs.kernel
    def square(v):
        v.b = v.a * v.a * g

    @rs.kernel
    def add(v):
        v.out = v.b + v.c

    with rs.Tangents({V.a: 1.0, g: 0.5}) as tan:
        V.foreach(square)                   # db = 2 a g + a^2 / 2
        assert np.array_equal(tan.of(V.b), 2 * V.a.numpy() * 2.0 + 0.5 * V.a.numpy() ** 2)
        V.c.copy_from(V.b)                  # the copy's tangent is the source's
        V.b.load(np.zeros(4))               # a host load: a constant
        V.foreach(add)
        assert np.array_equal(tan.of(V.out), tan.of(V.c)) and not tan.of(V.b).any()
        V.out.swap(V.b)                     # the tangents swap with the values
        assert np.array_equal(tan.of(V.b), tan.of(V.c)) and not tan.of(V.out).any()
        g.value = 3.0                       # a Global assigned: its tangent 0
        assert tan.of(g) == 0.0
    assert tan.of(V.a).tolist() == [1.0] * 4


def test_what_forward_mode_refuses_is_named():
    V = rs.Relation("rf", 3)
    V.new_field("x", rs.f64)
    V.new_field("x32", rs.f32)
    V.new_field("y", rs.f64)
    V.new_key_field("me", V, values=[0, 1, 2])
    g = rs.Global(rs.f64, 1.0, name="rf_g")
    with pytest.raises(rs.GradientError, match=r"seeds float \(f64\) fields and Globals .*not "
                                               r"rf.x32"):
        rs.Tangents({V.x32: 1.0})
    with pytest.raises(rs.GradientError, match=r"not rf.me"):
        rs.Tangents({V.me: 1.0})
    with pytest.raises(rs.GradientError, match=r"the seed for rf.x has shape \(2,\); its values "
                                               r"have shape \(3,\)"):
        rs.Tangents({V.x: [1.0, 2.0]})

    @rs.kernel
    def to32(v):
        v.x32 = rs.f32(v.x * 2.0)

    with pytest.raises(rs.GradientError, match="in kernel 'to32': cannot differentiate a f32 "
                                               "value computed from differentiated values"):
        with rs.Tangents({V.x: 1.0}):
            V.foreach(to32)

    @rs.kernel
    def loop_min(v):
        for i in range(2):
            rs.reduce_min(v.y, v.x + i)

    with pytest.raises(rs.GradientError, match="'min' reduction into a float inside a loop"):
        with rs.Tangents({V.x: 1.0}):
            V.foreach(loop_min)
    with pytest.raises(rs.GradientError, match=r"rs.assign\(Global 'rf_g', ...\) inside "
                                               r"rs.Tangents"):
        with rs.Tangents({V.x: 1.0}):
            rs.assign(g, g * 2.0)
    with pytest.raises(rs.GradientError, match="an rs.Tape cannot start while an rs.Tangents "
                                               "runs$"):
        with rs.Tangents({V.x: 1.0}):
            with rs.Tape():
                pass
    A = linalg.SparseMatrix(V, [0, 1, 2], [0, 1, 2])
    A.entries.a.load(2.0)
    with pytest.raises(rs.GradientError, match="inside rs.Tangents: forward mode through "
                                               "linalg's solves is not available yet"):
        with rs.Tangents({V.x: 1.0}):
            linalg.cg(A, V.x, V.y)


def test_the_jacobian_and_its_diagonal_by_kernels():
    """rs.Tangents.jacobian and jacobian_diagonal (what least squares assembles and
    preconditions with): for scalar, vector and Global unknowns, they are J built column by
    column by forward mode and its squared column norms (residuals weighted); a program not of
    their form gives None."""
    n = 12
    V = rs.Relation("dg_v", n)
    E = rs.Relation("dg_e", n - 1)
    E.new_key_field("tail", V, values=np.arange(n - 1))
    E.new_key_field("head", V, values=np.arange(1, n))
    rng = np.random.default_rng(0)
    V.new_field("f", rs.f64).load(rng.standard_normal(n))
    V.new_field("u", rs.f64).load(rng.standard_normal(n))
    V.new_field("p", rs.vec(2)).load(rng.standard_normal((n, 2)))
    V.new_field("rd", rs.f64)
    V.new_field("rows", rs.i64)  # (a field whose name a launch space's rows once read as)
    E.new_field("rs_", rs.f64)
    E.new_field("rv", rs.vec(2))
    g = rs.Global(rs.vec(2), np.array([0.3, -0.2]), name="dg_g")

    @rs.kernel
    def data(v):
        v.rd = v.u - v.f + 0.2 * math.sin(3.0 * v.u) + g[0] * v.p[1]

    @rs.kernel
    def smooth(e):
        e.rs_ = 2.0 * (e.head.u - e.tail.u) * e.head.p[0]
        e.rv = e.head.p - e.tail.p * g[1] + rs.vec(2)(e.tail.u, 0.0)

    def run():
        V.foreach(data)
        E.foreach(smooth)

    unknowns, shapes = [V.u, V.p, g], [(n,), (n, 2), (2,)]
    diag = rs.Tangents.jacobian_diagonal(run, [V.rd, E.rs_, E.rv], unknowns, {E.rs_: 4.0})
    columns = []
    for u, shape in zip(unknowns, shapes):
        for j in range(int(np.prod(shape))):
            seeds = {w: np.zeros(s) for w, s in zip(unknowns, shapes)}
            seeds[u].reshape(-1)[j] = 1.0
            with rs.Tangents(seeds) as tan:
                run()
            columns.append(np.concatenate([tan.of(V.rd), 2.0 * tan.of(E.rs_),
                                           tan.of(E.rv).ravel()]))
    J = np.stack(columns, axis=1)
    got = np.concatenate([np.ravel(d) for d in diag])
    assert np.allclose(got, (J ** 2).sum(axis=0), rtol=1e-14, atol=0.0)  # (the same squares)
    rows, cols, vals, shape = rs.Tangents.jacobian(run, [V.rd, E.rs_, E.rv], unknowns)
    dense = np.zeros(shape)
    np.add.at(dense, (rows, cols), vals)
    J[n:2 * n - 1] /= 2.0  # (the weight of 4 on E.rs_ above: J here is unweighted)
    assert np.array_equal(dense, J)  # (each entry one kernel's derivative: the same bits)

    @rs.kernel
    def looped(v):
        s = 0.0
        for i in range(2):
            s += v.p[i] * v.u
        v.rd = s

    assert rs.Tangents.jacobian_diagonal(lambda: V.foreach(looped), [V.rd], [V.u]) is None
    assert rs.Tangents.jacobian(lambda: V.foreach(looped), [V.rd], [V.u]) is None


def test_hessian_vector_products_by_reverse_over_forward():
    """A tape recording around rs.Tangents records the tangent kernels; its backward of the
    energy's tangent is H v: the analytic Hessian of Rosenbrock's function, and central
    differences of the tape's gradient for an energy of vectors and matrices."""
    n = 6
    X = rs.Relation("hv_x", n)
    X.new_field("x", rs.f64).load(np.tile([-1.2, 1.0], n // 2))
    P = rs.Relation("hv_p", n // 2)
    P.new_key_field("a", X, values=np.arange(0, n, 2))
    P.new_key_field("b", X, values=np.arange(1, n, 2))
    energy = rs.Global(rs.f64, 0.0, name="hv_energy")

    @rs.kernel
    def rosen(p):
        energy += 100.0 * (p.b.x - p.a.x * p.a.x) ** 2 + (1.0 - p.a.x) ** 2

    def run():
        energy.value = 0.0
        P.foreach(rosen)

    v = np.random.default_rng(0).standard_normal(n)
    with rs.Tape() as tape:
        with rs.Tangents({X.x: v}) as tan:
            run()
    tape.backward(tan.tangent_of(energy))
    x = X.x.numpy()
    H = np.zeros((n, n))
    for k in range(n // 2):
        a, b = 2 * k, 2 * k + 1
        H[a, a] = 1200.0 * x[a] ** 2 - 400.0 * x[b] + 2.0
        H[a, b] = H[b, a] = -400.0 * x[a]
        H[b, b] = 200.0
    assert np.allclose(X.x.grad.numpy(), H @ v, rtol=1e-13, atol=1e-12)

    V = rs.Relation("hv_v", 5)
    V.new_field("p", rs.vec(3)).load(np.random.default_rng(1).uniform(0.5, 1.5, (5, 3)))
    e2 = rs.Global(rs.f64, 0.0, name="hv_e2")

    @rs.kernel
    def matrices(r):
        A = rs.mat(3, 3)(r.p, rs.cross(r.p, rs.vec(3)(0.0, 0.0, 1.0)), rs.vec(3)(1.0, 0.5, 2.0))
        B = A @ rs.transpose(A) + rs.eye(3)
        e2 += math.log(rs.det(B)) + rs.dot(rs.inverse(B) @ r.p, r.p)

    def grad_at(p):
        V.p.load(p)
        with rs.Tape() as t:
            e2.value = 0.0
            V.foreach(matrices)
        t.backward(e2)
        return V.p.grad.numpy().copy()

    p0 = V.p.numpy(copy=True)
    w = np.random.default_rng(2).standard_normal(p0.shape)
    V.p.load(p0)
    # on interp: the math is the target's own; compiling this energy's tangent kernel's adjoint
    # (inverse, det, log of 3 x 3 matrices) takes Numba minutes (the cpu lowering of such
    # kernels: tests/simulations/test_fem_implicit.py)
    with configured(target="interp"):
        with rs.Tape() as t:
            with rs.Tangents({V.p: w}) as tan:
                e2.value = 0.0
                V.foreach(matrices)
        t.backward(tan.tangent_of(e2))
        hv = V.p.grad.numpy().copy()
        fd = (grad_at(p0 + 1e-6 * w) - grad_at(p0 - 1e-6 * w)) / 2e-6
    assert np.allclose(hv, fd, rtol=1e-6, atol=1e-7)
    with pytest.raises(rs.GradientError, match="carries no tangent in this block"):
        tan.tangent_of(V.p.relation.new_field("unseeded", rs.f64))


def test_hessian_vector_products_where_a_tangent_or_a_factor_is_exactly_zero(use_target):
    """The guard that makes 0 x inf count as 0 in a tangent must not take the derivative with
    it: at y == x_hat the tangent of dot(d, d) is exactly 0 (the first Newton step of an
    implicit time step starts there), and at q == 0 the product p * q has a zero factor; H v
    is still the Hessian's (it lost the inertia term, silently, before)."""
    n = 4
    V = rs.Relation("hz_v", n)
    x_hat = np.random.default_rng(3).standard_normal((n, 3))
    V.new_field("y", rs.vec(3)).load(x_hat)
    V.new_field("x_hat", rs.vec(3)).load(x_hat)
    V.new_field("m", rs.f64).load(np.linspace(1.0, 2.0, n))
    V.new_field("p", rs.f64).load(np.linspace(1.0, 2.0, n))
    V.new_field("q", rs.f64).load(0.0)
    dt = rs.Global(rs.f64, 0.1)
    energy = rs.Global(rs.f64, 0.0, name="hz_energy")

    @rs.kernel
    def inertia(v):
        d = v.y - v.x_hat
        energy += v.m * (0.5 * rs.dot(d, d) / (dt * dt)) + v.p * v.q * v.q + v.p * v.q

    w = np.random.default_rng(4).standard_normal((n, 3))
    wp, wq = np.linspace(-1.0, 1.0, n), np.linspace(0.5, 2.0, n)
    with rs.Tape() as tape:
        with rs.Tangents({V.y: w, V.p: wp, V.q: wq}) as tan:
            energy.value = 0.0
            V.foreach(inertia)
    tape.backward(tan.tangent_of(energy))
    m, p = V.m.numpy(), V.p.numpy()
    assert np.allclose(V.y.grad.numpy(), m[:, None] * w / 0.01, rtol=1e-14, atol=0.0)
    # E_pq = p q^2 + p q at q = 0: H = [[0, 1], [1, 2 p]]
    assert np.allclose(V.p.grad.numpy(), wq, rtol=1e-14, atol=0.0)
    assert np.allclose(V.q.grad.numpy(), wp + 2.0 * p * wq, rtol=1e-14, atol=0.0)


def test_a_zero_tangent_times_an_infinite_partial_is_still_zero(use_target):
    """sqrt at 0 has an infinite derivative: where no tangent arrives the tangent stays 0, not
    NaN (the guard kept), and where one arrives it is infinite, as the mathematics says."""
    V = rs.Relation("hz_sqrt", 2)
    V.new_field("x", rs.f64).load(0.0)
    V.new_field("r", rs.f64)

    @rs.kernel
    def root(v):
        v.r = math.sqrt(v.x) * 2.0

    with rs.Tangents({V.x: np.array([0.0, 1.0])}) as tan:
        V.foreach(root)
    d = tan.of(V.r)
    assert d[0] == 0.0 and d[1] == math.inf


def test_reverse_over_forward_refuses_min_max_reductions():
    V, E = _graph()
    with pytest.raises(rs.GradientError, match="a min/max reduction into a float under "
                                               "rs.Tangents inside a recording rs.Tape"):
        with rs.Tape():
            with rs.Tangents({V.x: 1.0}):
                _program(V, E)()
