"""The solvers' vector kernels, generated for the fields of one solve.

A kernel names fields by name (``v.x``), and a solver works on the user's fields (the solution,
the right-hand side, the operator's input and output): so the kernels of each combination of
field names are generated as the text of a module, written once under the cache directory
(``<cache>/linalg/<digest>.py``, atomically: ranks may write it at the same time) and imported.
They are ordinary relsim kernels: checked, compiled and cached like any other, on every target
and on any number of ranks. Their reductions into Globals are exact sums, so a solve's
iterates do not depend on the thread count, rank count or device.

Each template is a function of a few scalar fields of one relation; `{NAME}` stands for a
field's name, and the Globals the kernel reads or sums into are arguments of the module's
``make`` function (the kernels capture them).
"""
from __future__ import annotations

import hashlib
import importlib.util
import linecache
import os
import sys
import tempfile
import types
import warnings
from pathlib import Path

import relsim as rs

# r = b - A x and the first sums, for the solvers that sum nothing else at the start (gmres,
# cg with a preconditioner object)
RESIDUAL = """
    @rs.kernel
    def init(v):
        v.{R} = v.{B} - v.{OPY}
        rr += v.{R} * v.{R}
        bb += v.{B} * v.{B}
"""

# the kernels of CG (M: the Jacobi preconditioner's diagonal, or None)
CG = {
    "start": """
    @rs.kernel
    def start(v):
        v.{OPX} = v.{X}
""",
    "init": """
    @rs.kernel
    def init(v):
        v.{R} = v.{B} - v.{OPY}
        {PRECOND}
        v.{OPX} = {Z}
        rr += v.{R} * v.{R}
        {RZ}
        bb += v.{B} * v.{B}
""",
    "curvature": """
    @rs.kernel
    def curvature(v):
        pq += v.{OPX} * v.{OPY}
""",
    "update": """
    @rs.kernel
    def update(v):
        v.{X} += alpha * v.{OPX}
        v.{R} -= alpha * v.{OPY}
        {PRECOND}
        rr += v.{R} * v.{R}
        {RZ}
""",
    "direction": """
    @rs.kernel
    def direction(v):
        v.{OPX} = {Z} + beta * v.{OPX}
""",
}

# the kernels of BiCGSTAB (van der Vorst 1992)
BICGSTAB = {
    "start": CG["start"],
    "init": """
    @rs.kernel
    def init(v):
        v.{R} = v.{B} - v.{OPY}
        v.{RH} = v.{R}
        v.{P} = 0.0
        v.{VV} = 0.0
        rr += v.{R} * v.{R}
        rho += v.{RH} * v.{R}
        bb += v.{B} * v.{B}
""",
    "direction": """
    @rs.kernel
    def direction(v):
        v.{P} = v.{R} + beta * (v.{P} - omega * v.{VV})
        v.{OPX} = v.{P}
""",
    "half": """
    @rs.kernel
    def half(v):
        v.{VV} = v.{OPY}
        rv += v.{RH} * v.{OPY}
""",
    "s": """
    @rs.kernel
    def s(v):
        v.{S} = v.{R} - alpha * v.{VV}
        v.{OPX} = v.{S}
        ss += v.{S} * v.{S}
""",
    "finish_half": """
    @rs.kernel
    def finish_half(v):
        v.{X} += alpha * v.{P}
        v.{R} = v.{S}
""",
    "t": """
    @rs.kernel
    def t(v):
        ts += v.{OPY} * v.{S}
        tt += v.{OPY} * v.{OPY}
""",
    "update": """
    @rs.kernel
    def update(v):
        v.{X} += alpha * v.{P} + omega * v.{S}
        v.{R} = v.{S} - omega * v.{OPY}
        rr += v.{R} * v.{R}
        rho += v.{RH} * v.{R}
""",
}

_loaded: dict = {}  # digest -> the imported module (kept: its kernels' source must stay found)


def module_text(templates: dict, names: dict, globals_: list) -> str:
    """The module defining `templates`' kernels with their `names` substituted, made by
    ``make(<globals_>)``, which returns them in a dict."""
    body = "".join(text.format(**names) for text in templates.values())
    lines = [line for line in body.splitlines() if line.strip()]  # (an empty {PRECOND})
    return ("# relsim.linalg: kernels generated for the fields "
            + ", ".join(f"{k}={v}" for k, v in sorted(names.items()) if v.isidentifier())
            + "\nimport relsim as rs\n\n\n"
            + f"def make({', '.join(globals_)}):\n" + "\n".join(lines) + "\n"
            + f"    return {{{', '.join(f'{k!r}: {k}' for k in templates)}}}\n")


def load(text: str, cache_dir: Path):
    """Import the module whose source is `text`, written under `cache_dir`/linalg once."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    mod = _loaded.get(digest)
    if mod is not None:
        return mod
    folder = Path(cache_dir) / "linalg"
    path = folder / f"kernels_{digest}.py"
    name = f"relsim_linalg_{digest}"
    try:
        if not path.exists() or path.read_bytes() != text.encode():
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.replace(tmp, path)  # whole, or not at all (another rank may read it now)
    except OSError as exc:  # a read-only or full cache directory: the module lives in memory
        warnings.warn(f"relsim.linalg: cannot write {path} ({type(exc).__name__}: {exc}); its "
                      f"kernels are made in memory", rs.RelsimWarning, stacklevel=3)
        linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))
        mod = types.ModuleType(name)
        mod.__file__ = str(path)
        sys.modules[name] = mod
        exec(compile(text, str(path), "exec"), mod.__dict__)
        _loaded[digest] = mod
        return mod
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    _loaded[digest] = mod
    return mod
