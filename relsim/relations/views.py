"""`numpy()` views of the fields of elastic relations: they know when they went stale.

A NumPy array cannot change its shape under its holder, so a view handed out before rows were
inserted or deleted keeps the old rows while the field moved to a new array. Such a view is an
`ElasticView`: using it (indexing, assigning, NumPy functions and ufuncs, ``len``, printing,
``copy``, ``tolist``) after its field's storage was replaced raises a DataError that says to call
``numpy()`` again, instead of silently reading or writing rows that are no longer the field's.
Anything computed from a view (a slice, a ufunc result) is a plain ndarray.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError


class ElasticView(np.ndarray):
    """The storage of `field` (an elastic relation's) as handed out by ``field.numpy()``."""

    _field = None
    _storage = None

    @classmethod
    def of(cls, field, storage: np.ndarray) -> ElasticView:
        view = storage.view(cls)
        view._field, view._storage = field, storage
        return view

    def _check(self) -> None:
        f = self._field
        if f is not None and f._stored() is not self._storage:
            raise DataError(
                f"stale view of field {f.qualname}: rows of {f.relation.name} were inserted or "
                f"deleted (or the field's storage was swapped or reloaded) since numpy() "
                f"returned it; the view holds {len(self._storage)} rows, the field "
                f"{f.relation.size}; call numpy() again after changing rows")

    def _plain(self) -> np.ndarray:
        self._check()
        return self.view(np.ndarray)

    # every way of using the view checks it first, then works on the plain array
    def __getitem__(self, index):
        return self._plain()[index]

    def __setitem__(self, index, value) -> None:
        self._plain()[index] = value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(x._plain() if isinstance(x, ElasticView) else x for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(x._plain() if isinstance(x, ElasticView) else x for x in out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None and len(out) == 1 and isinstance(out[0], ElasticView):
            return out[0]  # `view += 1` keeps the name bound to the (checking) view
        return result

    def __array_function__(self, func, types, args, kwargs):
        self._check()
        return func(*_plain_all(args), **_plain_all(kwargs))

    def __len__(self) -> int:
        return len(self._plain())

    def __iter__(self):
        return iter(self._plain())

    def __repr__(self) -> str:
        return repr(self._plain())

    def __str__(self) -> str:
        return str(self._plain())

    def copy(self, *args, **kwargs) -> np.ndarray:
        return self._plain().copy(*args, **kwargs)

    def tolist(self):
        return self._plain().tolist()

    def __reduce__(self):  # pickling a view pickles the current values, as a plain array
        return self._plain().__reduce__()


def _plain_all(obj):
    if isinstance(obj, ElasticView):
        return obj._plain()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain_all(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _plain_all(v) for k, v in obj.items()}
    return obj
