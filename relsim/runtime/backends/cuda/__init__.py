"""The cuda backend's room (target ``cuda``, numba-cuda): `backend` (compile, bind, launch),
`rows` and `libm` (its lowering driver and math), `folds` (Global folds on the device),
`memory` (device copies and transfers), `device` (finding numba.cuda). Importing this package
does not import numba.cuda."""
