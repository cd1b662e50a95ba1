"""rs.explain shows the typed IR, the access summary, the reduction plan and generated code."""
import relsim as rs
from tests import heat_graph


def test_explain_shows_every_stage():
    V, E = heat_graph.chain(4)

    @rs.kernel
    def conduct(e):  # heat_graph's, reducing into the tail only (one slot per row)
        d = e.head.T - e.tail.T
        e.tail.flux += d

    text = rs.explain(conduct, E, rs.Config(target="cpu"))
    assert "IR (typed)" in text and "FieldReduce" in text
    assert "V.flux: reduce(+); through keys; via e.tail.flux" in text
    assert "V.T: read; through keys" in text
    assert "1 slot(s) per row" in text
    assert "def kernel_parallel" in text and "prange" in text
