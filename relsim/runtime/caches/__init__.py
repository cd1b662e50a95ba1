"""The caches of the warm start, each keyed so that a stale entry is never used: `modules`
(generated modules on disk), `analysed` (the analysis after the frontend), `lowered` (generated
source and parameters), and `fingerprint` (the keys' walk over IR and schemas)."""
