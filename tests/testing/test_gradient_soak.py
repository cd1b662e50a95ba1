"""The gradient soak (`relsim.testing.gradient_soak`): random differentiable programs whose tape
gradients and forward-mode derivatives agree with extrapolated central differences and with
each other, and a check that fails when a derivative rule is wrong in either mode."""
import pytest

from relsim.runtime.adjoint import derivatives
from relsim.testing import gradient_soak as soak
from tests.conftest import configured


def test_random_programs_have_the_gradients_of_central_differences(tmp_path):
    with configured(target="interp"):
        results = [soak.check(seed, tmp_path) for seed in range(25)]
    assert all(not failure for _, _, failure, _ in results), [r[2] for r in results if r[2]]
    assert sum(c for c, _, _, _ in results) >= 40
    assert sum(h for *_, h in results) >= 5  # (Hessian-vector products checked: 6 of 25)


def test_the_soak_fails_on_a_wrong_derivative(tmp_path, monkeypatch):
    """With sin's derivative made wrong, programs computing a sine fail the check."""
    seeds = [s for s in range(60) if "math.sin(" in soak.program_source(s)[0]][:8]
    monkeypatch.setitem(derivatives._RULES, "sin", lambda b, a, r: (b.call("sin", a[0]),))
    with configured(target="interp"):
        failures = [soak.check(seed, tmp_path)[2] for seed in seeds]
    assert sum(bool(f) for f in failures) >= len(seeds) // 2, failures
    first = next(f for f in failures if f)
    assert "program seed" in first and "central differences" in first


def test_the_soak_fails_on_a_wrong_forward_rule(tmp_path, monkeypatch):
    """With the forward mode's tangent of a product made wrong (one term dropped), programs
    fail the check naming forward mode, while the tape stays right."""
    from relsim.runtime.tangent import expressions

    real = expressions.Expressions.t_BinOp

    def wrong(self, e):
        if e.op == "*" and not (expressions.is_vec(e.type) or expressions.is_mat(e.type)):
            return self.tangent(e.left) and expressions._mul(e.loc, self.tangent(e.left),
                                                              self.primal(e.right))
        return real(self, e)

    monkeypatch.setattr(expressions.Expressions, "t_BinOp", wrong)
    with configured(target="interp"):
        failures = [soak.check(seed, tmp_path)[2] for seed in range(6)]
    assert sum(bool(f) for f in failures) >= 3, failures
    assert "forward mode gives" in next(f for f in failures if f)


def test_the_soak_runs_from_the_command_line(capsys):
    with configured(target="interp"):
        assert soak.main(["--cases", "3", "--first", "40"]) == 0
    assert "3 programs (seeds 40..42) on interp" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        soak.main(["--cases", "x"])


def test_the_soak_fails_on_a_guard_that_drops_second_derivatives(tmp_path, monkeypatch):
    """With tangent kernels guarded as the reverse mode guards an adjoint (a branch on a zero
    factor: what relsim did until Hessian-vector products were seen to lose terms), programs
    fail the Hessian check at their points with an input exactly 0."""
    monkeypatch.setattr(derivatives, "tangent_term", derivatives.adjoint)
    with configured(target="interp"):
        failures = [soak.check(seed, tmp_path)[2] for seed in range(13)]
    assert sum(bool(f) for f in failures) >= 2, failures
    assert "w . H u by reverse over forward mode" in next(f for f in failures if f)
