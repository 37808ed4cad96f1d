"""Storage-partitioned reads: a catalog scan's files grouped by partition, for Spark.

With ``spark.lakecat.preserveDataGrouping`` on (Iceberg's
``spark.sql.iceberg.planning.preserve-data-grouping``; off by default), the plugin's scan tells
Spark how its rows are grouped (``SupportsReportPartitioning``, a ``KeyGroupedPartitioning``
by the table's partition transforms) and hands each task the files of one partition, with the
partition's values as its key (``HasPartitionKey``). Spark then joins two tables partitioned
alike, or aggregates by the partition columns, without shuffling them: a storage-partitioned
join (Spark's ``spark.sql.sources.v2.bucketing.*`` settings decide where it does).

The grouping key is the partition fields that every planned file's spec has (a field of one
spec only groups nothing), with a transform Spark knows (identity, ``bucket``, ``truncate``,
``years`` to ``hours``, as :func:`lakecat.spark_ext.sql.convert.spark_transform` names them,
which the catalog's functions compute exactly as lakecat partitions), a source column that is
a top-level column of the read (Spark finds the key among the scan's columns) and a key type
whose values Spark compares as lakecat does (booleans, integers, dates, timestamps, strings,
decimals). Grouping by fewer fields than the files are partitioned by is still a grouping:
every row of one key value is in that key's files.

Once Spark has the grouping it must not change: runtime filters (dynamic partition pruning)
plan the read again with the fields first chosen (``field_ids``), and only drop files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from lakecat.metadata import (
    BooleanType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.partitioning import PartitionField, parse_transform
from lakecat.metadata.schema import IcebergType, Schema
from lakecat.metadata.table import TableMetadata
from lakecat.spark_ext.sql.convert import spark_transform
from lakecat.spark_ext.types import spark_type

# Key types whose values Spark orders and compares as lakecat does (no NaN, no byte order).
_KEY_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    DateType,
    TimestampType,
    TimestamptzType,
    StringType,
    DecimalType,
)


@dataclass(frozen=True)
class Grouping:
    """How a scan's files are grouped: the partition fields of the key (by field id), their
    Spark transforms and key types, and each file's key (in the order of the files)."""

    field_ids: tuple[int, ...]
    transforms: tuple[dict[str, Any], ...]
    key_types: tuple[IcebergType, ...]
    keys: tuple[tuple[Any, ...], ...]

    def to_json(self) -> dict[str, Any]:
        """As the JVM scan reads it: each key value in JSON (decimals as their text)."""
        return {
            "field_ids": list(self.field_ids),
            "transforms": list(self.transforms),
            "types": [
                json.loads(spark_type(t, f"key {i}").json()) for i, t in enumerate(self.key_types)
            ],
            "keys": [[_json_value(v) for v in key] for key in self.keys],
        }


def data_grouping(
    metadata: TableMetadata,
    schema: Schema,
    files: Sequence[DataFile],
    columns: Sequence[str],
    field_ids: Sequence[int] | None = None,
) -> Grouping | None:
    """The grouping of ``files`` read as ``schema`` (their ``columns``, top-level names) by
    ``field_ids`` when given (a runtime filter's plan: the grouping Spark already has), else
    by the fields chosen as the module docstring says; None when no field qualifies."""
    specs = metadata.specs_by_id()
    if field_ids is None:
        chosen = _key_fields(specs, schema, {f.spec_id for f in files}, set(columns))
    else:
        by_id = {f.field_id: f for s in specs.values() for f in s.fields}
        chosen = [by_id[i] for i in field_ids]
    if not chosen:
        return None
    ordinals: dict[int, list[int]] = {}
    for spec_id in {f.spec_id for f in files}:
        positions = {f.field_id: i for i, f in enumerate(specs[spec_id].fields)}
        ordinals[spec_id] = [positions[f.field_id] for f in chosen]
    keys = tuple(tuple(f.partition[i] for i in ordinals[f.spec_id]) for f in files)
    return Grouping(
        tuple(f.field_id for f in chosen),
        tuple(_transform(schema, f) for f in chosen),
        tuple(_key_type(schema, f) for f in chosen),
        keys,
    )


def _key_fields(
    specs: dict[int, Any], schema: Schema, spec_ids: set[int], columns: set[str]
) -> list[PartitionField]:
    if not spec_ids:
        return []
    first = specs[min(spec_ids)]
    shared = [
        f
        for f in first.fields
        if all(any(g.field_id == f.field_id for g in specs[s].fields) for s in spec_ids)
    ]
    out = []
    for field in shared:
        path = _top_level_source(schema, field)
        if path is None or path not in columns:
            continue
        if spark_transform(schema, field.source_id, field.transform) is None:
            continue  # void, or a transform Spark has no function for
        if not isinstance(_key_type(schema, field), _KEY_TYPES):
            continue
        out.append(field)
    return out


def _top_level_source(schema: Schema, field: PartitionField) -> str | None:
    """The name of the field's source column when it is a top-level column of ``schema``."""
    if not any(f.field_id == field.source_id for f in schema.fields):
        return None
    path = schema.column_path(field.source_id)
    return path[0] if len(path) == 1 else None


def _transform(schema: Schema, field: PartitionField) -> dict[str, Any]:
    transform = spark_transform(schema, field.source_id, field.transform)
    assert transform is not None, f"{field.transform} was chosen as a grouping field"
    return transform


def _key_type(schema: Schema, field: PartitionField) -> IcebergType:
    return parse_transform(field.transform).result_type(schema.find_type(field.source_id))


def _json_value(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value
