"""Relations, fields, key fields, subsets, groupings and globals: relsim's data model."""
from .field import Field
from .globals import Global
from .grouping import Grouping
from .key_field import KeyField
from .relation import Relation, new_relation
from .subset import Subset

__all__ = ["Field", "KeyField", "Global", "Grouping", "Relation", "new_relation", "Subset"]
