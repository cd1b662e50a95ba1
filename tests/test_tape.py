"""rs.Tape: reverse-mode gradients of recorded programs, checked against central differences,
the same bits on every target and thread count, and refusals that point at the kernel's line."""
import contextlib
import math

import numpy as np
import pytest

import relsim as rs
from tests.conftest import configured

CONFIGS = {"interp": dict(target="interp"),
           "cpu 1 thread": dict(target="cpu", threads=1, parallel_threshold=1),
           "cpu 2 threads": dict(target="cpu", threads=2, parallel_threshold=1)}
if "cuda" in rs.targets():
    CONFIGS["cuda"] = dict(target="cuda")


class Graph:
    """Heat on a random graph with a nonlinear flux, a branch, a conductivity Global and a
    loss summed into a Global: what `backward` differentiates."""

    def __init__(self, nv=7, ne=12, seed=0):
        rng = np.random.default_rng(seed)
        V = self.V = rs.Relation("V", nv)
        for f in ("T", "flux"):
            V.new_field(f, rs.f64)
        V.new_field("hot", rs.bool_)
        E = self.E = rs.Relation("E", ne)
        E.new_key_field("head", V, values=rng.integers(0, nv, ne))
        E.new_key_field("tail", V, values=rng.integers(0, nv, ne))
        E.new_field("k", rs.f64).load(rng.uniform(0.5, 1.5, ne))
        self.T0, self.k0 = rng.standard_normal(nv), E.k.numpy(copy=True)
        kappa = self.kappa = rs.Global(rs.f64, 0.3)
        loss = self.loss = rs.Global(rs.f64, 0.0)

        @rs.kernel
        def conduct(e):
            d = kappa * e.k * (e.head.T - e.tail.T)
            e.tail.flux += d
            e.head.flux -= math.sqrt(d * d + 1.0) - 1.0 + min(d, 0.2) / (2.0 + e.k)

        @rs.kernel
        def update(v):
            v.T += 0.1 * v.flux
            v.hot = v.T > 0.5
            if v.hot:
                v.T = 0.5 + math.log(1.0 + v.T - 0.5)
            else:
                v.T = v.T - 0.01 * abs(v.T) ** 1.5
            v.flux = 0.0

        @rs.kernel
        def misfit(v):
            loss += math.exp(-v.T) * v.T + (v.T * v.T if v.hot else 0.0)

        self.conduct, self.update, self.misfit = conduct, update, misfit

    def run(self, T=None, k=None, kappa=0.3, steps=3):
        self.V.T.load(self.T0 if T is None else T)
        self.E.k.load(self.k0 if k is None else k)
        self.V.flux.load(0.0)
        self.kappa.value = kappa
        for _ in range(steps):
            self.E.foreach(self.conduct)
            self.V.foreach(self.update)
        self.loss.value = 0.0
        self.V.foreach(self.misfit)
        return self.loss.value

    def gradients(self):
        self.run()
        self.V.T.load(self.T0)  # the tape's start
        with rs.Tape() as tape:
            for _ in range(3):
                self.E.foreach(self.conduct)
                self.V.foreach(self.update)
            self.loss.value = 0.0
            self.V.foreach(self.misfit)
        end = self.V.T.numpy(copy=True)
        tape.backward(self.loss)
        assert self.V.T.numpy().tobytes() == end.tobytes()  # the forward state, put back
        return self.V.T.grad.numpy(copy=True), self.E.k.grad.numpy(copy=True), self.kappa.grad


def central(f, x, i, h=1e-6):
    up, down = x.copy(), x.copy()
    up[i] += h
    down[i] -= h
    return (f(up) - f(down)) / (2 * h)


def agrees_with_central(grad, f, x, h=1e-6, what=""):
    """Every entry of `grad` (shaped like `x`) within 1e-6 of f's central difference there
    (relative to max(1, |difference|))."""
    flat = np.asarray(x, dtype=float).ravel()
    for i in range(flat.size):
        fd = central(lambda v: f(v.reshape(np.shape(x))), flat, i, h)
        got = np.ravel(grad)[i]
        assert abs(got - fd) <= 1e-6 * max(1.0, abs(fd)), (what, i, got, fd)


