"""rs.explain shows the typed IR, the access summary, the reduction plan and generated code."""
import relsim as rs
from tests.conftest import chain_mesh


def test_explain_shows_every_stage():
    V, E = chain_mesh(4)
    V.new_field("T", rs.f64)
    V.new_field("flux", rs.f64)

    @rs.kernel
    def conduct(e):
        d = e.head.T - e.tail.T
        e.tail.flux += d

    text = rs.explain(conduct, E, rs.Config(target="cpu"))
    assert "IR (typed)" in text and "FieldReduce" in text
    assert "V.flux: reduce(+); through keys; via e.tail.flux" in text
    assert "V.T: read; through keys" in text
    assert "1 slot(s) per row" in text
    assert "def kernel_parallel" in text and "prange" in text
