"""A launch told not to distribute (``Config(distributed=False)``) on several ranks: every rank
runs every row, as one process does.

Fields written by distributed launches are current on a rank only at the rows it owns
(`ghosts.StaleGhosts`); the launch reads them at every row, so it first gathers each field it
touches, as a host read does (collective: every rank runs the same launches). Afterwards every
rank holds every row, computed from the same values: current everywhere."""
from __future__ import annotations

from ...relations import Field
from ..backends.base import Launch
from . import ghosts


class WholeLaunch(Launch):
    def __init__(self, inner):
        self.inner = inner
        self.analysed = a = inner.analysed
        self.source, self.path, self.sites = inner.source, inner.path, inner.sites
        self.params = getattr(inner, "params", ())
        self.touched = tuple(t for t in a.summary.targets()
                             if isinstance(t, Field) and not t.is_key)

    def launch(self, relation, subset) -> None:
        for f in self.touched:
            if isinstance(f.residency, ghosts.StaleGhosts):
                f.residency.before_host_read(f)  # gathers every rank's rows
        self.inner.launch(relation, subset)

    def compile_jobs(self, relation, subset) -> list:
        return self.inner.compile_jobs(relation, subset)

    def planning_jobs(self, relation, subset) -> list:
        return self.inner.planning_jobs(relation, subset)

    def set_tier0(self, on: bool) -> None:
        self.inner.set_tier0(on)

    tier_done = property(lambda self: self.inner.tier_done,
                         lambda self, fn: setattr(self.inner, "tier_done", fn))
