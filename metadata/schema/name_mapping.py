"""Name mapping: field ids for data files written without them (Iceberg spec, "Column
Projection").

A table whose data files were imported rather than written by an Iceberg writer (Iceberg's
``add_files``, ``snapshot`` and ``migrate`` procedures; pyiceberg's ``add_files``) has Parquet
files without field ids. Its ``schema.name-mapping.default`` property maps column names, at
every level of nesting, to field ids::

    [{"field-id": 1, "names": ["id", "record_id"]},
     {"field-id": 2, "names": ["data"], "fields": [{"field-id": 3, "names": ["x"]}]}]

A reader gives each column of such a file the id that its name maps to, then resolves it by
id like any other (so a column renamed since the files were written, whose old name the
mapping keeps, is still found; a column whose name the mapping does not hold is not read).
A list's element maps by the name ``element``, a map's key and value by ``key`` and
``value``. The mapping applies only to files without any field ids.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.schema.arrow import FIELD_ID_KEY, field_id_of
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

__all__ = [
    "NAME_MAPPING_PROPERTY",
    "MappedField",
    "NameMapping",
    "has_field_ids",
    "name_mapping_of",
]

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


@dataclass(frozen=True, slots=True)
class MappedField:
    """Names that map to ``field_id`` (None: names the mapping knows but gives no id), and
    the mapping of the field's children."""

    names: tuple[str, ...]
    field_id: int | None = None
    fields: tuple[MappedField, ...] = ()

    def child(self, name: str) -> MappedField | None:
        return _find(self.fields, name)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"names": list(self.names)}
        if self.field_id is not None:
            out["field-id"] = self.field_id
        if self.fields:
            out["fields"] = [f.to_json() for f in self.fields]
        return out

    @staticmethod
    def from_json(obj: Any) -> MappedField:
        if not isinstance(obj, Mapping) or not isinstance(obj.get("names", []), list):
            raise ValidationError(f"a name mapping field must be an object with names: {obj!r}")
        field_id = obj.get("field-id")
        if field_id is not None and not isinstance(field_id, int):
            raise ValidationError(f"a name mapping field id must be an integer: {obj!r}")
        return MappedField(
            tuple(str(n) for n in obj.get("names", [])),
            field_id,
            tuple(MappedField.from_json(f) for f in obj.get("fields") or ()),
        )


@dataclass(frozen=True, slots=True)
class NameMapping:
    """A table's name mapping: the mapped top-level fields."""

    fields: tuple[MappedField, ...]

    def field(self, name: str) -> MappedField | None:
        return _find(self.fields, name)

    def to_json(self) -> str:
        return json.dumps([f.to_json() for f in self.fields], separators=(",", ":"))

    @staticmethod
    def parse(text: str) -> NameMapping:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{NAME_MAPPING_PROPERTY} is not JSON: {exc}") from exc
        if not isinstance(obj, list):
            raise ValidationError(f"{NAME_MAPPING_PROPERTY} must be a JSON list of fields")
        return NameMapping(tuple(MappedField.from_json(f) for f in obj))

    @staticmethod
    def of_schema(schema: Schema) -> NameMapping:
        """Each field of ``schema`` mapped by its current name (what a table gets when files
        without ids are first added to it)."""
        return NameMapping(tuple(_mapped(f) for f in schema.fields))

    def updated(
        self,
        updates: Mapping[int, NestedField],
        adds: Mapping[int, Sequence[NestedField]],
    ) -> NameMapping:
        """The mapping after a schema change, as Iceberg Java's ``MappingUtil.update`` makes
        it (a schema change commits it with the new schema): a field in ``updates`` (changed
        fields by id) gains its new name and keeps its old ones; the fields in ``adds`` (new
        fields by the id of the field they were added to: a struct, a list's element, a
        map's value, or -1 for the top level) are mapped by their names, where the mapping
        holds their parent; a name the change gives to one field is taken from the other
        fields of its struct. Deleted fields stay mapped (their ids are read by no schema).
        """
        return NameMapping(_updated_level(self.fields, -1, updates, adds))

    def with_ids(self, file_schema: pa.Schema) -> pa.Schema:
        """``file_schema`` (a file's, without field ids) with the ids its names map to, at
        every level; a field the mapping does not name keeps no id (it is not read)."""
        return pa.schema(
            [_with_id(f, self.field(f.name)) for f in file_schema], metadata=file_schema.metadata
        )


def name_mapping_of(properties: Mapping[str, str]) -> NameMapping | None:
    """The table's name mapping (``schema.name-mapping.default``), if it has one (parsed once
    per distinct text: every scan, delete reader and conflict check asks for it)."""
    text = properties.get(NAME_MAPPING_PROPERTY)
    return None if text is None else _parsed(text)


