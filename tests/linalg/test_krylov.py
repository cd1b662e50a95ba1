"""relsim.linalg's Krylov solvers: the answers SciPy gives, the same iterates bit for bit on every
target and thread count, the same iteration count for a renumbered mesh, and a SolverError
naming the iteration and the quantity at a breakdown."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

import relsim as rs
from relsim import linalg
from tests.linalg import systems


def _rhs(V, seed=1):
    V.b.load(np.random.default_rng(seed).standard_normal(V.size))


def _solve(solver, target, c=0.5, w=0.0, nv=60, ne=150, M=False, **kw):
    V, E = systems.graph(nv, ne)
    _rhs(V)
    A = systems.operator(V, E, c=c, w=w)
    if M:
        V.diag.load(systems.matrix(V, E, c=c, w=w).diagonal())
    info = solver(A, V.b, V.x, config=target, M=V.diag, **kw) if M else \
        solver(A, V.b, V.x, config=target, **kw)
    return V, E, info


@pytest.mark.parametrize("M", [False, True])
def test_cg_solves_an_spd_system_as_scipy_does(target, M):
    V, E, info = _solve(linalg.cg, target, M=M, rtol=1e-10)
    ref = spla.spsolve(systems.matrix(V, E, c=0.5), V.b.numpy())
    assert info.converged and info.residuals[-1] <= info.tolerance
    assert len(info.residuals) == info.iterations + 1
    assert np.allclose(V.x.numpy(), ref, rtol=0, atol=1e-8 * np.abs(ref).max())
    # the residual norm the solver reports is the true one
    r = V.b.numpy() - systems.matrix(V, E, c=0.5) @ V.x.numpy()
    assert np.linalg.norm(r) == pytest.approx(info.residuals[-1], rel=1e-3, abs=1e-12)


def test_bicgstab_solves_a_nonsymmetric_system(target):
    V, E, info = _solve(linalg.bicgstab, target, w=0.7, rtol=1e-10)
    ref = spla.spsolve(systems.matrix(V, E, c=0.5, w=0.7), V.b.numpy())
    assert info.converged and np.allclose(V.x.numpy(), ref, rtol=0,
                                          atol=1e-8 * np.abs(ref).max())


@pytest.mark.parametrize("restart", [5, 10, 12])  # (10 and 12 share a basis of 16 columns)
def test_gmres_solves_a_nonsymmetric_system_in_scipys_iterations(target, restart):
    """Restarted GMRES: SciPy's answer, in as many iterations as scipy.sparse.linalg.gmres
    takes with the same restart, and the last residual the solver reports is the true one."""
    V, E, info = _solve(linalg.gmres, target, w=0.7, rtol=1e-10, restart=restart)
    Am = systems.matrix(V, E, c=0.5, w=0.7)
    seen = []
    _, code = spla.gmres(Am, V.b.numpy(), rtol=1e-10, restart=restart, maxiter=1000,
                         callback=seen.append, callback_type="pr_norm")
    assert code == 0 and info.converged and info.iterations == len(seen)
    ref = spla.spsolve(Am, V.b.numpy())
    assert np.allclose(V.x.numpy(), ref, rtol=0, atol=1e-8 * np.abs(ref).max())
    true = np.linalg.norm(V.b.numpy() - Am @ V.x.numpy())
    assert info.residuals[-1] == pytest.approx(true, rel=1e-5) and true <= 1.01 * info.tolerance


def test_gmres_stagnation_and_breakdown_are_solver_errors():
    R = rs.Relation("R", 2)
    for name in ("u", "Au", "b", "x", "sign"):
        R.new_field(name, rs.f64)
    R.new_key_field("other", R, values=np.array([1, 0]))
    R.sign.load(np.array([1.0, -1.0]))
    R.b.load(np.array([1.0, 0.0]))

    @rs.kernel
    def rotate(r):  # A = [[0, 1], [-1, 0]]: GMRES(1) never leaves x = 0 (Au is u turned)
        r.Au = r.sign * r.other.u

    @rs.kernel
    def zero(r):
        r.Au = 0.0

    with pytest.raises(linalg.SolverError, match=r"did not fall in the cycle ending at "
                                                 r"iteration 1 \(stagnation"):
        linalg.gmres(linalg.Operator(rotate, x=R.u, y=R.Au), R.b, R.x, restart=1)
    R.x.fill(0.0)
    assert linalg.gmres(linalg.Operator(rotate, x=R.u, y=R.Au), R.b, R.x, restart=2).converged
    with pytest.raises(linalg.SolverError, match="breakdown at iteration 1: A v = 0"):
        linalg.gmres(linalg.Operator(zero, x=R.u, y=R.Au), R.b, R.x)
    with pytest.raises(ValueError, match="restart must be an int >= 1"):
        linalg.gmres(linalg.Operator(zero, x=R.u, y=R.Au), R.b, R.x, restart=0)


@pytest.mark.parametrize("solver,w,kw", [(linalg.cg, 0.0, {}), (linalg.bicgstab, 0.7, {}),
                                         (linalg.gmres, 0.7, {"restart": 10})])
def test_the_same_iterates_on_every_target(solver, w, kw):
    """interp, cpu at 1 and 2 threads (parallel launches) and cpu-serial: identical residual
    histories and solutions, bit for bit (the dot products are exact sums); every registered
    target, cuda included, below."""
    out = {}
    configs = {"interp": rs.Config(target="interp"),
               "cpu-1": rs.Config(target="cpu", parallel_threshold=1, threads=1),
               "cpu-2": rs.Config(target="cpu", parallel_threshold=1, threads=2),
               "cpu-serial": rs.Config(target="cpu-serial")}
    for name, cfg in configs.items():
        V, _, info = _solve(solver, cfg, w=w, rtol=1e-12, **kw)
        out[name] = (info.iterations, [x.hex() for x in info.residuals], V.x.numpy().tobytes())
    first = out["interp"]
    assert first[0] > 10
    for name, got in out.items():
        assert got == first, name


@pytest.mark.parametrize("M,dots", [(False, "exact"), (True, "exact"), (False, "ordered")])
@pytest.mark.parametrize("threads", [1, 2])
def test_cg_captured_gives_the_launch_by_launch_iterates(M, dots, threads):
    """cg runs each iteration as a captured step (recorded at the first solve), then, that
    compiled, its whole loop as one (rs.while_loop inside rs.capture: on the cpu one compiled
    call; recorded at the next solve); each iteration with a callback; launch by launch when
    timers are asked for: the same histories and x every way."""
    cfg = rs.Config(target="cpu", parallel_threshold=1, threads=threads)
    V, E = systems.graph(60, 150)
    A = systems.operator(V, E, c=0.5)
    if M:
        V.diag.load(systems.matrix(V, E, c=0.5).diagonal())
    out, seen = [], []
    for kw in ({"timers": {}}, {}, {}, {}, {"callback": lambda it, norm: seen.append(norm)}):
        _rhs(V)
        V.x.fill(0.0)
        info = linalg.cg(A, V.b, V.x, rtol=1e-12, dots=dots, config=cfg,
                         **({"M": V.diag} if M else {}), **kw)
        out.append((info.iterations, [x.hex() for x in info.residuals], V.x.numpy().tobytes()))
        for _, step, *_ in _workspace_of(V).steps.values():
            step.step.compile()  # (else compiled in the background meanwhile)
    assert out[0][0] > 10 and out[0] == out[1] == out[2] == out[3] == out[4]
    assert seen == info.residuals[1:]
    whole = [s.step for key, (_, s, *_) in _workspace_of(V).steps.items() if key[1] is not None]
    assert len(whole) == 1 and whole[0].replays == 1
    # the whole loop one compiled call (exact sums rounded from their lanes, ordered ones
    # folded by their compiled slot fold)
    names = [item.__name__ for item in next(iter(whole[0].plans.values())).items]
    assert names == ["item"], names


def _workspace_of(V):
    from relsim.linalg import krylov
    (ws,) = krylov._workspaces[V].values()
    return ws


@pytest.mark.device_sized
def test_tiny_solves_agree_with_interp(target):
    want = _solve(linalg.cg, rs.Config(target="interp"), nv=6, ne=9, rtol=1e-12)
    got = _solve(linalg.cg, target, nv=6, ne=9, rtol=1e-12)
    assert got[2].residuals == want[2].residuals
    assert got[0].x.numpy().tobytes() == want[0].x.numpy().tobytes()


def test_a_renumbered_mesh_takes_the_same_iterations():
    cfg = rs.Config(target="cpu", parallel_threshold=1)
    V, E = systems.graph(80, 200)
    _rhs(V)
    info = linalg.cg(systems.operator(V, E), V.b, V.x, rtol=1e-10, config=cfg)
    perm = np.random.default_rng(9).permutation(80)
    V2, E2 = systems.graph(80, 200, perm=perm)
    b2 = np.empty(80)
    b2[perm] = V.b.numpy()
    V2.b.load(b2)
    info2 = linalg.cg(systems.operator(V2, E2), V2.b, V2.x, rtol=1e-10, config=cfg)
    assert info2.iterations == info.iterations
    assert np.allclose(V2.x.numpy()[perm], V.x.numpy(), rtol=1e-9)


def test_jacobi_preconditioning_pays_on_a_badly_scaled_diagonal():
    cfg = rs.Config(target="cpu")
    V, E = systems.graph(100, 200)
    _rhs(V)
    cs = 10.0 ** np.random.default_rng(3).uniform(0, 4, 100)
    V.new_field("cs", rs.f64).load(cs)
    A = systems.operator(V, E, cs=V.cs)
    plain = linalg.cg(A, V.b, V.x, rtol=1e-10, config=cfg)
    x_plain = V.x.numpy(copy=True)
    V.diag.load(systems.matrix(V, E, cs=cs).diagonal())
    V.x.fill(0.0)
    pre = linalg.cg(A, V.b, V.x, rtol=1e-10, M=V.diag, config=cfg)
    assert plain.converged and pre.converged
    assert pre.iterations < plain.iterations / 2
    assert np.allclose(V.x.numpy(), x_plain, rtol=1e-7)


def test_the_initial_guess_counts_and_callback_sees_each_iteration():
    cfg = rs.Config(target="cpu")
    V, E = systems.graph()
    _rhs(V)
    A = systems.operator(V, E)
    first = linalg.cg(A, V.b, V.x, rtol=1e-12, config=cfg)
    seen = []
    again = linalg.cg(A, V.b, V.x, rtol=1e-6, config=cfg,
                      callback=lambda it, norm: seen.append((it, norm)))
    assert again.converged and again.iterations == 0 and seen == []  # x is the solution already
    V.x.fill(0.0)
    capped = linalg.cg(A, V.b, V.x, rtol=1e-12, maxiter=5, config=cfg,
                       callback=lambda it, norm: seen.append((it, norm)))
    assert not capped.converged and capped.iterations == 5
    assert seen == list(zip(range(1, 6), capped.residuals[1:]))
    assert capped.residuals == first.residuals[:6]


def test_an_indefinite_operator_is_a_solver_error_naming_the_iteration():
    V, E = systems.graph()
    _rhs(V)
    A = systems.operator(V, E, c=-8.0)  # negative definite: the first curvature is negative
    messages = []
    for kw in ({}, {"timers": {}}, {"callback": lambda it, norm: None}):  # (whole loop captured,
        # launch by launch, each iteration captured: the same error)
        V.x.fill(0.0)
        with pytest.raises(linalg.SolverError, match=r"cg: the curvature p\.Ap = -[0-9.e+]+ "
                                                     r"at iteration 1 is not positive") as e:
            linalg.cg(A, V.b, V.x, config=rs.Config(target="cpu"), **kw)
        messages.append(str(e.value))
    assert messages[0] == messages[1] == messages[2]
    assert isinstance(linalg.SolverError("x"), ArithmeticError)


def test_nan_in_the_right_hand_side_or_the_guess_is_a_solver_error():
    V, E = systems.graph()
    A = systems.operator(V, E)
    b = np.ones(V.size)
    b[7] = np.nan
    V.b.load(b)
    with pytest.raises(linalg.SolverError, match="right-hand side V.b holds NaN"):
        linalg.cg(A, V.b, V.x)
    V.b.fill(1.0)
    x = np.zeros(V.size)
    x[3] = np.inf
    V.x.load(x)
    with pytest.raises(linalg.SolverError, match="initial residual norm is nan"):
        linalg.bicgstab(A, V.b, V.x)


def test_bicgstab_breakdown_names_the_quantity():
    V, E = systems.graph(10, 9)
    A = systems.operator(V, E)
    V.b.fill(1.0)

    @rs.kernel
    def zero(v):
        v.Au = 0.0

    singular = linalg.Operator(zero, x=V.u, y=V.Au)  # A = 0: r^.v = 0 at once
    with pytest.raises(linalg.SolverError, match=r"bicgstab: breakdown at iteration 1: "
                                                 r"r\^\.v \(v = A p\) = 0\.0"):
        linalg.bicgstab(singular, V.b, V.x)
    assert linalg.cg(A, V.b, V.x).converged  # the same fields, another solver


def test_bad_arguments_name_the_fields():
    V, E = systems.graph(10, 9)
    W = rs.Relation("W", 10)
    W.new_field("b", rs.f64)
    V.new_field("v3", rs.vec(3))
    A = systems.operator(V, E)
    with pytest.raises(rs.DataError, match=r"b \(W.b\) is not a field of the operator's "
                                           r"relation V"):
        linalg.cg(A, W.b, V.x)
    with pytest.raises(rs.DataError, match="x must be a scalar f64 field, got 'V.v3'"):
        linalg.cg(A, V.b, V.v3)
    with pytest.raises(rs.DataError) as bad:  # an array: its shape, never its values
        linalg.cg(A, np.arange(7434.0), V.x)
    assert str(bad.value) == ("cg: b must be a scalar f64 field, got a NumPy array of shape "
                              "(7434,) (load it into a field of the operator's relation: "
                              "R.new_field(name, rs.f64).load(array))")
    with pytest.raises(rs.DataError, match=r"got list \[0, 1, 2, .*\.\.\.$"):
        linalg.cg(A, V.b, list(range(100)))
    with pytest.raises(rs.DataError, match="must be different fields"):
        linalg.cg(A, V.b, V.u)
    with pytest.raises(TypeError, match="A must be a relsim.linalg.Operator"):
        linalg.cg(lambda x, y: None, V.b, V.x)
    with pytest.raises(rs.DataError, match="two fields of one relation"):
        linalg.Operator(lambda cfg: None, x=V.u, y=W.b)


@pytest.mark.parametrize("solver", [linalg.cg, linalg.bicgstab])
def test_two_operators_on_the_same_fields_each_solve_their_own_system(solver):
    """A solve's captured steps replay the operator's launches they recorded: a solve with
    another operator on the same fields (and a fresh, equal configuration) must not replay
    them (it did: cg with A = 4 I after A = 2 I returned x = b / 2 again)."""
    V = rs.Relation("V", 50)
    for name in ("u", "Au", "b", "x"):
        V.new_field(name, rs.f64)
    V.b.load(np.linspace(1.0, 2.0, 50))

    @rs.kernel
    def two(v):
        v.Au = 2.0 * v.u

    @rs.kernel
    def four(v):
        v.Au = 4.0 * v.u

    for scale, k in ((2.0, two), (4.0, four), (2.0, two), (4.0, four), (4.0, four)):
        cfg = rs.Config(target="cpu", segments="now")
        V.x.fill(0.0)
        assert solver(linalg.Operator(k, x=V.u, y=V.Au), V.b, V.x, config=cfg).converged
        assert np.array_equal(V.x.numpy(), V.b.numpy() / scale)


@pytest.mark.parametrize("M", [False, True])
def test_cg_launches_precompiled_give_the_same_solve(tmp_path, M):
    """`linalg.cg_launches`: what cg launches (its generated kernels, a SparseMatrix's
    product), for `rs.precompile`; compiled ahead (nothing more to compile ahead after), the
    solve gives the bits of a solve that compiled them itself."""
    results = []
    for ahead in (False, True):
        cfg = rs.Config(target="cpu", cache_dir=str(tmp_path / str(ahead)), parallel_threshold=1)
        V, E = systems.graph()
        _rhs(V)
        A = linalg.SparseMatrix.from_scipy(V, systems.matrix(V, E, c=0.5))
        if M:
            V.diag.load(systems.matrix(V, E, c=0.5).diagonal())
        diag = V.diag if M else None
        if ahead:
            launches = linalg.cg_launches(A, V.b, V.x, M=diag)
            kernels = {k.name for k, _ in launches}
            assert len(launches) >= 4 and all(R is V for _, R in launches)
            assert any("matvec" in name or "product" in name for name in kernels), kernels
            rs.precompile(launches, cfg)  # (nothing left when this process solved before)
            assert rs.precompile(launches, cfg) == 0  # all there now
        info = linalg.cg(A, V.b, V.x, M=diag, rtol=1e-10, config=cfg)
        assert info.converged
        results.append((V.x.numpy(copy=True).tobytes(), list(info.residuals)))
    assert results[0] == results[1]


def test_cg_launches_of_a_preconditioner_object_are_its_own():
    V, E = systems.graph()
    A = linalg.SparseMatrix.from_scipy(V, systems.matrix(V, E, c=0.5))
    with pytest.raises(TypeError, match="preconditioner object"):
        linalg.cg_launches(A, V.b, V.x, M=linalg.Multigrid(A))
