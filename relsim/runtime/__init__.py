"""The runtime: analyses kernels, lowers them, and runs them on a backend. Importing it
registers relsim's own targets (`relsim.target_registry`)."""
from ..target_registry import register_backend
from . import epoch
from .backends.cpu import CpuBackend
from .backends.interp import InterpBackend
from .execute import run

register_backend("interp", InterpBackend())
register_backend("cpu", CpuBackend())
register_backend("cpu-serial", CpuBackend(serial=True))

__all__ = ["run", "epoch"]
