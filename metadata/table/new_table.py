"""Metadata of a new table, with fresh ids, as Iceberg Java's ``TableMetadata.newTableMetadata``.

The caller's schema ids are not trusted: fields are renumbered from 1 (Java's
``TypeUtil.assignFreshIds`` order), and the partition spec, sort order and identifier fields,
which refer to columns by id, are re-pointed to the renumbered field at the same place in the
schema (matched by position, never by name, so names with dots or any other characters
cannot mislead it). Partition fields get ids from 1000, the spec id
0, the sort order id 1 (0 when unsorted), the schema id 0.
"""

from __future__ import annotations

import itertools
import time
import uuid as uuid_module
from collections.abc import Mapping
from dataclasses import dataclass

from lakecat.metadata import properties as props
from lakecat.metadata.errors import InvalidUpdate
from lakecat.metadata.partitioning.spec import (
    PARTITION_FIELD_ID_START,
    PartitionField,
    PartitionSpec,
)
from lakecat.metadata.partitioning.transforms import default_partition_field_name
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    IcebergType,
    StructType,
    child_fields,
)
from lakecat.metadata.table.apply import check_invariants
from lakecat.metadata.table.schema_evolution import assign_fresh_ids, check_schema
from lakecat.metadata.table.sorting import SortField, SortOrder
from lakecat.metadata.table.spec_evolution import (
    check_partition_names,
    check_sort_order_compatible,
    check_spec_compatible,
    parse_user_transform,
)
from lakecat.metadata.table.table_metadata import (
    FORMAT_VERSION,
    WRITE_FORMAT_VERSIONS,
    TableMetadata,
)

INITIAL_SCHEMA_ID = 0
INITIAL_SPEC_ID = 0
INITIAL_SORT_ORDER_ID = 1


def new_table_metadata(
    *,
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder,
    location: str,
    properties: Mapping[str, str],
    table_uuid: str | None = None,
    now_ms: int | None = None,
) -> TableMetadata:
    """The first metadata of a table (no snapshots).

    ``properties`` are stored on top of :data:`lakecat.metadata.properties.CREATE_DEFAULTS`;
    reserved keys are not stored (``format-version``, 2 by default or 3, picks the format
    version; a v3 table starts with ``next-row-id`` 0). Raises
    :class:`InvalidUpdate` for a spec or sort order that does not fit the schema, duplicate or
    clashing partition names, or invalid identifier fields; :class:`ValidationError` for a
    property value its property does not take (:func:`~lakecat.metadata.properties.check_values`).
    """
    fresh_schema, last_column_id = fresh_schema_ids(schema)
    check_schema(fresh_schema)
    fresh_spec = _fresh_spec(spec, schema, fresh_schema)
    check_spec_compatible(fresh_spec, fresh_schema)
    check_partition_names(fresh_spec, fresh_schema)
    fresh_order = _fresh_sort_order(sort_order, schema, fresh_schema)
    check_sort_order_compatible(fresh_order, fresh_schema)

    version = requested_format_version(properties)
    table_location = location.rstrip("/")
    if not table_location:
        raise InvalidUpdate(f"invalid table location {location!r}")
    metadata = TableMetadata(
        location=table_location,
        table_uuid=_table_uuid(table_uuid),
        last_updated_ms=int(time.time() * 1000) if now_ms is None else now_ms,
        last_column_id=last_column_id,
        schemas=(fresh_schema,),
        current_schema_id=fresh_schema.schema_id,
        partition_specs=(fresh_spec,),
        default_spec_id=fresh_spec.spec_id,
        last_partition_id=fresh_spec.last_assigned_field_id,
        sort_orders=(fresh_order,),
        default_sort_order_id=fresh_order.order_id,
        format_version=version,
        properties=_persisted_properties(properties),
        next_row_id=0 if version >= 3 else None,
    )
    check_invariants(metadata)
    return metadata


