"""Run one documentation page's code (tests/docs_blocks.py says what runs and how).

    python -m tests.docs_exec docs/language/kernels.md [--update]

runs in the current directory (files a page writes land there) on the target RELSIM_TARGET
names. The page's blocks are written to ``<page>_md.py`` at their page line numbers (relsim
reads kernels' source from it; tracebacks name the page's lines), then run one by one in one
namespace. A raises block must raise its exception with the message shown after it; with
``--update`` a differing message is written into the page instead (check the diff)."""
from __future__ import annotations

import os
import re
import sys
import traceback
import types

from tests.docs_blocks import ROOT, python_blocks, script, shown_path


def _message(exc: BaseException, script_path: str, page: str) -> list[str]:
    text = f"{type(exc).__name__}: {exc}".replace(script_path, shown_path(page))
    return [ln.rstrip() for ln in text.splitlines()]


def _is_a(exc: BaseException, name: str) -> bool:
    return any(k.__name__ == name for k in type(exc).__mro__)


def run_page(page: str, update: bool = False) -> list[str]:
    """Run `page` (relative to the repository); the list of problems (empty: all ran)."""
    with open(os.path.join(ROOT, page)) as f:
        text = f.read()
    path = os.path.abspath(re.sub(r"[^A-Za-z0-9]+", "_", page[:-3]) + "_md.py")
    partial = f"{path}.{os.getpid()}"  # several MPI ranks write it at once: each whole
    with open(partial, "w") as f:
        f.write(script(text))
    os.replace(partial, path)
    # the page runs as the main module, as a script would (inspect finds a class's source
    # through sys.modules["__main__"].__file__)
    main = types.ModuleType("__main__")
    main.__file__ = path
    sys.modules["__main__"] = main
    namespace = main.__dict__
    problems, fixes = [], []
    for block in python_blocks(text):
        source = "\n" * (block.first - 1) + "\n".join(block.lines) + "\n"
        code = compile(source, path, "exec")
        try:
            exec(code, namespace)
        except Exception as exc:  # noqa: BLE001 - reported with the page's line
            if block.raises is None:
                problems.append(f"{page}, the block at line {block.first} failed:\n"
                                + "".join(traceback.format_exc()).replace(path, page))
                break
            if not _is_a(exc, block.raises):
                problems.append(f"{page}:{block.first}: expected {block.raises}, got "
                                + "".join(traceback.format_exc()).replace(path, page))
                continue
            got = _message(exc, path, page)
            want = [ln.rstrip() for ln in block.message]
            if got != want:
                fixes.append((block, got))
                problems.append(f"{page}:{block.message_first}: the {block.raises} message "
                                f"shown differs from the one given:\n" + "\n".join(got))
        else:
            if block.raises is not None:
                problems.append(f"{page}:{block.first}: expected {block.raises}; the block ran")
    if update and fixes:
        _write_messages(page, text, fixes)
    return problems


def _write_messages(page: str, text: str, fixes) -> None:
    lines = text.splitlines()
    for block, got in sorted(fixes, key=lambda f: -f[0].message_first):
        start = block.message_first - 1
        indent = re.match(r"\s*", lines[start - 1]).group(0)
        lines[start:start + len(block.message)] = [indent + ln if ln else ln for ln in got]
    with open(os.path.join(ROOT, page), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"updated {len(fixes)} message(s) in {page}", file=sys.stderr)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    update = "--update" in argv
    pages = [a for a in argv if a != "--update"]
    if len(pages) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    problems = run_page(os.path.relpath(os.path.abspath(pages[0]), ROOT), update)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
