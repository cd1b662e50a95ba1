"""rs.fuse: kernels over the same relation run as one pass, with the bits of the kernels run one
after the other, on every target; and the fusions that could not give those bits are refused at
the lines that conflict."""
import numpy as np
import pytest

import relsim as rs
from tests.conftest import chain_mesh
from tests.fails.helpers import ALSO, HERE, check_site


def bits(a):
    return np.ascontiguousarray(a).tobytes()


def problem(n=9):
    V, E = chain_mesh(n)
    rng = np.random.default_rng(7)
    V.new_field("q", rs.f64).load(rng.standard_normal(n))
    V.new_field("x", rs.f64).load(rng.standard_normal(n))
    V.new_field("res", rs.f64)
    V.new_field("adt", rs.f64)
    V.new_field("n", rs.i32)
    E.new_field("k", rs.f64).load(rng.random(n - 1))
    return V, E


def kernels(rms, lo):
    @rs.kernel
    def flux(e):
        d = e.k * (e.head.q - e.tail.q)
        e.tail.res += d
        e.head.res -= d

    @rs.kernel
    def update(v):  # reads res (pending folds absorbed), writes q, reduces two Globals
        t = v.res * 0.25
        v.q = v.q + t
        v.res = 0.0
        rms += t * t
        lo = min(lo, v.q)

    @rs.kernel
    def adt_calc(c):  # another parameter name; a local `t` of another type
        t = 3
        s = 0.0
        if c.q > 0.0:
            s = c.q * c.x
        c.adt = s * t + c.x
        c.n = t

    return flux, update, adt_calc


@pytest.mark.device_sized
def test_fused_equals_the_kernels_one_after_the_other(target):
    results = []
    for fused in (False, True):
        V, E = problem()
        rms, lo = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, np.inf)
        flux, update, adt_calc = kernels(rms, lo)
        step = rs.fuse(update, adt_calc)
        for _ in range(3):
            E.foreach(flux, target)
            if fused:
                V.foreach(step, target)
            else:
                V.foreach(update, target)
                V.foreach(adt_calc, target)
        results.append([bits(V.q.numpy()), bits(V.adt.numpy()), bits(V.n.numpy()),
                        bits(V.res.numpy()), rms.value, lo.value])
    assert results[0] == results[1]


def test_fused_over_a_subset_and_its_name():
    V, E = problem()
    rms, lo = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, np.inf)
    _, update, adt_calc = kernels(rms, lo)
    step = rs.fuse(update, adt_calc)
    assert step.name == "update+adt_calc" and "update, then adt_calc" in step.__doc__
    assert rs.fuse(update, adt_calc, name="stage").name == "stage"
    S = V.subset("odd", np.arange(1, 9, 2))
    S.foreach(step)
    want_q = V.q.numpy(copy=True)
    V2, _ = problem()
    rms2, lo2 = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, np.inf)
    _, update2, adt2 = kernels(rms2, lo2)
    S2 = V2.subset("odd", np.arange(1, 9, 2))
    S2.foreach(update2)
    S2.foreach(adt2)
    assert bits(want_q) == bits(V2.q.numpy()) and bits(V.adt.numpy()) == bits(V2.adt.numpy())
    assert rms.value == rms2.value


def test_fuse_takes_kernels():
    V, E = problem()
    _, update, adt_calc = kernels(rs.Global(rs.f64, 0.0), rs.Global(rs.f64, np.inf))
    with pytest.raises(TypeError, match="two kernels or more"):
        rs.fuse(update)
    with pytest.raises(TypeError, match="@rs.kernel"):
        rs.fuse(update, len)
    with pytest.raises(TypeError, match="fused already"):
        rs.fuse(rs.fuse(update, adt_calc), update)


# -- refused -----------------------------------------------------------------------------------
def refused(rel, fused, cls, words, here, also=None):
    with pytest.raises(cls) as info:
        rel.foreach(fused, rs.Config(target="interp"))
    exc = info.value
    assert exc.kernel == fused.name
    for w in words:
        assert w in exc.message, exc.message
    text = str(exc)
    check_site(text, exc.loc, here, HERE)
    if also is not None:
        assert len(exc.extra) == 1
        check_site(text, exc.extra[0][1], also, ALSO)
    return exc


def ring():
    P = rs.Relation("P", 6)
    P.new_field("u", rs.f64, init=1.0)
    P.new_key_field("next", P).load(np.array([1, 2, 3, 4, 5, 0]))
    return P


def test_a_later_kernel_reading_another_row_of_what_an_earlier_one_writes():
    P = ring()

    @rs.kernel
    def bump(p):
        p.u = p.u + 1.0  # <- also

    @rs.kernel
    def own(p):
        p.u = p.u * 2.0  # its own row: accepted

    P.foreach(rs.fuse(bump, own))
    assert (P.u.numpy() == 4.0).all()

    @rs.kernel
    def peek(p):
        p.u = p.next.u  # <- here

    refused(P, rs.fuse(bump, peek), rs.PhaseError, ["field P.u", "read and written"], peek,
            bump)


def test_two_kernels_reducing_into_one_global():
    V, _ = problem()
    g = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def a(v):
        g += v.q  # <- here

    @rs.kernel
    def b(v):
        g += v.x  # <- also

    refused(V, rs.fuse(a, b), rs.PhaseError,
            ["Global 'g'", "reduced into by kernel 'a'", "used by kernel 'b'", "fold together"],
            a, b)


def test_a_key_reduction_and_another_kernels_centred_use():
    V, E = problem()

    @rs.kernel
    def scatter(e):
        e.head.res += e.k

    @rs.kernel
    def own(e):
        e.k = e.k + 1.0

    E.foreach(rs.fuse(scatter, own))  # different fields: accepted
    P = ring()

    @rs.kernel
    def push(p):
        p.next.u += 1.0  # <- here

    @rs.kernel
    def decay(p):
        p.u += 0.5  # <- also

    refused(P, rs.fuse(push, decay), rs.PhaseError,
            ["field P.u", "reduced into by kernel 'push'", "used by kernel 'decay'"], push, decay)


@pytest.mark.parametrize("what", ["return", "delete", "insert"])
def test_only_the_last_kernel_may_end_its_row(what):
    P = rs.Relation("P", 6, elastic=True)
    P.new_field("u", rs.f64, init=1.0)

    @rs.kernel
    def early(p):
        if p.u > 0.5:
            return  # <- here
        p.u = 2.0

    @rs.kernel
    def gone(p):
        rs.delete(p)  # <- here

    @rs.kernel
    def more(p):
        rs.insert(P, u=p.u)  # <- here

    @rs.kernel
    def after(p):
        p.u = p.u + 1.0

    first = {"return": early, "delete": gone, "insert": more}[what]
    words = {"return": "returns early", "delete": "deletes rows", "insert": "inserts rows"}[what]
    refused(P, rs.fuse(first, after), rs.KernelSyntaxError, [words, "only the last kernel"],
            first)
    P.foreach(rs.fuse(after, first))  # last: as run apart
