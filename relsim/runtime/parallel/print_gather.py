"""`print` in kernels on several ranks: one text, whatever the rank count.

A wrapped launch hands its print lines to `PrintGather.collect` (``launch.print_sink``)
instead of writing them: (row, print site, line) in row order. Only lines of rows the rank
owns count (halo rows ran here for their reductions; their lines are their owner's). After the
launch (`finish`, collective) rank 0 gathers every rank's lines and writes them in row order
(program order within a row): the lines one process writes, once."""
from __future__ import annotations

import heapq

from ..host import prints


class PrintGather:
    def __init__(self, world):
        self.world = world
        self.owner = None
        self.entries: list = []

    def begin(self, owner) -> None:
        self.owner = owner
        self.entries = []

    def collect(self, entries) -> None:
        rank, owner = self.world.rank, self.owner
        self.entries.extend(e for e in entries if owner[e[0]] == rank)

    def finish(self) -> None:
        """Every rank's lines, written by rank 0 in row order. Collective."""
        everyone = self.world.comm.gather(self.entries, root=0)
        self.entries = []
        if everyone is not None:  # rank 0: each rank's list is in row order already
            prints.emit(list(heapq.merge(*everyone, key=lambda e: (e[0], e[1]))))
