"""The runtime: analyses kernels, lowers them, and runs them on a backend. Importing it
registers relsim's own targets (`relsim.target_registry`)."""
from ..target_registry import mark_unavailable, register_backend
from . import epoch
from .backends.cpu.backend import CpuBackend
from .backends.cuda import backend as cuda
from .backends.interp import InterpBackend
from .execute import run, synchronize

register_backend("interp", InterpBackend())
register_backend("cpu", CpuBackend())
register_backend("cpu-serial", CpuBackend(serial=True))
if cuda.unavailable_reason() is None:  # numba-cuda imports: pip install "relsim[cuda]"
    register_backend("cuda", cuda.CudaBackend())
else:
    mark_unavailable("cuda", cuda.unavailable_reason())

__all__ = ["run", "synchronize", "epoch"]
