"""The README's Python examples run. Its ```python blocks are run in order in one namespace (a
later block may use what an earlier one defined), as one script whose lines sit at the README's
own line numbers, so a failure names the README line. A block preceded by the line
``<!-- not run -->`` is skipped: only for one that truly cannot run (it needs files or tools
the tests do not have). Other fences (bash, toml, plain text) are never run."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import SHIPPED_TARGETS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
SKIP = "<!-- not run -->"
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def python_blocks(text: str):
    """[(first line number, lines)] of the runnable ```python blocks of `text`."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        before = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
        if lang == "python" and before != SKIP:
            body = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:end]]
            blocks.append((i + 2, body))
        i = end + 1
    return blocks


def script(text: str) -> str:
    """The runnable blocks, each line at its README line number (everything else blank)."""
    out = [""] * len(text.splitlines())
    for first, body in python_blocks(text):
        out[first - 1:first - 1 + len(body)] = body
    return "\n".join(out) + "\n"


def test_blocks_are_found_in_order_and_markers_respected():
    text = ("intro\n```python\na = 1\n```\n<!-- not run -->\n\n```python\nb = 2\n```\n"
            "```bash\nls\n```\n```python\nc = a\n```\n")
    assert python_blocks(text) == [(3, ["a = 1"]), (14, ["c = a"])]
    lines = script(text).splitlines()
    assert lines[2] == "a = 1" and lines[13] == "c = a" and "b = 2" not in lines


def test_readme_has_runnable_examples():
    with open(README) as f:
        blocks = python_blocks(f.read())
    assert len(blocks) >= 3
    assert any("@rs.kernel" in "\n".join(body) for _, body in blocks)


@pytest.mark.parametrize("tgt", SHIPPED_TARGETS)
def test_readme_examples_run(tmp_path, tgt):
    with open(README) as f:
        text = f.read()
    path = tmp_path / "README_md.py"  # tracebacks name README_md.py and the README's line
    path.write_text(script(text))
    env = dict(os.environ, RELSIM_TARGET=tgt,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path), timeout=600)
    assert res.returncode == 0, f"a README example failed (line numbers are README.md's):\n" \
                                f"{res.stdout[-3000:]}\n{res.stderr[-6000:]}"
