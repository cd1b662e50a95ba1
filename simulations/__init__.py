"""Simulations written with relsim; each module has `main(argv) -> int` and a docstring whose
first line `relsim list` shows. Run one with `relsim run NAME [args]`."""
