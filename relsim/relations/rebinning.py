"""Keys that follow a value field (`KeyField.follow`: moving particles' cells) computed again by
compiled code: what a captured step's compiled call runs after the launch that wrote the field
(the rule's compiled form into the keys' own array, then each grouping over the keys into its
own arrays), and the bookkeeping once that call has run."""
from __future__ import annotations

import numpy as np


def groupings_over(kf) -> list:
    """The groupings whose key field is `kf`."""
    return [g for g in kf.target._groupings.values() if g.key_field is kf]


def compiled_calls(kf):
    """(calls, flag): the compiled calls ((function, arguments)) computing `kf`'s keys and the
    groupings over them again in their arrays, the first the `follow` rule's, which sets
    ``flag[0]`` (a one-int64 array) for a row it leaves to the host; None when `kf` has no
    compiled rule, holds key vectors, or a grouping over it has no arrays of its own."""
    rule = kf.compiled_rule
    if rule is None or kf.follows is None or kf.arity is not None:
        return None
    kf.settle()  # (its keys and groupings current, in the arrays the calls will write)
    kf._own_keys()
    fn, params = rule
    flag = np.zeros(1, dtype=np.int64)
    calls = [(fn, (kf.follows._data, kf._owned, flag, *params))]
    for g in groupings_over(kf):
        call = g.in_place_call()
        if call is None:
            return None
        calls.append(call)
    return calls, flag


def rewritten(kf) -> None:
    """After compiled calls wrote every key of `kf` and its groupings in their arrays: the key
    field's version moves (launches that computed something from the keys bind again), and
    the groupings are current."""
    kf._unset = None
    kf.version += 1
    kf._host_written()
    kf.relation._keys_rewritten()
    for g in groupings_over(kf):
        g._mark_current()


def abandoned(kf) -> None:
    """A compiled call that may have written some of `kf`'s keys failed: every key is computed
    again (by the host's rule) at the next read."""
    kf._unset = None
    kf.version += 1
    kf._recompute_all()
