"""Host services shared by every backend: `jit` (loading compiled functions from Numba's disk
cache), `compile_jobs` (compilations run ahead in worker processes), `debug_checks` (check
sites and reporting a launch's failures), `binding` (what every backend's binding shares),
`row_changes` (rows inserted and deleted by a launch)."""
