"""The module structure of relsim: no import circles, and no import back up the layers.

Every module under relsim/ is parsed (never imported); every `import` / `from ... import`
statement counts, also those inside functions or under `if TYPE_CHECKING`. Relative imports are
resolved, and `from pkg import x` is an import of the submodule `pkg.x` when x is a module.

Layers (lowest first): the base modules (`types`, `errors`, `builtins`, `philox`); the data model
`relsim.relations`; the compiler and backends `relsim.runtime`; the domain libraries
`relsim.domains`. A layer imports nothing from a layer above it (`ABOVE`), `relsim.output` (mesh
geometry and writers) sits below both the public API and the domains, and the public API
(`relsim/__init__.py`) imports no domain. An import of `pkg.mod` also runs `pkg/__init__.py`;
that implicit step is not an edge here (every submodule would otherwise import `relsim`).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "relsim"


def _modules(root: Path) -> dict:
    """Dotted module name -> (path, is_package) for every .py file under the package `root`."""
    mods = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        mods[".".join(parts)] = (path, is_pkg)
    return mods


def _resolve(name: str, mods: dict) -> str | None:
    """The longest prefix of `name` that is a module of the package (an attribute import of a
    module names that module), or None for modules outside it."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in mods:
            return cand
        parts.pop()
    return None


def import_graph(root: Path = ROOT) -> dict:
    """Module -> {imported module: first line importing it} over every import statement."""
    mods = _modules(root)
    graph: dict = {}
    for mod, (path, is_pkg) in mods.items():
        package = mod if is_pkg else mod.rpartition(".")[0]
        edges: dict = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    if node.level > 1:
                        base = base[:-(node.level - 1)]
                    base = ".".join(base)
                    src = f"{base}.{node.module}" if node.module else base
                else:
                    src = node.module
                # `from pkg import x`: the submodule pkg.x when x is one, else pkg itself
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in mods else src
                           for a in node.names]
            for t in targets:
                r = _resolve(t, mods)
                if r is not None and r != mod:
                    edges.setdefault(r, node.lineno)
        graph[mod] = edges
    return graph


