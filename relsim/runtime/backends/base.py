"""The backend interface: every target compiles an analysed kernel into something it can launch.

`compile(analysed, options)` returns an executable with `launch(relation, subset)`; `allocate`,
`to_device` and `sync` move data for targets with their own memory (host backends keep NumPy
arrays in place).
"""
from __future__ import annotations


class Backend:
    name = "?"

    def compile(self, analysed, options):
        raise NotImplementedError

    def allocate(self, shape, dtype):
        import numpy as np
        return np.zeros(shape, dtype)

    def to_device(self, array):
        return array

    def sync(self) -> None:
        pass
