"""The runnable code of the documentation (README.md and every page under docs/).

A page's ```python blocks run in order in one namespace (a later block may use what an earlier
one defined), each line at the page's own line number, so a failure names the page's line.
Markers, each an HTML comment on the last non-blank line before a block:

- ``<!-- not run -->``: the block is skipped (only for one that truly cannot run here: it needs
  files, tools or hardware the tests do not have).
- ``<!-- raises NAME -->``: the block must raise an exception of class NAME (or a subclass);
  the ```text block right after it is the error's message as the block gives it, compared
  line for line (the script's path shown as the page's path).

A page says how it runs with one comment anywhere in it (default: the cpu target, one process):

- ``<!-- docs-test: targets all -->``: on every target relsim ships (interp, cpu, ...).
- ``<!-- docs-test: targets cpu cuda -->``: on those targets.
- ``<!-- docs-test: mpiexec 2 -->``: also under ``mpiexec -n 2`` (the same bits are the page's
  own asserts to check).

Other fences (bash, toml, text not after a raises block) never run."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*(not run|raises\s+(\w+))\s*-->$")
PAGE_OPTION = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->$", re.M)


@dataclass(frozen=True)
class Block:
    first: int              # the page's line number of the block's first line
    lines: tuple            # the block's lines, its fence's indentation removed
    raises: str | None = None       # the exception class name a raises block must give
    message: tuple | None = None    # the message lines shown after a raises block
    message_first: int = 0  # the page line of the message's first line (for --update)


@dataclass(frozen=True)
class PageOptions:
    targets: tuple = ("cpu",)   # "all": every shipped target
    mpi_ranks: int = 0          # also run under `mpiexec -n mpi_ranks` when > 0


def _fences(lines):
    """(start index, end index, indent, lang) of each fenced block."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        yield i, end, m.group(1), m.group(2)
        i = end + 1


def _marker(lines, i):
    before = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
    return MARKER.match(before)


def python_blocks(text: str) -> list[Block]:
    """The runnable ```python blocks of `text`, in order."""
    lines = text.splitlines()
    fences = list(_fences(lines))
    blocks = []
    for n, (i, end, indent, lang) in enumerate(fences):
        if lang != "python":
            continue
        marker = _marker(lines, i)
        if marker and marker.group(1) == "not run":
            continue
        body = tuple(ln[len(indent):] if ln.startswith(indent) else ln
                     for ln in lines[i + 1:end])
        raises = message = None
        first_msg = 0
        if marker:
            raises = marker.group(2)
            nxt = fences[n + 1] if n + 1 < len(fences) else None
            between = lines[end + 1:nxt[0]] if nxt else []
            if not nxt or nxt[3] != "text" or any(ln.strip() for ln in between):
                raise ValueError(f"line {i + 1}: a `<!-- raises {raises} -->` block must be "
                                 f"followed by a ```text block with the error's message")
            message = tuple(ln[len(nxt[2]):] for ln in lines[nxt[0] + 1:nxt[1]])
            first_msg = nxt[0] + 2
        blocks.append(Block(i + 2, body, raises, message, first_msg))
    return blocks


def page_options(text: str) -> PageOptions:
    targets, ranks = ("cpu",), 0
    for option in PAGE_OPTION.findall(text):
        words = option.split()
        if words[:1] == ["targets"] and len(words) > 1:
            targets = tuple(words[1:])
        elif words[:1] == ["mpiexec"] and len(words) == 2:
            ranks = int(words[1])
        else:
            raise ValueError(f"unknown `<!-- docs-test: {option} -->` (targets ... | mpiexec N)")
    return PageOptions(targets, ranks)


def script(text: str) -> str:
    """The runnable blocks as one file, each line at its page line number (else blank): the
    file Python reads kernels' source from and tracebacks name."""
    out = [""] * len(text.splitlines())
    for b in python_blocks(text):
        out[b.first - 1:b.first - 1 + len(b.lines)] = b.lines
    return "\n".join(out) + "\n"


def pages() -> list[str]:
    """README.md and every page of the docs site, as paths relative to the repository."""
    found = ["README.md"]
    for folder, dirs, files in os.walk(DOCS):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                found.append(os.path.relpath(os.path.join(folder, name), ROOT))
    return found


def shown_path(page: str) -> str:
    """The path a page's errors show for its code: relative to docs/ (README.md as is)."""
    rel = os.path.relpath(os.path.join(ROOT, page), DOCS)
    return page if rel.startswith("..") else rel
