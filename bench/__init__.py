"""Benchmarks and tools run from the repository (not installed with relsim): the scripts run as
``python bench/NAME.py``; the scaling model as ``python -m bench.scaling``."""
