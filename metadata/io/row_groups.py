"""The row groups of a Parquet file that may hold rows matching a filter, from its footer.

Planning keeps a data file when its Iceberg metrics may match the scan's filter. A file of
several row groups (lakecat starts one every ``write.parquet.row-group-limit`` rows) is then
read only in the row groups whose Parquet statistics may match, as Iceberg Java's
``ParquetMetricsRowGroupFilter`` does. Each row group's statistics become the metrics of a
:class:`DataFile`, so that one :class:`InclusiveMetricsEvaluator` decides for files and row
groups alike (missing statistics mean "may match").

Statistics are used only where they describe the values a read returns: for a primitive
column outside lists and maps that the file holds in the table's own Arrow type, found as the
reader (:mod:`lakecat.metadata.io.parquet`) finds it, by field id.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io.metrics import has_nan_bound, stat_value
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.arrow import type_to_arrow
from lakecat.metadata.schema.conversions import to_bytes
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import NestedField, PrimitiveType, StructType, UUIDType

if TYPE_CHECKING:
    # only for annotations: at run time metadata.expressions imports metadata.manifests,
    # whose package imports this one
    from lakecat.metadata.expressions.evaluators import InclusiveMetricsEvaluator

__all__ = [
    "FieldMatcher",
    "StatsColumn",
    "leaf_count",
    "row_group_metrics",
    "row_groups_to_read",
    "stats_column",
    "stats_columns",
]

# The index of the file field a table field resolves to among sibling file fields, if any.
FieldMatcher = Callable[[NestedField, list[pa.Field]], int | None]


@dataclass(frozen=True, slots=True)
class StatsColumn:
    """The Parquet leaf column (its index in the footer) whose statistics describe a field of
    Iceberg type ``field_type``."""

    index: int
    field_type: PrimitiveType


def leaf_count(t: pa.DataType) -> int:
    """How many Parquet leaf columns an Arrow type read from Parquet stands for."""
    if pa.types.is_struct(t):
        return sum(leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return leaf_count(t.key_type) + leaf_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return leaf_count(t.value_type)
    return 1


def row_groups_to_read(
    footer: pq.FileMetaData,
    file_schema: pa.Schema,
    schema: Schema,
    evaluator: InclusiveMetricsEvaluator,
    *,
    match: FieldMatcher,
    path: str,
) -> list[int]:
    """The row groups of the Parquet file at ``path`` (its ``footer``, and ``file_schema`` as
    pyarrow reads it) whose statistics do not rule out a match of ``evaluator``'s filter
    over ``schema``, in file order. ``match`` resolves a field among file fields, as the
    reader does (by field id, or by name in a file without ids)."""
    every = list(range(footer.num_row_groups))
    columns = stats_columns(file_schema, schema, evaluator.field_ids, match, footer.num_columns)
    if not columns:
        return every
    return [
        r
        for r in every
        if evaluator.eval(row_group_metrics(footer.row_group(r), columns, path=path))
    ]


def stats_columns(
    file_schema: pa.Schema,
    schema: Schema,
    field_ids: Iterable[int],
    match: FieldMatcher,
    num_columns: int,
) -> dict[int, StatsColumn]:
    """:func:`stats_column` of each of ``field_ids`` that has one, in a file of
    ``num_columns`` Parquet leaf columns; none when pyarrow did not map ``file_schema`` leaf
    for leaf onto them."""
    if sum(leaf_count(f.type) for f in file_schema) != num_columns:
        return {}
    found = {}
    for field_id in field_ids:
        column = stats_column(file_schema, schema, field_id, match)
        if column is not None:
            found[field_id] = column
    return found


def stats_column(
    file_schema: pa.Schema, schema: Schema, field_id: int, match: FieldMatcher
) -> StatsColumn | None:
    """The Parquet leaf column whose statistics describe field ``field_id`` of ``schema`` as
    a read returns it: a primitive reached through structs only, stored in the table's Arrow
    type. ``None`` if there is none (e.g. the file lacks the field)."""
    chain = [field_id]
    while (parent := schema.parent_id(chain[-1])) is not None:
        chain.append(parent)
    chain.reverse()
    fields = list(file_schema)
    index = 0
    for depth, fid in enumerate(chain):
        f = schema.find_field(fid)
        i = match(f, fields)
        if i is None:
            return None
        index += sum(leaf_count(x.type) for x in fields[:i])
        found = fields[i].type
        if depth == len(chain) - 1:
            t = f.field_type
            if isinstance(t, PrimitiveType) and found.equals(type_to_arrow(t)):
                return StatsColumn(index, t)
            return None
        if not isinstance(f.field_type, StructType) or not pa.types.is_struct(found):
            return None  # inside a list or a map: no bounds
        fields = [found.field(k) for k in range(found.num_fields)]
    return None


def row_group_metrics(
    row_group: pq.RowGroupMetaData, columns: Mapping[int, StatsColumn], *, path: str
) -> DataFile:
    """One row group's counts and untruncated bounds of ``columns`` as a data file's metrics."""
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for field_id, column in columns.items():
        chunk = row_group.column(column.index)
        values[field_id] = chunk.num_values
        stats = chunk.statistics if chunk.is_stats_set else None
        if stats is None or not stats.has_null_count:
            continue
        nulls[field_id] = stats.null_count
        if not stats.has_min_max:
            continue
        bounds = _bounds(column.field_type, stats)
        if bounds is not None:
            lower[field_id], upper[field_id] = bounds
    return DataFile(
        path,
        "PARQUET",
        (),
        row_group.num_rows,
        row_group.total_byte_size,
        value_counts=values,
        null_value_counts=nulls,
        lower_bounds=lower,
        upper_bounds=upper,
    )


def _bounds(t: PrimitiveType, stats: pq.Statistics) -> tuple[bytes, bytes] | None:
    """A chunk's min/max as Iceberg bound bytes; ``None`` when they prove nothing."""
    try:
        low: Any = stat_value(t, stats, "min")
        high: Any = stat_value(t, stats, "max")
        if has_nan_bound(low, high):  # parquet-java's max of a float column holding NaN
            return None
        if isinstance(t, UUIDType):
            low, high = uuid.UUID(bytes=low), uuid.UUID(bytes=high)
        return to_bytes(t, low), to_bytes(t, high)
    except (ValueError, ValidationError, pa.ArrowException):
        # Statistics another writer left in a form lakecat cannot decode (say, a string
        # bound that is not UTF-8) only cost the pruning: the row group is read.
        return None
