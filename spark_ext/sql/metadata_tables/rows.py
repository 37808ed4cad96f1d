"""The rows of each metadata table, from the table's metadata, manifest lists and manifests:
made on the driver for the tables of snapshots, refs, manifest lists and partitions, a group of
manifests at a time (:class:`RowsPlan`, a Spark task each) for the tables that list manifest
entries, files and deleted positions, which grow with the table."""

from __future__ import annotations

import contextlib
import datetime as dt
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as st

from lakecat.catalog import Table
from lakecat.metadata import properties as P
from lakecat.metadata.deletes import positions_array, read_deletion_vector
from lakecat.metadata.errors import CorruptMetadata, SchemaMismatch, ValidationError
from lakecat.metadata.manifests import (
    Content,
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    Status,
    read_manifest,
    read_manifest_list,
)
from lakecat.metadata.partitioning import (
    PartitionField,
    PartitionSpec,
    Transform,
    parse_transform,
    source_type,
)
from lakecat.metadata.schema import (
    DoubleType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    PrimitiveType,
    Schema,
    StringType,
    StructType,
    TimestamptzType,
    TimeType,
    UUIDType,
    decode_bound,
)
from lakecat.metadata.table import TableMetadata
from lakecat.spark_ext.source.partition_column import PartitionColumn, spark_value
from lakecat.spark_ext.sql.metadata_tables.schemas import METADATA_TABLES, Shape, schema
from lakecat.spark_ext.types import spark_field, spark_type


def rows(table: Table, kind: str) -> list[tuple[Any, ...]]:
    """The rows of one metadata table of ``table``, all made here."""
    plan = plan_rows(table, kind)
    if plan.rows is not None:
        return plan.rows
    return [r for group in plan.groups for r in plan.rows_of(table.io, group)]


@dataclass(frozen=True)
class RowsPlan:
    """How one metadata table's rows are made: ``rows``, made on the driver (the tables
    of snapshots, refs, manifest lists, partitions), or ``groups`` of manifests whose rows
    :meth:`rows_of` makes from each group apart (the tables of manifest entries and files,
    and of the positions delete files hold, which grow with the table: a task per group)."""

    kind: str
    decoder: _Decoder
    rows: list[tuple[Any, ...]] | None = None
    groups: tuple[tuple[ManifestFile, ...], ...] = ()
    columns: tuple[int, ...] | None = None  # the columns read (see pruned); None: all

    @property
    def schema(self) -> st.StructType:
        """The table's columns (they depend on the table: see :class:`Shape`)."""
        return schema(self.kind, self.decoder.shape())

    def rows_of(self, io: Any, manifests: Iterable[ManifestFile]) -> list[tuple[Any, ...]]:
        per_manifest = _PER_MANIFEST[self.kind][1]
        made = [r for m in manifests for r in per_manifest(self.decoder, io, m)]
        return made if self.columns is None else _project(made, self.columns)

    def pruned(self, columns: st.StructType) -> RowsPlan:
        """This plan reading only ``columns`` (what Spark asked for: some of the table's
        columns, by name); ``readable_metrics``, the costly one, is not even made when it is
        not among them. :class:`SchemaMismatch` when one of them is not a column of the
        table now (the table changed shape since the query was planned: run it again)."""
        full = self.schema
        index = {f.name: (i, f.dataType.simpleString()) for i, f in enumerate(full.fields)}
        picked = []
        for f in columns.fields:
            found = index.get(f.name)
            if found is None or found[1] != f.dataType.simpleString():
                raise SchemaMismatch(
                    f"the columns of {self.kind} changed after the query was planned (the "
                    "table's schema or partition spec changed): run it again. Planned: "
                    f"{columns.simpleString()}; now: {full.simpleString()}"
                )
            picked.append(found[0])
        if picked == list(range(len(full.fields))):
            return self
        decoder = self.decoder
        if "readable_metrics" not in columns.fieldNames():
            decoder = replace(decoder, with_metrics=False)
        rows = None if self.rows is None else _project(self.rows, tuple(picked))
        return replace(self, decoder=decoder, rows=rows, columns=tuple(picked))