@functools.lru_cache(maxsize=32)
def _parsed(text: str) -> NameMapping:
    return NameMapping.parse(text)  # immutable: one object serves every caller


def has_field_ids(file_schema: pa.Schema) -> bool:
    return any(field_id_of(f) is not None for f in file_schema)


def _updated_level(
    fields: Sequence[MappedField],
    parent_id: int | None,
    updates: Mapping[int, NestedField],
    adds: Mapping[int, Sequence[NestedField]],
) -> tuple[MappedField, ...]:
    """One struct level of :meth:`NameMapping.updated` (``parent_id``: the id of the field
    that holds it; None, a field the mapping gives no id, takes no added fields): its fields
    renamed and their children updated, names given to other fields taken away, then the
    fields added here appended."""
    level: list[MappedField] = []
    for f in fields:
        names = f.names
        update = updates.get(f.field_id) if f.field_id is not None else None
        if update is not None and update.name not in names:
            names = (*names, update.name)
        level.append(
            MappedField(names, f.field_id, _updated_level(f.fields, f.field_id, updates, adds))
        )
    assigned: dict[str, int | None] = {
        updates[f.field_id].name: f.field_id
        for f in level
        if f.field_id is not None and f.field_id in updates
    }
    level = [_without_names_of_others(f, assigned) for f in level]
    added = [_mapped(f) for f in adds.get(parent_id, ())] if parent_id is not None else []
    if not added:
        return tuple(level)
    assigned = {f.names[0]: f.field_id for f in added}
    added_by_id = {f.field_id: f for f in added}
    merged: set[int | None] = set()
    out: list[MappedField] = []
    for f in level:
        f = _without_names_of_others(f, assigned)
        addition = added_by_id.get(f.field_id)
        if addition is not None:  # an id mapped already (a stale mapping): one field, all names
            merged.add(f.field_id)
            f = _merged(f, addition)
        out.append(f)
    out.extend(f for f in added if f.field_id not in merged)
    return tuple(out)


def _without_names_of_others(f: MappedField, assigned: Mapping[str, int | None]) -> MappedField:
    kept = tuple(n for n in f.names if assigned.get(n, f.field_id) == f.field_id)
    return f if len(kept) == len(f.names) else MappedField(kept, f.field_id, f.fields)


def _merged(stale: MappedField, added: MappedField) -> MappedField:
    names = stale.names + tuple(n for n in added.names if n not in stale.names)
    by_id = {c.field_id: c for c in added.fields}
    children = [_merged(c, by_id[c.field_id]) if c.field_id in by_id else c for c in stale.fields]
    known = {c.field_id for c in stale.fields}
    children.extend(c for c in added.fields if c.field_id not in known)
    return MappedField(names, added.field_id, tuple(children))


def _find(fields: Sequence[MappedField], name: str) -> MappedField | None:
    for f in fields:
        if name in f.names:
            return f
    return None


def _mapped(f: NestedField) -> MappedField:
    return MappedField((f.name,), f.field_id, _children(f.field_type))


def _children(t: IcebergType) -> tuple[MappedField, ...]:
    if isinstance(t, StructType):
        return tuple(_mapped(c) for c in t.fields)
    if isinstance(t, ListType):
        return (MappedField(("element",), t.element_id, _children(t.element_type)),)
    if isinstance(t, MapType):
        return (
            MappedField(("key",), t.key_id, _children(t.key_type)),
            MappedField(("value",), t.value_id, _children(t.value_type)),
        )
    return ()


def _with_id(f: pa.Field, mapped: MappedField | None) -> pa.Field:
    t = f.type
    children = mapped.fields if mapped is not None else ()
    if pa.types.is_struct(t):
        t = pa.struct(
            [_with_id(t.field(i), _find(children, t.field(i).name)) for i in range(t.num_fields)]
        )
    elif pa.types.is_large_list(t) or pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        element = _with_id(t.value_field, _find(children, "element"))
        if pa.types.is_large_list(t):
            t = pa.large_list(element)
        elif pa.types.is_fixed_size_list(t):
            t = pa.list_(element, t.list_size)
        else:
            t = pa.list_(element)
    elif pa.types.is_map(t):
        key = _with_id(t.key_field, _find(children, "key"))
        item = _with_id(t.item_field, _find(children, "value"))
        t = pa.map_(key, item, keys_sorted=t.keys_sorted)
    metadata = {k: v for k, v in (f.metadata or {}).items() if k != FIELD_ID_KEY}
    if mapped is not None and mapped.field_id is not None:
        metadata[FIELD_ID_KEY] = str(mapped.field_id).encode()
    return pa.field(f.name, t, f.nullable, metadata=metadata or None)
