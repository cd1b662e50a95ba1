"""rs.explain shows the typed IR, the access summary, the reduction plan and generated code."""
import relsim as rs
from tests import heat_graph


def test_explain_shows_every_stage():
    V, E = heat_graph.chain(4)

    @rs.kernel
    def conduct(e):  # heat_graph's, reducing into the tail only (one slot per row)
        d = e.head.T - e.tail.T
        e.tail.flux += d

    text = rs.explain(conduct, E, rs.Config(target="cpu"), full=True)
    assert "IR (typed)" in text and "FieldReduce" in text
    assert "V.flux: reduce(+); through keys; via e.tail.flux" in text
    assert "V.T: read; through keys" in text
    assert "1 slot(s) per row" in text
    assert "def kernel_parallel" in text and "prange" in text


def test_explain_is_short_unless_asked_for_everything():
    V, E = heat_graph.chain(4)

    @rs.kernel
    def conduct(e):
        d = e.head.T - e.tail.T
        e.tail.flux += d
        e.head.flux -= d

    cfg = rs.Config(target="cpu", threads=2)
    short, full = rs.explain(conduct, E, cfg), rs.explain(conduct, E, cfg, full=True)
    assert len(short.splitlines()) < 25 < len(full.splitlines())
    assert "V.flux: reduce(+); through keys" in short and "IR (typed)" not in short
    assert "-- compiled variants (" in short and "kernel_parallel" in short
    assert "run a parallel variant on 2 thread(s), the others a serial one" in short
    lines = len(full.split("-- generated Python")[1].splitlines()) - 1
    assert short.endswith(f"adds the typed IR, the locals and the {lines} lines of generated "
                          f"Python)")
    assert "def kernel_parallel" in full and "def kernel_parallel" not in short


def test_explain_names_what_binds_each_parameter_of_the_generated_functions():
    """The generated code names parameters by kind and position only; rs.explain's legend
    names each one's field (a key field as itself), reduction target or Global."""
    V, E = heat_graph.chain(5)
    total = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def conduct(e):
        d = e.head.T - e.tail.T
        e.tail.flux += d
        total += d

    cfg = rs.Config(target="cpu")
    E.foreach(conduct, cfg)
    text = rs.explain(conduct, E, cfg, full=True)
    legend = text[text.index("-- parameters"):text.index("-- generated Python")].splitlines()
    assert "  _field0: FieldStorage of E.head" in legend
    assert "  _field2: FieldStorage of E.tail" in legend
    assert any(line.startswith("  _slots") and line.endswith("ReductionSlots of V.flux")
               for line in legend)
    assert any(line.endswith("ReductionSlots of Global total") for line in legend)