def _project(rows: list[tuple[Any, ...]], columns: tuple[int, ...]) -> list[tuple[Any, ...]]:
    return [tuple(r[i] for i in columns) for r in rows]


def metadata_table_schema(table: Table, kind: str) -> st.StructType:
    """The columns of one metadata table of ``table``."""
    if kind not in METADATA_TABLES:
        raise ValidationError(
            f"no metadata table {kind!r}: use one of {', '.join(METADATA_TABLES)}"
        )
    return schema(kind, _Decoder.of(table.metadata).shape())


def plan_rows(table: Table, kind: str, snapshot_id: int | None = None) -> RowsPlan:
    """The plan of one metadata table of ``table``: its rows, or its manifests in groups of
    at most the table's ``read.split.metadata-target-size`` bytes of manifest files each
    (Iceberg's property and default, 32 MiB; a larger manifest is a group of its own).
    ``snapshot_id``: time travel, for the tables of one snapshot (:data:`TIME_TRAVEL`)."""
    if snapshot_id is not None:
        check_time_travel(kind)
    t = _Tables(table, snapshot_id)
    per_manifest = _PER_MANIFEST.get(kind)
    if per_manifest is not None:
        size = P.get_int(
            t.metadata.properties, P.METADATA_SPLIT_SIZE, P.METADATA_SPLIT_SIZE_DEFAULT
        )
        return RowsPlan(kind, t.decoder, groups=_grouped(per_manifest[0](t), max(1, size)))
    make = _ROWS.get(kind)
    if make is None:
        raise ValidationError(
            f"no metadata table {kind!r}: use one of {', '.join(METADATA_TABLES)}"
        )
    return RowsPlan(kind, t.decoder, rows=make(t))


def check_time_travel(kind: str) -> None:
    """Refuse time travel of a metadata table other than those of one snapshot
    (:data:`TIME_TRAVEL`)."""
    if kind not in TIME_TRAVEL:
        raise ValidationError(
            f"the {kind} metadata table has no time travel (it shows the whole history); "
            f"the tables of one snapshot have it: {', '.join(sorted(TIME_TRAVEL))}"
        )


def _grouped(
    manifests: list[ManifestFile], group_bytes: int
) -> tuple[tuple[ManifestFile, ...], ...]:
    groups: list[list[ManifestFile]] = []
    size = 0
    for m in manifests:
        if not groups or size + m.manifest_length > group_bytes:
            groups.append([])
            size = 0
        groups[-1].append(m)
        size += m.manifest_length
    return tuple(tuple(g) for g in groups)


