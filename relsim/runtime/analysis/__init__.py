"""The analysis passes, in the order `pipeline.analyse` runs them: `frontend` (with `source`,
`static`, `captures`) -> `typecheck` (with `operators`, `calls`) -> `access` -> `phase` ->
`slots` (with `slot_sharing`), `affine`; `fusion` checks what fusing kernels may not change."""
