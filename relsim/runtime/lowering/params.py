"""The arrays a generated function receives, as typed records: one class per kind of array, each
carrying the object that binds it at launch. `Params` hands them out while a kernel is lowered
(one record per (kind, object), numbered in the order first asked for) and lists them, in
parameter order, in `items`. A backend binds each by its type (`match` / isinstance)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, eq=False)
class Param:
    name: str  # the parameter name in the generated functions


@dataclass(frozen=True, eq=False)
class FieldStorage(Param):
    """A field's storage, indexed [row, components...]."""
    field: object


@dataclass(frozen=True, eq=False)
class GlobalStorage(Param):
    """A Global's storage, shape (1, components...)."""
    glob: object


@dataclass(frozen=True, eq=False)
class GroupOffsets(Param):
    """A grouping's offsets: the source rows of target row t are rows[off[t]:off[t + 1]]."""
    grouping: object


@dataclass(frozen=True, eq=False)
class GroupRows(Param):
    """A grouping's source rows, grouped by target row (see GroupOffsets)."""
    grouping: object


@dataclass(frozen=True, eq=False)
class ReductionSlots(Param):
    """The slot values of reduction layout `index` (`Analysed.layouts`): (slots, components)."""
    index: int
    layout: object


@dataclass(frozen=True, eq=False)
class SlotPlaces(Param):
    """Where each slot of key-reduction layout `index` is stored (the kernel writes a field's
    slots pre-permuted into fold order; the backend fills it from the inverse index)."""
    index: int
    layout: object


@dataclass(frozen=True, eq=False)
class DeleteFlags(Param):
    """One flag per row of `relation` (the kernel's own): set by `rs.delete`."""
    relation: object


@dataclass(frozen=True, eq=False)
class InsertFlags(Param):
    """One flag per slot of insert layout `index` (`Analysed.inserts`): set by `rs.insert`."""
    index: int
    layout: object


@dataclass(frozen=True, eq=False)
class InsertValues(Param):
    """The values of `field` inserted through insert layout `index`: (slots, components)."""
    index: int
    layout: object
    field: object


@dataclass(frozen=True, eq=False)
class RelationSize(Param):
    """`relation`'s row count, shape (1,) (debug mode: the range a key read must lie in)."""
    relation: object


@dataclass(frozen=True, eq=False)
class GridShape(Param):
    """`relation`'s grid shape, then its strides: int64, shape (2 * ndim,). Bound per launch,
    so one compile serves every size of a grid with that many axes and those periodic ones."""
    relation: object


@dataclass(frozen=True, eq=False)
class DebugFirst(Param):
    """Debug mode: per position of the iteration space, the number of the first check that
    failed in that row (`debug_checks.Sites`; 0: none), int32."""


@dataclass(frozen=True, eq=False)
class DebugValues(Param):
    """Debug mode: per position, the value the first failed check recorded, then the operands
    it recorded (float64, 1 + debug_checks.OPERANDS columns)."""


@dataclass(frozen=True, eq=False)
class PrintFlags(Param):
    """Print site `site` (`host/prints.py`): per position, 1 when the row printed there."""
    site: int


@dataclass(frozen=True, eq=False)
class PrintValues(Param):
    """Print site `site`: per position, the values it printed: kind "f" its float components
    (float64), "i" its integer, bool and key components (int64), in item order."""
    site: int
    kind: str


class Params:
    """The parameters of a kernel's generated functions, in order (`items`)."""

    def __init__(self):
        self.items: list[Param] = []
        self._index: dict = {}

    def _get(self, cls, tag: str, obj, **binds) -> Param:
        key = (tag, id(obj))
        p = self._index.get(key)
        if p is None:
            # (named by kind and position only: kernels alike but for their fields' names
            # lower to one module, compiled once per machine; `legend` names what binds each)
            p = cls(f"_{tag}{len(self.items)}", **binds)
            self._index[key] = p
            self.items.append(p)
        return p

    def field(self, field) -> FieldStorage:
        return self._get(FieldStorage, "field", field, field=field)

    def glob(self, glob) -> GlobalStorage:
        return self._get(GlobalStorage, "global", glob, glob=glob)

    def group_offsets(self, grouping) -> GroupOffsets:
        return self._get(GroupOffsets, "goff", grouping, grouping=grouping)

    def group_rows(self, grouping) -> GroupRows:
        return self._get(GroupRows, "grows", grouping, grouping=grouping)

    def slots(self, k: int, layout) -> ReductionSlots:
        return self._get(ReductionSlots, "slots", layout, index=k, layout=layout)

    def slot_places(self, k: int, layout) -> SlotPlaces:
        return self._get(SlotPlaces, "spos", layout, index=k, layout=layout)

    def delete_flags(self, relation) -> DeleteFlags:
        return self._get(DeleteFlags, "delete", relation, relation=relation)

    def insert_flags(self, k: int, layout) -> InsertFlags:
        return self._get(InsertFlags, f"ins{k}flag", layout, index=k, layout=layout)

    def insert_values(self, k: int, layout, field) -> InsertValues:
        return self._get(InsertValues, f"ins{k}val", field, index=k, layout=layout,
                         field=field)

    def relation_size(self, relation) -> RelationSize:
        return self._get(RelationSize, "size", relation, relation=relation)

    def grid_shape(self, relation) -> GridShape:
        return self._get(GridShape, "grid", relation, relation=relation)

    def print_flags(self, site: int) -> PrintFlags:
        return self._get(PrintFlags, f"pflag{site}_", None, site=site)

    def print_values(self, site: int, kind: str) -> PrintValues:
        return self._get(PrintValues, f"pval{site}{kind}_", None, site=site, kind=kind)

    def debug_first(self) -> DebugFirst:
        return self._get(DebugFirst, "dbgsite", None)

    def debug_values(self) -> DebugValues:
        return self._get(DebugValues, "dbgvalue", None)


def legend(items) -> list[str]:
    """One line per parameter of `items`: its name and what binds it (the field, Global,
    grouping or relation; a reduction's or insertion's target), for readers of the generated
    code, whose names say only the kind."""
    def named(v):
        return getattr(v, "qualname", None) or f"{type(v).__name__} {v.name}"

    lines = []
    for p in items:
        bound = [v.target if k == "layout" else v for k, v in vars(p).items() if k != "name"]
        what = ", ".join(named(v) for v in bound if hasattr(v, "name"))
        lines.append(f"  {p.name}: {type(p).__name__}" + (f" of {what}" if what else ""))
    return lines
