"""`rs.explain(kernel, relation)`: what a kernel does and how it runs, as text; with
``full=True`` every stage of the pipeline (the typed IR, the locals, the generated code)."""
from __future__ import annotations

import ast

from .. import config as _config
from ..errors import entry_point
from . import ir, parallel
from .execute import executable
from .lowering import params as _params


@entry_point
def explain(kernel, relation, config=None, file=None, full: bool = False) -> str:
    """A short account of `kernel` over `relation`: what it reads, writes and reduces, how its
    reductions fold, which compiled variants it has and which a launch runs, its MPI share and
    debug checks. ``full=True`` adds the typed IR, the locals and the generated Python (often
    thousands of lines). Printed to `file` too when given."""
    cfg = config or _config.current()
    exe = executable(kernel, relation, cfg)
    a = exe.analysed
    mode = ", debug" if cfg.debug else ""
    parts = [f"== kernel {a.kernel_name} over {relation.name} (target {cfg.target}{mode})"]
    if full:
        parts += ["-- IR (typed)", ir.dump(a.body),
                  "-- locals", "\n".join(f"  {n}: {t!r}" for n, t in a.locals.items()) or
                  "  none"]
    parts += ["-- access summary", a.summary.render() or "  none"]
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
    if exe.source:
        parts += _variants(exe, cfg, relation)
    halo = exe.describe_halo(relation)  # on several MPI ranks: this rank's share
    if halo is not None:
        rank, size = parallel.ranks()
        parts += [f"-- on MPI rank {rank} of {size}", halo]
    sites = exe.sites  # a compiled debug variant's checks
    if sites is not None:
        parts.append("-- debug checks (number: check, line)")
        parts += [f"  {n}: {site.check}, line {site.loc.line}"
                  for n, site in enumerate(sites.items, 1)] or ["  none"]
    if full and exe.source:
        parts += ["-- parameters of the generated functions",
                  *(_params.legend(getattr(exe, "params", ())) or ["  none"]),
                  f"-- generated Python ({exe.path})", exe.source]
    elif exe.source:
        parts.append(f"(rs.explain(..., full=True) adds the typed IR, the locals and the "
                     f"{len(exe.source.splitlines())} lines of generated Python)")
    text = "\n".join(parts)
    if file is not None:
        print(text, file=file)
    return text


def _variants(exe, cfg, relation) -> list:
    """The generated module's kernel functions (its variants) and which a launch over
    `relation` takes."""
    names = [n.name for n in ast.parse(exe.source).body
             if isinstance(n, ast.FunctionDef) and n.name.startswith("kernel")]
    out = [f"-- compiled variants ({exe.path}; each compiled on first use)",
           "  " + (", ".join(names) or "none")]
    threshold = getattr(cfg, "parallel_threshold", None)
    if any("parallel" in n for n in names) and threshold is not None and \
            not getattr(exe, "force_serial", False):
        out.append(f"  launches over more rows than the parallel threshold (parallel_threshold "
                   f"= {threshold}, lower for rows with more work) run a parallel variant on "
                   f"{cfg.threads or 'all'} thread(s), the others a serial one (the same bits)")
    return out
