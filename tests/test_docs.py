"""The documentation cannot rot: every page's code runs (tests/docs_blocks.py says how), the
errors it shows are the errors relsim gives, and the site builds with broken links and missing
references as errors."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import SHIPPED_TARGETS
from tests.docs_blocks import ROOT, page_options, pages, python_blocks, script

MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")


def _read(page):
    with open(os.path.join(ROOT, page)) as f:
        return f.read()


def _cases():
    for page in pages():
        text = _read(page)
        if not python_blocks(text):
            continue
        opts = page_options(text)
        targets = SHIPPED_TARGETS if opts.targets == ("all",) else opts.targets
        for tgt in targets:
            yield pytest.param(page, tgt, 0, id=f"{page}-{tgt}")
        if opts.mpi_ranks:
            yield pytest.param(page, "cpu", opts.mpi_ranks, id=f"{page}-mpiexec{opts.mpi_ranks}",
                               marks=[pytest.mark.mpi, pytest.mark.skipif(
                                   MPIEXEC is None, reason="no mpiexec")])


@pytest.mark.parametrize("page,tgt,ranks", list(_cases()))
def test_page_code_runs(tmp_path, page, tgt, ranks):
    env = dict(os.environ, RELSIM_TARGET=tgt,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PMI_SIZE", None)
    cmd = [sys.executable, "-m", "tests.docs_exec", os.path.join(ROOT, page)]
    if ranks:
        cmd = [MPIEXEC, "-n", str(ranks), *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(tmp_path),
                         timeout=900)
    assert res.returncode == 0, (f"{page} on {tgt} (line numbers are the page's; "
                                 f"python -m tests.docs_exec {page} runs it; --update rewrites the "
                                 f"error messages a page shows, e.g. after lines moved):\n"
                                 f"{res.stdout[-3000:]}\n{res.stderr[-8000:]}")


def test_blocks_markers_and_line_numbers():
    text = ("intro\n```python\na = 1\n```\n<!-- not run -->\n\n```python\nb = 2\n```\n"
            "```bash\nls\n```\n<!-- raises ValueError -->\n```python\nint('x')\n```\n"
            "```text\nValueError: bad\n```\n")
    blocks = python_blocks(text)
    assert [(b.first, b.lines, b.raises) for b in blocks] == [
        (3, ("a = 1",), None), (15, ("int('x')",), "ValueError")]
    assert blocks[1].message == ("ValueError: bad",) and blocks[1].message_first == 18
    lines = script(text).splitlines()
    assert lines[2] == "a = 1" and lines[14] == "int('x')" and "b = 2" not in lines
    with pytest.raises(ValueError, match="followed by a ```text block"):
        python_blocks("<!-- raises KeyError -->\n```python\n{}[1]\n```\n")
    assert page_options("<!-- docs-test: targets all -->").targets == ("all",)
    assert page_options("x\n<!-- docs-test: mpiexec 2 -->\n").mpi_ranks == 2
    with pytest.raises(ValueError, match="unknown"):
        page_options("<!-- docs-test: fast -->")


def test_a_wrong_error_message_is_caught(tmp_path, monkeypatch):
    """A raises block whose shown message is stale fails (and --update rewrites it)."""
    from tests import docs_exec
    page = tmp_path / "p.md"
    page.write_text("<!-- raises ValueError -->\n```python\nint('x')\n```\n"
                    "```text\nValueError: an old message\n```\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(docs_exec, "ROOT", str(tmp_path))
    problems = docs_exec.run_page("p.md")
    assert len(problems) == 1 and "invalid literal for int()" in problems[0]
    docs_exec.run_page("p.md", update=True)
    assert docs_exec.run_page("p.md") == []
    assert "ValueError: invalid literal for int() with base 10: 'x'" in page.read_text()


def test_readme_is_a_few_screens_with_a_runnable_example():
    """The README introduces; the site documents (docs/)."""
    text = _read("README.md")
    assert len(text.splitlines()) <= 200
    blocks = python_blocks(text)
    assert blocks and any("@rs.kernel" in "\n".join(b.lines) for b in blocks)


# -- the site and its API reference -----------------------------------------------------------

API_PAGES = {"relsim": "api/relsim.md", "relsim.linalg": "api/linalg.md",
             "relsim.optimize": "api/optimize.md",
             "relsim.domains": "api/domains.md", "relsim.output": "api/output.md"}
DOMAIN_MODULES = ("grid", "particles", "trimesh", "tetmesh", "hexmesh", "op2mesh")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built as a reader gets it, every warning (a broken link or anchor, a page
    missing from the nav, a reference mkdocstrings cannot resolve) an error."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(out)], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=600)
    assert res.returncode == 0, f"mkdocs build --strict failed:\n{res.stderr[-8000:]}"
    return out


def _public_objects():
    """(qualified name, object) of every public name the API reference must document."""
    import importlib

    import relsim
    modules = ["relsim", "relsim.linalg", "relsim.optimize", "relsim.domains", "relsim.output",
               *(f"relsim.domains.{m}" for m in DOMAIN_MODULES)]
    for modname in modules:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            if name != "__version__":
                yield f"{modname}.{name}", getattr(mod, name)
    assert relsim.__all__ and relsim.linalg.__all__


def _own_doc(obj) -> str | None:
    import inspect
    if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj):
        return inspect.getdoc(obj)
    return None  # a value (a type such as rs.f64, a constant): documented where it is assigned


def _rendered_id(html_by_page: dict, qualified: str, obj) -> bool:
    needle = f'id="{qualified}"'
    if any(needle in html for html in html_by_page.values()):
        return True
    # a name re-exported by a package is rendered under the package's name or its home module's
    home = getattr(obj, "__module__", None)
    name = qualified.rsplit(".", 1)[1]
    return bool(home) and any(f'id="{home}.{name}"' in h for h in html_by_page.values())


def test_site_builds_strict_and_documents_every_public_name(site):
    html = {p: (site / p[:-3] / "index.html").read_text() for p in API_PAGES.values()}
    missing, undocumented = [], []
    for qualified, obj in _public_objects():
        if not _rendered_id(html, qualified, obj):
            missing.append(qualified)
        doc = _own_doc(obj)
        if doc is not None and not doc.strip():
            undocumented.append(qualified)
    assert not missing, f"public names the API reference (docs/api/) does not render: {missing}"
    assert not undocumented, f"public names without a docstring: {undocumented}"


def test_public_classes_document_their_public_members():
    import inspect
    bare = []
    for qualified, obj in _public_objects():
        if not inspect.isclass(obj) or issubclass(obj, BaseException):
            continue
        for name, member in vars(obj).items():
            if name.startswith("_"):
                continue
            fn = member.fget if isinstance(member, property) else \
                getattr(member, "__func__", member)
            if (inspect.isfunction(fn) or isinstance(member, property)) and \
                    not inspect.getdoc(fn):
                bare.append(f"{qualified}.{name}")
    assert not bare, f"public methods and properties without a docstring: {bare}"


def _code_spans(page: str) -> str:
    import re
    return " ".join(re.findall(r"`([^`\n]+)`", _read(page)))


def test_every_kernel_builtin_is_on_the_builtins_page():
    import re

    from relsim.runtime import builtin_table as bt
    names = {*bt.MATH, *bt.NUMPY_ALIASES, *bt.NUMPY_ALIASES.values(), *bt.PYTHON_BUILTINS,
             *bt.PYTHON_ALIASES, *bt.VECTOR_FUNCTIONS, *bt.VECTOR_FUNCTIONS.values(),
             *bt.DECOMPOSITIONS, *bt.RANDOM, *bt.RANDOM_KEYWORDS, *bt.COMPILE_TIME, "static",
             *(f"reduce_{op}" for op in bt.REDUCE_STATEMENTS.values())}
    spans = _code_spans("docs/language/builtins.md")
    absent = sorted(n for n in names if not re.search(rf"(?<![\w.]){re.escape(n)}\b", spans))
    assert not absent, f"kernel builtins docs/language/builtins.md does not name: {absent}"


def test_cli_page_names_every_command_option_and_simulation():
    from relsim.cli import simulations
    spans = _code_spans("docs/api/cli.md")
    for word in ("relsim --version", "relsim list", "relsim run", "relsim explain", "--kernel",
                 "--full", "relsim bench", "--markdown", *simulations()):
        assert word in spans, f"docs/api/cli.md does not name `{word}`"


def test_one_version_string():
    import re

    import relsim
    newest = re.search(r"^## \[(\d[^\]]*)\]", _read("CHANGELOG.md"), re.M).group(1)
    assert newest == relsim.__version__, "CHANGELOG.md's newest entry is not relsim.__version__"
    out = subprocess.run([sys.executable, "-m", "relsim.cli", "--version"], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=ROOT), check=True).stdout
    assert out.strip() == f"relsim {relsim.__version__}"
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert project["project"]["dynamic"] == ["version"]  # the distribution's is read from it
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "relsim.__version__"}