def fresh_schema_ids(schema: Schema) -> tuple[Schema, int]:
    """``schema`` renumbered from 1 (schema id 0) and the highest id it now uses."""
    counter = itertools.count(1)
    last = 0

    def next_id() -> int:
        nonlocal last
        last = next(counter)
        return last

    fresh = assign_fresh_ids(StructType(schema.fields), next_id)
    assert isinstance(fresh, StructType)
    renumbered = _renumbering(schema, Schema(fresh.fields))
    identifier_ids = tuple(
        renumbered.fresh_id(i, "identifier field") for i in schema.identifier_field_ids
    )
    return Schema(fresh.fields, INITIAL_SCHEMA_ID, identifier_ids), last


@dataclass(frozen=True)
class _Renumbering:
    """The caller's field ids -> the fresh ids of the fields at the same places."""

    ids: dict[int, int]
    repeated: set[int]  # ids the caller's schema gives to more than one field

    def fresh_id(self, field_id: int, what: str) -> int:
        if field_id in self.repeated:
            raise InvalidUpdate(f"{what} refers to column id {field_id}, which several fields have")
        if field_id not in self.ids:
            raise InvalidUpdate(f"{what} refers to column id {field_id}, not in the schema")
        return self.ids[field_id]


def _renumbering(schema: Schema, fresh: Schema) -> _Renumbering:
    ids: dict[int, int] = {}
    repeated: set[int] = set()

    def visit(old: IcebergType, new: IcebergType) -> None:
        for a, b in zip(child_fields(old), child_fields(new), strict=True):
            if a.field_id in ids:
                repeated.add(a.field_id)
            ids[a.field_id] = b.field_id
            visit(a.field_type, b.field_type)

    visit(schema.as_struct, fresh.as_struct)
    return _Renumbering(ids, repeated)


def _fresh_spec(spec: PartitionSpec, schema: Schema, fresh: Schema) -> PartitionSpec:
    renumbered = _renumbering(schema, fresh)
    fields = []
    for i, f in enumerate(spec.fields):
        source_id = renumbered.fresh_id(f.source_id, f"partition field {f.name!r}")
        transform = parse_user_transform(f.transform)
        fields.append(
            PartitionField(
                source_id=source_id,
                field_id=PARTITION_FIELD_ID_START + i,
                transform=str(transform),
                name=f.name
                or default_partition_field_name(fresh.column_name(source_id), transform),
            )
        )
    return PartitionSpec(INITIAL_SPEC_ID, tuple(fields))


def _fresh_sort_order(order: SortOrder, schema: Schema, fresh: Schema) -> SortOrder:
    if order.is_unsorted:
        return SortOrder(0, ())
    renumbered = _renumbering(schema, fresh)
    fields = tuple(
        SortField(
            source_id=renumbered.fresh_id(f.source_id, "sort field"),
            transform=str(parse_user_transform(f.transform)),
            direction=f.direction,
            null_order=f.null_order,
        )
        for f in order.fields
    )
    return SortOrder(INITIAL_SORT_ORDER_ID, fields)


def _table_uuid(given: str | None) -> str:
    if given is None:
        return str(uuid_module.uuid4())
    try:
        return str(uuid_module.UUID(given))
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidUpdate(f"not a UUID: {given!r}") from exc


def requested_format_version(given: Mapping[str, str], default: int = FORMAT_VERSION) -> int:
    """The format version ``format-version`` in ``given`` asks for (``default`` without one);
    :class:`InvalidUpdate` for a value that is not a version lakecat writes."""
    requested = given.get(props.FORMAT_VERSION)
    if requested is None:
        return default
    text = requested.strip() if isinstance(requested, str) else requested
    if text not in tuple(str(v) for v in WRITE_FORMAT_VERSIONS):
        raise InvalidUpdate(
            f"lakecat writes format versions {', '.join(map(str, WRITE_FORMAT_VERSIONS))}; "
            f"{props.FORMAT_VERSION}={requested!r} is not one of them"
        )
    return int(text)


def _persisted_properties(given: Mapping[str, str]) -> dict[str, str]:
    for key, value in given.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidUpdate(f"table properties are strings; got {key!r}: {value!r}")
    # Reserved keys are part of the format, not properties (Java drops them the same way).
    kept = {k: v for k, v in given.items() if k not in props.RESERVED}
    props.check_values(kept)
    return {**props.CREATE_DEFAULTS, **kept}
