"""Schemas: a struct of fields with ids, plus identifier fields."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from lakecat.metadata.errors import UnknownColumn
from lakecat.metadata.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    field_from_json,
)


@dataclass(frozen=True)
class Schema:
    """A table schema. Frozen; lookups are indexed once per instance."""

    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = ()

    # ---- construction -------------------------------------------------------------------
    @staticmethod
    def of(
        *fields: NestedField, schema_id: int = 0, identifier_field_ids: tuple[int, ...] = ()
    ) -> Schema:
        return Schema(tuple(fields), schema_id, identifier_field_ids)

    @property
    def as_struct(self) -> StructType:
        return StructType(self.fields)

    # ---- indexes ------------------------------------------------------------------------
    @cached_property
    def _by_id(self) -> dict[int, NestedField]:
        out: dict[int, NestedField] = {}
        for _, f in _walk(self.fields, ""):
            out[f.field_id] = f
        return out

    @cached_property
    def _by_name(self) -> dict[str, NestedField]:
        return {name: f for name, f in _walk(self.fields, "")}

    @cached_property
    def _by_lower_name(self) -> dict[str, NestedField]:
        return {name.lower(): f for name, f in _walk(self.fields, "")}

    @cached_property
    def _name_by_id(self) -> dict[int, str]:
        return {f.field_id: name for name, f in _walk(self.fields, "")}

    @cached_property
    def _parent_by_id(self) -> dict[int, int]:
        parents: dict[int, int] = {}

        def visit(t: IcebergType, parent: int) -> None:
            for child in _children(t):
                parents[child.field_id] = parent
                visit(child.field_type, child.field_id)

        for f in self.fields:
            visit(f.field_type, f.field_id)
        return parents

    @property
    def highest_field_id(self) -> int:
        return max(self._by_id, default=0)

    def field_ids(self) -> set[int]:
        return set(self._by_id)

    # ---- lookups ------------------------------------------------------------------------
    def find_field(self, name_or_id: str | int, *, case_sensitive: bool = True) -> NestedField:
        """The field with this id or (dotted) name; raises :class:`UnknownColumn`."""
        if isinstance(name_or_id, int):
            found = self._by_id.get(name_or_id)
        elif case_sensitive:
            found = self._by_name.get(name_or_id)
        else:
            found = self._by_lower_name.get(name_or_id.lower())
        if found is None:
            known = ", ".join(f.name for f in self.fields)
            raise UnknownColumn(f"no column {name_or_id!r} in schema (columns: {known})")
        return found

    def find_type(self, name_or_id: str | int) -> IcebergType:
        return self.find_field(name_or_id).field_type

    def has_field(self, name_or_id: str | int) -> bool:
        if isinstance(name_or_id, int):
            return name_or_id in self._by_id
        return name_or_id in self._by_name

    def column_name(self, field_id: int) -> str:
        """The full dotted name of a field id."""
        try:
            return self._name_by_id[field_id]
        except KeyError:
            raise UnknownColumn(f"no field with id {field_id} in schema") from None

    def parent_id(self, field_id: int) -> int | None:
        return self._parent_by_id.get(field_id)

    @property
    def column_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def select(self, names: list[str] | tuple[str, ...], *, case_sensitive: bool = True) -> Schema:
        """A schema with only these top-level columns, in the table's column order."""
        wanted = {self.find_field(n, case_sensitive=case_sensitive).field_id for n in names}
        fields = tuple(f for f in self.fields if f.field_id in wanted)
        missing = wanted - {f.field_id for f in fields}
        if missing:
            raise UnknownColumn(
                "only top-level columns can be projected; nested: "
                + ", ".join(self.column_name(i) for i in sorted(missing))
            )
        return Schema(fields, self.schema_id, ())

    # ---- JSON ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "struct",
            "schema-id": self.schema_id,
            "fields": [f.to_json() for f in self.fields],
        }
        if self.identifier_field_ids:
            out["identifier-field-ids"] = list(self.identifier_field_ids)
        return out

    @staticmethod
    def from_json(obj: dict[str, Any]) -> Schema:
        return Schema(
            fields=tuple(field_from_json(f) for f in obj["fields"]),
            schema_id=obj.get("schema-id", 0),
            identifier_field_ids=tuple(obj.get("identifier-field-ids", ())),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return (
            self.fields == other.fields
            and self.schema_id == other.schema_id
            and self.identifier_field_ids == other.identifier_field_ids
        )

    def __hash__(self) -> int:
        return hash((self.fields, self.schema_id, self.identifier_field_ids))

    def same_structure(self, other: Schema) -> bool:
        """Equal ignoring the schema id (used to reuse an existing schema on evolution)."""
        return (
            self.fields == other.fields and self.identifier_field_ids == other.identifier_field_ids
        )

    def __str__(self) -> str:
        lines = [
            f"  {f.field_id}: {f.name}: {'required' if f.required else 'optional'} {f.field_type}"
            for f in self.fields
        ]
        return "table {\n" + "\n".join(lines) + "\n}"


def _children(t: IcebergType) -> tuple[NestedField, ...]:
    if isinstance(t, StructType):
        return t.fields
    if isinstance(t, ListType):
        return (t.element_field,)
    if isinstance(t, MapType):
        return (t.key_field, t.value_field)
    return ()


def _walk(fields: tuple[NestedField, ...], prefix: str) -> list[tuple[str, NestedField]]:
    out: list[tuple[str, NestedField]] = []
    for f in fields:
        name = prefix + f.name
        out.append((name, f))
        t = f.field_type
        if isinstance(t, StructType):
            out.extend(_walk(t.fields, name + "."))
        elif isinstance(t, ListType):
            out.extend(_walk((t.element_field,), name + "."))
        elif isinstance(t, MapType):
            out.extend(_walk((t.key_field, t.value_field), name + "."))
    return out
