"""The repository's simulations/ folder under the name it is installed as (pyproject.toml's
package-dir), for a checkout used without installing it (the repository root on sys.path, as
bench/gpu_check.sh does): `relsim run NAME` and ``import relsim_simulations.heat`` find the same
modules either way. Installed, relsim_simulations is simulations/ itself; this folder is not."""
from pathlib import Path as _Path

__path__ = [str(_Path(__file__).resolve().parent.parent / "simulations")]
_init = _Path(__path__[0]) / "__init__.py"
exec(compile(_init.read_text(), str(_init), "exec"))  # the same package: its docstring and code
