"""The compile cache: generated modules are written as real files under the cache directory,
named by the hash of their source, and imported from there. Numba caches their machine code
beside them (`cache=True`), so a second process loads instead of recompiling; tracebacks and
`rs.explain` show the generated source from that file."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

CACHE_FORMAT = "1"


def module_for(source: str, cache_dir: Path, stem: str):
    """Import (writing first if needed) the module whose text is `source`."""
    digest = hashlib.sha256((CACHE_FORMAT + "\0" + source).encode()).hexdigest()[:24]
    modname = f"relsim_gen_{stem}_{digest}"
    if modname in sys.modules:
        return sys.modules[modname]
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{modname}.py"
    if not path.exists() or path.read_text() != source:
        fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod
