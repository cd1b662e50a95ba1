"""The generated module's text: the memoised unparser writes exactly what `ast.unparse` writes
(the text names the compile cache's files, so any difference would recompile every kernel)."""
import ast

import relsim as rs
from relsim.runtime.backends.cpu.loops import CpuLowerer
from relsim.runtime.lowering.emit import unparse
from relsim.runtime.pipeline import analyse
from tests.conftest import chain_mesh


def _fixed(mod):
    return ast.fix_missing_locations(mod)


def test_memoised_unparse_equals_ast_unparse():
    V, E = chain_mesh(8)
    V.new_field("T", rs.f64, init=1.0)
    V.new_field("flux", rs.vec(2, rs.f64), init=0.0)
    E.new_field("k", rs.f64, init=0.5)
    G = rs.Relation("G", 12)
    G.set_grid((4, 3), (True, False))
    G.new_field("u", rs.f64, init=0.0)
    G.new_field("v", rs.f64, init=0.0)
    total = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def flux(e):
        d = e.k * (e.head.T - e.tail.T)
        for i in range(2):
            if d > 0.0:
                e.tail.flux[i] += d
        e.head.flux -= (d, d * d)
        total += d  # noqa: F821

    @rs.kernel
    def lap(c):
        x = c.u
        while x > 10.0:
            x = x * 0.5
        c.v = c(1, 0).u + c(-1, 0).u - 2.0 * x

    for kernel, rel in ((flux, E), (lap, G)):
        mod = CpuLowerer(analyse(kernel, rel)).module()
        assert unparse(mod) == ast.unparse(_fixed(mod))
