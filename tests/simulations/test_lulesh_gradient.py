"""The LULESH gradient demo (the stretch of the gradients work): the tape's derivative of the
final origin energy with respect to the initial one agrees with central differences; its CLI
prints the check and exits 0. On interp (s=2: the adjoint kernels compile in seconds there;
cpu, 2 threads and cuda give the same bits, measured)."""
from relsim_simulations import lulesh_gradient
from tests.conftest import configured


def test_the_tape_agrees_with_central_differences():
    with configured(target="interp"):
        r = lulesh_gradient.gradient(2, 3)
    assert r["same"]  # recording does not change the run
    assert 0.1 < r["gradient"] < 1.0
    assert r["relative"] <= 1e-8, r


def test_cli(capsys):
    assert lulesh_gradient.main(["-s", "2", "-i", "2", "--target", "interp",
                                 "--checkpoint-every", "5"]) == 0
    out = capsys.readouterr().out
    assert "OK: the tape's derivative agrees" in out and "central differences" in out
