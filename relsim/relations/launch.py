"""The one door from relations to the runtime: `relsim/__init__` installs the launcher.

Relations never import the runtime (data flows one way); the runtime registers itself here.
"""
from __future__ import annotations

_launcher = None

# Bumped whenever any relation's storage (a field's array, key values, size) or schema changes.
# Compiled launches compare it first and re-check their relations' versions only when it moved.
storage_epoch = 0

# Fields holding reductions a compiled launch left pending (`Field.defer`): a launch checks
# this set first, and settles the fields it touches only when it is non-empty.
pending_fields: set = set()


def install(launcher) -> None:
    global _launcher
    _launcher = launcher


def run(kernel, relation, subset, config) -> None:
    if _launcher is None:  # pragma: no cover - relsim/__init__ always installs one
        raise RuntimeError("no relsim runtime installed; import relsim")
    _launcher(kernel, relation, subset, config)