def test_gradients_agree_with_central_differences():
    g = Graph()
    dT, dk, dkappa = g.gradients()
    assert np.count_nonzero(dT) >= 5 and np.count_nonzero(dk) >= 8
    agrees_with_central(dT, lambda T: g.run(T=T), g.T0, what="T")
    agrees_with_central(dk, lambda k: g.run(k=k), g.k0, what="k")
    fd = (g.run(kappa=0.3 + 1e-6) - g.run(kappa=0.3 - 1e-6)) / 2e-6
    assert abs(dkappa - fd) <= 1e-6 * abs(fd)


def same_bits_on_every_target(gradients) -> None:
    """gradients(), making its program anew under each of CONFIGS, returns the same arrays,
    bit for bit, on every target and thread count."""
    answers = {}
    for name, config in CONFIGS.items():
        with configured(**config):
            answers[name] = b"".join(np.asarray(a).tobytes() for a in gradients())
    first = next(iter(answers.values()))
    differ = [name for name, a in answers.items() if a != first]
    assert not differ, differ


def test_gradients_are_the_same_bits_on_every_target_and_thread_count():
    answers = {}
    for name, config in CONFIGS.items():
        with configured(**config):
            dT, dk, dkappa = Graph().gradients()
        answers[name] = (dT.tobytes(), dk.tobytes(), dkappa.hex())
    first = next(iter(answers.values()))
    assert all(a == first for a in answers.values()), list(answers)


def test_a_tape_is_reused_without_compiling_again():
    """The first backward adds the adjoint fields (a schema change: the kernels are analysed
    once more); from then on the same adjoint kernels run, compiled once."""
    g = Graph()
    g.gradients()
    first = g.gradients()
    adjoints = dict(g.conduct.__dict__["_adjoints"])
    plans = {k: len(v._plans) for k, v in adjoints.items()}
    second = g.gradients()
    assert adjoints == g.conduct.__dict__["_adjoints"]
    assert plans == {k: len(v._plans) for k, v in adjoints.items()}
    assert all(np.array_equal(a, b) for a, b in zip(first, second))


def test_host_assignments_inside_the_tape_cut_the_derivative():
    g = Graph()
    g.V.T.load(g.T0)
    with rs.Tape() as tape:
        g.E.foreach(g.conduct)
        g.V.foreach(g.update)
        g.V.T.load(np.full(len(g.T0), 0.25))  # the earlier values no longer matter
        g.loss.value = 0.0
        g.V.foreach(g.misfit)
    tape.backward(g.loss)
    assert not g.V.T.grad.numpy().any() and g.kappa.grad == 0.0
    assert not g.E.k.grad.numpy().any()


def test_wrong_losses_and_calls_arerefused():
    g = Graph()
    other = rs.Global(rs.f64, 0.0)
    with rs.Tape() as tape:
        g.E.foreach(g.conduct)
        with pytest.raises(rs.GradientError, match="inside `with tape:`"):
            tape.backward(g.loss)
    with pytest.raises(rs.GradientError, match="was not reduced into by any launch"):
        tape.backward(other)
    with pytest.raises(rs.GradientError, match="float64 scalar Global"):
        tape.backward(g.V.T)
    with pytest.raises(rs.DataError, match="no gradient"):
        _ = rs.Global(rs.f64, 1.0).grad


def refused(kernel, relation, match=None, loss=None):
    """The GradientError `backward` raises (matching `match`) for a tape recording one launch
    of `kernel` over `relation` (on interp) that reduces into `loss` (by default LOSS)."""
    with configured(target="interp"):
        with rs.Tape() as tape:
            relation.foreach(kernel)
        with pytest.raises(rs.GradientError, match=match) as info:
            tape.backward(LOSS if loss is None else loss)
    return str(info.value)


LOSS = rs.Global(rs.f64, 0.0)