def _time(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


@dataclass(frozen=True, slots=True)
class _PartitionField:
    """A partition field with what renders its values: its transform and result type."""

    field_id: int
    name: str
    transform: Transform
    result_type: IcebergType

    @staticmethod
    def of(p: PartitionField, schemas: Iterable[Schema]) -> _PartitionField:
        transform = parse_transform(p.transform, strict=False)
        source = source_type(schemas, p.source_id)
        return _PartitionField(p.field_id, p.name, transform, transform.result_type(source))

    def human(self, bound: bytes | None) -> str:
        """A partition summary's bound as Iceberg's ``manifests`` table shows it: the value in
        human form, a missing one as ``"null"`` (Java's ``Transform.toHumanString``)."""
        value = None if bound is None else decode_bound(self.result_type, bound)
        return "null" if value is None else self.transform.to_human_string(self.result_type, value)


@dataclass(frozen=True, slots=True)
class _MetricColumn:
    """A primitive column of ``readable_metrics``: its field id, qualified name (Iceberg's
    ``Schema.idToName``: ``location.lat``, ``tags.element``), type, and what reads one of its
    bounds as PySpark takes it."""

    field_id: int
    name: str
    type: PrimitiveType
    bound: Callable[[bytes], Any]

    @staticmethod
    def of(field_id: int, name: str, t: PrimitiveType) -> _MetricColumn:
        return _MetricColumn(field_id, name, t, _bound_reader(t))

    def spark_field(self) -> st.StructField:
        bound = spark_type(self.type, self.name, time_as_text=True)
        counts = [st.StructField(n, st.LongType()) for n in _COUNTS]
        bounds = [st.StructField(n, bound) for n in ("lower_bound", "upper_bound")]
        return st.StructField(self.name, st.StructType([*counts, *bounds]))


def _bound_reader(t: PrimitiveType) -> Callable[[bytes], Any]:
    """What reads a bound of type ``t`` (single-value binary form) as PySpark takes it: a
    short path for the common types (a file has a bound per column, and the files tables
    decode them for every file), :func:`decode_bound` and :func:`_spark_value` for the rest
    and for anything the short path does not read (which they refuse as corrupt). Made of
    module functions, so that the decoder pickles to the tasks."""
    if isinstance(t, IntegerType):
        return partial(_integer_bound, (4,), t)
    if isinstance(t, LongType):
        return partial(_integer_bound, (4, 8), t)  # a promoted int keeps its 4 bytes
    if isinstance(t, DoubleType):
        return partial(_double_bound, t)
    if isinstance(t, StringType):
        return partial(_text_bound, t)
    return partial(_bound, t)


def _bound(t: PrimitiveType, data: bytes) -> Any:
    return spark_value(t, decode_bound(t, data))


def _integer_bound(sizes: tuple[int, ...], t: PrimitiveType, data: bytes) -> Any:
    if len(data) in sizes:
        return int.from_bytes(data, "little", signed=True)
    return _bound(t, data)


def _double_bound(t: PrimitiveType, data: bytes) -> Any:
    if len(data) == 8:
        return struct.unpack("<d", data)[0]
    return _bound(t, data)  # a promoted float's 4 bytes, or corrupt


def _text_bound(t: PrimitiveType, data: bytes) -> Any:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return _bound(t, data)


_COUNTS = ("column_size", "value_count", "null_value_count", "nan_value_count")


@dataclass(frozen=True)
class _Decoder:
    """What turns a table's manifests into rows, without the table (sent to the tasks):
    its specs and current schema, and the partition fields their values are shown by."""

    specs: Mapping[int, PartitionSpec]
    schema: Schema
    union: PartitionColumn  # the partition type over all specs, as the _partition column's
    fields: Mapping[int, tuple[_PartitionField, ...]]
    metric_columns: tuple[_MetricColumn, ...]
    format_version: int
    with_metrics: bool = True  # False: readable_metrics is null (a read that leaves it out)

    @staticmethod
    def of(metadata: TableMetadata) -> _Decoder:
        schema = metadata.schema()
        return _Decoder(
            metadata.specs_by_id(),
            schema,
            PartitionColumn.of(metadata),
            {
                s.spec_id: tuple(_PartitionField.of(p, metadata.schemas) for p in s.fields)
                for s in metadata.partition_specs
            },
            _metric_columns(schema),
            metadata.format_version,
        )

    def shape(self) -> Shape:
        """The table-dependent columns of the table's metadata tables."""
        return Shape(
            partition=self.union.spark_type(),
            readable_metrics=st.StructType([c.spark_field() for c in self.metric_columns]),
            row=st.StructType(
                [spark_field(f, f.name, time_as_text=True) for f in self.schema.fields]
            ),
            format_version=self.format_version,
        )

    # ---- reading ------------------------------------------------------------------------
    def entries(self, io: Any, manifest: ManifestFile) -> list[ManifestEntry]:
        return read_manifest(io, manifest, specs=self.specs, schema=self.schema)

    def live_entries(self, io: Any, manifest: ManifestFile) -> Iterator[ManifestEntry]:
        return (e for e in self.entries(io, manifest) if e.status is not Status.DELETED)

    # ---- values -------------------------------------------------------------------------
    def partition(self, f: DataFile) -> tuple[Any, ...]:
        """``f``'s partition over the union of the table's partition fields (Iceberg's
        partition type): null for a field its spec lacks."""
        return self.union.value(f)

    def partition_column(self, f: DataFile) -> tuple[Any, ...]:
        """The ``partition`` column's value, or nothing where the table has no partition
        fields (Iceberg leaves the column out)."""
        return (self.partition(f),) if self.union.partitioned else ()

    def row(self, stored: Mapping[str, Any]) -> tuple[Any, ...]:
        """A deleted row a position delete file stores, in the table's current columns
        (matched by name; a column the file lacks is null)."""
        value = _stored_value(self.schema.as_struct, stored)
        assert isinstance(value, tuple)
        return value

    def readable_metrics(self, f: DataFile) -> tuple[tuple[Any, ...], ...] | None:
        if not self.with_metrics:
            return None
        sizes, values = f.column_sizes or {}, f.value_counts or {}
        nulls, nans = f.null_value_counts or {}, f.nan_value_counts or {}
        lowers, uppers = f.lower_bounds or {}, f.upper_bounds or {}
        out = []
        for c in self.metric_columns:
            fid = c.field_id
            lower, upper = lowers.get(fid), uppers.get(fid)
            out.append(
                (
                    sizes.get(fid),
                    values.get(fid),
                    nulls.get(fid),
                    nans.get(fid),
                    None if lower is None else c.bound(lower),
                    None if upper is None else c.bound(upper),
                )
            )
        return tuple(out)

    def content_file(self, f: DataFile) -> tuple[Any, ...]:
        return (
            int(f.content),
            f.file_path,
            f.file_format.upper(),
            f.spec_id,
            *self.partition_column(f),
            f.record_count,
            f.file_size_in_bytes,
            _dict(f.column_sizes),
            _dict(f.value_counts),
            _dict(f.null_value_counts),
            _dict(f.nan_value_counts),
            _dict(f.lower_bounds),
            _dict(f.upper_bounds),
            f.key_metadata,
            None if f.split_offsets is None else list(f.split_offsets),
            None if f.equality_ids is None else list(f.equality_ids),
            f.sort_order_id,
            f.first_row_id,
            f.referenced_data_file,
            f.content_offset,
            f.content_size_in_bytes,
        )

    def manifest(self, m: ManifestFile) -> tuple[Any, ...]:
        data = m.content is ManifestContent.DATA
        counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count)
        return (
            int(m.content),
            m.manifest_path,
            m.manifest_length,
            m.partition_spec_id,
            m.added_snapshot_id,
            *(counts if data else (0, 0, 0)),
            *((0, 0, 0) if data else counts),
            self._summaries(m),
        )

    def _summaries(self, m: ManifestFile) -> list[tuple[Any, ...]] | None:
        if m.partitions is None:
            return None
        out = []
        for p, summary in zip(self.fields[m.partition_spec_id], m.partitions, strict=True):
            lower, upper = p.human(summary.lower_bound), p.human(summary.upper_bound)
            out.append((summary.contains_null, summary.contains_nan, lower, upper))
        return out

    def entry(self, e: ManifestEntry) -> tuple[Any, ...]:
        return (
            int(e.status),
            e.snapshot_id,
            e.sequence_number,
            e.file_sequence_number,
            self.content_file(e.data_file),
            self.readable_metrics(e.data_file),
        )

    def file(self, f: DataFile) -> tuple[Any, ...]:
        """A row of the files tables: the file's columns, then ``readable_metrics``."""
        return (*self.content_file(f), self.readable_metrics(f))


