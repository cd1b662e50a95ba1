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
import linecache
import marshal
import os
import sys
import tempfile
import types
from pathlib import Path

from . import damaged

CACHE_FORMAT = "1"


def module_for(source: str, cache_dir: Path, kind: str):
    """Import (writing first if needed) the module whose text is `source`, in a file named by
    `kind` (what generated it: "kernel", "segment", ...) and its hash. A file under its
    name with other text is damaged: dropped (a warning) and written again; a cache directory
    that cannot be written makes the module live in memory (a warning; its functions are then
    not cached on disk either: `on_disk`)."""
    digest = hashlib.sha256((CACHE_FORMAT + "\0" + source).encode()).hexdigest()[:24]
    modname = f"relsim_gen_{kind}_{digest}"
    if modname in sys.modules:
        return sys.modules[modname]
    path = cache_dir / f"{modname}.py"
    code_path = cache_dir / f"{modname}.{sys.implementation.cache_tag}.code"
    text = source.encode()
    try:
        on_disk = path.read_bytes()
    except OSError:
        on_disk = None
    if on_disk != text:
        if on_disk is not None:
            damaged.drop(path, "its text is not the source its name is the hash of")
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        except OSError as exc:
            damaged.unwritable(cache_dir, exc)
            return in_memory(modname, path, source)
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


def in_memory(modname: str, path: Path, source: str):
    """The module `source`, not written anywhere: its text is given to `linecache` under
    `path` (so kernels' source and tracebacks are found) and `on_disk(module)` is False."""
    linecache.cache[str(path)] = (len(source), None, source.splitlines(True), str(path))
    mod = types.ModuleType(modname)
    mod.__file__ = str(path)
    mod.__relsim_in_memory__ = True
    sys.modules[modname] = mod
    exec(compile(source, str(path), "exec"), mod.__dict__)
    return mod


def on_disk(module) -> bool:
    """Whether `module` (from `module_for`) is a file, whose functions Numba can cache."""
    return not getattr(module, "__relsim_in_memory__", False)


def _execute(modname: str, path: Path, code_path: Path, source: str | None):
    code = _load_code(code_path)
    if code is None:
        code = compile(path.read_text() if source is None else source, str(path), "exec")
        try:
            write_atomic(code_path, marshal.dumps(code))
        except OSError:  # (only the bytecode: compiled from the source next time)
            pass
    mod = types.ModuleType(modname)
    mod.__file__ = str(path)
    sys.modules[modname] = mod
    exec(code, mod.__dict__)
    return mod


def _load_code(path: Path):
    try:
        data = path.read_bytes()
    except OSError:  # not written yet
        return None
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as exc:
        damaged.drop(path, f"{type(exc).__name__}: {exc}")
        return None
    if not isinstance(code, types.CodeType):
        damaged.drop(path, "not a code object")
        return None
    return code


def write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
