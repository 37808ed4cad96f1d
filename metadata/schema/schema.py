"""Schemas: a struct of fields with ids, plus identifier fields.

Column names
------------
A field's *full name* joins the names from its top-level column down to it with ``"."``
(``"location.lat"``; a list's element is ``"<list>.element"``, a map's ``"<map>.key"`` and
``"<map>.value"``). A name may itself contain dots, spaces, quotes or any Unicode: a top-level
column literally named ``"a.b"`` has the full name ``"a.b"``, as does field ``b`` of struct
``a``. Iceberg (Java's and pyiceberg's ``IndexByName``) therefore requires full names to be
unique in a schema; lakecat refuses to create or evolve a schema where two fields share one
(:func:`lakecat.metadata.table.schema_evolution.check_schema`), and a schema written elsewhere
with such a clash still loads, but :meth:`Schema.find_field` refuses the ambiguous name
(:class:`AmbiguousColumn`, an :class:`UnknownColumn`) while every other name and every field
id resolve as usual.

Inside lakecat a column is identified by its field id; code that needs to walk data to a
field uses :meth:`Schema.column_path` (the tuple of names), never a split full name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from lakecat.metadata.errors import AmbiguousColumn, UnknownColumn
from lakecat.metadata.schema.types import (
    IcebergType,
    NestedField,
    StructType,
    child_fields,
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
    def _fields_by_name(self) -> dict[str, list[NestedField]]:
        """Full name -> every field with that full name (more than one: ambiguous)."""
        out: dict[str, list[NestedField]] = {}
        for name, f in _walk(self.fields, ""):
            out.setdefault(name, []).append(f)
        return out

    @cached_property
    def _by_lower_name(self) -> dict[str, list[NestedField]]:
        out: dict[str, list[NestedField]] = {}
        for name, f in _walk(self.fields, ""):
            out.setdefault(name.lower(), []).append(f)
        return out

    @cached_property
    def _name_by_id(self) -> dict[int, str]:
        return {f.field_id: name for name, f in _walk(self.fields, "")}

    @cached_property
    def _path_by_id(self) -> dict[int, tuple[str, ...]]:
        out: dict[int, tuple[str, ...]] = {}

        def visit(fields: tuple[NestedField, ...], prefix: tuple[str, ...]) -> None:
            for f in fields:
                path = (*prefix, f.name)
                out[f.field_id] = path
                visit(child_fields(f.field_type), path)

        visit(self.fields, ())
        return out

    @cached_property
    def _parent_by_id(self) -> dict[int, int]:
        parents: dict[int, int] = {}

        def visit(t: IcebergType, parent: int) -> None:
            for child in child_fields(t):
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
        """The field with this id or full (dotted) name; raises :class:`UnknownColumn`.

        A name is matched whole against the fields' full names (see the module docstring),
        never split: ``"a.b"`` finds a top-level column named ``"a.b"`` as well as field
        ``b`` of struct ``a``. A name that two fields share (a schema lakecat would not
        create) raises :class:`AmbiguousColumn`. Without
        ``case_sensitive`` an exact match wins; a name that matches several fields only
        ignoring case is ambiguous too.
        """
        if isinstance(name_or_id, int):
            found = self._by_id.get(name_or_id)
            if found is not None:
                return found
        elif isinstance(name_or_id, str):
            candidates = self.fields_named(name_or_id, case_sensitive=case_sensitive)
            if candidates:
                return self._single(name_or_id, candidates)
        known = ", ".join(repr(f.name) for f in self.fields)
        raise UnknownColumn(f"no column {name_or_id!r} in schema (columns: {known})")

    def fields_named(self, name: str, *, case_sensitive: bool = True) -> list[NestedField]:
        """Every field :meth:`find_field` could take ``name`` for: none (unknown), one, or
        several (ambiguous)."""
        exact = self._fields_by_name.get(name, [])
        if case_sensitive or exact:
            return list(exact)
        return list(self._by_lower_name.get(name.lower(), []))

    def _single(self, name: str, fields: list[NestedField]) -> NestedField:
        if len(fields) == 1:
            return fields[0]
        which = " and ".join(
            f"{'.'.join(repr(p) for p in self.column_path(f.field_id))} (id {f.field_id})"
            for f in fields
        )
        raise AmbiguousColumn(
            f"column name {name!r} is ambiguous: it names the fields {which}; Iceberg requires "
            "full column names to be unique in a schema"
        )

    def find_path(
        self, path: tuple[str, ...] | list[str], *, case_sensitive: bool = True
    ) -> NestedField:
        """The field reached by walking ``path``, one field name per level from a top-level
        column down (a list's child is ``"element"``, a map's ``"key"`` and ``"value"``).

        Each part is one field's name, dots and all, so ``("a.b",)`` is the top-level
        column ``"a.b"`` and ``("a", "b")`` field ``b`` of struct ``a``. Without
        ``case_sensitive`` an exact match of a part wins over a case-insensitive one.
        Raises :class:`UnknownColumn`.
        """
        parts = tuple(path)
        if not parts or not all(isinstance(p, str) for p in parts):
            raise UnknownColumn(f"not a column path: {path!r}")
        siblings = self.fields
        found: NestedField | None = None
        for depth, part in enumerate(parts):
            found = _match(siblings, part, case_sensitive)
            if found is None:
                where = (
                    "the table"
                    if depth == 0
                    else "column " + ".".join(repr(p) for p in parts[:depth])
                )
                raise UnknownColumn(f"no field {part!r} in {where} (path {parts!r})")
            siblings = child_fields(found.field_type)
        assert found is not None
        return found

    def find_type(self, name_or_id: str | int) -> IcebergType:
        return self.find_field(name_or_id).field_type

    def has_field(self, name_or_id: str | int) -> bool:
        """Whether :meth:`find_field` (case-sensitive) finds exactly one field."""
        if isinstance(name_or_id, int):
            return name_or_id in self._by_id
        return len(self._fields_by_name.get(name_or_id, ())) == 1

    def column_name(self, field_id: int) -> str:
        """The full dotted name of a field id (for messages and name-based APIs; split it
        never: use :meth:`column_path`)."""
        try:
            return self._name_by_id[field_id]
        except KeyError:
            raise UnknownColumn(f"no field with id {field_id} in schema") from None

    def column_path(self, field_id: int) -> tuple[str, ...]:
        """The names from the top-level column down to the field with this id:
        ``("location", "lat")``; ``("a.b",)`` for a top-level column named ``"a.b"``."""
        try:
            return self._path_by_id[field_id]
        except KeyError:
            raise UnknownColumn(f"no field with id {field_id} in schema") from None

    def ambiguous_names(self) -> dict[str, tuple[int, ...]]:
        """Full names that more than one field has, with those fields' ids (empty for a
        valid Iceberg schema)."""
        return {
            name: tuple(f.field_id for f in fields)
            for name, fields in self._fields_by_name.items()
            if len(fields) > 1
        }

    def parent_id(self, field_id: int) -> int | None:
        return self._parent_by_id.get(field_id)

    def in_list_or_map(self, field_id: int) -> bool:
        """Whether the field lies inside a list or map (at any depth): such a field has no
        single value per row, only structs on the way down."""
        parent = self._parent_by_id.get(field_id)
        while parent is not None:
            if not isinstance(self._by_id[parent].field_type, StructType):
                return True
            parent = self._parent_by_id.get(parent)
        return False

    def top_level_id(self, field_id: int) -> int:
        """The id of the top-level column that holds field ``field_id`` (itself if top-level)."""
        parent = self._parent_by_id.get(field_id)
        while parent is not None:
            field_id = parent
            parent = self._parent_by_id.get(field_id)
        return field_id

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


def _match(fields: tuple[NestedField, ...], name: str, case_sensitive: bool) -> NestedField | None:
    exact = next((f for f in fields if f.name == name), None)
    if exact is not None or case_sensitive:
        return exact
    folded = [f for f in fields if f.name.lower() == name.lower()]
    if len(folded) > 1:
        raise AmbiguousColumn(
            f"field name {name!r} is ambiguous ignoring case: "
            + ", ".join(repr(f.name) for f in folded)
        )
    return folded[0] if folded else None


def _walk(fields: tuple[NestedField, ...], prefix: str) -> list[tuple[str, NestedField]]:
    out: list[tuple[str, NestedField]] = []
    for f in fields:
        name = prefix + f.name
        out.append((name, f))
        out.extend(_walk(child_fields(f.field_type), name + "."))
    return out
