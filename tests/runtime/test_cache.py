"""The compile cache's files: a generated module is written once, named by its source's hash,
its bytecode cached beside it; a damaged cache file is rebuilt, never trusted."""
import sys

from relsim.runtime.caches import modules as cache

SRC = "def f(x):\n    return x + 1\n"


def _fresh(name):
    for k in [k for k in sys.modules if name in k]:
        del sys.modules[k]


def test_module_and_bytecode_are_cached_and_reused(tmp_path):
    mod = cache.module_for(SRC, tmp_path, "t1")
    assert mod.f(1) == 2 and mod.__file__.endswith(".py")
    codes = list(tmp_path.glob("*.code"))
    assert len(codes) == 1 and len(list(tmp_path.glob("*.py"))) == 1
    stamp = codes[0].stat().st_mtime_ns
    _fresh("relsim_gen_t1")
    mod = cache.module_for(SRC, tmp_path, "t1")  # a new process would do this: loads the code
    assert mod.f(2) == 3 and codes[0].stat().st_mtime_ns == stamp


def test_damaged_files_are_rebuilt(tmp_path):
    cache.module_for(SRC, tmp_path, "t2")
    (code,) = tmp_path.glob("*.code")
    code.write_bytes(b"\x00garbage")
    (py,) = tmp_path.glob("*.py")
    py.write_text("def f(x):\n    return x - 1\n")  # not the source its name says
    _fresh("relsim_gen_t2")
    mod = cache.module_for(SRC, tmp_path, "t2")
    assert mod.f(1) == 2 and py.read_text() == SRC
    assert not list(tmp_path.glob("*.tmp"))
