"""Value types of the kernel language: scalars, small vectors and matrices, keys.

Types are small immutable values; they compare by structure (key types by the
identity of the relation they point into).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ScalarType:
    name: str
    np_dtype: str
    rank: int  # promotion order: bool < i32 < i64 < f32 < f64

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.np_dtype)

    @property
    def shape(self) -> tuple:
        return ()

    @property
    def is_float(self) -> bool:
        return self.np_dtype.startswith("float")

    @property
    def is_int(self) -> bool:
        return self.np_dtype.startswith("int")

    @property
    def is_bool(self) -> bool:
        return self.np_dtype == "bool"

    @property
    def elem(self) -> ScalarType:
        return self

    @property
    def ncomp(self) -> int:
        return 1

    def __call__(self, *args):  # used only inside kernels (a cast); outside, build a NumPy scalar
        if len(args) != 1:
            raise TypeError(f"{self.name}(x) takes one argument")
        return self.dtype.type(args[0])

    def __repr__(self) -> str:
        return self.name


bool_ = ScalarType("bool", "bool", 0)
"""Booleans (NumPy bool; stored one byte per row). Comparisons in kernels give bool_."""
i32 = ScalarType("i32", "int32", 1)
"""32-bit signed integers. In a kernel ``rs.i32(x)`` casts (truncating toward zero)."""
i64 = ScalarType("i64", "int64", 2)
"""64-bit signed integers: the type of integer literals and of row counts in kernels."""
f32 = ScalarType("f32", "float32", 3)
"""32-bit IEEE floats. Mixed with f64 in a kernel, arithmetic promotes to f64."""
f64 = ScalarType("f64", "float64", 4)
"""64-bit IEEE floats: the type of float literals in kernels."""
SCALARS = (bool_, i32, i64, f32, f64)


@dataclass(frozen=True)
class VecType:
    n: int
    elem: ScalarType
    # False for `rs.vec(n)` (no element type): a field or Global of it holds f64, and in a
    # kernel `rs.vec(n)(x, y, z)` takes its components' type, as a tuple does
    elem_given: bool = field(default=True, compare=False, repr=False)

    @property
    def shape(self) -> tuple:
        return (self.n,)

    @property
    def dtype(self) -> np.dtype:
        return self.elem.dtype

    @property
    def ncomp(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"vec{self.n}[{self.elem.name}]"


@dataclass(frozen=True)
class MatType:
    n: int
    m: int
    elem: ScalarType
    elem_given: bool = field(default=True, compare=False, repr=False)  # as VecType's

    @property
    def shape(self) -> tuple:
        return (self.n, self.m)

    @property
    def dtype(self) -> np.dtype:
        return self.elem.dtype

    @property
    def ncomp(self) -> int:
        return self.n * self.m

    def __repr__(self) -> str:
        return f"mat{self.n}x{self.m}[{self.elem.name}]"


@dataclass(frozen=True)
class TupleType:
    """Several values a builtin returns at once (`U, S, V = rs.svd(F)`): in a kernel only
    unpacked or indexed by a constant (`rs.svd(F)[1]`); its components are its parts', in
    order."""
    parts: tuple

    @property
    def ncomp(self) -> int:
        return sum(p.ncomp for p in self.parts)

    def span(self, k: int) -> range:
        """The flat components of part k."""
        start = sum(p.ncomp for p in self.parts[:k])
        return range(start, start + self.parts[k].ncomp)

    def __repr__(self) -> str:
        return f"tuple({', '.join(map(repr, self.parts))})"


class _KeyTarget:
    """Mixin: key types compare by the identity of the target relation."""

    def __eq__(self, other):
        return type(self) is type(other) and self.relation is other.relation and \
            getattr(self, "n", None) == getattr(other, "n", None)

    def __hash__(self):
        return hash((type(self).__name__, id(self.relation), getattr(self, "n", None)))


class KeyType(_KeyTarget):
    """A row of `relation` (stored as an int64 row index)."""

    __slots__ = ("relation",)

    def __init__(self, relation):
        self.relation = relation

    elem = i64
    ncomp = 1
    shape = ()

    def __repr__(self) -> str:
        return f"key[{self.relation.name}]"


class KeyVecType(_KeyTarget):
    """A fixed-length vector of rows of `relation` (a tet's 4 vertices)."""

    __slots__ = ("relation", "n")

    def __init__(self, relation, n: int):
        self.relation = relation
        self.n = n

    elem = i64

    @property
    def ncomp(self) -> int:
        return self.n

    @property
    def shape(self) -> tuple:
        return (self.n,)

    def __repr__(self) -> str:
        return f"key[{self.relation.name}]x{self.n}"


class GroupType(_KeyTarget):
    """The CSR group of rows of `relation` that point at one row (`v.edges`)."""

    __slots__ = ("relation", "grouping")

    def __init__(self, relation, grouping):
        self.relation = relation
        self.grouping = grouping

    def __repr__(self) -> str:
        return f"group[{self.relation.name}]"


def vec(n: int, dtype: ScalarType | None = None) -> VecType:
    """A fixed-length vector type, e.g. ``rs.vec(3, rs.f64)``; without `dtype`, f64.

    Called in a kernel it builds a value: ``rs.vec(3, rs.f32)(x, y, z)`` (components converted
    to f32) or ``rs.vec(3)(x, y, z)`` (typed like the tuple ``(x, y, z)``); one argument
    gives every component (``rs.vec(3)(0.0)``) or converts a vector of that length."""
    if not _dim(n):
        raise ValueError(f"vec length must be a positive int, got {n!r}")
    return VecType(int(n), f64 if dtype is None else as_scalar(dtype), dtype is not None)


def mat(n: int, m: int, dtype: ScalarType | None = None) -> MatType:
    """A small matrix type, e.g. ``rs.mat(3, 3, rs.f64)``; without `dtype`, f64.

    Called in a kernel it builds a value from its n rows, each a tuple or vector of m
    components: ``rs.mat(2, 2)((a, b), (c, d))`` (typed like the nested tuple without `dtype`,
    converted to `dtype` with it); one matrix argument of that shape is converted."""
    if not (_dim(n) and _dim(m)):
        raise ValueError(f"mat dimensions must be positive ints, got {n!r}x{m!r}")
    return MatType(int(n), int(m), f64 if dtype is None else as_scalar(dtype), dtype is not None)


def _dim(n) -> bool:
    return isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) and n >= 1