def _cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan), each given as
    one concrete cycle through its modules."""
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def visit(v):  # iterative Tarjan (the graph is small, but recursion limits are no concern)
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        sccs.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sccs


def _shortest_cycles(graph: dict, comp: list) -> list:
    """For each import a -> b inside the component, a shortest cycle through it (b back to a,
    breadth-first), without repeats: every import that closes a circle is named."""
    members, found = set(comp), {}
    for a in comp:
        for b in sorted(set(graph[a]) & members):
            prev, queue = {b: None}, [b]
            while queue and a not in prev:
                v = queue.pop(0)
                for w in sorted(set(graph[v]) & members):
                    if w not in prev:
                        prev[w] = v
                        queue.append(w)
            path = [a]
            while path[-1] != b:
                path.append(prev[path[-1]])
            cycle = path[::-1]
            k = cycle.index(min(cycle))
            cycle = cycle[k:] + cycle[:k]
            found.setdefault(tuple(cycle), cycle + [cycle[0]])
    return sorted(found.values(), key=lambda c: (len(c), c))


def _describe(graph: dict, cycle: list) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])) + \
        f" -> {cycle[-1]}"


def test_the_checker_sees_every_kind_of_import(tmp_path):
    files = {
        "pkg/__init__.py": "from .a import f\n",
        "pkg/a.py": "import numpy\n\ndef f():\n    from . import b\n    return b\n",
        "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    from .sub import c\n",
        "pkg/sub/__init__.py": "from .. import a, f\n",
        "pkg/sub/c.py": "import pkg.b.something\nfrom ..a import f\nfrom . import d\n",
        "pkg/sub/d.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    g = import_graph(tmp_path / "pkg")
    assert g == {"pkg": {"pkg.a": 1},                      # from .a import (not a module)
                 "pkg.a": {"pkg.b": 4},                    # inside a function; numpy: outside
                 "pkg.b": {"pkg.sub.c": 3},                # under `if TYPE_CHECKING`
                 "pkg.sub": {"pkg.a": 1, "pkg": 1},        # a module, and a name of the package
                 "pkg.sub.c": {"pkg.b": 1, "pkg.a": 2, "pkg.sub.d": 3},
                 "pkg.sub.d": {}}
    sccs = _cycles(g)
    assert sccs == [["pkg.a", "pkg.b", "pkg.sub.c"]]  # pkg and pkg.sub are outside the circle
    assert _shortest_cycles(g, sccs[0]) == [["pkg.b", "pkg.sub.c", "pkg.b"],
                                            ["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]


def test_no_import_cycles():
    g = import_graph()
    sccs = _cycles(g)
    assert not sccs, "import cycles in relsim:\n" + "\n".join(
        f"  among {', '.join(comp)}:\n" + "\n".join(
            "    " + _describe(g, c) for c in _shortest_cycles(g, comp)) for comp in sccs)


def _below(mod: str, pkg: str) -> bool:
    return mod == pkg or mod.startswith(pkg + ".")


# module or package -> what it must not import: the layers above it. `relsim` itself (the public
# API, which imports every layer) counts as above everything but never as its submodules.
ABOVE = {
    "relsim.types": ("relsim.relations", "relsim.runtime", "relsim.domains", "relsim"),
    "relsim.errors": ("relsim.relations", "relsim.runtime", "relsim.domains", "relsim"),
    "relsim.builtins": ("relsim.relations", "relsim.runtime", "relsim.domains", "relsim"),
    "relsim.philox": ("relsim.relations", "relsim.runtime", "relsim.domains", "relsim"),
    "relsim.relations": ("relsim.runtime", "relsim.domains", "relsim"),
    "relsim.output": ("relsim.runtime", "relsim.domains", "relsim"),  # rs.write and domains
    "relsim.runtime": ("relsim.domains", "relsim"),
    "relsim.checkpoint": ("relsim.domains", "relsim"),  # on the runtime (ranks), below the API
    # solvers are relsim programs: the public API only, never the runtime's insides
    "relsim.linalg": ("relsim.runtime", "relsim.relations", "relsim.domains"),
    "relsim.optimize": ("relsim.runtime", "relsim.relations", "relsim.domains"),
}


def test_layers():
    g = import_graph()
    bad = []
    for mod, edges in sorted(g.items()):
        for low, above in ABOVE.items():
            if not _below(mod, low):
                continue
            for dst, line in sorted(edges.items()):
                if any(_below(dst, a) if a != "relsim" else dst == a for a in above):
                    bad.append(f"{mod} (line {line}) imports {dst}")
    bad += [f"relsim (line {line}) imports {dst}" for dst, line in sorted(g["relsim"].items())
            if _below(dst, "relsim.domains")]
    assert not bad, "imports back up the layers:\n  " + "\n  ".join(bad)


# -- inside the runtime -------------------------------------------------------------------------
RUNTIME = "relsim.runtime"
ROOMS = {"cpu": f"{RUNTIME}.backends.cpu", "cuda": f"{RUNTIME}.backends.cuda",
         "interp": f"{RUNTIME}.backends.interp"}
# the stages below the backends: they serve every backend and know none of them, nor what runs
# kernels above them (execute, precompile, explain, the MPI layer)
BELOW_BACKENDS = ("analysis", "caches", "folds", "host", "lowering", "ir", "semantics",
                  "builtin_table", "numpy_algebra", "epoch", "pipeline", "gc_pause")
ABOVE_BACKENDS = ("execute", "precompile", "explain", "parallel")


def _runtime_violations(g: dict) -> list:
    bad = []
    for mod, edges in sorted(g.items()):
        for dst, line in sorted(edges.items()):
            why = None
            room = next((r for r, pkg in ROOMS.items() if _below(mod, pkg)), None)
            other = next((r for r, pkg in ROOMS.items() if _below(dst, pkg)), None)
            if room and other and other != room:
                why = f"the {room} room imports the {other} room"
            elif any(_below(mod, f"{RUNTIME}.{low}") for low in BELOW_BACKENDS) and (
                    _below(dst, f"{RUNTIME}.backends") or
                    any(_below(dst, f"{RUNTIME}.{up}") for up in ABOVE_BACKENDS)):
                why = "a shared stage below the backends imports a backend or a layer above"
            elif _below(mod, f"{RUNTIME}.parallel") and _below(dst, f"{RUNTIME}.backends") \
                    and dst != f"{RUNTIME}.backends.base":
                why = "the MPI layer sees backends only through backends/base.py"
            if why:
                bad.append(f"{mod} (line {line}) imports {dst}: {why}")
    return bad


def test_runtime_rooms_and_stages():
    """No backend room imports another; lowering/ and the other shared stages import no room;
    parallel/ sees backends only through backends/base.py; rs.precompile sits above execute
    and the compile-job plumbing (host/compile_jobs.py) below the backends."""
    bad = _runtime_violations(import_graph())
    assert not bad, "imports across the runtime's rooms:\n  " + "\n  ".join(bad)


def test_the_room_checker_sees_a_room_importing_another(tmp_path):
    g = {f"{RUNTIME}.backends.cuda.backend": {f"{RUNTIME}.backends.cpu.backend": 3},
         f"{RUNTIME}.lowering.body": {f"{RUNTIME}.backends.cuda.rows": 5},
         f"{RUNTIME}.parallel.plan": {f"{RUNTIME}.backends.base": 1,
                                      f"{RUNTIME}.backends.interp": 2},
         f"{RUNTIME}.host.compile_jobs": {f"{RUNTIME}.execute": 7}}
    bad = _runtime_violations(g)
    assert len(bad) == 4, bad
    assert "the cuda room imports the cpu room" in bad[0]
    assert "backends/base.py" in bad[-1] and "line 2" in bad[-1]


def test_nothing_named_for_a_backend_lives_outside_its_room():
    bad = []
    for mod in _modules(ROOT):
        leaf = mod.split(".")
        for room, pkg in ROOMS.items():
            if any(room in part for part in leaf) and not _below(mod, pkg):
                bad.append(f"{mod} is named for the {room} backend but lives outside {pkg}")
    assert not bad, "\n".join(bad)