class _Tables:
    """What the driver reads of one table for its metadata tables: its metadata and
    manifest lists (and, for the tables it makes whole, its manifests)."""

    def __init__(self, table: Table, snapshot_id: int | None = None) -> None:
        self.table = table
        self.metadata = table.metadata
        self.decoder = _Decoder.of(self.metadata)
        self.snapshot_id = snapshot_id  # time travel: the snapshot the "current" tables show

    def manifest_list(self, manifest_list: str | None) -> list[ManifestFile]:
        if manifest_list is None:
            return []
        return read_manifest_list(self.table.io, manifest_list)

    def current_manifests(self) -> list[ManifestFile]:
        """The manifests of the current snapshot, or of the one time travel chose."""
        snapshot = (
            self.metadata.current_snapshot
            if self.snapshot_id is None
            else self.metadata.snapshot_by_id(self.snapshot_id)
        )
        return self.manifest_list(None if snapshot is None else snapshot.manifest_list)

    def reachable_manifests(self) -> list[ManifestFile]:
        """Every manifest any snapshot lists, once (Iceberg: a set of manifests by path)."""
        seen: dict[str, ManifestFile] = {}
        for snapshot in self.table.snapshots():
            for m in self.manifest_list(snapshot.manifest_list):
                seen.setdefault(m.manifest_path, m)
        return list(seen.values())


