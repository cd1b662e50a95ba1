"""Device allocations of the cuda target: scratch arrays (`empty`) and what an allocation the
device has no room for says (`no_room`, for a `DeviceMemoryError`). Nothing here copies between
host and device (`memory` does, and counts it)."""
from __future__ import annotations

import numpy as np

from ....errors import DeviceMemoryError
from . import device


def empty(shape, dtype, what: str):
    """An uninitialised device array (device scratch space: nothing is copied); a
    `DeviceMemoryError` naming `what` when the device has no room."""
    try:
        return device.cuda().device_array(shape, dtype=dtype)
    except Exception as exc:
        if not out_of_memory(exc):
            raise
        raise DeviceMemoryError(no_room(what, int(np.prod(shape)) * np.dtype(dtype).itemsize,
                                         exc)) from exc


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is the device running out of memory: the driver's CUDA_ERROR_OUT_OF_MEMORY
    (code 2, a numba CudaAPIError), or a MemoryError from an external memory manager."""
    if isinstance(exc, MemoryError):
        return True
    try:
        if int(getattr(exc, "code", -1)) == 2:
            return True
    except (TypeError, ValueError):
        pass
    return "OUT_OF_MEMORY" in str(exc)


def no_room(what: str, nbytes: int, exc: BaseException) -> str:
    msg = f"{what} ({nbytes:,} bytes) does not fit in the GPU's memory ({exc})"
    try:
        free, total = device.cuda().current_context().get_memory_info()
        msg += f"; the device has {int(free):,} bytes free of {int(total):,}"
    except Exception:  # noqa: BLE001 (only a detail of the message)
        pass
    return msg + ". Run a smaller problem, free device arrays, or use target 'cpu'"


