"""An uncaught relsim error shows the user's frame and relsim's message, not relsim's internals
(RELSIM_TRACEBACK=full keeps them). Run as scripts in a subprocess, as a user would."""
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import SHIPPED_TARGETS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMPILE_ERROR = """
    import relsim as rs
    V = rs.Relation("V", 4)
    V.new_field("T", rs.f64)

    @rs.kernel
    def bad(v):
        v.T = v.nope + 1.0

    V.foreach(bad)
"""

RUNTIME_ERROR = """
    import relsim as rs
    V = rs.Relation("V", 4)
    V.new_field("T", rs.vec(3, rs.f64))
    S = V.subset("some", [1, 2])

    @rs.kernel
    def bad(v):
        i = 5
        while i > 10:
            i -= 1
        v.T[i] = 1.0

    S.foreach(bad)
    rs.synchronize()
"""

EXPLAIN_ERROR = """
    import relsim as rs
    V = rs.Relation("V", 4)

    @rs.kernel
    def bad(v):
        v.T = 1.0

    print(rs.explain(bad, V))
"""


def run_script(tmp_path, body, target="interp", full=False):
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(body).lstrip("\n"))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               RELSIM_TARGET=target)
    env.pop("RELSIM_TRACEBACK", None)
    if full:
        env["RELSIM_TRACEBACK"] = "full"
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=300, cwd=str(tmp_path))
    assert res.returncode == 1, res.stderr
    return str(script), res.stderr.splitlines()


def internal_frames(lines):
    """Frames of relsim's own files (the public entry point that raised included), wherever
    the subprocess imported relsim from."""
    return [ln for ln in lines if ln.lstrip().startswith("File ")
            and f"{os.sep}relsim{os.sep}" in ln]


def user_frame(lines, script, line):
    return f'File "{script}", line {line}, in <module>' in "\n".join(lines)


def test_compile_error_shows_user_frames_only(tmp_path):
    script, lines = run_script(tmp_path, COMPILE_ERROR)
    assert user_frame(lines, script, 9)  # the foreach call
    assert f'File "{script}", line 7, in bad' in "\n".join(lines)  # the kernel's line
    assert lines[-4].startswith("relsim.errors.KernelNameError: in kernel 'bad'")
    assert internal_frames(lines) == []
    assert len(lines) <= 9, "\n".join(lines)
    _, full = run_script(tmp_path, COMPILE_ERROR, full=True)
    assert internal_frames(full) and len(full) > 20
    assert full[-4:] == lines[-4:]


@pytest.mark.parametrize("tgt", SHIPPED_TARGETS)
def test_runtime_error_shows_user_frames_only(tmp_path, tgt):
    script, lines = run_script(tmp_path, RUNTIME_ERROR, target=tgt)
    # the launch's line; on cuda, where launches queue, the read that found its error
    assert user_frame(lines, script, 14 if tgt == "cuda" else 13)
    assert any(ln.startswith("relsim.errors.KernelRuntimeError:") for ln in lines)
    assert internal_frames(lines) == []
    assert len(lines) <= 10, "\n".join(lines)
    _, full = run_script(tmp_path, RUNTIME_ERROR, target=tgt, full=True)
    assert internal_frames(full)


def test_explain_error_shows_user_frames_only(tmp_path):
    script, lines = run_script(tmp_path, EXPLAIN_ERROR)
    assert user_frame(lines, script, 8)
    assert any(ln.startswith("relsim.errors.KernelNameError") for ln in lines)
    assert internal_frames(lines) == []
    assert len(lines) <= 10, "\n".join(lines)
    _, full = run_script(tmp_path, EXPLAIN_ERROR, full=True)
    assert internal_frames(full)
