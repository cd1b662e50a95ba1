"""The runtime: analyses kernels, lowers them, and runs them on a backend."""
from .backends.cpu import CpuBackend
from .backends.interp import InterpBackend
from .execute import backends, register_backend, run

register_backend(InterpBackend())
register_backend(CpuBackend())

__all__ = ["backends", "register_backend", "run"]
