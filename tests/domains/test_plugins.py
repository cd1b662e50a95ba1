"""Third-party domains are found through the `relsim.domains` entry-point group."""
import sys
import textwrap
import warnings

import numpy as np
import pytest

import relsim as rs
from relsim import domains

CHAIN = textwrap.dedent('''\
    """A 1-D chain of n vertices joined by n-1 links: the smallest possible mesh domain."""
    import numpy as np
    import relsim as rs

    class Chain:
        def __init__(self, n):
            self.vertices = rs.Relation("chain_vertices", n)
            self.links = rs.Relation("chain_links", n - 1)
            self.links.new_key_field("head", self.vertices).load(np.arange(1, n))
            self.links.new_key_field("tail", self.vertices).load(np.arange(0, n - 1))
            self.vertices.new_field("x", rs.f64).load(np.linspace(0.0, 1.0, n))
    ''')


def _install(tmp_path, monkeypatch, name, module_text):
    """Install a distribution the way pip leaves it: a module plus dist-info with entry
    points, on sys.path."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / f"{name}_domain.py").write_text(module_text)
    info = site / f"{name}_domain-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-domain\n"
                                   f"Version: 1.0\n")
    (info / "entry_points.txt").write_text(f"[relsim.domains]\n{name} = {name}_domain\n")
    monkeypatch.syspath_prepend(str(site))
    domains._loaded.pop(name, None)


def test_entry_point_domain_is_listed_and_used_from_a_kernel(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, "chain", CHAIN)
    assert "chain" in domains.available()
    chain = domains.get("chain").Chain(5)
    chain.links.new_field("dx", rs.f64)

    @rs.kernel
    def length(e):
        e.dx = e.head.x - e.tail.x

    chain.links.foreach(length)
    assert np.allclose(chain.links.dx.numpy(), 0.25)
    sys.modules.pop("chain_domain", None)


def test_unknown_domain_lists_registered_ones():
    with pytest.raises(rs.DomainError, match="grid.*tetmesh|tetmesh.*grid"):
        domains.get("nosuchdomain")


def test_broken_plugin_warns_instead_of_crashing(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, "broken", "raise ImportError('missing dependency xyz')\n")
    assert "broken" in domains.available()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(rs.DomainError, match="broken"):
            domains.get("broken")
    assert any("missing dependency xyz" in str(x.message) for x in w)
    assert "grid" in domains.available()  # the rest still works
