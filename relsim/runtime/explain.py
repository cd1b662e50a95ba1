"""`rs.explain(kernel, relation)`: every stage of the pipeline, as text."""
from __future__ import annotations

from .. import config as _config
from ..errors import entry_point
from . import ir, parallel
from .execute import executable


@entry_point
def explain(kernel, relation, config=None, file=None) -> str:
    cfg = config or _config.current()
    exe = executable(kernel, relation, cfg)
    a = exe.analysed
    mode = ", debug" if cfg.debug else ""
    parts = [f"== kernel {a.kernel_name} over {relation.name} (target {cfg.target}{mode})",
             "-- IR (typed)", ir.dump(a.body),
             "-- locals", "\n".join(f"  {n}: {t!r}" for n, t in a.locals.items()) or "  none",
             "-- access summary", a.summary.render() or "  none"]
    if a.layouts:
        parts.append("-- reductions (folded in serial row order)")
        for lay in a.layouts:
            name = getattr(lay.target, "qualname", None) or f"Global {lay.target.name}"
            stored = f" ({lay.stored_per_row} stored)" if lay.stores else ""
            parts.append(f"  {name} {lay.op}: {lay.per_row} slot(s) per row{stored}, "
                         f"{len(lay.sites)} site(s)" + (", conditional" if lay.conditional
                                                         else ""))
            for site, (stored, negated) in zip(lay.sites, lay.stores):
                if negated:
                    parts.append(f"    line {site.stmt.loc.line} stores nothing: it reuses "
                                 f"slot {stored} of its row, negated in the fold")
    halo = exe.describe_halo(relation)  # on several MPI ranks: this rank's share
    if halo is not None:
        rank, size = parallel.ranks()
        parts += [f"-- on MPI rank {rank} of {size}", halo]
    sites = exe.sites  # a compiled debug variant's checks
    if sites is not None:
        parts.append("-- debug checks (number: check, line)")
        parts += [f"  {n}: {site.check}, line {site.loc.line}"
                  for n, site in enumerate(sites.items, 1)] or ["  none"]
    if exe.source:
        parts += [f"-- generated Python ({exe.path})", exe.source]
    text = "\n".join(parts)
    if file is not None:
        print(text, file=file)
    return text
