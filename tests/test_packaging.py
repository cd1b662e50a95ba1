"""pyproject.toml lists every package (the simulations/ folder installed as relsim_simulations,
so it cannot clash with a user's own `simulations`), and `relsim run` finds the simulations
under that name."""
from __future__ import annotations

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _packages(folder: pathlib.Path, name: str) -> set:
    return {".".join([name, *d.relative_to(folder).parts])
            for d in [folder, *folder.rglob("*")]
            if d.is_dir() and (d / "__init__.py").exists()}


def test_pyproject_lists_every_package_and_installs_simulations_as_relsim_simulations():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert tool["package-dir"] == {"relsim_simulations": "simulations"}
    want = _packages(ROOT / "relsim", "relsim") | _packages(ROOT / "simulations",
                                                            "relsim_simulations")
    listed = set(tool["packages"])
    assert not want - listed, f"add to pyproject.toml's packages: {sorted(want - listed)}"
    assert not listed - want, f"no such package: {sorted(listed - want)}"


def test_the_cli_finds_the_bundled_simulations_as_relsim_simulations():
    from relsim import cli
    sims = cli.simulations()
    assert {name: sims[name] for name in ("heat", "lulesh", "airfoil")} == {
        name: f"relsim_simulations.{name}" for name in ("heat", "lulesh", "airfoil")}
