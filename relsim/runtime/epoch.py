"""A process-wide count of storage changes (a field's array replaced, key values loaded, a
relation resized, its schema changed). The data model reports each change through
`relations/launch.storage_changed`; a compiled launch compares this count with the one it was
bound at, and re-checks its relations' own versions only when it moved."""
from __future__ import annotations

value = 0


def bump() -> None:
    global value
    value += 1