def _stored_value(t: IcebergType, value: Any) -> Any:
    """A value read from a Parquet file by Arrow (``to_pylist``) as PySpark takes it for
    :func:`~lakecat.spark_ext.types.spark_type` with ``time_as_text``."""
    if value is None:
        return None
    if isinstance(t, StructType):
        return tuple(_stored_value(f.field_type, value.get(f.name)) for f in t.fields)
    if isinstance(t, ListType):
        return [_stored_value(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        pairs = value.items() if isinstance(value, Mapping) else value
        return {_stored_value(t.key_type, k): _stored_value(t.value_type, v) for k, v in pairs}
    if isinstance(t, TimeType):
        return value.isoformat() if isinstance(value, dt.time) else str(value)
    if isinstance(t, UUIDType):
        return str(uuid.UUID(bytes=bytes(value))) if isinstance(value, bytes) else str(value)
    if isinstance(t, TimestamptzType) and isinstance(value, dt.datetime) and not value.tzinfo:
        return value.replace(tzinfo=dt.UTC)
    return value


def _metric_columns(schema: Schema) -> tuple[_MetricColumn, ...]:
    """Every primitive field of ``schema``, nested ones too, by qualified name (Iceberg's
    ``MetricsUtil.readableMetricsSchema``)."""
    columns = []
    for field_id in schema.field_ids():
        t = schema.find_type(field_id)
        if isinstance(t, PrimitiveType):
            columns.append(_MetricColumn.of(field_id, schema.column_name(field_id), t))
    return tuple(sorted(columns, key=lambda c: c.name))


def _dict(m: Mapping[int, Any] | None) -> dict[int, Any] | None:
    return None if m is None else dict(m)


# ---- the tables ---------------------------------------------------------------------------
def _snapshots(t: _Tables) -> list[tuple[Any, ...]]:
    return [
        (
            _time(s.timestamp_ms),
            s.snapshot_id,
            s.parent_snapshot_id,
            s.operation,
            s.manifest_list,
            dict(s.summary),
        )
        for s in t.table.snapshots()
    ]


def _history(t: _Tables) -> list[tuple[Any, ...]]:
    table = t.table
    return [
        (_time(ms), snapshot_id, table.snapshot(snapshot_id).parent_snapshot_id, ancestor)
        for ms, snapshot_id, ancestor in table.history()
    ]


def _refs(t: _Tables) -> list[tuple[Any, ...]]:
    return [
        (
            name,
            ref.ref_type.upper(),  # Iceberg: SnapshotRefType.name()
            ref.snapshot_id,
            ref.max_ref_age_ms,
            ref.min_snapshots_to_keep,
            ref.max_snapshot_age_ms,
        )
        for name, ref in sorted(t.table.refs().items())
    ]


def _metadata_log_entries(t: _Tables) -> list[tuple[Any, ...]]:
    m = t.metadata
    logged = [(e.timestamp_ms, e.metadata_file) for e in m.metadata_log]
    out = []
    for ms, location in [*logged, (m.last_updated_ms, t.table.metadata_location)]:
        # Iceberg: the snapshot current at that time by the snapshot log (SnapshotUtil)
        current = [e.snapshot_id for e in m.snapshot_log if e.timestamp_ms <= ms]
        snapshot_id = current[-1] if current else None
        snapshot = (
            m.snapshot_by_id(snapshot_id)
            if snapshot_id is not None and m.has_snapshot(snapshot_id)
            else None
        )
        out.append(
            (
                _time(ms),
                location,
                snapshot_id,
                None if snapshot is None else snapshot.schema_id,
                None if snapshot is None else snapshot.sequence_number,
            )
        )
    return out


def _manifests(t: _Tables) -> list[tuple[Any, ...]]:
    return [t.decoder.manifest(m) for m in t.current_manifests()]


def _all_manifests(t: _Tables) -> list[tuple[Any, ...]]:
    return [
        (*t.decoder.manifest(m), snapshot.snapshot_id, m.key_metadata)
        for snapshot in t.table.snapshots()
        for m in t.manifest_list(snapshot.manifest_list)
    ]


# The tables made a manifest at a time: which manifests, and the rows of one
_Manifests = Callable[[_Tables], list[ManifestFile]]
_ManifestRows = Callable[[_Decoder, Any, ManifestFile], list[tuple[Any, ...]]]


def _entries(d: _Decoder, io: Any, m: ManifestFile) -> list[tuple[Any, ...]]:
    return [d.entry(e) for e in d.entries(io, m)]


def _files(d: _Decoder, io: Any, m: ManifestFile) -> list[tuple[Any, ...]]:
    return [d.file(e.data_file) for e in d.live_entries(io, m)]


def _of_content(manifests: _Manifests, content: ManifestContent) -> _Manifests:
    return lambda t: [m for m in manifests(t) if m.content is content]


@dataclass
class _Partition:
    """Iceberg's ``PartitionsTable.Partition``: one partition's live files."""

    spec_id: int = 0
    record_count: int = 0
    file_count: int = 0
    total_data_file_size_in_bytes: int = 0
    position_delete_record_count: int = 0
    position_delete_file_count: int = 0
    equality_delete_record_count: int = 0
    equality_delete_file_count: int = 0
    last_updated_ms: int | None = None
    last_updated_snapshot_id: int | None = None

    def add(self, f: DataFile, committed_ms: int | None, snapshot_id: int | None) -> None:
        if committed_ms is not None and (
            self.last_updated_ms is None or committed_ms > self.last_updated_ms
        ):
            self.spec_id = f.spec_id
            self.last_updated_ms, self.last_updated_snapshot_id = committed_ms, snapshot_id
        if f.content is Content.DATA:
            self.record_count += f.record_count
            self.file_count += 1
            self.total_data_file_size_in_bytes += f.file_size_in_bytes
        elif f.content is Content.POSITION_DELETES:
            self.position_delete_record_count += f.record_count
            self.position_delete_file_count += 1
        else:
            self.equality_delete_record_count += f.record_count
            self.equality_delete_file_count += 1


def _partitions(t: _Tables) -> list[tuple[Any, ...]]:
    # keyed as Iceberg's PartitionsTable: the partition over the union of the specs' fields
    # and how many of them the file's spec has, so that files of specs with fewer fields whose
    # values match (all null, say) stay apart
    partitions: dict[tuple[int, tuple[Any, ...]], _Partition] = {}
    union = t.decoder.union
    projected = {spec_id: union.projected(spec_id) for spec_id in union.specs}
    live = (e for m in t.current_manifests() for e in t.decoder.live_entries(t.table.io, m))
    for e in live:
        f = e.data_file
        key = (projected[f.spec_id], t.decoder.partition(f))
        snapshot = (
            t.metadata.snapshot_by_id(e.snapshot_id)
            if e.snapshot_id is not None and t.metadata.has_snapshot(e.snapshot_id)
            else None
        )
        partitions.setdefault(key, _Partition()).add(
            f,
            None if snapshot is None else snapshot.timestamp_ms,
            None if snapshot is None else snapshot.snapshot_id,
        )
    partitioned = union.partitioned
    return [
        (
            *((key[1], p.spec_id) if partitioned else ()),
            p.record_count,
            p.file_count,
            p.total_data_file_size_in_bytes,
            p.position_delete_record_count,
            p.position_delete_file_count,
            p.equality_delete_record_count,
            p.equality_delete_file_count,
            None if p.last_updated_ms is None else _time(p.last_updated_ms),
            p.last_updated_snapshot_id,
        )
        for key, p in partitions.items()
    ]


def _position_deletes(d: _Decoder, io: Any, m: ManifestFile) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for e in d.live_entries(io, m):
        f = e.data_file
        if f.content is not Content.POSITION_DELETES:
            continue
        blob = (f.content_offset, f.content_size_in_bytes) if d.format_version >= 3 else ()
        tail = (*d.partition_column(f), f.spec_id, f.file_path, *blob)
        for path, pos, row in deleted_positions(io, f):
            out.append((path, pos, None if row is None else d.row(row), *tail))
    return out


def deleted_positions(io: Any, f: DataFile) -> Iterator[tuple[str, int, Any]]:
    """(data file path, position, deleted row or None) of one position delete file or
    deletion vector; the row as the file stores it, a dict by column name (Arrow's Python
    values)."""
    if f.is_deletion_vector:
        if f.referenced_data_file is None or f.content_offset is None:
            raise CorruptMetadata(f"deletion vector {f.file_path} names no data file or blob")
        if f.content_size_in_bytes is None:
            raise CorruptMetadata(f"deletion vector in {f.file_path} has no blob length")
        with contextlib.closing(io.open_input(f.file_path)) as source:  # reads the blob only
            bitmap = read_deletion_vector(
                source,
                f.content_offset,
                f.content_size_in_bytes,
                expected_cardinality=f.record_count,
            )
        for pos in positions_array(bitmap).to_pylist():
            yield f.referenced_data_file, pos, None
        return
    stored = pq.ParquetFile(pa.BufferReader(io.read(f.file_path)), pre_buffer=False)
    # the optional ``row`` column: the deleted row, which few writers store (lakecat does not)
    columns = ["file_path", "pos", *(["row"] if "row" in stored.schema_arrow.names else [])]
    deletes = stored.read(columns=columns)
    rows = deletes.column("row").to_pylist() if "row" in columns else [None] * deletes.num_rows
    paths, positions = (deletes.column(c).to_pylist() for c in ("file_path", "pos"))
    yield from zip(paths, positions, rows, strict=True)


_Rows = Callable[[_Tables], list[tuple[Any, ...]]]
_ROWS: dict[str, _Rows] = {
    "snapshots": _snapshots,
    "history": _history,
    "refs": _refs,
    "metadata_log_entries": _metadata_log_entries,
    "manifests": _manifests,
    "all_manifests": _all_manifests,
    "partitions": _partitions,
}
_CURRENT, _REACHABLE = _Tables.current_manifests, _Tables.reachable_manifests
# the metadata tables of one snapshot, which VERSION / TIMESTAMP AS OF point at an older one
TIME_TRAVEL = frozenset(
    {
        "manifests",
        "partitions",
        "entries",
        "files",
        "data_files",
        "delete_files",
        "position_deletes",
    }
)
_DATA, _DELETES = ManifestContent.DATA, ManifestContent.DELETES
_PER_MANIFEST: dict[str, tuple[_Manifests, _ManifestRows]] = {
    "entries": (_CURRENT, _entries),
    "all_entries": (_REACHABLE, _entries),
    "files": (_CURRENT, _files),
    "data_files": (_of_content(_CURRENT, _DATA), _files),
    "delete_files": (_of_content(_CURRENT, _DELETES), _files),
    "all_files": (_REACHABLE, _files),
    "all_data_files": (_of_content(_REACHABLE, _DATA), _files),
    "all_delete_files": (_of_content(_REACHABLE, _DELETES), _files),
    "position_deletes": (_of_content(_CURRENT, _DELETES), _position_deletes),
}
