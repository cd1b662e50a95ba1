"""The cpu backend's room (targets ``cpu`` and ``cpu-serial``): `backend` (compile, launch),
`binder` (a launch's arrays, scheme and variant), `loops` and `grid_loops` (its lowering
driver), `scatter` and `ownership` (how key reductions are applied: direct, split or parked),
`pending` (folds left pending), `threading_layer`, `libm`."""
