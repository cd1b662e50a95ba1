"""Shared checks for the failing-kernel tests.

A test marks the offending line of its kernel with a `# <- here` comment (and the second site of a
conflict with `# <- also`); `expect_error` runs the kernel, and checks the exception class, the
builtin it also is, the message words, and that the reported line (and the rendered source line
with its caret) is the marked one.
"""
from __future__ import annotations

import inspect
import os

import pytest

import relsim as rs

HERE = "# <- here"
ALSO = "# <- also"


def marked_line(fn, marker: str = HERE) -> int:
    """The line number (in fn's file) of the one line of fn's source carrying `marker`."""
    fn = getattr(fn, "fn", fn)  # an rs.kernel / rs.func: its Python function
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, f"expected one {marker!r} line in {fn.__name__}, found {hits}"
    return hits[0]


def check_site(text: str, loc, fn, marker: str, under: str | None = None) -> None:
    """`loc` is the marked line of fn, and `text` shows that line with a caret under loc."""
    fn = getattr(fn, "fn", fn)
    assert loc is not None, "the error carries no source location"
    assert os.path.samefile(loc.filename, inspect.getsourcefile(fn))
    assert loc.line == marked_line(fn, marker), \
        f"error reported at line {loc.line}, expected the {marker!r} line\n{text}"
    source = loc.source_line.rstrip("\n")
    assert marker in source
    if under is not None:
        assert source[loc.col:loc.end_col] == under, \
            f"caret under {source[loc.col:loc.end_col]!r}, expected {under!r}"
    shown = text.splitlines()
    row = shown.index("    " + source.strip())  # the source line, as rendered
    caret = shown[row + 1]
    assert set(caret.strip()) == {"^"}, text
    indent = len(source) - len(source.lstrip())
    assert len(caret) - len(caret.lstrip()) - 4 == loc.col - indent, text
    assert f"line {loc.line}" in shown[row - 1]


def expect_error(rel, kernel, cls, builtin, *words, target: str = "interp",
                 under: str | None = None, where=None, also: bool = False):
    """Run `kernel` over `rel` and check the compile error it must raise.

    cls: the relsim class; builtin: the builtin exception it must also be; words: substrings of
    the message; under: the source text the caret must underline; where: the function holding
    the `# <- here` line (default: the kernel); also: a conflict whose other site is `# <- also`.
    """
    with pytest.raises(cls) as info:
        rel.foreach(kernel, rs.Config(target=target))
    exc = info.value
    assert type(exc) is cls, f"raised {type(exc).__name__}, expected {cls.__name__}"
    assert isinstance(exc, rs.RelsimError)
    assert isinstance(exc, rs.KernelError)
    assert isinstance(exc, builtin)
    assert exc.kernel == kernel.name
    text = str(exc)
    assert f"in kernel '{kernel.name}'" in text
    for w in words:
        assert w in exc.message, f"{w!r} not in the message: {exc.message}"
    check_site(text, exc.loc, where or kernel, HERE, under)
    if also:
        assert len(exc.extra) == 1, exc.extra
        label, loc = exc.extra[0]
        assert label and label in text
        check_site(text, loc, where or kernel, ALSO)
        assert loc.line != exc.loc.line
    else:
        assert exc.extra == ()
    return exc


def kernel_from_file(path: str, name: str) -> rs.Kernel:
    """A kernel whose source is function `name` in `path`, a file Python itself would refuse to
    compile (e.g. `break` outside a loop): relsim only reads the source, so a stub function with
    the same file name and first line stands in for it."""
    with open(path) as f:
        lines = f.read().splitlines()
    first = next(i + 1 for i, text in enumerate(lines) if text.startswith(f"def {name}("))
    stub = "\n" * (first - 1) + f"def {name}(r):\n    pass\n"
    env: dict = {}
    exec(compile(stub, path, "exec"), env)
    return rs.kernel(env[name])
