"""The miniFE port against the reference's own figures (Mantevo miniFE 2.0, ref/, built with
g++ -O3, serial): matrix size, iteration count, printed residuals, and its solution check; the
same bits on every target and thread count."""
import re

import numpy as np
import pytest

import relsim as rs
from relsim_simulations.minife import command
from relsim_simulations.minife.problem import MiniFE

# the serial reference's output: Nrows, NNZ, iterations, initial residual, printed residuals
REFERENCE = {
    (10, 10, 10): (1331, 29791, 31, 11.0289, {20: 1.23424e-08}),
    (7, 5, 3): (192, 3520, 14, 4.9927, {}),
    (20, 20, 20): (9261, 226981, 65, 21.0191, {20: 0.00656352, 40: 5.26796e-08}),
}


def _run(capsys, *args):
    status = command.main(list(args))
    return status, capsys.readouterr().out


@pytest.mark.parametrize("size", [(10, 10, 10), (7, 5, 3)])
def test_matches_the_reference(size, capsys):
    nrows, nnz, iters, r0, printed = REFERENCE[size]
    status, out = _run(capsys, "-nx", str(size[0]), "-ny", str(size[1]), "-nz", str(size[2]),
                       "-verify_solution", "1")
    assert status == 0, out
    key = dict(re.findall(r"^\s*([A-Za-z][A-Za-z ]*?): (\S+)$", out, re.M))
    assert int(key["Global Nrows"]) == nrows and int(key["Global NNZ"]) == nnz
    assert abs(int(key["Iterations"]) - iters) <= 2
    assert float(re.search(r"^Initial Residual = (\S+)", out, re.M).group(1)) == \
        pytest.approx(r0, rel=1e-5)
    got = {int(k): float(r) for k, r in re.findall(r"^Iteration = (\d+)\s+Residual = (\S+)",
                                                   out, re.M)}
    assert set(got) == set(printed)
    for k, r in printed.items():  # printed with 6 digits: equal to them
        assert got[k] == pytest.approx(r, rel=1e-5), k
    assert "solution matches analytic solution to within 0.06 or better." in out
    for name in ("WAXPY", "DOT", "MATVEC"):
        assert f"  {name} Mflops: " in out
    assert float(key["Final Resid Norm"]) <= np.finfo(float).eps


# the serial reference's printed lines for 30 x 20 x 10 (a size where exact dot products part
# from its row-order sums: relsim's exact history prints 0.032322 at iteration 20)
ORDERED_30_20_10 = ("Initial Residual = 15.3104", "Iteration = 20   Residual = 0.0384404",
                    "Iteration = 40   Residual = 0.000143255",
                    "Iteration = 60   Residual = 1.9831e-07",
                    "Iteration = 80   Residual = 8.09427e-11",
                    "Iteration = 100   Residual = 1.87241e-14", "Final Resid Norm: 1.85258e-16")


def test_ordered_dots_print_the_serial_references_lines(capsys):
    """With --dots ordered (row-order sums, as the reference's dot), every line the reference
    prints is printed digit for digit; the iteration count is the reference's 110 less the
    update the reference makes after its last residual was already below the tolerance."""
    # (--wait-compile: the element kernel's parallel variant compiled here, not by a worker
    # left running at low priority, whose lock the other tests of that kernel would wait on)
    status, out = _run(capsys, "-nx", "30", "-ny", "20", "-nz", "10", "--dots", "ordered",
                       "--threads", "2", "--wait-compile")
    assert status == 0, out
    lines = {line.strip() for line in out.splitlines()}
    for line in ORDERED_30_20_10:
        assert line in lines, (line, out)
    assert "  Iterations: 109" in out


def _serial_cg(A, b, max_iter):
    """The reference's cg_solve on a SciPy CSR matrix (row-order sums, sequential dots through
    cumsum): the residual norms it computes, from the initial one."""
    x, p = np.zeros_like(b), np.zeros_like(b)
    r = b - A @ p
    rtrans = np.cumsum(r * r)[-1]
    out = [np.sqrt(rtrans)]
    for k in range(1, max_iter + 1):
        if k == 1:
            p = r.copy()
        else:
            old, rtrans = rtrans, np.cumsum(r * r)[-1]
            p = r + (rtrans / old) * p
            out.append(np.sqrt(rtrans))
        Ap = A @ p
        alpha = rtrans / np.cumsum(Ap * p)[-1]
        x = x + alpha * p
        r = r + (-alpha) * Ap
    out.append(np.sqrt(np.cumsum(r * r)[-1]))
    return out


def test_ordered_dots_give_the_serial_algorithms_bits_on_every_target(target):
    """A non-cubic brick: relsim's CG with dots="ordered" computes every residual norm of the
    serial algorithm on relsim's matrix bit for bit (NumPy: SciPy's CSR product, sums in
    order), on every target; exact dots do not."""
    fe = MiniFE(6, 5, 4, target)
    fe.assemble()
    want = _serial_cg(fe.A.to_scipy(), fe.nodes.b.numpy(copy=True), 25)
    info = fe.solve(25, dots="ordered")  # (converged, below machine epsilon, before 25)
    assert len(info.residuals) > 15
    assert info.residuals == [float(w) for w in want[:len(info.residuals)]]
    assert fe.solve(25).residuals != info.residuals


def test_the_linear_system_is_the_same_on_every_target(target):
    """Assembly (element kernel through keys) and CG: identical bits everywhere."""
    want = MiniFE(3, 2, 2, rs.Config(target="interp"))
    want.assemble()
    info_want = want.solve(30)
    fe = MiniFE(3, 2, 2, target)
    fe.assemble()
    info = fe.solve(30)
    assert fe.A.entries.a.numpy().tobytes() == want.A.entries.a.numpy().tobytes()
    assert fe.nodes.b.numpy().tobytes() == want.nodes.b.numpy().tobytes()
    assert info.residuals == info_want.residuals
    assert fe.nodes.x.numpy().tobytes() == want.nodes.x.numpy().tobytes()


def test_the_element_matrices_are_the_references():
    """Every row of a Laplacian assembled from exact element matrices sums to zero; the
    diagonal of an interior node of a cube of unit elements is 8 * 1/3 * h (h = 1/n)."""
    fe = MiniFE(4, 4, 4)
    fe.elems.foreach(fe.element)
    A = fe.A.to_scipy()
    assert np.allclose(A.sum(axis=1), 0.0, atol=1e-12)
    interior = 1 + 5 * (1 + 5 * 1)  # node (1, 1, 1)
    assert A[interior, interior] == pytest.approx(8 / 3 * 0.25, rel=1e-8)
    b = fe.nodes.b.numpy()
    assert b.sum() == pytest.approx(1.0, rel=1e-8)  # the source 1 integrated over the cube


def test_a_bad_size_is_refused():
    with pytest.raises(SystemExit):
        command.main(["-nx", "0"])
    with pytest.raises(ValueError, match="ny must be a positive int"):
        MiniFE(2, 0, 2)
