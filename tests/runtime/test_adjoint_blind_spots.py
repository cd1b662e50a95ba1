"""What a tape cannot differentiate is said at backward (a RelsimWarning naming the field or
Global) and by .grad (a DataError saying why), not handed out as a silent zero: a parameter
assigned inside the tape before anything read it, and an f32 parameter."""
import warnings

import numpy as np
import pytest

import relsim as rs
from tests.conftest import configured


def program():
    V = rs.Relation("V", 4)
    V.new_field("p", rs.f64, init=1.0)
    V.new_field("q", rs.f32, init=1.0)
    V.new_field("acc", rs.f64)
    scale = rs.Global(rs.f64, 2.0, name="scale")
    loss = rs.Global(rs.f64, 0.0, name="loss")

    @rs.kernel
    def gather(v):
        v.acc += v.p * v.p

    @rs.kernel
    def misfit(v):
        loss += scale * v.acc + v.q * v.p

    return V, scale, loss, gather, misfit


def backward(tape, loss) -> list:
    """tape.backward(loss) on interp; the RelsimWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with configured(target="interp"):
            tape.backward(loss)
    return [str(w.message) for w in caught if w.category is rs.RelsimWarning]


def record(inside):
    """Run the program on a tape, the values assigned by `inside(V, scale)` in the block."""
    V, scale, loss, gather, misfit = program()
    with configured(target="interp"), rs.Tape() as tape:
        inside(V, scale)
        V.acc.fill(0.0)  # an accumulator reset: reduced into first, so no parameter
        loss.value = 0.0
        V.foreach(gather)
        V.foreach(misfit)
    return V, scale, backward(tape, loss)


def test_a_parameter_loaded_inside_the_tape_is_named_at_backward_and_by_its_grad():
    p = np.array([0.5, 1.0, 1.5, 2.0])
    V, scale, said = record(lambda V, scale: V.p.load(p))
    assert len(said) == 1
    assert "field V.p was assigned inside the tape before any recorded launch read it " \
           "(kernel 'gather' then read the assigned value)" in said[0]
    assert "assign parameters before `with rs.Tape()`" in said[0]
    assert "V.acc" not in said[0] and "loss" not in said[0].replace("tape.backward", "")
    with pytest.raises(rs.DataError, match=r"field V.p was assigned inside the tape.*so it is 0"):
        _ = V.p.grad
    # a Global assigned inside the block and read: its .grad says so (no warning: a time
    # step the host computes in the block is a constant far more often than a parameter)
    V, scale, said = record(lambda V, scale: setattr(scale, "value", 3.0))
    assert not any("Global 'scale'" in s for s in said)
    with pytest.raises(rs.DataError, match="Global 'scale' was assigned inside the tape"):
        _ = scale.grad


def test_parameters_assigned_before_the_tape_get_their_gradients_and_no_warning():
    V, scale, loss, gather, misfit = program()
    V.p.load(np.array([0.5, 1.0, 1.5, 2.0]))
    with configured(target="interp"), rs.Tape() as tape:
        V.acc.fill(0.0)
        loss.value = 0.0
        V.foreach(gather)
        V.foreach(misfit)
    assert [said for said in backward(tape, loss) if "no gradient for field V.p" in said] == []
    # d/dp (2 p^2 + q p) = 4 p + 1
    assert V.p.grad.numpy().tolist() == [3.0, 5.0, 7.0, 9.0]
    assert scale.grad == float(np.sum(np.array([0.5, 1.0, 1.5, 2.0]) ** 2))


def test_an_f32_parameter_read_by_the_program_is_named_at_backward_and_by_its_grad():
    V, scale, said = record(lambda V, scale: None)
    assert len(said) == 1
    assert "field V.q is f32 (read by kernel 'misfit'): tape.backward differentiates f64 " \
           "values only" in said[0]
    with pytest.raises(rs.DataError, match=r"field V.q is f32 .*store parameters as f64"):
        _ = V.q.grad
    assert V.p.grad.numpy().tolist() == [5.0] * 4  # the f64 one is differentiated


def test_state_and_data_loaded_in_the_block_are_said_by_grad_only():
    """A simulation's initial state loaded inside the tape (then advanced by kernels) and
    observations loaded again and again are not parameters: no warning, but their .grad
    still says why it is not there."""
    V = rs.Relation("V", 3)
    V.new_field("T", rs.f64)
    V.new_field("seen", rs.f64)
    kappa = rs.Global(rs.f64, 0.5, name="kappa")
    loss = rs.Global(rs.f64, 0.0, name="loss")

    @rs.kernel
    def advance(v):
        v.T = v.T * kappa

    @rs.kernel
    def compare(v):
        loss += (v.T - v.seen) ** 2

    with configured(target="interp"), rs.Tape() as tape:
        V.T.load(np.array([1.0, 2.0, 3.0]))  # the initial state
        loss.value = 0.0
        for step in range(2):
            V.foreach(advance)
            V.seen.load(np.full(3, 0.1 * step))  # an observation per step
            V.foreach(compare)
    assert backward(tape, loss) == []
    assert kappa.grad != 0.0
    for field in (V.T, V.seen):
        with pytest.raises(rs.DataError, match=f"field {field.qualname} was assigned inside "
                                               f"the tape"):
            _ = field.grad
    # a second backward of another recording starts afresh
    with configured(target="interp"), rs.Tape() as again:
        loss.value = 0.0
        V.foreach(advance)
        V.foreach(compare)
    with configured(target="interp"):
        again.backward(loss)
    assert V.T.grad.numpy().any()