def test_what_cannot_be_differentiated_is_refused_at_its_line():
    V = rs.Relation("W", 4)
    V.new_field("x", rs.f64, 1.0)
    V.new_field("p", rs.vec(2))

    @rs.kernel
    def looping(v):
        s = 1.0
        for _ in range(3):
            s = s * v.x
            if s > 2.0:
                break
        LOSS += s

    msg = refused(looping, V, "cannot differentiate a break")
    assert "in looping\n    break\n    ^" in msg

    @rs.kernel
    def smallest(v):
        LOSS = min(LOSS, v.x)  # noqa: F841
        LOSS = min(LOSS, 2.0 * v.x)  # noqa: F841

    assert "'min' reduction" in refused(smallest, V, "a second 'min' reduction into Global")

    V.new_field("m", rs.mat(2, 2))

    @rs.kernel
    def matrix(v):
        i = int(v.x) % 2
        LOSS += v.m[i, 0] + v.x

    assert "v.m[i, 0]" in refused(matrix, V, "entry at a run-time index")
    P = rs.Relation("P", 3, elastic=True)
    P.new_field("x", rs.f64)

    @rs.kernel
    def remove(p):
        if p.x > 1.0:
            rs.delete(p)

    with pytest.raises(rs.GradientError, match="rs.insert or rs.delete") as info:
        with rs.Tape():
            P.foreach(remove)
    assert "rs.delete(p)" in str(info.value)


class Gather:
    """Loops: over a grouping (with a branch inside) and over constant ranges (one reading
    through the entries of a key vector), accumulating into locals from before them."""

    def __init__(self, seed=1):
        rng = np.random.default_rng(seed)
        V = self.V = rs.Relation("V", 6)
        V.new_field("T", rs.f64)
        E = self.E = rs.Relation("E", 14)
        E.new_key_field("head", V, values=rng.integers(0, 6, 14))
        E.new_key_field("ends", V, arity=2, values=rng.integers(0, 6, (14, 2)))
        E.new_field("k", rs.f64).load(rng.uniform(-1.0, 1.0, 14))
        E.group_by("head", "ins")
        self.T0, self.k0 = rng.standard_normal(6), E.k.numpy(copy=True)
        loss = self.loss = rs.Global(rs.f64, 0.0)

        @rs.kernel
        def gather(v):
            s = 0.0
            n = 0
            for _e in v.ins:  # reads only the row's own values: made once, before the loop
                if v.T > 0.0:
                    s += v.T * v.T
                else:
                    s -= 0.5 * v.T
                n += 1
            for i in range(1, 3):
                s += v.T * i
            loss += s * v.T + n

        @rs.kernel
        def spread(e):
            x = 0.0
            for i in range(2):
                x += e.ends[i].T * e.k + math.sin(e.ends[i].T)
            loss += x * x

        self.kernels = (gather, spread)

    def run(self, T=None, k=None):
        self.V.T.load(self.T0 if T is None else T)
        self.E.k.load(self.k0 if k is None else k)
        self.loss.value = 0.0
        self.V.foreach(self.kernels[0])
        self.E.foreach(self.kernels[1])
        return self.loss.value

    def gradients(self):
        self.V.T.load(self.T0)
        self.E.k.load(self.k0)
        with rs.Tape() as tape:
            self.loss.value = 0.0
            self.V.foreach(self.kernels[0])
            self.E.foreach(self.kernels[1])
        tape.backward(self.loss)
        return self.V.T.grad.numpy(copy=True), self.E.k.grad.numpy(copy=True)


def test_loops_accumulating_into_locals_are_differentiated():
    g = Gather()
    dT, dk = g.gradients()
    assert np.count_nonzero(dk) >= 10 and np.count_nonzero(dT) >= 5
    agrees_with_central(dT, lambda T: g.run(T=T), g.T0, what="T")
    agrees_with_central(dk, lambda k: g.run(k=k), g.k0, what="k")
    answers = set()
    for config in CONFIGS.values():
        with configured(**config):
            dT, dk = Gather().gradients()
        answers.add((dT.tobytes(), dk.tobytes()))
    assert len(answers) == 1


def test_a_grouping_loop_reading_another_rows_group_isrefused():
    """A loop over the group of a row the kernel's row names (not its own group, nor a cell
    near its own): its reads' adjoints cannot be transposed, so it is refused at its line."""
    V = rs.Relation("U", 3)
    V.new_field("T", rs.f64)
    V.new_key_field("next", V, values=[1, 2, 0])
    E = rs.Relation("F", 4)
    E.new_key_field("head", V, values=[0, 1, 1, 2])
    E.new_field("k", rs.f64, 1.0)
    E.group_by("head", "ins")

    @rs.kernel
    def gather(v):
        s = 0.0
        for e in v.next.ins:
            s += e.k * v.T
        LOSS += s

    msg = refused(gather, V, "from a group other than the row's own")
    assert "for e in v.next.ins:" in msg