def as_scalar(t) -> ScalarType:
    if isinstance(t, ScalarType):
        return t
    try:
        dt = np.dtype(t)
    except TypeError:
        raise TypeError(f"not a relsim scalar type: {t!r}") from None
    for s in SCALARS:
        if s.dtype == dt:
            return s
    raise TypeError(f"unsupported dtype {dt}; use one of bool, i32, i64, f32, f64")


def as_value_type(t):
    """Accept rs.f64, rs.vec(3), numpy dtypes, Python float/int/bool."""
    if isinstance(t, (ScalarType, VecType, MatType)):
        return t
    if t is float:
        return f64
    if t is int:
        return i64
    if t is bool:
        return bool_
    return as_scalar(t)


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """Result scalar type of a binary arithmetic operation (the wider of the two)."""
    return a if a.rank >= b.rank else b


def is_value(t) -> bool:
    """Whether `t` is a value type (scalar, vector or matrix; not a key or grouping)."""
    return isinstance(t, (ScalarType, VecType, MatType))


def elem_of(t) -> ScalarType:
    """The scalar type of a value type's components."""
    return t.elem if isinstance(t, (VecType, MatType)) else t


def with_elem(t, e: ScalarType):
    """`t` (scalar, vector or matrix) with components of type `e`."""
    if isinstance(t, VecType):
        return VecType(t.n, e)
    if isinstance(t, MatType):
        return MatType(t.n, t.m, e)
    return e


def scalar_of(value) -> ScalarType:
    """Type of a Python/NumPy constant captured by a kernel."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, np.generic):
        return as_scalar(value.dtype)
    if isinstance(value, int):
        return i64
    if isinstance(value, float):
        return f64
    raise TypeError(f"not a scalar constant: {value!r}")
