"""The public API is explicit and stable."""
import importlib
import os
import subprocess
import sys

import pytest

import relsim as rs
from tests.conftest import SHIPPED_TARGETS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(rs.__file__)))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))

DESIGN_NAMES = ["kernel", "func", "Global", "f32", "f64", "i32", "i64", "bool_", "vec", "mat",
                "Relation", "new_relation", "explain", "RelsimError", "configure"]


def test_public_names_exist_and_are_exported():
    for name in DESIGN_NAMES:
        assert hasattr(rs, name), name
        assert name in rs.__all__, name
    for name in rs.__all__:
        assert hasattr(rs, name), name


def test_domain_plugin_api_is_public_and_documented():
    """Domains (bundled and plugins) declare their geometry through `rs.geometry`."""
    assert "geometry" in rs.__all__
    for name in ("points", "cells", "point_cloud"):
        fn = getattr(rs.geometry, name)
        assert callable(fn) and fn.__doc__, name
    assert rs.geometry.CELL_TYPES["tetra"] == 4


def test_errors_subclass_relsim_and_builtin():
    assert issubclass(rs.KernelSyntaxError, rs.RelsimError)
    assert issubclass(rs.KernelSyntaxError, SyntaxError)
    assert issubclass(rs.KernelTypeError, TypeError)
    assert issubclass(rs.KernelNameError, NameError)
    assert issubclass(rs.PhaseError, rs.KernelError)
    assert issubclass(rs.DataError, ValueError)


def test_unknown_target_is_a_clear_error():
    try:
        rs.Config(target="gpu9000")
    except rs.ConfigError as exc:
        assert "interp" in str(exc) and "cpu" in str(exc)
    else:
        raise AssertionError("no error")


def test_cli_list_and_run_heat():
    out = subprocess.run([sys.executable, "-m", "relsim.cli", "list"], capture_output=True,
                         text=True, check=True, env=ENV).stdout
    assert "heat" in out and "interp" in out and "cpu" in out
    res = subprocess.run([sys.executable, "-m", "relsim.cli", "run", "heat", "--nx", "12",
                          "--ny", "9", "--steps", "30"], capture_output=True, text=True, env=ENV)
    assert res.returncode == 0, res.stderr
    assert "OK: heat conserved" in res.stdout
    bad = subprocess.run([sys.executable, "-m", "relsim.cli", "run", "nosuchsim"],
                         capture_output=True, text=True, env=ENV)
    assert bad.returncode != 0 and "heat" in bad.stderr


def test_cli_run_help_lists_the_simulations_and_bad_options_are_one_line():
    cli = [sys.executable, "-m", "relsim.cli"]
    for args in (["run", "--help"], ["run", "-h"]):
        res = subprocess.run(cli + args, capture_output=True, text=True, env=ENV)
        assert res.returncode == 0, res.stderr
        assert "usage: relsim run NAME" in res.stdout
        assert "heat" in res.stdout and "lulesh" in res.stdout and "airfoil" in res.stdout
    res = subprocess.run(cli + ["run"], capture_output=True, text=True, env=ENV)
    assert res.returncode == 2 and "heat" in res.stdout
    out = subprocess.run(cli + ["list"], capture_output=True, text=True, env=ENV).stdout
    assert "cpu-serial" in out
    from relsim.cli import simulations
    assert set(simulations()) >= {"heat", "lulesh", "airfoil"}
    assert all(hasattr(importlib.import_module(path), "main")
               for path in simulations().values()), "a helper module is listed as a simulation"
    bad = subprocess.run(cli + ["run", "heat", "--target", "bogus"], capture_output=True,
                         text=True, env=ENV)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "relsim run: unknown target 'bogus'; choose one of " + ", ".join(SHIPPED_TARGETS)]


def test_cli_explain_one_kernel(capsys):
    from relsim import cli
    assert cli.main(["explain", "heat", "--kernel", "update"]) == 0
    out = capsys.readouterr().out
    assert "== kernel update over" in out and "== kernel conduct" not in out
    assert "-- compiled variants" in out and "def kernel_parallel" not in out
    assert cli.main(["explain", "heat", "--kernel", "update", "--full"]) == 0
    assert "def kernel_parallel" in capsys.readouterr().out
    assert cli.main(["explain", "heat"]) == 0
    out = capsys.readouterr().out
    assert "== kernel update over" in out and "== kernel conduct over" in out
    assert cli.main(["explain", "heat", "--kernel", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "relsim explain heat: no kernel 'nope'; its kernels are conduct, update"


def test_cli_run_prints_a_relsim_error_in_one_line(monkeypatch, capsys):
    from relsim import cli

    class Sim:
        @staticmethod
        def main(argv):
            raise rs.DataError("subset cells.sources: row indices must lie in [0, 16) of cells")

    monkeypatch.setattr(cli, "_load", lambda name: Sim)
    monkeypatch.delenv("RELSIM_TRACEBACK", raising=False)
    assert cli.main(["run", "fake"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "relsim run fake: DataError: subset cells.sources: row indices must lie in [0, 16) of "
        "cells"]
    monkeypatch.setenv("RELSIM_TRACEBACK", "full")
    with pytest.raises(rs.DataError):
        cli.main(["run", "fake"])


def test_importing_relsim_freezes_what_exists_and_restores_the_collector():
    """`import relsim` pauses the garbage collector while it loads and freezes what exists
    then (relsim/__init__.py); the collector comes back as the program had it."""
    import subprocess
    import sys
    code = ("import gc, sys\n"
            "if sys.argv[1] == 'off': gc.disable()\n"
            "import relsim\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 50000)\n")
    for state, want in (("on", "True True"), ("off", "False True")):
        out = subprocess.run([sys.executable, "-c", code, state], capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == want.split()