def test_checkpointed_tapes_give_the_same_bits_in_less_memory():
    answers, held = [], []
    for every in (None, 1, 2, 5):
        g = Graph()
        g.run()
        g.V.T.load(g.T0)
        with rs.Tape(checkpoint_every=every) as tape:
            for _ in range(6):
                g.E.foreach(g.conduct)
                g.V.foreach(g.update)
            g.loss.value = 0.0
            g.V.foreach(g.misfit)
        end = g.V.T.numpy(copy=True)
        held.append(tape.held_bytes())
        tape.backward(g.loss)
        assert g.V.T.numpy().tobytes() == end.tobytes()
        answers.append((g.V.T.grad.numpy().tobytes(), g.E.k.grad.numpy().tobytes(),
                        g.kappa.grad.hex()))
    assert all(a == answers[0] for a in answers)
    assert held[3] < held[2] < held[0]
    with pytest.raises(rs.GradientError, match="checkpoint_every must be a positive int"):
        rs.Tape(checkpoint_every=0)


class Springs:
    """Vectors: a mass-spring net in 3-D (positions and velocities vec3 fields), forces reduced
    into both ends, dot / norm / cross, a vector Global sum, a component store and a branch."""

    def __init__(self, seed=2):
        rng = np.random.default_rng(seed)
        V = self.V = rs.Relation("masses", 6)
        V.new_field("x", rs.vec(3))
        V.new_field("v", rs.vec(3))
        V.new_field("f", rs.vec(3))
        S = self.S = rs.Relation("springs", 9)
        a = rng.integers(0, 6, 9)
        S.new_key_field("a", V, values=a)
        S.new_key_field("b", V, values=(a + rng.integers(1, 6, 9)) % 6)  # never a itself
        S.new_field("rest", rs.f64).load(rng.uniform(0.5, 1.0, 9))
        self.x0, self.v0 = rng.standard_normal((6, 3)), 0.1 * rng.standard_normal((6, 3))
        self.rest0 = S.rest.numpy(copy=True)
        axis, spin = rs.Global(rs.vec(3), (0.0, 0.3, 1.0)), rs.Global(rs.vec(3), (0.0, 0.0, 0.0))
        loss = self.loss = rs.Global(rs.f64, 0.0)
        self.axis, self.spin = axis, spin

        @rs.kernel
        def springs(s):
            d = s.b.x - s.a.x
            n = rs.norm(d)
            f = (50.0 * (n - s.rest) / (n + 1e-9)) * d
            s.a.f += f
            s.b.f -= f

        @rs.kernel
        def move(v):
            w = v.v + 0.01 * (v.f + rs.cross(axis, v.v))
            if rs.dot(w, w) > 4.0:
                w = 0.5 * w
            v.v = w
            v.x = v.x + 0.01 * w
            v.x[2] = v.x[2] - 0.001
            v.f = rs.vec(3)(0.0, 0.0, 0.0)

        @rs.kernel
        def measure(v):
            spin += rs.cross(v.x, v.v)
            loss += rs.dot(v.x, v.x) * 0.5 + v.x[0] * v.v[1]

        self.kernels = (springs, move, measure)

    def run(self, x=None, rest=None, axis=(0.0, 0.3, 1.0), steps=4):
        self.V.x.load(self.x0 if x is None else x)
        self.V.v.load(self.v0)
        self.V.f.load(0.0)
        self.S.rest.load(self.rest0 if rest is None else rest)
        self.axis.value = axis
        springs, move, measure = self.kernels
        for _ in range(steps):
            self.S.foreach(springs)
            self.V.foreach(move)
        self.loss.value = 0.0
        self.spin.value = (0.0, 0.0, 0.0)
        self.V.foreach(measure)
        return self.loss.value

    def gradients(self):
        self.run()
        self.V.x.load(self.x0)
        self.V.v.load(self.v0)
        self.V.f.load(0.0)
        with rs.Tape() as tape:
            springs, move, measure = self.kernels
            for _ in range(4):
                self.S.foreach(springs)
                self.V.foreach(move)
            self.loss.value = 0.0
            self.spin.value = (0.0, 0.0, 0.0)
            self.V.foreach(measure)
        tape.backward(self.loss)
        return (self.V.x.grad.numpy(copy=True), self.S.rest.grad.numpy(copy=True),
                np.array(self.axis.grad))


