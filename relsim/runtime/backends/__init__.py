"""Backends: `base.py` declares the interface (read it first); one room per backend, none
importing another: `interp.py` (the oracle), `cpu/` (Numba on the host), `cuda/` (numba-cuda)."""
