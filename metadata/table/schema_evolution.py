"""Schema evolution as a pure builder that produces update records.

:class:`SchemaUpdate` records intent (add, rename, delete, update, move columns, set the
identifier fields) against a table's metadata; :meth:`SchemaUpdate.apply` previews the new
schema and :meth:`SchemaUpdate.updates` gives the records to commit
(``[AddSchema, SetCurrentSchema(-1)]``). Nothing is written. The rules are the spec's
("Schema Evolution") as Iceberg Java's ``SchemaUpdate`` applies them:

* new columns get fresh ids above ``last-column-id``, so an id is never reused, and must be
  optional (existing rows have no value for them);
* types may only be widened (int -> long, float -> double, decimal precision);
* a required column may become optional, never the reverse;
* a column used by the current partition spec or sort order, or an identifier field, cannot
  be deleted.

Nested struct fields are addressed by dotted names (``"location.lat"``); a list's element
struct and a map's value struct are reached through the list or map column itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from lakecat.metadata.errors import InvalidUpdate, UnknownColumn, ValidationError
from lakecat.metadata.properties import column_properties_after
from lakecat.metadata.schema.conversions import from_python, to_json_value
from lakecat.metadata.schema.name_mapping import NAME_MAPPING_PROPERTY, name_mapping_of
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    can_promote,
)
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import (
    LAST_ADDED,
    AddSchema,
    RemoveProperties,
    SetCurrentSchema,
    SetProperties,
    TableUpdate,
)

TABLE_ROOT_ID = -1
"""Parent id of top-level columns in the bookkeeping below."""


# ---- schema checks shared with apply and new_table ------------------------------------------
def check_schema(schema: Schema) -> None:
    """Raise :class:`InvalidUpdate` unless ids are unique, names are unique within each
    struct, full (dotted) names are unique in the schema (a top-level column ``"a.b"`` next
    to a struct ``a`` with a field ``b`` is refused, as Iceberg does) and the identifier
    fields are valid (spec: "Identifier Field IDs")."""
    seen: set[int] = set()

    def visit_struct(fields: tuple[NestedField, ...], where: str) -> None:
        names: set[str] = set()
        for f in fields:
            if not f.name:
                raise InvalidUpdate(f"a field in {where} has an empty name")
            if f.name in names:
                raise InvalidUpdate(f"duplicate column name {f.name!r} in {where}")
            names.add(f.name)
            visit_field(f.field_id, f.field_type, f.name)

    def visit_field(field_id: int, t: IcebergType, name: str) -> None:
        if field_id in seen:
            raise InvalidUpdate(f"duplicate field id {field_id} (at {name!r})")
        seen.add(field_id)
        if isinstance(t, StructType):
            visit_struct(t.fields, f"struct {name!r}")
        elif isinstance(t, ListType):
            visit_field(t.element_id, t.element_type, name + ".element")
        elif isinstance(t, MapType):
            visit_field(t.key_id, t.key_type, name + ".key")
            visit_field(t.value_id, t.value_type, name + ".value")

    visit_struct(schema.fields, "the table schema")
    for name, ids in schema.ambiguous_names().items():
        # Java's and pyiceberg's IndexByName: "Invalid schema, multiple fields for name".
        paths = " and ".join(
            ".".join(repr(p) for p in schema.column_path(i)) + f" (id {i})" for i in ids
        )
        raise InvalidUpdate(
            f"the full column name {name!r} would name several fields: {paths}; Iceberg "
            "requires full column names to be unique, rename one of them"
        )
    for field_id in schema.identifier_field_ids:
        _check_identifier_field(schema, field_id)


def _check_identifier_field(schema: Schema, field_id: int) -> None:
    if not schema.has_field(field_id):
        raise InvalidUpdate(f"identifier field id {field_id} is not in the schema")
    field = schema.find_field(field_id)
    name = schema.column_name(field_id)
    problem = None
    if not field.field_type.is_primitive:
        problem = "not a primitive type"
    elif not field.required:
        problem = "not a required column"
    elif isinstance(field.field_type, FloatType | DoubleType):
        problem = "float and double columns cannot identify rows"
    else:
        parent = schema.parent_id(field_id)
        while parent is not None and problem is None:
            parent_field = schema.find_field(parent)
            if not isinstance(parent_field.field_type, StructType):
                problem = f"nested in {parent_field.field_type}, not in a struct"
            elif not parent_field.required:
                problem = f"nested in the optional struct {schema.column_name(parent)!r}"
            parent = schema.parent_id(parent)
    if problem is not None:
        raise InvalidUpdate(f"{name!r} cannot be an identifier field: {problem}")


def assign_fresh_ids(
    t: IcebergType,
    next_id: Callable[[], int],
    id_for: Callable[[tuple[str, ...], IcebergType], int] | None = None,
    path: tuple[str, ...] = (),
) -> IcebergType:
    """``t`` with every nested field id replaced by ``next_id()``, in Java's order.

    Java's ``TypeUtil.assignFreshIds``: a struct's own fields are numbered first, then each
    field's type is visited; a list numbers its element, a map its key and then its value.
    With ``id_for``, a field's id is ``id_for(path, type)`` instead: its names from the
    top-level column down (``path`` is ``t``'s own), as a list's ``element`` and a map's
    ``key`` and ``value`` (a replace reuses the ids of fields at the same place).
    """

    def new_id(name: str, field_type: IcebergType) -> int:
        return next_id() if id_for is None else id_for((*path, name), field_type)

    def visit(name: str, field_type: IcebergType) -> IcebergType:
        return assign_fresh_ids(field_type, next_id, id_for, (*path, name))

    if isinstance(t, StructType):
        ids = [new_id(f.name, f.field_type) for f in t.fields]
        return StructType(
            tuple(
                replace(f, field_id=i, field_type=visit(f.name, f.field_type))
                for i, f in zip(ids, t.fields, strict=True)
            )
        )
    if isinstance(t, ListType):
        element_id = new_id("element", t.element_type)
        return ListType(element_id, visit("element", t.element_type), t.element_required)
    if isinstance(t, MapType):
        key_id, value_id = new_id("key", t.key_type), new_id("value", t.value_type)
        return MapType(
            key_id,
            visit("key", t.key_type),
            value_id,
            visit("value", t.value_type),
            t.value_required,
        )
    return t


# ---- the builder ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Move:
    field_id: int
    kind: Literal["first", "before", "after"]
    reference_id: int | None = None


class SchemaUpdate:
    """Evolve the current schema of ``metadata``; setters return ``self`` for chaining.

    ``case_sensitive=False`` resolves column names ignoring case (new names keep their case).
    """

    def __init__(self, metadata: TableMetadata, *, case_sensitive: bool = True) -> None:
        self._metadata = metadata
        self._schema = metadata.schema()
        self._case_sensitive = case_sensitive
        self._last_column_id: int = metadata.last_column_id
        self._deletes: set[int] = set()
        self._updates: dict[int, NestedField] = {}
        self._adds: dict[int, list[NestedField]] = {}
        self._added: dict[str, tuple[int, int]] = {}  # normalized full name -> (id, parent id)
        self._moves: dict[int, list[_Move]] = {}
        self._identifier_ids: tuple[int, ...] = self._schema.identifier_field_ids

    # ---- setters ----------------------------------------------------------------------
    def add_column(
        self,
        path: str | tuple[str, ...],
        field_type: IcebergType,
        *,
        doc: str | None = None,
        required: bool = False,
        after: str | None = None,
        before: str | None = None,
        first: bool = False,
        default: Any = None,
    ) -> SchemaUpdate:
        """Add an optional column; ``"a.b"`` or ``("a", "b")`` adds ``b`` to struct ``a``.

        ``default`` (format version 3 and later, a column of a primitive type; any value
        :func:`~lakecat.metadata.schema.conversions.from_python` takes) is the column's
        ``initial-default``, the value of rows written before it existed, and its
        ``write-default``, the value writers fill in when they leave it out; with one, the
        column may be ``required``.

        A string is a path of names separated by dots, so a name that contains a dot must be
        given as a tuple: ``("a.b",)`` adds a top-level column named ``"a.b"``,
        ``("s", "x.y")`` adds ``"x.y"`` to struct ``s``; each part of a tuple is one name
        taken as it is. ``after``/``before`` take full column names; nested types get fresh
        ids.
        """
        if isinstance(path, str):
            parts = tuple(path.split("."))
        elif isinstance(path, tuple | list) and all(isinstance(p, str) for p in path):
            parts = tuple(path)
        else:
            raise InvalidUpdate(f"a column path is a string or a tuple of names, not {path!r}")
        if not parts or any(not p for p in parts):
            raise InvalidUpdate(f"invalid column name {path!r}")
        if sum((first, after is not None, before is not None)) > 1:
            raise InvalidUpdate("use only one of first, after and before")
        name = parts[-1]
        parent_id, parent_name = self._parent_for_add(parts[:-1])
        full_name = f"{parent_name}.{name}" if parent_name else name
        if required and default is None:
            raise InvalidUpdate(
                f"cannot add required column {full_name!r}: existing rows have no value for "
                "it; add it as optional, or with a default"
            )
        value = None if default is None else self._default_json(full_name, field_type, default)
        parent_path = () if parent_id == TABLE_ROOT_ID else self._schema.column_path(parent_id)
        existing = self._lookup_path((*parent_path, name))
        if existing is not None and existing.field_id not in self._deletes:
            raise InvalidUpdate(f"cannot add column {full_name!r}: it already exists")
        if self._normalize(full_name) in self._added:
            raise InvalidUpdate(f"cannot add column {full_name!r}: it is already being added")

        new_id = self._next_id()
        new_field = NestedField(
            new_id,
            name,
            assign_fresh_ids(field_type, self._next_id),
            required=required,
            doc=doc,
            initial_default=value,
            write_default=value,
        )
        self._adds.setdefault(parent_id, []).append(new_field)
        self._added[self._normalize(full_name)] = (new_id, parent_id)
        if first:
            self.move_first(full_name)
        elif after is not None:
            self.move_after(full_name, after)
        elif before is not None:
            self.move_before(full_name, before)
        return self

    def rename_column(self, name: str, new_name: str) -> SchemaUpdate:
        """Rename a column; ``new_name`` is the new last part (its parent stays the same)."""
        field = self._existing(name)
        if not new_name:
            raise InvalidUpdate(f"cannot rename {name!r} to an empty name")
        if field.field_id in self._deletes:
            raise InvalidUpdate(f"cannot rename {name!r}: it is being deleted")
        self._refuse_collection_part(field.field_id, name, "rename")
        self._updates[field.field_id] = replace(self._pending(field), name=new_name)
        return self

    def delete_column(self, name: str) -> SchemaUpdate:
        """Delete a column (and everything nested in it)."""
        field = self._existing(name)
        if field.field_id in self._adds:
            raise InvalidUpdate(f"cannot delete {name!r}: columns are being added to it")
        if field.field_id in self._updates:
            raise InvalidUpdate(f"cannot delete {name!r}: it is being renamed or updated")
        self._refuse_collection_part(field.field_id, name, "delete")
        doomed = {field.field_id} | _descendant_ids(field.field_type)
        for spec_field in self._metadata.spec().fields:
            if spec_field.source_id in doomed and spec_field.transform != "void":
                raise InvalidUpdate(
                    f"cannot delete {name!r}: the current partition spec uses it "
                    f"(partition field {spec_field.name!r}); remove that partition field first"
                )
        if any(f.source_id in doomed for f in self._metadata.sort_order().fields):
            raise InvalidUpdate(
                f"cannot delete {name!r}: the table's sort order uses it; change the sort "
                "order first"
            )
        self._deletes.add(field.field_id)
        return self

    def update_column(
        self,
        name: str,
        *,
        field_type: IcebergType | None = None,
        required: bool | None = None,
        doc: str | None = None,
    ) -> SchemaUpdate:
        """Widen a column's type, make a required column optional, or change its doc."""
        field = self._to_update(name, "update", "add it with its final type and doc")
        pending = self._pending(field)
        is_map_key = self._is_map_key(field.field_id)
        if field_type is not None and field_type != field.field_type:
            if is_map_key:
                raise InvalidUpdate(f"cannot change the type of map key {name!r}")
            if not (field.field_type.is_primitive and field_type.is_primitive):
                raise InvalidUpdate(
                    f"cannot change {name!r} from {field.field_type} to {field_type}: only "
                    "primitive types can be changed (add or delete nested fields instead)"
                )
            if not can_promote(field.field_type, field_type):
                raise InvalidUpdate(
                    f"cannot change {name!r} from {field.field_type} to {field_type}: only "
                    "int -> long, float -> double and wider decimal precision are allowed"
                )
            pending = replace(pending, field_type=field_type)
        if required is not None and required != field.required:
            if required:
                raise InvalidUpdate(
                    f"cannot make optional column {name!r} required: existing rows may hold nulls"
                )
            if is_map_key:
                raise InvalidUpdate(f"map key {name!r} is always required")
            pending = replace(pending, required=False)
        if doc is not None:
            pending = replace(pending, doc=doc)
        if pending != field:
            self._updates[field.field_id] = pending
        return self

    def update_column_default(self, name: str, default: Any) -> SchemaUpdate:
        """Set the column's ``write-default`` (format version 3 and later), the value writers
        fill in when they leave it out; None removes it. Rows already written, and the
        ``initial-default`` that rows written before the column existed read, do not change."""
        field = self._to_update(name, "change the default of", "add it with its default")
        value = None if default is None else self._default_json(name, field.field_type, default)
        pending = replace(self._pending(field), write_default=value)
        if pending != field:
            self._updates[field.field_id] = pending
        else:
            self._updates.pop(field.field_id, None)
        return self

    def _to_update(self, name: str, what: str, instead: str) -> NestedField:
        """The existing column ``name``, which this change neither adds nor deletes."""
        if self._normalize(name) in self._added:
            raise InvalidUpdate(f"cannot {what} {name!r}: it is added by this change; {instead}")
        field = self._existing(name)
        if field.field_id in self._deletes:
            raise InvalidUpdate(f"cannot {what} {name!r}: it is being deleted")
        return field

    def _default_json(self, name: str, field_type: IcebergType, default: Any) -> Any:
        """``default`` as the spec's JSON single value of ``field_type``, checked."""
        if self._metadata.format_version < 3:
            raise InvalidUpdate(
                f"cannot give {name!r} a default: column defaults need format version 3 "
                f"(the table is version {self._metadata.format_version})"
            )
        if not isinstance(field_type, PrimitiveType):
            raise InvalidUpdate(f"cannot give {name!r} a default: it is a {field_type}")
        try:
            value = to_json_value(field_type, from_python(field_type, default))
        except ValidationError as exc:
            raise InvalidUpdate(f"cannot give {name!r} the default {default!r}: {exc}") from exc
        if isinstance(value, float) and not math.isfinite(value):
            # the metadata file is JSON, which has no NaN or infinity
            raise InvalidUpdate(f"cannot give {name!r} the default {default!r}: not finite")
        return value

    def move_first(self, name: str) -> SchemaUpdate:
        """Make the column the first of its struct."""
        field_id, parent_id = self._resolve_for_move(name)
        self._moves.setdefault(parent_id, []).append(_Move(field_id, "first"))
        return self

    def move_before(self, name: str, other: str) -> SchemaUpdate:
        """Put the column just before ``other`` (in the same struct)."""
        return self._move_next_to(name, other, "before")

    def move_after(self, name: str, other: str) -> SchemaUpdate:
        """Put the column just after ``other`` (in the same struct)."""
        return self._move_next_to(name, other, "after")

    def set_identifier_fields(self, *names: str) -> SchemaUpdate:
        """Replace the identifier fields (columns added earlier in this change allowed)."""
        ids = []
        for name in names:
            added = self._added.get(self._normalize(name))
            ids.append(added[0] if added is not None else self._existing(name).field_id)
        self._identifier_ids = tuple(dict.fromkeys(ids))
        return self

    def union_by_name(self, new_schema: Schema) -> SchemaUpdate:
        """Make the table schema accept data of ``new_schema``, matching columns by name.

        Missing columns (also nested ones) are added as optional, types are widened where the
        spec allows it (a narrower incoming type is fine as it is), and columns that are
        optional in ``new_schema`` become optional. Nothing is deleted. Incompatible types
        raise :class:`InvalidUpdate`.
        """
        self._union_struct(self._schema.fields, new_schema.fields, ())
        return self

    # ---- results ------------------------------------------------------------------------
    def apply(self) -> Schema:
        """The evolved schema (a preview; nothing is committed)."""
        deleted_identifiers = [i for i in self._identifier_ids if i in self._deletes]
        if deleted_identifiers:
            names = ", ".join(repr(self._schema.column_name(i)) for i in deleted_identifiers)
            raise InvalidUpdate(
                f"cannot delete identifier field {names}; call set_identifier_fields() "
                "without it first"
            )
        fields = self._apply_struct(self._schema.fields, TABLE_ROOT_ID)
        candidate = Schema(fields, self._schema.schema_id, self._identifier_ids)
        check_schema(candidate)
        return replace(candidate, schema_id=self._schema_id_for(candidate))

    def updates(self) -> list[TableUpdate]:
        """``[AddSchema, SetCurrentSchema(-1)]``, or ``[]`` when nothing changes; followed,
        as Iceberg Java's ``SchemaUpdate`` commits them, by the table properties the change
        moves: the name mapping (``schema.name-mapping.default``) gains the new names and
        columns, and the per-column metrics and bloom filter properties of a renamed column
        are renamed, those of a deleted column removed."""
        schema = self.apply()
        if schema.same_structure(self._schema):
            return []
        changes: list[TableUpdate] = [
            AddSchema(schema, self._last_column_id),
            SetCurrentSchema(LAST_ADDED),
        ]
        properties = dict(self._metadata.properties)
        mapping = name_mapping_of(properties)
        if mapping is not None:
            updated = mapping.updated(self._updates, self._adds)
            if updated != mapping:
                properties[NAME_MAPPING_PROPERTY] = updated.to_json()
        renamed = {
            self._schema.column_name(i): schema.column_name(i)
            for i in self._updates
            if schema.has_field(i)  # not under a struct this change deletes
            and self._schema.column_name(i) != schema.column_name(i)
        }
        deleted = [self._schema.column_name(i) for i in self._deletes]
        properties = column_properties_after(properties, renamed, deleted)
        removed = tuple(k for k in self._metadata.properties if k not in properties)
        if removed:
            changes.append(RemoveProperties(removed))
        changed = {k: v for k, v in properties.items() if self._metadata.properties.get(k) != v}
        if changed:
            changes.append(SetProperties(changed))
        return changes

    @property
    def last_column_id(self) -> int:
        """The table's last column id after this change."""
        return self._last_column_id

    # ---- internals ----------------------------------------------------------------------
    def _normalize(self, name: str) -> str:
        return name if self._case_sensitive else name.lower()

    def _next_id(self) -> int:
        self._last_column_id += 1
        return self._last_column_id

    def _lookup_path(self, path: tuple[str, ...]) -> NestedField | None:
        try:
            return self._schema.find_path(path, case_sensitive=self._case_sensitive)
        except UnknownColumn:
            return None

    def _existing(self, name: str) -> NestedField:
        """A column of the current schema (not one added in this change)."""
        return self._schema.find_field(name, case_sensitive=self._case_sensitive)

    def _pending(self, field: NestedField) -> NestedField:
        return self._updates.get(field.field_id, field)

    def _parent_for_add(self, parent_parts: tuple[str, ...]) -> tuple[int, str]:
        if not parent_parts:
            return TABLE_ROOT_ID, ""
        try:
            # Walked part by part: a part is one field's name, even when it contains a dot.
            parent = self._schema.find_path(parent_parts, case_sensitive=self._case_sensitive)
        except UnknownColumn as exc:
            raise UnknownColumn(
                f"{exc}; to add a column whose name contains a dot, pass the path as a tuple "
                "of names, e.g. ('a.b',) for a top-level column 'a.b'"
            ) from None
        parent_name = self._schema.column_name(parent.field_id)
        if isinstance(parent.field_type, ListType):
            parent = parent.field_type.element_field
            parent_name += ".element"
        elif isinstance(parent.field_type, MapType):
            parent = parent.field_type.value_field
            parent_name += ".value"
        if not isinstance(parent.field_type, StructType):
            raise InvalidUpdate(
                f"cannot add a column to {parent_name!r}: it is a {parent.field_type}, not a struct"
            )
        if parent.field_id in self._deletes:
            raise InvalidUpdate(f"cannot add a column to {parent_name!r}: it is being deleted")
        return parent.field_id, parent_name

    def _is_map_key(self, field_id: int) -> bool:
        parent = self._schema.parent_id(field_id)
        if parent is None:
            return False
        parent_type = self._schema.find_field(parent).field_type
        return isinstance(parent_type, MapType) and parent_type.key_id == field_id

    def _refuse_collection_part(self, field_id: int, name: str, verb: str) -> None:
        parent = self._schema.parent_id(field_id)
        if parent is not None and isinstance(
            self._schema.find_field(parent).field_type, ListType | MapType
        ):
            raise InvalidUpdate(
                f"cannot {verb} {name!r}: it is the element, key or value of a list or map"
            )

    def _resolve_for_move(self, name: str) -> tuple[int, int]:
        added = self._added.get(self._normalize(name))
        if added is not None:
            return added
        field = self._existing(name)
        if field.field_id in self._deletes:
            raise InvalidUpdate(f"cannot move {name!r}: it is being deleted")
        parent = self._schema.parent_id(field.field_id)
        return field.field_id, TABLE_ROOT_ID if parent is None else parent

    def _move_next_to(
        self, name: str, other: str, kind: Literal["before", "after"]
    ) -> SchemaUpdate:
        field_id, parent_id = self._resolve_for_move(name)
        other_id, other_parent = self._resolve_for_move(other)
        if field_id == other_id:
            raise InvalidUpdate(f"cannot move {name!r} {kind} itself")
        if parent_id != other_parent:
            raise InvalidUpdate(
                f"cannot move {name!r} {kind} {other!r}: they are in different structs"
            )
        self._moves.setdefault(parent_id, []).append(_Move(field_id, kind, other_id))
        return self

    def _apply_struct(
        self, fields: tuple[NestedField, ...], parent_id: int
    ) -> tuple[NestedField, ...]:
        out: list[NestedField] = []
        for f in fields:
            if f.field_id in self._deletes:
                continue
            pending = self._pending(f)
            out.append(
                replace(pending, field_type=self._apply_type(pending.field_type, f.field_id))
            )
        out.extend(self._adds.get(parent_id, ()))
        moves = self._moves.get(parent_id)
        return tuple(_move_fields(out, moves)) if moves else tuple(out)

    def _apply_type(self, t: IcebergType, owner_id: int) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(self._apply_struct(t.fields, owner_id))
        if isinstance(t, ListType):
            element = self._updates.get(t.element_id, t.element_field)
            return ListType(
                t.element_id,
                self._apply_type(element.field_type, t.element_id),
                element.required,
            )
        if isinstance(t, MapType):
            value = self._updates.get(t.value_id, t.value_field)
            return MapType(
                t.key_id,
                self._apply_type(t.key_type, t.key_id),
                t.value_id,
                self._apply_type(value.field_type, t.value_id),
                value.required,
            )
        return t

    def _union_struct(
        self,
        existing: tuple[NestedField, ...],
        incoming: tuple[NestedField, ...],
        path: tuple[str, ...],
    ) -> None:
        by_name = {self._normalize(f.name): f for f in existing}
        for new in incoming:
            old = by_name.get(self._normalize(new.name))
            if old is None:
                # Java's UnionByNameVisitor adds every missing column as optional.
                self.add_column((*path, new.name), new.field_type, doc=new.doc)
            else:
                self._union_field(old, new, (*path, old.name))

    def _union_field(self, old: NestedField, new: NestedField, path: tuple[str, ...]) -> None:
        full_name = self._schema.column_name(old.field_id)
        old_type, new_type = old.field_type, new.field_type
        if isinstance(old_type, StructType) and isinstance(new_type, StructType):
            self._union_struct(old_type.fields, new_type.fields, path)
        elif isinstance(old_type, ListType) and isinstance(new_type, ListType):
            self._union_field(old_type.element_field, new_type.element_field, (*path, "element"))
        elif isinstance(old_type, MapType) and isinstance(new_type, MapType):
            if old_type.key_type != new_type.key_type:
                raise InvalidUpdate(
                    f"cannot change the key type of map {full_name!r} from {old_type.key_type} "
                    f"to {new_type.key_type}"
                )
            self._union_field(old_type.value_field, new_type.value_field, (*path, "value"))
        elif old_type.is_primitive and new_type.is_primitive:
            if can_promote(old_type, new_type):
                self.update_column(full_name, field_type=new_type)
            elif not can_promote(new_type, old_type):
                raise InvalidUpdate(
                    f"cannot change {full_name!r} from {old_type} to {new_type}: the types are "
                    "incompatible"
                )
        else:
            raise InvalidUpdate(f"cannot change {full_name!r} from {old_type} to {new_type}")
        if old.required and not new.required:
            self.update_column(full_name, required=False)
        if new.doc is not None and new.doc != old.doc:
            self.update_column(full_name, doc=new.doc)

    def _schema_id_for(self, schema: Schema) -> int:
        for existing in self._metadata.schemas:
            if existing.same_structure(schema):
                reused: int = existing.schema_id
                return reused
        return max(int(s.schema_id) for s in self._metadata.schemas) + 1


def _descendant_ids(t: IcebergType) -> set[int]:
    out: set[int] = set()
    if isinstance(t, StructType):
        for f in t.fields:
            out |= {f.field_id} | _descendant_ids(f.field_type)
    elif isinstance(t, ListType):
        out |= {t.element_id} | _descendant_ids(t.element_type)
    elif isinstance(t, MapType):
        out |= {t.key_id, t.value_id} | _descendant_ids(t.key_type) | _descendant_ids(t.value_type)
    return out


def _move_fields(fields: list[NestedField], moves: Iterable[_Move]) -> list[NestedField]:
    """Java's ``SchemaUpdate.moveFields``: apply the moves in the order they were made."""
    reordered = list(fields)
    for move in moves:
        index = {f.field_id: i for i, f in enumerate(reordered)}
        to_move = reordered.pop(index[move.field_id])
        if move.kind == "first":
            reordered.insert(0, to_move)
            continue
        positions = {f.field_id: i for i, f in enumerate(reordered)}
        if move.reference_id not in positions:
            raise InvalidUpdate(
                f"cannot move field {move.field_id} {move.kind} field {move.reference_id}: "
                "that column is being deleted"
            )
        at = positions[move.reference_id]
        reordered.insert(at if move.kind == "before" else at + 1, to_move)
    return reordered
