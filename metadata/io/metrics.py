"""Iceberg column metrics of a Parquet data file.

Counts and bounds come from the Parquet footer (fast: no data is re-read), following Iceberg
Java's ``ParquetUtil.footerMetrics`` and pyiceberg's
``data_file_statistics_from_parquet_metadata``:

* ``column_sizes``: compressed size of each leaf column, summed over row groups, for every
  leaf whatever its metrics mode.
* ``value_counts``: Parquet's ``num_values`` per leaf (nulls included; for a leaf inside a
  list or map this counts the elements, plus one for each null or empty list/map).
* ``null_value_counts``: Parquet's null count per leaf.
* ``nan_value_counts``: counted from the Arrow data for float and double leaves (including
  those in lists and maps), because Parquet statistics carry no NaN counts. pyiceberg 0.12
  leaves them out; Iceberg Java records them.
* ``lower_bounds``/``upper_bounds``: from the footer's min/max, for primitive leaves that are
  not inside a list or map (as Java's ``shouldStoreBounds``; pyiceberg 0.12 also drops them
  for fields inside structs, Java and lakecat keep them), NaN never being a bound (Parquet
  statistics already ignore NaN). Where the footer has no min/max for a column that holds
  values (e.g. pyarrow drops statistics of very long strings) they are computed from the data.

:func:`footer_metrics` describes a file from its footer alone (files another writer wrote,
e.g. Spark's Parquet writer, whose data lakecat never holds): NaN counts only where the writer
recorded them in the footer's key-value metadata (:func:`footer_nan_counts`: the catalog
plugin's ``IdParquetFormat`` does), null counts
only where the footer has them, and bounds only where every row group has a min/max that is
not NaN (parquet-java records NaN as a float column's max; Parquet statistics of other writers
may lack min/max for long values). :func:`footer_ranges` gives the untruncated min/max and
counts of chosen columns, to check what a writer claims about a file against its footer.

Metrics modes (``write.metadata.metrics.default``, default ``truncate(16)``, and
``write.metadata.metrics.column.<dotted name>``): ``none`` records only the column size,
``counts`` adds the counts, ``truncate(N)`` adds bounds with strings and binaries
shortened to N characters/bytes (the upper bound rounded up, and dropped if it cannot be),
``full`` adds untruncated bounds. ``truncate(N)`` on other types means ``full``.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecat.metadata import properties as props
from lakecat.metadata.errors import CorruptMetadata, ValidationError
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.arrow import list_parts, map_parts
from lakecat.metadata.schema.conversions import (
    to_bytes,
    truncate_lower_bound_binary,
    truncate_lower_bound_string,
    truncate_upper_bound_binary,
    truncate_upper_bound_string,
)
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    UUIDType,
)

# ---------------------------------------------------------------------------------------------
# Metrics modes


@dataclass(frozen=True, slots=True)
class MetricsMode:
    """``none``, ``counts``, ``truncate`` (with ``length``) or ``full``."""

    kind: str
    length: int | None = None

    @property
    def counts(self) -> bool:
        return self.kind != "none"

    @property
    def bounds(self) -> bool:
        return self.kind in ("truncate", "full")


NONE = MetricsMode("none")
COUNTS = MetricsMode("counts")
FULL = MetricsMode("full")
_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")


def parse_metrics_mode(text: str) -> MetricsMode:
    """Parse a metrics mode property value; raises :class:`ValidationError` if malformed."""
    normalized = text.strip().lower()
    if normalized in ("none", "counts", "full"):
        return MetricsMode(normalized)
    if m := _TRUNCATE.match(normalized):
        length = int(m.group(1))
        if length > 0:
            return MetricsMode("truncate", length)
    raise ValidationError(
        f"malformed metrics mode {text!r}; expected none, counts, truncate(N) with N > 0, or full"
    )


def metrics_mode(
    properties: Mapping[str, str], column_name: str, t: PrimitiveType, *, repeated: bool
) -> MetricsMode:
    """The effective mode of one leaf column (dotted ``column_name``)."""
    text = properties.get(props.METRICS_MODE_COLUMN_PREFIX + column_name)
    if text is None:
        text = properties.get(props.METRICS_MODE_DEFAULT, props.METRICS_MODE_DEFAULT_DEFAULT)
    mode = parse_metrics_mode(text)
    if mode.kind == "truncate" and not isinstance(t, (StringType, BinaryType)):
        mode = FULL
    if repeated and mode.bounds:
        mode = COUNTS  # bounds of list elements or map entries are not kept
    return mode


# ---------------------------------------------------------------------------------------------
# Leaves of a schema in Parquet column order


@dataclass(frozen=True, slots=True)
class Leaf:
    """A primitive field as one Parquet column: ``steps`` walk an Arrow column down to it."""

    field_id: int
    name: str
    field_type: PrimitiveType
    parquet_path: str
    steps: tuple[int | str, ...]  # struct child index, "element", "key" or "value"
    repeated: bool


def leaves(schema: Schema) -> list[Leaf]:
    """Primitive leaves in the order pyarrow writes them as Parquet columns."""
    out: list[Leaf] = []
    for index, f in enumerate(schema.fields):
        _collect(f, f.name, f.name, (index,), False, out)
    return out


def _collect(
    f: NestedField,
    name: str,
    path: str,
    steps: tuple[int | str, ...],
    repeated: bool,
    out: list[Leaf],
) -> None:
    t = f.field_type
    if isinstance(t, StructType):
        for i, child in enumerate(t.fields):
            _collect(
                child, f"{name}.{child.name}", f"{path}.{child.name}", (*steps, i), repeated, out
            )
    elif isinstance(t, ListType):
        element = t.element_field
        _collect(element, f"{name}.element", f"{path}.list.element", (*steps, "element"), True, out)
    elif isinstance(t, MapType):
        _collect(t.key_field, f"{name}.key", f"{path}.key_value.key", (*steps, "key"), True, out)
        _collect(
            t.value_field, f"{name}.value", f"{path}.key_value.value", (*steps, "value"), True, out
        )
    else:
        assert isinstance(t, PrimitiveType)
        out.append(Leaf(f.field_id, name, t, path, steps, repeated))


def leaf_arrays(data: pa.Table, leaf: Leaf) -> Iterator[pa.Array]:
    """The values of a leaf, chunk by chunk: nulls of parents applied, lists unnested."""
    first = leaf.steps[0]
    assert isinstance(first, int)
    for chunk in data.column(first).chunks:
        yield _descend(chunk, leaf.steps[1:])


def _descend(arr: pa.Array, steps: tuple[int | str, ...]) -> pa.Array:
    for step in steps:
        if isinstance(step, int):
            arr = arr.flatten()[step]  # struct: merges the parent's validity
        elif step == "element":
            arr = list_parts(arr)[1]
        else:
            _, keys, values = map_parts(arr)
            arr = keys if step == "key" else values
    return arr


# ---------------------------------------------------------------------------------------------
# Metrics


@dataclass(frozen=True, slots=True)
class FileMetrics:
    record_count: int
    column_sizes: dict[int, int]
    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]
    lower_bounds: dict[int, bytes]
    upper_bounds: dict[int, bytes]
    split_offsets: tuple[int, ...]

    def data_file(
        self,
        *,
        location: str,
        size: int,
        spec_id: int,
        partition: tuple[Any, ...],
        sort_order_id: int | None = None,
    ) -> DataFile:
        """The Parquet data file at ``location`` (``size`` bytes) these metrics describe."""
        return DataFile(
            file_path=location,
            file_format="PARQUET",
            partition=tuple(partition),
            record_count=self.record_count,
            file_size_in_bytes=size,
            spec_id=spec_id,
            column_sizes=self.column_sizes,
            value_counts=self.value_counts,
            null_value_counts=self.null_value_counts,
            nan_value_counts=self.nan_value_counts,
            lower_bounds=self.lower_bounds,
            upper_bounds=self.upper_bounds,
            split_offsets=self.split_offsets,
            sort_order_id=sort_order_id,
        )


def file_metrics(
    metadata: pq.FileMetaData, data: pa.Table, schema: Schema, properties: Mapping[str, str]
) -> FileMetrics:
    """Metrics of a Parquet file that was written from ``data`` (schema ``schema``)."""
    return _metrics(metadata, data, schema, properties)


def footer_metrics(
    metadata: pq.FileMetaData, schema: Schema, properties: Mapping[str, str]
) -> FileMetrics:
    """Metrics of a Parquet file (schema ``schema``) from its footer alone: NaN counts only
    from :func:`footer_nan_counts`, and no null count or bounds for a column whose footer
    statistics lack them (bounds also not when a min or max is NaN). Raises
    :class:`CorruptMetadata` when the file's columns are not the schema's leaves in order."""
    return _metrics(metadata, None, schema, properties)


def resolved_footer_metrics(
    metadata: pq.FileMetaData,
    schema: Schema,
    properties: Mapping[str, str],
    columns: Mapping[int, int],
) -> FileMetrics:
    """Metrics of a Parquet file that another writer laid out (added to a table as it is),
    from its footer alone as :func:`footer_metrics`: ``columns`` maps the field id of a leaf
    of ``schema`` to the file's Parquet column that a read of it returns, unchanged (same
    type: found as the reader finds it); leaves not in ``columns`` get no metrics."""
    chosen = [(leaf, columns[leaf.field_id]) for leaf in leaves(schema) if leaf.field_id in columns]
    return _metrics_of(metadata, None, chosen, properties)


def _check_columns(metadata: pq.FileMetaData, columns: list[Leaf]) -> None:
    if metadata.num_columns != len(columns):
        raise CorruptMetadata(
            f"the Parquet file has {metadata.num_columns} columns, the schema {len(columns)} leaves"
        )
    schema_columns = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
    if schema_columns != [leaf.parquet_path for leaf in columns]:
        raise CorruptMetadata(f"Parquet columns {schema_columns} do not follow the schema")


def _metrics(
    metadata: pq.FileMetaData,
    data: pa.Table | None,
    schema: Schema,
    properties: Mapping[str, str],
) -> FileMetrics:
    columns = leaves(schema)
    _check_columns(metadata, columns)
    return _metrics_of(metadata, data, [(leaf, i) for i, leaf in enumerate(columns)], properties)


def _metrics_of(
    metadata: pq.FileMetaData,
    data: pa.Table | None,
    columns: list[tuple[Leaf, int]],
    properties: Mapping[str, str],
) -> FileMetrics:
    """Metrics of the leaves in ``columns``, each with the index of its Parquet column."""
    acc = _Accumulator(properties)
    for r in range(metadata.num_row_groups):
        row_group = metadata.row_group(r)
        for leaf, pos in columns:
            acc.add_chunk(leaf, row_group.column(pos))
    for leaf, _ in columns:
        acc.finish(leaf, data)
    if data is None:
        acc.footer_nan_counts(metadata, columns)
    return FileMetrics(
        record_count=metadata.num_rows,
        column_sizes=acc.column_sizes,
        value_counts=acc.value_counts,
        null_value_counts=acc.null_counts,
        nan_value_counts=acc.nan_counts,
        lower_bounds=acc.lower,
        upper_bounds=acc.upper,
        split_offsets=split_offsets(metadata),
    )


def split_offsets(metadata: pq.FileMetaData) -> tuple[int, ...]:
    """Start offsets of the row groups (dictionary page if it comes first), sorted."""
    offsets = []
    for r in range(metadata.num_row_groups):
        row_group = metadata.row_group(r)
        if row_group.num_rows == 0 or row_group.num_columns == 0:
            continue  # an empty file's row group has no pages to split at
        first = row_group.column(0)
        start = first.data_page_offset
        if first.has_dictionary_page and first.dictionary_page_offset < start:
            start = first.dictionary_page_offset
        offsets.append(start)
    return tuple(sorted(offsets))


NAN_COUNTS_KEY = b"lakecat.nan.counts"


def footer_nan_counts(metadata: pq.FileMetaData) -> dict[int, int]:
    """The NaN count of each float and double column (by its index among the file's columns)
    that lakecat's Spark writer, the catalog plugin's ``IdParquetFormat``, records in the
    footer's key-value metadata (``lakecat.nan.counts``: ``"<column>:<count>,..."``), since
    Parquet's statistics carry none; empty for a file of another writer."""
    text = (metadata.metadata or {}).get(NAN_COUNTS_KEY)
    if not text:
        return {}
    try:
        pairs = [item.split(":") for item in text.decode().split(",")]
        return {int(column): int(count) for column, count in pairs}
    except ValueError:
        raise CorruptMetadata(
            f"the footer's {NAN_COUNTS_KEY.decode()} is not column:count pairs: {text!r}"
        ) from None


class _Accumulator:
    def __init__(self, properties: Mapping[str, str]) -> None:
        self.properties = properties
        self.column_sizes: dict[int, int] = {}
        self.value_counts: dict[int, int] = {}
        self.null_counts: dict[int, int] = {}
        self.nan_counts: dict[int, int] = {}
        self.lower: dict[int, bytes] = {}
        self.upper: dict[int, bytes] = {}
        self._modes: dict[int, MetricsMode] = {}
        self._min: dict[int, Any] = {}
        self._max: dict[int, Any] = {}
        self._nulls_unknown: set[int] = set()
        self._bounds_unknown: set[int] = set()

    def mode(self, leaf: Leaf) -> MetricsMode:
        mode = self._modes.get(leaf.field_id)
        if mode is None:
            mode = metrics_mode(self.properties, leaf.name, leaf.field_type, repeated=leaf.repeated)
            self._modes[leaf.field_id] = mode
        return mode

    def add_chunk(self, leaf: Leaf, column: pq.ColumnChunkMetaData) -> None:
        fid = leaf.field_id
        self.column_sizes[fid] = self.column_sizes.get(fid, 0) + column.total_compressed_size
        mode = self.mode(leaf)
        if not mode.counts:
            return
        self.value_counts[fid] = self.value_counts.get(fid, 0) + column.num_values
        stats = column.statistics if column.is_stats_set else None
        if stats is None or not stats.has_null_count:
            self._nulls_unknown.add(fid)
            self._bounds_unknown.add(fid)
            return
        self.null_counts[fid] = self.null_counts.get(fid, 0) + stats.null_count
        if not mode.bounds:
            return
        if not stats.has_min_max:
            if column.num_values > stats.null_count:  # values exist but have no statistics
                self._bounds_unknown.add(fid)
            return
        low, high = (
            stat_value(leaf.field_type, stats, "min"),
            stat_value(leaf.field_type, stats, "max"),
        )
        if has_nan_bound(low, high):  # parquet-java's max of a float column holding NaN
            self._bounds_unknown.add(fid)
            return
        if fid not in self._min or low < self._min[fid]:
            self._min[fid] = low
        if fid not in self._max or high > self._max[fid]:
            self._max[fid] = high

    def footer_nan_counts(self, metadata: pq.FileMetaData, columns: list[tuple[Leaf, int]]) -> None:
        """The NaN counts the writer recorded in the footer (:func:`footer_nan_counts`), for the
        float and double leaves whose mode keeps counts."""
        written = footer_nan_counts(metadata)
        for leaf, pos in columns:
            fid = leaf.field_id
            if pos not in written or not isinstance(leaf.field_type, (FloatType, DoubleType)):
                continue
            if not self.mode(leaf).counts:
                continue
            if written[pos] > self.value_counts.get(fid, 0):
                raise CorruptMetadata(
                    f"the footer counts {written[pos]} NaN in column {pos} ({leaf.name}), "
                    f"which holds {self.value_counts.get(fid, 0)} values"
                )
            self.nan_counts[fid] = written[pos]

    def finish(self, leaf: Leaf, data: pa.Table | None) -> None:
        """Complete a leaf's metrics: from ``data`` where the footer falls short, or, without
        data (footer only), by leaving out what the footer does not tell."""
        fid = leaf.field_id
        mode = self.mode(leaf)
        if not mode.counts:
            return
        if data is not None and isinstance(leaf.field_type, (FloatType, DoubleType)):
            self.nan_counts[fid] = sum(_nan_count(a) for a in leaf_arrays(data, leaf))
        if fid in self._nulls_unknown:
            if leaf.repeated or data is None:
                self.null_counts.pop(fid, None)  # Parquet's list null semantics: not recomputed
            else:
                self.null_counts[fid] = sum(a.null_count for a in leaf_arrays(data, leaf))
        if not mode.bounds:
            return
        if fid in self._bounds_unknown:
            self._min.pop(fid, None)
            self._max.pop(fid, None)
            low, high = _data_bounds(leaf, data) if data is not None else (None, None)
            if low is not None:
                self._min[fid], self._max[fid] = low, high
        if fid in self._min:
            self._store_bounds(leaf, mode, self._min[fid], self._max[fid])

    def _store_bounds(self, leaf: Leaf, mode: MetricsMode, low: Any, high: Any) -> None:
        t, fid, width = leaf.field_type, leaf.field_id, mode.length
        if width is not None and isinstance(t, StringType):
            low, high = (
                truncate_lower_bound_string(low, width),
                truncate_upper_bound_string(high, width),
            )
        elif width is not None and isinstance(t, BinaryType):
            low, high = (
                truncate_lower_bound_binary(low, width),
                truncate_upper_bound_binary(high, width),
            )
        if isinstance(t, UUIDType):
            low, high = uuid.UUID(bytes=low), uuid.UUID(bytes=high)
        self.lower[fid] = to_bytes(t, low)
        if high is not None:  # an upper bound that cannot be truncated is left out
            self.upper[fid] = to_bytes(t, high)


def stat_value(t: PrimitiveType, stats: pq.Statistics, which: str) -> Any:
    """A footer min/max in a form that orders like Iceberg: ints for temporal types (the raw
    Parquet value in the unit lakecat writes: days or microseconds), Decimal, str, and bytes
    for binary, fixed and uuid (compared unsigned, converted to UUID at the end)."""
    if isinstance(t, (DecimalType, StringType, BooleanType)):
        return getattr(stats, which)  # pyarrow decodes decimals (any physical type) and UTF-8
    raw = getattr(stats, which + "_raw")
    if isinstance(t, (BinaryType, FixedType, UUIDType)):
        return bytes(raw)
    return raw


def has_nan_bound(low: Any, high: Any) -> bool:
    return any(isinstance(v, float) and math.isnan(v) for v in (low, high))


@dataclass(frozen=True, slots=True)
class ColumnRange:
    """What a footer says about one leaf column over all row groups: its value count (nulls
    included), null count, and untruncated min/max (None when some row group lacks them or
    a bound is NaN) in lakecat's in-memory form (days and microseconds for dates and
    timestamps, ``Decimal``, ``str``, ``bytes`` for binary)."""

    value_count: int
    null_count: int | None
    low: Any = None
    high: Any = None


def footer_ranges(
    metadata: pq.FileMetaData, schema: Schema, field_ids: Iterable[int]
) -> dict[int, ColumnRange]:
    """:class:`ColumnRange` of the primitive leaves ``field_ids`` (not inside lists or maps)
    of a Parquet file whose columns are ``schema``'s leaves, whatever the metrics modes."""
    columns = leaves(schema)
    _check_columns(metadata, columns)
    wanted = set(field_ids)
    out: dict[int, ColumnRange] = {}
    for pos, leaf in enumerate(columns):
        if leaf.field_id not in wanted or leaf.repeated:
            continue
        values, nulls, low, high = 0, 0, None, None
        nulls_known = bounds_known = True
        for r in range(metadata.num_row_groups):
            column = metadata.row_group(r).column(pos)
            values += column.num_values
            stats = column.statistics if column.is_stats_set else None
            if stats is None or not stats.has_null_count:
                nulls_known = bounds_known = False
                continue
            nulls += stats.null_count
            if not stats.has_min_max:
                bounds_known = bounds_known and column.num_values == stats.null_count
                continue
            lo = stat_value(leaf.field_type, stats, "min")
            hi = stat_value(leaf.field_type, stats, "max")
            if has_nan_bound(lo, hi):
                bounds_known = False
                continue
            low = lo if low is None or lo < low else low
            high = hi if high is None or hi > high else high
        if not bounds_known:
            low = high = None
        out[leaf.field_id] = ColumnRange(values, nulls if nulls_known else None, low, high)
    return out


def _nan_count(arr: pa.Array) -> int:
    if len(arr) == 0:
        return 0
    total = pc.sum(pc.is_nan(arr)).as_py()  # is_nan of a null is null, which sum skips
    return int(total or 0)


def _data_bounds(leaf: Leaf, data: pa.Table) -> tuple[Any, Any]:
    """Min and max computed from the data, NaN and nulls excluded; (None, None) if none."""
    low: Any = None
    high: Any = None
    for arr in leaf_arrays(data, leaf):
        if isinstance(arr.type, pa.ExtensionType):
            arr = arr.storage
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary.take(arr.indices.unique().drop_null())
        if isinstance(leaf.field_type, (FloatType, DoubleType)):
            arr = arr.filter(pc.invert(pc.is_nan(arr)))
        arr = arr.drop_null()
        if len(arr) == 0:
            continue
        result = pc.min_max(arr)
        chunk_low = _physical(leaf.field_type, result["min"])
        chunk_high = _physical(leaf.field_type, result["max"])
        low = chunk_low if low is None or chunk_low < low else low
        high = chunk_high if high is None or chunk_high > high else high
    return low, high


def _physical(t: IcebergType, scalar: pa.Scalar) -> Any:
    """An Arrow scalar in the form of :func:`stat_value`."""
    value_type = scalar.type
    if pa.types.is_date32(value_type):
        return scalar.cast(pa.int32()).as_py()
    if pa.types.is_timestamp(value_type) or pa.types.is_time64(value_type):
        return scalar.cast(pa.int64()).as_py()
    value = scalar.as_py()
    if isinstance(t, (BinaryType, FixedType, UUIDType)):
        return bytes(value)
    return value
