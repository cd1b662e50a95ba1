"""A launch on several ranks: the layer around any backend's launch that supports it.

For each launch (`DistributedLaunch.launch`):

1. the plan for this iteration space (`plan.build`: executed rows, ghost rows, who sends what),
   built once per key state;
2. ghost rows of the fields the kernel reads, received where stale (`ghosts.refresh`);
3. the wrapped launch over the executed rows, its Global contributions handed to a
   `GlobalMerge` (the backend supports this: ``launch.partials``);
4. Globals merged across ranks; written fields marked stale outside the owned rows; print
   lines written by rank 0 in row order (`PrintGather`).

Relations are built whole on every rank (each holds every row's storage: memory is that of one
process per rank); ranks compute, and keep current, only their own rows and the ghost rows their
kernels need."""
from __future__ import annotations

from ...errors import ConfigError
from ...relations.field import Field
from ...relations.globals import Global
from ...relations.subset import Subset
from .. import epoch
from ..backends.base import HostStop, Launch
from ..host import prints
from . import ghosts, partition
from . import plan as plans
from .elastic import RowChanges
from .global_merge import GlobalMerge
from .print_gather import PrintGather


class DistributedLaunch(Launch):
    def __init__(self, inner, world, target: str):
        if not inner.distributable:
            raise ConfigError(f"target {target!r} cannot run on several ranks yet (its launches "
                              f"do not hand over Global contributions and row changes: "
                              f"`Launch.distributable`, `partials`, `row_sink`); run it on one "
                              f"process, or use target 'cpu'")
        self.inner, self.world = inner, world
        self.analysed = a = inner.analysed
        self.source, self.path, self.sites = inner.source, inner.path, inner.sites
        self.params = getattr(inner, "params", ())
        # rank 0 compiles what a first launch needs, the others load it (`first_launch`): no
        # rank runs serial variants while a background process of its own compiles
        inner.self_tiering = False
        # nor background workers compiling captured segments: every rank compiles a segment at
        # its first replay (rank 0 compiles, the others wait for its lock and load it)
        inner.background_segments = False
        self.rows = None
        if a.inserts or a.deletes:
            self.rows = inner.row_sink = RowChanges(world, a.relation,
                                                    [lay.target for lay in a.inserts])
        self.prints = None
        if prints.sites(a.body):
            self.prints = inner.print_sink = PrintGather(world)
        self.merge = None
        global_layouts = [lay for lay in a.layouts if isinstance(lay.target, Global)]
        if global_layouts:
            self.merge = inner.partials = GlobalMerge(world, global_layouts,
                                                      inner.lane_globals)
        targets = a.summary.targets()
        self.touched = tuple(t for t in targets if isinstance(t, Field) and not t.is_key)
        # in the order of the kernel's accesses, the same on every rank: after the launch each
        # exposed written field is gathered, a collective, one field after the other (a set,
        # iterated in the order of its objects' addresses, made ranks gather different fields
        # at once: their values swapped)
        self.written = tuple({id(acc.target): acc.target for acc in a.summary.accesses
                              if acc.mode in ("write", "reduce")
                              and isinstance(acc.target, Field)}.values())
        self.keys = plans.key_fields(a)
        self.plans: dict = {}
        self.launched: set = set()  # plans launched once (see first_launch)

    def plan(self, relation, subset):
        """The plan of this iteration space, rebuilt when a relation's size, a key field's
        version or its array (rows inserted or deleted replace it) changed: checked only when
        some storage changed since (the runtime's storage epoch)."""
        p = self.plans.get(subset)
        if p is not None and p[0] == epoch.value:
            return p[2]
        # the key arrays themselves (kept alive here): rows inserted or deleted replace them
        state = (relation.size, tuple(k.version for k in self.keys),
                 tuple(k._stored() for k in self.keys))
        if p is None or not _same(p[1], state) or \
                p[2].part is not partition.of(relation, self.world):
            p = (epoch.value, state,
                 plans.build(self.analysed, relation, subset, self.world, self._subset))
        self.plans[subset] = p = (epoch.value, p[1], p[2])
        return p[2]

    def _subset(self, rows):
        return Subset(self.analysed.relation, f"_rank{self.world.rank}_rows", rows)

    def launch(self, relation, subset) -> None:
        p = self.plan(relation, subset)
        for g in p.ghosts:
            for f in g.fields:
                ghosts.refresh(self.world, f, g)
        saved = ghosts.detach(self.touched)
        if self.merge is not None:
            self.merge.begin(p)
        if self.rows is not None:
            self.rows.begin(p.part.owner)
        if self.prints is not None:
            self.prints.begin(p.part.owner)
        try:
            if p in self.launched:
                self.inner.launch(relation, p.subset)
            else:
                self.first_launch(relation, p)
        finally:
            ghosts.after_launch(self.world, saved, self.written)
        if self.merge is not None:
            self.merge.finish()
        if self.rows is not None:
            self.rows.apply()
        if self.prints is not None:
            self.prints.finish()

    def first_launch(self, relation, p) -> None:
        """The first launch of a plan compiles (or loads) the code it needs: rank 0 first, then
        the others, which find its machine code in the shared disk cache. Numba extends a
        function's cache index by reading and rewriting it, so ranks compiling the same function
        at once could otherwise interleave their index and data files. The others wait asleep
        (`World.waiting_barrier`), leaving the cores to rank 0's compiler."""
        self.launched.add(p)
        if self.world.rank == 0:
            try:
                self.inner.launch(relation, p.subset)
            finally:  # (a failure then ends every rank: world's excepthook)
                self.world.waiting_barrier()
        else:
            self.world.waiting_barrier()
            self.inner.launch(relation, p.subset)

    def capture_call(self, relation, subset):
        """In a captured step: the wrapped launch's call over this rank's rows (its float64
        Global sums handed over, not rounded), between stops doing what `launch` does around
        it: ghost rows received where stale before it; after it, the written fields marked
        stale outside the owned rows (exposed ones gathered) and the Globals merged across
        ranks. Compiled stops where the wrapped backend runs them (`captured_mpi`: MPI called
        from the segment), else host stops. The same collectives in the same order as
        `launch`, so ranks replaying the step's launches (its segment still compiling) and
        ranks running it compiled work together. None (a launch) for row changes, prints, a
        plan not launched yet, or a wrapped launch that cannot join (Global slots merged on
        the host...)."""
        if self.rows is not None or self.prints is not None:
            return None
        p = self.plan(relation, subset)
        if p not in self.launched:
            return None
        if self.merge is not None:
            self.merge.begin(p)  # (the binding asks it whether lanes may be handed over)
        call = self.inner.capture_call(relation, p.subset)
        if call is None:
            return None
        world, written, merge = self.world, self.written, self.merge
        stale = tuple((f, g) for g in p.ghosts for f in g.fields)

        def receive():
            for f, g in stale:
                ghosts.refresh(world, f, g)

        def settle():
            ghosts.after_launch(world, ghosts.detach(written), written)
            if merge is not None:
                merge.begin(p)
                if call.handed is not None:
                    merge.collect_lanes(call.handed)
                merge.finish()

        if self.inner.runs_compiled_stops:  # (the MPI calls inside the compiled segment)
            from . import captured_mpi
            compiled = captured_mpi.stops(world, p, call, stale, written, merge, settle)
            if compiled is not None:
                return (*compiled[0], call, compiled[1])
        return ((HostStop(receive),) if stale else ()) + (call, HostStop(settle))

    def capture_later(self) -> bool:
        return self.inner.capture_later()

    def describe_halo(self, relation, subset=None) -> str:
        """What this rank runs and reads for a launch over `relation` (or `subset`): for
        `rs.explain` (`plan.share`: no communication)."""
        a, w = self.analysed, self.world
        sh = plans.share(a, relation, subset, w.rank, lambda r: partition.of(r, w).owner)
        part = partition.of(relation, w)
        lines = [f"  partition of {relation.name}: {part.method}; this rank owns {part.owned} "
                 f"of {relation.size} rows",
                 f"  executes {len(sh.rows)} rows: {len(sh.rows) - len(sh.halo)} owned, "
                 f"{len(sh.halo)} of other ranks (their reductions reach rows this rank owns)"]
        paths: dict = {}
        for acc in a.summary.accesses:
            if acc.mode == "read" and isinstance(acc.target, Field) and not acc.target.is_key:
                paths.setdefault(id(acc.target), set()).add(acc.path)
        width = max((max(map(abs, off)) for off in a.summary.stencil()), default=0)
        for rel, fields, ghost_rows in sh.ghosts:
            via = sorted(p for f in fields for p in paths.get(id(f), ()))
            depth = max((p.count(".") - 1 for p in via), default=0)
            lines.append(f"  ghosts of {rel.name}: {len(ghost_rows)} rows, fields "
                         f"{', '.join(f.name for f in fields)}; via {', '.join(via)}; "
                         f"{depth} key hop(s)" + (f", grid stencil width {width}"
                                                  if width and rel is relation else ""))
        if not sh.ghosts:
            lines.append("  ghosts: none (it reads no other rank's rows)")
        return "\n".join(lines)

    def compile_jobs(self, relation, subset) -> list:
        """The wrapped launch's jobs for this rank's rows. Every rank lists them (each decides
        its own tiers), but `rs.precompile` runs the ones waited for on rank 0 only: the others
        load them at their first launch (see `first_launch`); background workers take a lock
        on the cache directory of each function they compile."""
        return self.inner.compile_jobs(relation, self._bound_rows(relation, subset))

    def planning_jobs(self, relation, subset) -> list:
        """The wrapped launch's, for this rank's rows (as `compile_jobs`)."""
        return self.inner.planning_jobs(relation, self._bound_rows(relation, subset))

    def _bound_rows(self, relation, subset):
        """This rank's rows of the launch (its plan's subset), the Global merge told of the
        plan: a binding made outside a launch asks it whether lanes may be handed over."""
        p = self.plan(relation, subset)
        if self.merge is not None:
            self.merge.begin(p)
        return p.subset

    def set_tier0(self, on: bool) -> None:
        self.inner.set_tier0(on)

    # the wrapped launch's test of its background compilations (set by `rs.precompile`)
    tier_done = property(lambda self: self.inner.tier_done,
                         lambda self, fn: setattr(self.inner, "tier_done", fn))


def _same(a, b) -> bool:
    """Plan states equal: sizes and versions equal, key arrays identical."""
    return a[:2] == b[:2] and len(a[2]) == len(b[2]) and all(x is y for x, y in zip(a[2], b[2]))