def test_vectors_are_differentiated_component_by_component():
    g = Springs()
    dx, drest, daxis = g.gradients()
    assert dx.shape == (6, 3) and np.count_nonzero(daxis) == 3
    agrees_with_central(dx, lambda x: g.run(x=x), g.x0, what="x")
    agrees_with_central(drest, lambda r: g.run(rest=r), g.rest0, what="rest")
    for c in range(3):
        fd = central(lambda a: g.run(axis=tuple(a)), np.array([0.0, 0.3, 1.0]), c)
        assert abs(daxis[c] - fd) <= 1e-6 * max(1.0, abs(fd)), (c, daxis[c], fd)
    answers = set()
    for config in CONFIGS.values():
        with configured(**config):
            dx, drest, daxis = Springs().gradients()
        answers.add((dx.tobytes(), drest.tobytes(), daxis.tobytes()))
    assert len(answers) == 1


def test_the_gallery_fem_beam_is_differentiated():
    """Matrices: the Neo-Hookean beam's step (simulations/fem.py: deformation gradients,
    inverse, det, log, @, transpose, forces reduced into the tets' vertices, the free vertices'
    update over a subset); the gradient of a loss on the final positions with respect to the
    initial velocities, against central differences, and the same bits on every target."""
    from relsim_simulations import fem

    def beam():
        mesh = fem.beam(1)
        setup, step, _, _ = fem.build(mesh, fem.time_step(1))
        setup()
        V = mesh.vertices
        loss = rs.Global(rs.f64, 0.0)

        @rs.kernel
        def spread(v):
            loss += rs.dot(v.x - v.pos, v.x - v.pos) + v.x[2]

        rng = np.random.default_rng(4)
        v0 = 0.3 * rng.standard_normal((V.size, 3))
        v0[V.xmin.rows] = 0.0

        def run(vel, tape=None):
            V.x.load(V.pos.numpy())
            V.vel.load(vel)
            V.f.load(0.0)
            with tape or contextlib.nullcontext():
                for _ in range(5):
                    step()
                loss.value = 0.0
                V.foreach(spread)
            return loss.value

        return V, loss, v0, run

    V, loss, v0, run = beam()
    tape = rs.Tape()
    run(v0, tape)
    tape.backward(loss)
    dv = V.vel.grad.numpy(copy=True)
    free = np.setdiff1d(np.arange(V.size), V.xmin.rows)
    for i in free[:: max(1, len(free) // 6)]:
        for c in range(3):
            fd = central(lambda flat: run(flat.reshape(-1, 3)), v0.ravel(), 3 * i + c)
            assert abs(dv[i, c] - fd) <= 1e-6 * max(1.0, abs(fd)), (i, c, dv[i, c], fd)
    answers = set()
    for config in CONFIGS.values():
        with configured(**config):
            V, loss, v0, run = beam()
            tape = rs.Tape()
            run(v0, tape)
            tape.backward(loss)
            answers.add(V.vel.grad.numpy().tobytes())
    assert len(answers) == 1



def test_random_draws_are_constants_of_the_program():
    """rs.normal / rs.uniform are functions of their counters: the same draws in the replay,
    no derivative through them (documented); the gradient is the central differences'."""
    V = rs.Relation("noisy", 5)
    V.new_field("a", rs.f64).load(np.linspace(0.0, 1.0, 5))
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def draw(v):
        loss += (v.a + 0.1 * rs.normal(v, 3, seed=7)) ** 2 + rs.uniform(v, 1) * v.a

    def run(a):
        V.a.load(a)
        loss.value = 0.0
        V.foreach(draw)
        return loss.value

    a0 = np.linspace(0.0, 1.0, 5)
    V.a.load(a0)
    with rs.Tape() as tape:
        loss.value = 0.0
        V.foreach(draw)
    tape.backward(loss)
    for i in range(5):
        fd = central(run, a0, i)
        assert abs(V.a.grad.numpy()[i] - fd) <= 1e-6 * max(1.0, abs(fd))


def test_host_changes_a_tape_cannot_replay_arerefused():
    g = Graph()
    P = rs.Relation("grows", 3, elastic=True)
    with rs.Tape():
        with pytest.raises(rs.DataError, match="loading keys into E.head while an rs.Tape"):
            g.E.head.load(np.zeros(g.E.size, dtype=np.int64))
        with pytest.raises(rs.DataError, match="grows.insert while an rs.Tape records"):
            P.insert(2)
        with pytest.raises(rs.DataError, match="grows.delete while an rs.Tape records"):
            P.delete([0])
    P.insert(2)  # after the tape: as usual
    assert P.size == 5


def test_min_max_and_arg_reductions_send_the_derivative_to_the_chosen_row():
    V = rs.Relation("picked", 7)
    V.new_field("a", rs.f64)
    a0 = np.array([0.3, -1.2, 0.8, 2.1, -0.4, 1.7, 0.05])
    lo, hi = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
    floor_, loss = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
    P = rs.Relation("one", 1)

    @rs.kernel
    def pick(v):
        lo = min(lo, v.a * v.a - v.a)  # noqa: F841
        rs.reduce_argmax(hi, math.sin(v.a) + v.a)
        floor_ = max(floor_, v.a)  # noqa: F841 (its start, 5.0, beats every row)

    @rs.kernel
    def score(p):
        loss += lo * hi + 3.0 * floor_

    def run(a, start=5.0):
        V.a.load(a)
        lo.value, hi.value, floor_.value = 10.0, -10.0, start
        V.foreach(pick)
        loss.value = 0.0
        P.foreach(score)
        return loss.value

    for config in CONFIGS.values():
        with configured(**config):
            V.a.load(a0)
            lo.value, hi.value, floor_.value = 10.0, -10.0, 5.0
            with rs.Tape() as tape:
                V.foreach(pick)
                loss.value = 0.0
                P.foreach(score)
            tape.backward(loss)
            da = V.a.grad.numpy(copy=True)
            assert hi.row == 3 and np.count_nonzero(da) == 2  # the two rows chosen
            for i in range(7):
                fd = central(run, a0, i)
                assert abs(da[i] - fd) <= 1e-6 * max(1.0, abs(fd)), (config, i, da[i], fd)
            assert floor_.grad == 3.0  # no row beat the Global's start: it gets the derivative
            assert lo.grad == 0.0 and hi.grad == 0.0  # rows won: the starts did not matter


def test_seeds_on_fields_and_globals_give_the_vector_jacobian_product():
    """backward({field: seed, global: seed}) is the gradient of sum(seed * final value): the
    same bits as a loss kernel summing those products; bad seeds are refused."""
    rng = np.random.default_rng(4)
    V = rs.Relation("Vs", 5)
    V.new_field("x", rs.f64).load(rng.uniform(0.5, 1.5, 5))
    V.new_field("y", rs.vec(2, rs.f64))
    V.new_field("s", rs.f64).load(rng.standard_normal(5))
    V.new_field("t", rs.vec(2, rs.f64)).load(rng.standard_normal((5, 2)))
    total = rs.Global(rs.f64, 0.0)
    loss = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def grow(v):
        v.y = rs.vec(2)(v.x * v.x, math.sin(v.x))
        total += v.x * v.x * v.x

    @rs.kernel
    def weigh(v):
        loss += rs.dot(v.t, v.y) + 0.7 * total / 5.0

    def program(tape, with_loss):
        V.x.load(np.linspace(0.5, 1.5, 5))
        with tape:
            total.value = 0.0
            V.foreach(grow)
            if with_loss:
                loss.value = 0.0
                V.foreach(weigh)
        return tape

    tape = program(rs.Tape(), True)
    tape.backward(loss)
    expected = V.x.grad.numpy(copy=True)
    tape = program(rs.Tape(), False)
    tape.backward({V.y: V.t.numpy(), total: 0.7})
    assert np.array_equal(V.x.grad.numpy(), expected)
    with pytest.raises(rs.GradientError, match=r"has shape \(5,\); its values have shape "
                                               r"\(5, 2\)"):
        tape.backward({V.y: np.ones(5)})
    with pytest.raises(rs.GradientError, match="float fields and Globals"):
        tape.backward({V.x.grad.relation: 1.0})
