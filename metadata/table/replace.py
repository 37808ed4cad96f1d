"""Replacing a table's definition in one commit (Iceberg's replace transaction).

``REPLACE TABLE ... AS SELECT``, ``CREATE OR REPLACE TABLE`` and ``Catalog.replace_table`` give
an existing table a new schema, partition spec, sort order and properties, and new rows, while
it keeps its identity, its location and its history: the old snapshots stay (time travel,
rollback), the ``main`` branch is removed and the new rows become a snapshot without a parent,
as Iceberg's ``TableMetadata.buildReplacement`` does.

:func:`plan_replacement` resolves the new definition against the table as it is when the
replace starts (column ids reused by name for columns of the same type, new ids after the
table's last one; partition field ids reused for the same source and transform): writers
write the new rows with that definition. :func:`replacement_updates` turns it into update
records for the base the commit lands on. That base may be newer; the replacement still holds
if no concurrent commit changed the schemas, specs or sort orders the ids were drawn from.
Otherwise the ids the rows were written with could mean other columns, and the commit fails
with :class:`~lakecat.metadata.errors.MetadataChanged` (nothing landed: run it again). Other
concurrent commits are kept in the history, unlike Iceberg's replace, which overwrites them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lakecat.metadata import properties as P
from lakecat.metadata.errors import MetadataChanged, ValidationError
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import IcebergType, PrimitiveType, StructType, can_promote
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.schema_evolution import assign_fresh_ids
from lakecat.metadata.table.snapshots import MAIN_BRANCH
from lakecat.metadata.table.sorting import SortOrder
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSortOrder,
    RemoveSnapshotRef,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetProperties,
    TableUpdate,
    UpgradeFormatVersion,
)

_RESERVED = P.RESERVED


@dataclass(frozen=True)
class Replacement:
    """A table's new definition, its ids resolved against the table as the replace started."""

    schema: Schema
    spec: PartitionSpec
    sort_order: SortOrder
    properties: Mapping[str, str]
    format_version: int
    # what the ids were drawn from: (last column id, last partition id, schema ids, spec ids,
    # sort order ids) of the table the replacement was planned on
    drawn_from: tuple[object, ...]


def _ids_of(metadata: TableMetadata) -> tuple[object, ...]:
    return (
        metadata.last_column_id,
        metadata.last_partition_id,
        tuple(s.schema_id for s in metadata.schemas),
        tuple(s.spec_id for s in metadata.partition_specs),
        tuple(o.order_id for o in metadata.sort_orders),
    )


def plan_replacement(
    base: TableMetadata,
    schema: Schema,
    *,
    spec_of: Callable[[Schema], PartitionSpec],
    sort_order_of: Callable[[Schema], SortOrder] = lambda _: SortOrder(0, ()),
    properties: Mapping[str, str] | None = None,
) -> Replacement:
    """The new definition of ``base``'s table: ``schema`` (its ids are replaced), the spec and
    sort order ``spec_of`` / ``sort_order_of`` build on the resolved schema, and properties
    set on top of the table's (``format-version`` upgrades; a lower one is refused)."""
    props = dict(properties or {})
    version = base.format_version
    if P.FORMAT_VERSION in props:
        requested = int(props[P.FORMAT_VERSION])
        if requested < version:
            raise ValidationError(
                f"a replace cannot lower the format version from {version} to {requested}"
            )
        version = requested
    resolved = _reuse_column_ids(schema, base.schema(), base.last_column_id)
    spec = _reuse_partition_ids(spec_of(resolved), base)
    return Replacement(
        schema=resolved,
        spec=spec,
        sort_order=sort_order_of(resolved),
        properties={k: v for k, v in props.items() if k not in _RESERVED},
        format_version=version,
        drawn_from=_ids_of(base),
    )


def replacement_updates(base: TableMetadata, replacement: Replacement) -> list[TableUpdate]:
    """The update records that replace ``base``'s definition; raises :class:`MetadataChanged`
    when ``base`` is not the table the replacement's ids were drawn from (see module doc)."""
    if _ids_of(base) != replacement.drawn_from:
        raise MetadataChanged(
            "the table's schema, partitioning or sort order changed while it was being "
            "replaced; run the replace again"
        )
    updates: list[TableUpdate] = []
    if replacement.format_version > base.format_version:
        updates.append(UpgradeFormatVersion(replacement.format_version))
    updates += [
        RemoveSnapshotRef(MAIN_BRANCH),
        AddSchema(
            replacement.schema, max(base.last_column_id, replacement.schema.highest_field_id)
        ),
        SetCurrentSchema(-1),
        AddPartitionSpec(replacement.spec),
        SetDefaultSpec(-1),
        AddSortOrder(replacement.sort_order),
        SetDefaultSortOrder(-1),
    ]
    if replacement.properties:
        updates.append(SetProperties(replacement.properties))
    return updates


def replaced(base: TableMetadata, replacement: Replacement) -> TableMetadata:
    """``base`` with its definition replaced and no current snapshot: what the new rows are
    written against."""
    return apply(base, replacement_updates(base, replacement))


def _reuse_column_ids(schema: Schema, current: Schema, last_column_id: int) -> Schema:
    """``schema`` with the ids Iceberg Java gives a replacement (``TypeUtil.assignFreshIds``
    with the current schema as the base): a field at the same place as a field of ``current``
    (the same names from the top-level column down, at any depth: a struct's field, a list's
    element, a map's key or value) keeps that field's id, and every other field gets a new id
    after ``last_column_id``, in Java's order. Unlike Java, an old id is kept only for a field
    that can hold the old field's values (a struct for a struct, a list for a list, a map for
    a map, a primitive type the old one promotes to): files of the table's older snapshots
    then still read under the new schema (a branch that still points at one, say)."""
    counter = itertools.count(last_column_id + 1)
    old = {current.column_path(i): current.find_field(i) for i in current.field_ids()}

    def id_for(path: tuple[str, ...], field_type: IcebergType) -> int:
        found = old.get(path)
        if found is not None and _holds(found.field_type, field_type):
            return found.field_id
        return next(counter)

    fresh = assign_fresh_ids(StructType(schema.fields), lambda: next(counter), id_for)
    assert isinstance(fresh, StructType)
    resolved = Schema(fresh.fields)
    identifiers = tuple(
        resolved.find_path(schema.column_path(i)).field_id
        for i in schema.identifier_field_ids
        if i in schema.field_ids()
    )
    return Schema(fresh.fields, 0, identifiers)


def _holds(old: IcebergType, new: IcebergType) -> bool:
    """Whether a field of type ``new`` reads the values of one of type ``old``."""
    if isinstance(old, PrimitiveType) or isinstance(new, PrimitiveType):
        return can_promote(old, new)
    return type(old) is type(new)


def _reuse_partition_ids(spec: PartitionSpec, base: TableMetadata) -> PartitionSpec:
    """``spec`` with the field id of an existing partition field of the same source and
    transform, else a new id after the table's last one."""
    known = {(f.source_id, f.transform): f.field_id for s in base.partition_specs for f in s.fields}
    counter = itertools.count(base.last_partition_id + 1)
    used: set[int] = set()
    fields = []
    for f in spec.fields:
        field_id = known.get((f.source_id, f.transform))
        if field_id is None or field_id in used:
            field_id = next(counter)
        used.add(field_id)
        fields.append(PartitionField(f.source_id, field_id, f.transform, f.name))
    return PartitionSpec(0, tuple(fields))
