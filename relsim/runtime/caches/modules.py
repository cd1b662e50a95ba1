"""The compile cache: generated modules are written as real files under the cache directory,
named by the hash of their source, and imported from there. Numba caches their machine code
beside them (`cache=True`), so a second process loads instead of recompiling; tracebacks and
`rs.explain` show the generated source from that file. Their bytecode is cached beside them too
(`<module>.<cache tag>.code`, marshalled): compiling a large generated module's source again on
every run cost ~20 ms per kernel, and Python's own .pyc files are often turned off
(PYTHONDONTWRITEBYTECODE). Every file is written atomically (a temporary file, then a rename),
so processes compiling the same kernel at once never read a half-written one."""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import types
from pathlib import Path

CACHE_FORMAT = "1"

def stem(kernel_name: str) -> str:
    """The part of a generated module's file name that names its kernel (safe in file
    names)."""
    return "".join(c if c.isalnum() else "_" for c in kernel_name)[:40]


def module_for(source: str, cache_dir: Path, stem: str):
    """Import (writing first if needed) the module whose text is `source`."""
    digest = hashlib.sha256((CACHE_FORMAT + "\0" + source).encode()).hexdigest()[:24]
    modname = f"relsim_gen_{stem}_{digest}"
    if modname in sys.modules:
        return sys.modules[modname]
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{modname}.py"
    code_path = cache_dir / f"{modname}.{sys.implementation.cache_tag}.code"
    if not path.exists() or path.read_text() != source:
        write_atomic(path, source.encode())
        code_path.unlink(missing_ok=True)
    return _execute(modname, path, code_path, source)


def module_at(path: Path):
    """Import the generated module `module_for` wrote to file `path` (e.g. in another process:
    `compile_ahead`'s workers), as `module_for` would."""
    modname = path.stem
    if modname in sys.modules:
        return sys.modules[modname]
    code_path = path.with_name(f"{modname}.{sys.implementation.cache_tag}.code")
    return _execute(modname, path, code_path, None)


def _execute(modname: str, path: Path, code_path: Path, source: str | None):
    code = _load_code(code_path)
    if code is None:
        code = compile(path.read_text() if source is None else source, str(path), "exec")
        write_atomic(code_path, marshal.dumps(code))
    mod = types.ModuleType(modname)
    mod.__file__ = str(path)
    sys.modules[modname] = mod
    exec(code, mod.__dict__)
    return mod


def _load_code(path: Path):
    try:
        code = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


def write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
