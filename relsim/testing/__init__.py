"""Testing tools that ship with relsim: a seeded random-kernel generator (`random_kernels`) and
the differential soak (`python -m relsim.testing.soak`), which runs random kernels on random data
on every target and compares each with `interp` bit for bit."""
