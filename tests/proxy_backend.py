"""A third backend, written only against `relsim/runtime/backends/base.py` and
docs/architecture.md ("Writing a backend"): target ``proxy`` compiles each kernel with the
``interp`` target found through the registry and wraps its launch, forwarding every hook of
`Launch`. `tests/conftest.py` registers it, so every test of the shared backend suite (the
`target` fixture) runs on it too: a runtime that called anything of a launch that `base.py` does
not declare, or recognised relsim's own backends by their classes, would fail there."""
from __future__ import annotations

from relsim import target_registry
from relsim.runtime.backends.base import Backend, Launch

NAME = "proxy"


class ProxyLaunch(Launch):
    distributable = True

    def __init__(self, inner: Launch, owner: ProxyBackend):
        self.inner, self.owner = inner, owner
        self.analysed, self.source, self.path = inner.analysed, inner.source, inner.path
        self.sites = inner.sites

    def launch(self, relation, subset) -> None:
        self.owner.launches += 1
        self.inner.launch(relation, subset)

    # what the MPI layer and rs.precompile set on a launch reaches the wrapped one
    partials = property(lambda self: self.inner.partials,
                        lambda self, v: setattr(self.inner, "partials", v))
    row_sink = property(lambda self: self.inner.row_sink,
                        lambda self, v: setattr(self.inner, "row_sink", v))
    tier_done = property(lambda self: self.inner.tier_done,
                         lambda self, v: setattr(self.inner, "tier_done", v))

    def compile_jobs(self, relation, subset) -> list:
        return self.inner.compile_jobs(relation, subset)

    def set_tier0(self, on: bool) -> None:
        self.inner.set_tier0(on)

    def describe_halo(self, relation, subset=None):
        return self.inner.describe_halo(relation, subset)


class ProxyBackend(Backend):
    name = NAME

    def __init__(self):
        self.launches = 0  # launches run through this backend (the suite's tests count them)

    def compile(self, analysed, config) -> Launch:
        return ProxyLaunch(target_registry.get("interp").compile(analysed, config), self)

    def threads(self, config) -> int:
        return target_registry.get("interp").threads(config)


BACKEND = ProxyBackend()


def register() -> ProxyBackend:
    """Register target ``proxy`` (again, after a test cleaned the registry)."""
    target_registry.register_backend(NAME, BACKEND, replace=True)
    return BACKEND
