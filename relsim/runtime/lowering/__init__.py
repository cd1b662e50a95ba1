"""Lowering of typed kernels to the Python `ast` of Numba functions."""
from .kernel_ast import KernelLowerer

__all__ = ["KernelLowerer"]
