"""Manifests and manifest lists: round trips, inheritance, summaries, pyiceberg interop."""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg import manifest as pyiceberg_manifest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.partitioning import PartitionSpec as PyPartitionSpec
from pyiceberg.schema import Schema as PySchema
from pyiceberg.typedef import Record

from lakecat.metadata.errors import CorruptMetadata, StorageError, ValidationError
from lakecat.metadata.io.fileio import (
    FileExistsStorageError,
    FileIO,
    FileNotFoundStorageError,
    LocalFileIO,
)
from lakecat.metadata.manifests.datafile import (
    Content,
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    Status,
)
from lakecat.metadata.manifests.manifest import (
    KnownRows,
    as_listed,
    partition_type,
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from lakecat.metadata.manifests.order import ordered_by_partition
from lakecat.metadata.manifests.schemas import (
    decimal_required_bytes,
    manifest_entry_schema,
    primitive_of,
)
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.schema.conversions import from_bytes, to_bytes, unscaled_to_decimal
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)


class MemoryFileIO(FileIO):
    """In-memory files, so that property tests need no temporary directories."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def read(self, location: str) -> bytes:
        try:
            return self.files[location]
        except KeyError:
            raise FileNotFoundStorageError(f"file not found: {location}") from None

    def write(self, location: str, data: bytes, *, exclusive: bool = False) -> None:
        if exclusive and location in self.files:
            raise FileExistsStorageError(f"file already exists: {location}")
        self.files[location] = data

    def exists(self, location: str) -> bool:
        return location in self.files

    def delete(self, location: str) -> None:
        self.files.pop(location, None)


# ---- a table with partition fields of many result types ----------------------------------
SCHEMA = Schema.of(
    NestedField(1, "id", LongType()),
    NestedField(2, "ts", TimestampType()),
    NestedField(3, "tstz", TimestamptzType()),
    NestedField(4, "day", DateType()),
    NestedField(5, "price", DecimalType(9, 2)),
    NestedField(6, "big", DecimalType(38, 10)),
    NestedField(7, "uid", UUIDType()),
    NestedField(8, "name", StringType()),
    NestedField(9, "flag", BooleanType()),
    NestedField(10, "ratio", DoubleType()),
    NestedField(11, "f32", FloatType()),
    NestedField(12, "code", FixedType(3)),
    NestedField(13, "blob", BinaryType()),
    NestedField(14, "at", TimeType()),
    NestedField(15, "n", IntegerType()),
    schema_id=3,
)
SPEC = PartitionSpec(
    2,
    (
        PartitionField(4, 1000, "identity", "day"),
        PartitionField(2, 1001, "identity", "ts"),
        PartitionField(3, 1002, "identity", "tstz"),
        PartitionField(5, 1003, "identity", "price"),
        PartitionField(6, 1004, "identity", "big"),
        PartitionField(7, 1005, "identity", "uid"),
        PartitionField(8, 1006, "identity", "name"),
        PartitionField(1, 1007, "bucket[16]", "id_bucket"),
        PartitionField(3, 1008, "day", "tstz_day"),
        PartitionField(2, 1009, "hour", "ts_hour"),
        PartitionField(8, 1010, "truncate[4]", "name_trunc"),
        PartitionField(9, 1011, "identity", "flag"),
        PartitionField(10, 1012, "identity", "ratio"),
        PartitionField(11, 1013, "identity", "f32"),
        PartitionField(12, 1014, "identity", "code"),
        PartitionField(13, 1015, "identity", "blob"),
        PartitionField(14, 1016, "identity", "at"),
        PartitionField(15, 1017, "identity", "n"),
        PartitionField(8, 1018, "void", "name_void"),
    ),
)
PTYPE = partition_type(SPEC, SCHEMA)

# fastavro turns date/timestamp values into datetime objects on read, so stay in their range.
MIN_DAY, MAX_DAY = -719162, 2932896
MIN_MICROS, MAX_MICROS = -62135596800_000000, 253402300799_999999


def _values(t: PrimitiveType) -> st.SearchStrategy[Any]:
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, IntegerType):
        return st.integers(-(2**31), 2**31 - 1)
    if isinstance(t, LongType):
        return st.integers(-(2**63), 2**63 - 1)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, DateType):
        return st.integers(MIN_DAY, MAX_DAY)
    if isinstance(t, TimeType):
        return st.integers(0, 86_400_000_000 - 1)
    if isinstance(t, TimestampType | TimestamptzType):
        return st.integers(MIN_MICROS, MAX_MICROS)
    if isinstance(t, DecimalType):
        limit = 10**t.precision - 1
        return st.integers(-limit, limit).map(lambda n: unscaled_to_decimal(n, t.scale))
    if isinstance(t, UUIDType):
        return st.uuids()
    if isinstance(t, StringType):
        return st.text(max_size=20)
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    if isinstance(t, BinaryType):
        return st.binary(max_size=20)
    raise AssertionError(t)


def _partitions(ptype: StructType) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.tuples(*(st.none() | _values(primitive_of(f)) for f in ptype.fields))


_counts = st.none() | st.dictionaries(st.integers(1, 200), st.integers(0, 2**63 - 1), max_size=4)
_bounds = st.none() | st.dictionaries(st.integers(1, 200), st.binary(max_size=16), max_size=4)
_longs = st.integers(-(2**63), 2**63 - 1)


@st.composite
def _entries(draw: st.DrawFn, spec: PartitionSpec, ptype: StructType) -> list[ManifestEntry]:
    n = draw(st.integers(0, 6))
    out = []
    for i in range(n):
        status = draw(st.sampled_from(Status))
        inherit = status == Status.ADDED and draw(st.booleans())
        seq = None if inherit else draw(st.integers(0, 50))
        file_seq = None if inherit else draw(st.integers(0, 50))
        data_file = DataFile(
            file_path=f"s3://bucket/t/data/{i}-{draw(st.uuids())}.parquet",
            file_format="PARQUET",
            partition=draw(_partitions(ptype)),
            record_count=draw(st.integers(0, 2**40)),
            file_size_in_bytes=draw(st.integers(0, 2**40)),
            spec_id=spec.spec_id,
            column_sizes=draw(_counts),
            value_counts=draw(_counts),
            null_value_counts=draw(_counts),
            nan_value_counts=draw(_counts),
            lower_bounds=draw(_bounds),
            upper_bounds=draw(_bounds),
            key_metadata=draw(st.none() | st.binary(max_size=8)),
            split_offsets=draw(st.none() | st.lists(_longs, max_size=3).map(tuple)),
            sort_order_id=draw(st.none() | st.integers(0, 5)),
        )
        snapshot_id = draw(st.none() | st.just(100)) if inherit else draw(st.none() | _longs)
        out.append(ManifestEntry(status, data_file, snapshot_id, seq, file_seq))
    return out


def _inherited(entry: ManifestEntry, manifest: ManifestFile) -> ManifestEntry:
    return replace(
        entry,
        snapshot_id=manifest.added_snapshot_id if entry.snapshot_id is None else entry.snapshot_id,
        sequence_number=manifest.sequence_number
        if entry.sequence_number is None
        else entry.sequence_number,
        file_sequence_number=manifest.sequence_number
        if entry.file_sequence_number is None
        else entry.file_sequence_number,
    )


def _commit(
    io: FileIO, entries: list[ManifestEntry], *, seq: int = 7, snapshot_id: int = 100
) -> ManifestFile:
    """Write one manifest and a manifest list holding it; return the list's row."""
    written = write_manifest(
        io, "mem://m.avro", spec=SPEC, schema=SCHEMA, entries=entries, added_snapshot_id=snapshot_id
    )
    write_manifest_list(
        io,
        "mem://ml.avro",
        [written],
        snapshot_id=snapshot_id,
        parent_snapshot_id=None,
        sequence_number=seq,
    )
    (row,) = read_manifest_list(io, "mem://ml.avro")
    return row


# ---- round trips ---------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=_entries(SPEC, PTYPE))
def test_entries_round_trip_with_inheritance_applied(entries: list[ManifestEntry]) -> None:
    io = MemoryFileIO()
    row = _commit(io, entries)
    got = read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)
    # written in partition order (manifest_order); entries of one partition keep their order
    ordered = ordered_by_partition(entries)
    assert ordered is not None
    assert got == [_inherited(e, row) for e in ordered]


def test_equality_delete_manifest_round_trips_content_and_equality_ids() -> None:
    io = MemoryFileIO()
    spec = PartitionSpec(0, ())
    delete = DataFile(
        "s3://b/eq.parquet",
        "PARQUET",
        (),
        3,
        10,
        content=Content.EQUALITY_DELETES,
        equality_ids=(1, 8),
    )
    written = write_manifest(
        io,
        "mem://d.avro",
        spec=spec,
        schema=SCHEMA,
        added_snapshot_id=5,
        entries=[ManifestEntry(Status.ADDED, delete)],
        content=ManifestContent.DELETES,
    )
    assert written.content == ManifestContent.DELETES
    assert fastavro.reader(_stream(io, "mem://d.avro")).metadata["content"] == "deletes"
    write_manifest_list(
        io, "mem://l.avro", [written], snapshot_id=5, parent_snapshot_id=4, sequence_number=2
    )
    (row,) = read_manifest_list(io, "mem://l.avro")
    (entry,) = read_manifest(io, row, specs={0: spec}, schema=SCHEMA)
    assert entry.data_file == delete
    assert entry.data_file.content == Content.EQUALITY_DELETES
    assert entry.data_file.equality_ids == (1, 8)


def test_manifest_list_round_trips_every_field() -> None:
    io = MemoryFileIO()
    row = _commit(io, [_added((19000,) + (None,) * (len(SPEC.fields) - 1))], seq=9)
    again = MemoryFileIO()
    write_manifest_list(
        again, "mem://l2.avro", [row], snapshot_id=200, parent_snapshot_id=100, sequence_number=10
    )
    assert read_manifest_list(again, "mem://l2.avro") == [row]
    meta = fastavro.reader(_stream(again, "mem://l2.avro")).metadata
    assert (meta["snapshot-id"], meta["parent-snapshot-id"]) == ("200", "100")
    assert (meta["sequence-number"], meta["format-version"]) == ("10", "2")


def test_a_manifest_list_read_with_known_rows_reuses_equal_ones_only() -> None:
    io = MemoryFileIO()
    known = KnownRows()
    row = _commit(io, [_added((19000,) + (None,) * (len(SPEC.fields) - 1))], seq=9)
    other = replace(row, manifest_path="mem://other.avro", added_rows_count=7)
    lists = (("a", [row]), ("b", [other, row]), ("c", [replace(row, added_rows_count=3)]))
    for name, rows in lists:
        write_manifest_list(
            io,
            f"mem://{name}.avro",
            rows,
            snapshot_id=200,
            parent_snapshot_id=1,
            sequence_number=10,
        )
    assert read_manifest_list(io, "mem://a.avro", known=known) == [row]  # nothing known yet
    write_manifest_list(  # a writer knows the rows it encodes
        io,
        "mem://d.avro",
        [row],
        snapshot_id=200,
        parent_snapshot_id=1,
        sequence_number=10,
        known=known,
    )
    second = read_manifest_list(io, "mem://b.avro", known=known)
    assert second == [other, row] and second[1] is row  # the same row: the same object
    changed = read_manifest_list(io, "mem://c.avro", known=known)  # same path, other content
    assert changed == [replace(row, added_rows_count=3)] and changed[0] is not row
    again = read_manifest_list(io, "mem://b.avro", known=known)
    assert again[0] is second[0]  # decoded once, then known


def test_a_manifest_list_of_many_new_rows_is_decoded_at_once_and_then_reused() -> None:
    io = MemoryFileIO()
    known = KnownRows()
    row = _commit(io, [_added((19000,) + (None,) * (len(SPEC.fields) - 1))], seq=9)
    rows = [replace(row, manifest_path=f"mem://m{i}.avro", added_rows_count=i) for i in range(30)]
    for name, listed, writer_known in (("one", [row], known), ("many", rows, None)):
        write_manifest_list(
            io,
            f"mem://{name}.avro",
            listed,
            snapshot_id=200,
            parent_snapshot_id=1,
            sequence_number=10,
            known=writer_known,
        )
    first = read_manifest_list(io, "mem://many.avro", known=known)
    assert first == rows == read_manifest_list(io, "mem://many.avro")
    again = read_manifest_list(io, "mem://many.avro", known=known)
    assert all(a is b for a, b in zip(again, first, strict=True))


def test_as_listed_gives_the_rows_a_written_list_reads_back_as() -> None:
    io = MemoryFileIO()
    row = _commit(io, [_added((19000,) + (None,) * (len(SPEC.fields) - 1))], seq=9)
    new = replace(row, manifest_path="mem://new.avro", sequence_number=-1, min_sequence_number=-1)
    new = replace(new, added_snapshot_id=300)
    write_manifest_list(
        io, "mem://l3.avro", [new, row], snapshot_id=300, parent_snapshot_id=200, sequence_number=11
    )
    assert read_manifest_list(io, "mem://l3.avro") == as_listed([new, row], 11)


def test_manifest_file_metadata_names_schema_and_spec() -> None:
    io = MemoryFileIO()
    _commit(io, [_added((None,) * len(SPEC.fields))])
    meta = fastavro.reader(_stream(io, "mem://m.avro")).metadata
    assert Schema.from_json(json.loads(meta["schema"])) == SCHEMA
    assert meta["schema-id"] == "3"
    assert json.loads(meta["partition-spec"]) == [f.to_json() for f in SPEC.fields]
    assert meta["partition-spec-id"] == "2"
    assert (meta["format-version"], meta["content"]) == ("2", "data")
    meta = fastavro.reader(_stream(io, "mem://ml.avro")).metadata
    assert meta["parent-snapshot-id"] == "null"


# ---- inheritance ---------------------------------------------------------------------------
def _added(partition: tuple[Any, ...], path: str = "s3://b/a.parquet", **kw: Any) -> ManifestEntry:
    return ManifestEntry(
        Status.ADDED, DataFile(path, "PARQUET", partition, 5, 50, SPEC.spec_id), **kw
    )


def _none_partition() -> tuple[Any, ...]:
    return (None,) * len(SPEC.fields)


def test_added_entries_with_nulls_inherit_snapshot_and_sequence_from_the_list_row() -> None:
    io = MemoryFileIO()
    row = _commit(io, [_added(_none_partition())], seq=12, snapshot_id=100)
    (entry,) = read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)
    assert (entry.snapshot_id, entry.sequence_number, entry.file_sequence_number) == (100, 12, 12)


def test_existing_and_deleted_entries_keep_their_explicit_sequence_numbers() -> None:
    io = MemoryFileIO()
    existing = replace(
        _added(_none_partition(), "s3://b/old.parquet"),
        status=Status.EXISTING,
        snapshot_id=40,
        sequence_number=3,
        file_sequence_number=4,
    )
    deleted = replace(
        _added(_none_partition(), "s3://b/gone.parquet"),
        status=Status.DELETED,
        snapshot_id=None,
        sequence_number=2,
        file_sequence_number=2,
    )
    row = _commit(io, [existing, deleted, _added(_none_partition())], seq=12)
    got = read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (40, 3, 4),
        (100, 2, 2),  # a null snapshot id is inherited whatever the status (as Java does)
        (100, 12, 12),
    ]


def test_reused_manifest_takes_the_sequence_number_of_the_list_it_lands_in() -> None:
    io = MemoryFileIO()
    written = write_manifest(
        io,
        "mem://m.avro",
        spec=SPEC,
        schema=SCHEMA,
        entries=[_added(_none_partition())],
        added_snapshot_id=100,
    )
    for attempt, seq in enumerate((5, 6)):
        location = f"mem://ml-{attempt}.avro"
        write_manifest_list(
            io, location, [written], snapshot_id=100, parent_snapshot_id=None, sequence_number=seq
        )
        (row,) = read_manifest_list(io, location)
        assert (row.sequence_number, row.min_sequence_number) == (seq, seq)
        (entry,) = read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)
        assert entry.sequence_number == entry.file_sequence_number == seq


def test_reading_a_manifest_before_its_list_leaves_sequence_numbers_unassigned() -> None:
    io = MemoryFileIO()
    written = write_manifest(
        io,
        "mem://m.avro",
        spec=SPEC,
        schema=SCHEMA,
        entries=[_added(_none_partition())],
        added_snapshot_id=100,
    )
    (entry,) = read_manifest(io, written, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)
    assert (entry.snapshot_id, entry.sequence_number) == (100, None)


def test_writer_refuses_inherited_sequence_numbers_on_existing_entries() -> None:
    entry = replace(_added(_none_partition()), status=Status.EXISTING, sequence_number=None)
    with pytest.raises(ValidationError, match="only ADDED"):
        write_manifest(
            MemoryFileIO(),
            "mem://m.avro",
            spec=SPEC,
            schema=SCHEMA,
            entries=[entry],
            added_snapshot_id=1,
        )


def test_writer_refuses_unassigned_sequence_number_for_another_snapshots_entry() -> None:
    entry = _added(_none_partition(), snapshot_id=99)
    with pytest.raises(ValidationError, match="snapshot 99"):
        write_manifest(
            MemoryFileIO(),
            "mem://m.avro",
            spec=SPEC,
            schema=SCHEMA,
            entries=[entry],
            added_snapshot_id=1,
        )


def test_list_refuses_to_assign_a_sequence_number_to_another_snapshots_manifest() -> None:
    io = MemoryFileIO()
    written = write_manifest(
        io,
        "mem://m.avro",
        spec=SPEC,
        schema=SCHEMA,
        entries=[_added(_none_partition())],
        added_snapshot_id=100,
    )
    with pytest.raises(ValidationError, match="unassigned sequence number"):
        write_manifest_list(
            io,
            "mem://l.avro",
            [written],
            snapshot_id=101,
            parent_snapshot_id=100,
            sequence_number=3,
        )


def test_null_sequence_number_on_existing_entry_is_corrupt_metadata() -> None:
    io = MemoryFileIO()
    row = _commit(io, [_added(_none_partition())], seq=4)
    # Rewrite the manifest's one entry as EXISTING with a null sequence number.
    records = list(fastavro.reader(_stream(io, "mem://m.avro")))
    records[0]["status"] = int(Status.EXISTING)
    io.files["mem://m.avro"] = _avro_bytes(manifest_entry_schema(PTYPE), records)
    with pytest.raises(CorruptMetadata, match="EXISTING entry"):
        read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)


# ---- summaries ---------------------------------------------------------------------------
SMALL_SCHEMA = Schema.of(
    NestedField(1, "id", LongType()),
    NestedField(2, "ratio", DoubleType()),
    NestedField(3, "name", StringType()),
    NestedField(4, "ts", TimestamptzType()),
)
SMALL_SPEC = PartitionSpec(
    0,
    (
        PartitionField(1, 1000, "bucket[8]", "id_bucket"),
        PartitionField(2, 1001, "identity", "ratio"),
        PartitionField(3, 1002, "identity", "name"),
        PartitionField(4, 1003, "day", "ts_day"),
    ),
)


def _small(status: Status, partition: tuple[Any, ...], rows: int, seq: int | None) -> ManifestEntry:
    df = DataFile(f"s3://b/{status.name}-{partition}.parquet", "PARQUET", partition, rows, 1)
    snapshot = None if seq is None else 1
    return ManifestEntry(status, df, snapshot, seq, seq)


def test_counts_and_partition_summaries_cover_every_entry_written() -> None:
    entries = [
        _small(Status.ADDED, (3, 1.5, "m", 19000), 10, None),
        _small(Status.ADDED, (5, math.nan, None, 19003), 20, None),
        _small(Status.EXISTING, (1, -2.0, "k", 18990), 30, 4),
        _small(Status.EXISTING, (None, 0.5, "z", 19001), 40, 6),
        _small(Status.DELETED, (7, 9.0, "a", 19100), 50, 2),  # Java counts DELETED entries too
    ]
    written = write_manifest(
        MemoryFileIO(),
        "mem://m.avro",
        spec=SMALL_SPEC,
        schema=SMALL_SCHEMA,
        entries=entries,
        added_snapshot_id=1,
    )
    assert (written.added_files_count, written.added_rows_count) == (2, 30)
    assert (written.existing_files_count, written.existing_rows_count) == (2, 70)
    assert (written.deleted_files_count, written.deleted_rows_count) == (1, 50)
    assert (written.sequence_number, written.min_sequence_number) == (-1, 4)
    assert written.partitions is not None
    bucket, ratio, name, day = written.partitions
    assert (bucket.contains_null, bucket.contains_nan) == (True, False)
    assert (from_bytes(IntegerType(), bucket.lower_bound), bucket.upper_bound) == (
        1,
        to_bytes(IntegerType(), 7),
    )
    assert (ratio.contains_null, ratio.contains_nan) == (False, True)
    assert ratio.lower_bound == to_bytes(DoubleType(), -2.0)
    assert ratio.upper_bound == to_bytes(DoubleType(), 9.0)
    assert (name.contains_null, name.lower_bound, name.upper_bound) == (True, b"a", b"z")
    assert (day.contains_null, day.contains_nan) == (False, False)
    assert from_bytes(DateType(), day.lower_bound) == 18990
    assert from_bytes(DateType(), day.upper_bound) == 19100


def test_all_null_or_nan_field_has_no_bounds() -> None:
    entries = [_small(Status.ADDED, (None, math.nan, None, None), 1, None)]
    written = write_manifest(
        MemoryFileIO(),
        "mem://m.avro",
        spec=SMALL_SPEC,
        schema=SMALL_SCHEMA,
        entries=entries,
        added_snapshot_id=1,
    )
    assert written.partitions is not None
    assert all(p.lower_bound is None and p.upper_bound is None for p in written.partitions)
    assert [p.contains_nan for p in written.partitions] == [False, True, False, False]


def test_min_sequence_number_is_unassigned_when_no_live_entry_has_one() -> None:
    entries = [
        _small(Status.ADDED, (1, 1.0, "a", 1), 1, None),
        _small(Status.DELETED, (1, 1.0, "a", 1), 1, 3),
    ]
    written = write_manifest(
        MemoryFileIO(),
        "mem://m.avro",
        spec=SMALL_SPEC,
        schema=SMALL_SCHEMA,
        entries=entries,
        added_snapshot_id=1,
    )
    assert (written.sequence_number, written.min_sequence_number) == (-1, -1)


def test_manifest_length_is_the_file_size(tmp_path: Path) -> None:
    location = str(tmp_path / "m.avro")
    written = write_manifest(
        LocalFileIO(),
        location,
        spec=SMALL_SPEC,
        schema=SMALL_SCHEMA,
        added_snapshot_id=1,
        entries=[_small(Status.ADDED, (1, 1.0, "a", 1), 1, None)],
    )
    assert written.manifest_length == os.path.getsize(location)


# ---- Avro schema details -----------------------------------------------------------------
def test_partition_type_uses_partition_field_ids_names_and_transform_result_types() -> None:
    by_name = {f.name: f for f in PTYPE.fields}
    assert [f.field_id for f in PTYPE.fields] == [f.field_id for f in SPEC.fields]
    assert not any(f.required for f in PTYPE.fields)
    assert by_name["id_bucket"].field_type == IntegerType()
    assert by_name["tstz_day"].field_type == DateType()
    assert by_name["ts_hour"].field_type == IntegerType()
    assert by_name["name_trunc"].field_type == StringType()
    assert by_name["big"].field_type == DecimalType(38, 10)
    assert by_name["tstz"].field_type == TimestamptzType()


def test_partition_values_are_matched_by_field_id_not_position() -> None:
    schema = Schema.of(NestedField(1, "a", LongType()), NestedField(2, "b", StringType()))
    written_spec = PartitionSpec(
        0, (PartitionField(1, 1000, "identity", "a"), PartitionField(2, 1001, "identity", "b"))
    )
    io = MemoryFileIO()
    entry = ManifestEntry(Status.ADDED, DataFile("s3://b/x", "PARQUET", (7, "x"), 1, 1))
    written = write_manifest(
        io, "mem://m", spec=written_spec, schema=schema, entries=[entry], added_snapshot_id=1
    )
    # A reader whose spec lists the fields in another order, plus one the file lacks.
    read_spec = PartitionSpec(
        0,
        (
            PartitionField(2, 1001, "identity", "b"),
            PartitionField(1, 1002, "bucket[4]", "a_bucket"),
            PartitionField(1, 1000, "identity", "a"),
        ),
    )
    (got,) = read_manifest(io, written, specs={0: read_spec}, schema=schema)
    assert got.data_file.partition == ("x", None, 7)


def test_decimal_fixed_size_is_the_minimum_for_the_precision() -> None:
    assert [decimal_required_bytes(p) for p in (1, 2, 3, 9, 10, 18, 19, 38)] == [
        1,
        1,
        2,
        4,
        5,
        8,
        9,
        16,
    ]


def test_partition_field_names_are_made_avro_safe_and_repeated_types_get_unique_names() -> None:
    schema = Schema.of(
        NestedField(1, "a", DecimalType(9, 2)), NestedField(2, "b", DecimalType(9, 2))
    )
    spec = PartitionSpec(
        0, (PartitionField(1, 1000, "identity", "1st-a"), PartitionField(2, 1001, "identity", "b"))
    )
    record = manifest_entry_schema(partition_type(spec, schema))["fields"][4]["type"]["fields"][3]
    first, second = record["type"]["fields"]
    assert (first["name"], first["iceberg-field-name"]) == ("_1st_x2Da", "1st-a")
    assert first["type"][1]["name"] == "decimal_9_2"
    assert second["type"][1]["name"] == "decimal_9_2_1001"
    io = MemoryFileIO()
    entry = ManifestEntry(
        Status.ADDED, DataFile("s3://b/x", "PARQUET", (Decimal("1.25"), Decimal("-3.00")), 1, 1)
    )
    written = write_manifest(
        io, "mem://m.avro", spec=spec, schema=schema, entries=[entry], added_snapshot_id=1
    )
    (got,) = read_manifest(io, written, specs={0: spec}, schema=schema)
    assert got.data_file.partition == (Decimal("1.25"), Decimal("-3.00"))


def test_partition_values_that_do_not_fit_the_type_are_rejected() -> None:
    schema = Schema.of(NestedField(1, "a", DecimalType(3, 1)), NestedField(2, "c", FixedType(2)))
    spec = PartitionSpec(
        0, (PartitionField(1, 1000, "identity", "a"), PartitionField(2, 1001, "identity", "c"))
    )
    for partition in [(Decimal("123.4"), None), (Decimal("1.25"), None), (None, b"abc")]:
        entry = ManifestEntry(Status.ADDED, DataFile("s3://b/x", "PARQUET", partition, 1, 1))
        with pytest.raises(ValidationError):
            write_manifest(
                MemoryFileIO(),
                "mem://m",
                spec=spec,
                schema=schema,
                entries=[entry],
                added_snapshot_id=1,
            )


def test_partition_tuple_of_the_wrong_arity_is_rejected() -> None:
    entry = _small(Status.ADDED, (1, 2.0), 1, None)
    with pytest.raises(ValidationError, match="has 2 values"):
        write_manifest(
            MemoryFileIO(),
            "mem://m",
            spec=SMALL_SPEC,
            schema=SMALL_SCHEMA,
            entries=[entry],
            added_snapshot_id=1,
        )


def test_manifest_is_created_exclusively() -> None:
    io = MemoryFileIO()
    _commit(io, [])
    with pytest.raises(StorageError):
        _commit(io, [])


# ---- corrupt and missing input -----------------------------------------------------------
def _stream(io: MemoryFileIO, location: str) -> Any:
    import io as _io

    return _io.BytesIO(io.files[location])


def _avro_bytes(schema: dict[str, Any], records: list[Any]) -> bytes:
    import io as _io

    buf = _io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records)
    return buf.getvalue()


@settings(max_examples=40, deadline=None)
@given(garbage=st.binary(max_size=300))
def test_random_bytes_are_corrupt_metadata(garbage: bytes) -> None:
    io = MemoryFileIO()
    io.files["mem://m.avro"] = garbage
    io.files["mem://l.avro"] = garbage
    with pytest.raises(CorruptMetadata, match=r"mem://l\.avro"):
        read_manifest_list(io, "mem://l.avro")
    row = ManifestFile(
        "mem://m.avro", len(garbage), SPEC.spec_id, ManifestContent.DATA, 1, 1, 1, 1, 0, 0, 1, 0, 0
    )
    with pytest.raises(CorruptMetadata, match=r"mem://m\.avro"):
        read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)


@pytest.mark.parametrize("keep", [0.2, 0.5, 0.9, 0.99])
def test_truncated_files_are_corrupt_metadata(keep: float) -> None:
    io = MemoryFileIO()
    entries = [_added(_none_partition(), f"s3://b/{i}.parquet") for i in range(50)]
    row = _commit(io, entries)
    for location in ("mem://m.avro", "mem://ml.avro"):
        io.files[location] = io.files[location][: int(len(io.files[location]) * keep)]
    with pytest.raises(CorruptMetadata):
        read_manifest_list(io, "mem://ml.avro")
    with pytest.raises(CorruptMetadata):
        read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)


def test_a_manifest_list_read_as_a_manifest_is_corrupt_metadata() -> None:
    io = MemoryFileIO()
    row = _commit(io, [])
    with pytest.raises(CorruptMetadata, match="not a manifest"):
        read_manifest(
            io, replace(row, manifest_path="mem://ml.avro"), specs={2: SPEC}, schema=SCHEMA
        )


def test_unknown_partition_spec_id_is_corrupt_metadata() -> None:
    io = MemoryFileIO()
    row = _commit(io, [])
    with pytest.raises(CorruptMetadata, match="partition spec 2"):
        read_manifest(io, row, specs={0: SMALL_SPEC}, schema=SCHEMA)


def test_missing_files_raise_file_not_found() -> None:
    io = MemoryFileIO()
    with pytest.raises(FileNotFoundStorageError):
        read_manifest_list(io, "mem://nope.avro")
    row = ManifestFile("mem://nope.avro", 1, 2, ManifestContent.DATA, 1, 1, 1, 0, 0, 0, 0, 0, 0)
    with pytest.raises(FileNotFoundStorageError):
        read_manifest(io, row, specs={2: SPEC}, schema=SCHEMA)


# ---- interop with pyiceberg ----------------------------------------------------------------


def _py_schema(schema: Schema) -> PySchema:
    return PySchema.model_validate_json(json.dumps(schema.to_json()))


def _py_spec(spec: PartitionSpec) -> PyPartitionSpec:
    return PyPartitionSpec.model_validate_json(json.dumps(spec.to_json()))


def _sample_partition(i: int) -> tuple[Any, ...]:
    return (
        19000 + i,  # day
        1_700_000_000_000_000 + i,  # ts
        -1_000_000 * i,  # tstz
        Decimal(f"{i}.25"),  # price
        unscaled_to_decimal(10**37 + i, 10),  # big
        uuid.UUID(int=i + 1),  # uid
        f"name-{i}",  # name
        i % 16,  # id_bucket
        19000 - i,  # tstz_day
        470_000 + i,  # ts_hour
        "nam",  # name_trunc
        i % 2 == 0,  # flag
        # pyiceberg 0.12 reads Avro doubles through a float32 (apache/iceberg-python#3808),
        # so the interop sample keeps to doubles that float32 holds exactly.
        i / 4,  # ratio
        1.5,  # f32
        b"abc",  # code
        bytes([i]),  # blob
        3_600_000_000 * i,  # at
        -i,  # n
        None,  # name_void
    )


def _lakecat_table(root: Path) -> tuple[str, list[ManifestEntry]]:
    """Two commits' worth of manifests written by lakecat; returns the second list's path."""
    local = LocalFileIO()
    first = [
        ManifestEntry(
            Status.ADDED,
            DataFile(
                f"s3://b/t/data/a{i}.parquet",
                "PARQUET",
                _sample_partition(i),
                10 + i,
                1000 + i,
                SPEC.spec_id,
                value_counts={1: 10 + i},
                null_value_counts={1: 0},
                lower_bounds={1: to_bytes(LongType(), i)},
                upper_bounds={1: to_bytes(LongType(), 99)},
                split_offsets=(4,),
                sort_order_id=0,
            ),
        )
        for i in range(3)
    ]
    m1 = write_manifest(
        local,
        str(root / "m1.avro"),
        spec=SPEC,
        schema=SCHEMA,
        entries=first,
        added_snapshot_id=1,
    )
    write_manifest_list(
        local,
        str(root / "l1.avro"),
        [m1],
        snapshot_id=1,
        parent_snapshot_id=None,
        sequence_number=1,
    )
    (m1_row,) = read_manifest_list(local, str(root / "l1.avro"))
    old = read_manifest(local, m1_row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)
    second = [
        old[0].with_status(Status.DELETED, 2),
        replace(old[1], status=Status.EXISTING),
        ManifestEntry(
            Status.ADDED,
            DataFile(
                "s3://b/t/data/b.parquet", "PARQUET", _sample_partition(7), 5, 9, SPEC.spec_id
            ),
        ),
    ]
    m2 = write_manifest(
        local,
        str(root / "m2.avro"),
        spec=SPEC,
        schema=SCHEMA,
        entries=second,
        added_snapshot_id=2,
    )
    write_manifest_list(
        local,
        str(root / "l2.avro"),
        [m2, m1_row],
        snapshot_id=2,
        parent_snapshot_id=1,
        sequence_number=2,
    )
    return str(root / "l2.avro"), second


def test_pyiceberg_reads_lakecat_manifest_lists_and_manifests(tmp_path: Path) -> None:
    location, second = _lakecat_table(tmp_path)
    py_io = PyArrowFileIO()
    rows = list(pyiceberg_manifest.read_manifest_list(py_io.new_input(location)))
    assert [r.manifest_path for r in rows] == [str(tmp_path / "m2.avro"), str(tmp_path / "m1.avro")]
    m2, m1 = rows
    assert (m2.sequence_number, m2.min_sequence_number, m2.added_snapshot_id) == (2, 1, 2)
    assert (m1.sequence_number, m1.min_sequence_number, m1.added_snapshot_id) == (1, 1, 1)
    assert (m2.added_files_count, m2.existing_files_count, m2.deleted_files_count) == (1, 1, 1)
    assert (m2.added_rows_count, m2.existing_rows_count, m2.deleted_rows_count) == (5, 11, 10)
    assert m2.partitions[0].lower_bound == to_bytes(DateType(), 19000)
    assert m2.partitions[0].upper_bound == to_bytes(DateType(), 19007)

    entries = m2.fetch_manifest_entry(py_io, discard_deleted=False)
    assert [e.data_file.file_path for e in entries] == [e.data_file.file_path for e in second]
    assert [int(e.status) for e in entries] == [2, 0, 1]
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in entries] == [
        (2, 1, 1),
        (1, 1, 1),
        (2, 2, 2),
    ]
    for py_entry, ours in zip(entries, second, strict=True):
        assert tuple(py_entry.data_file.partition) == ours.data_file.partition
        assert py_entry.data_file.record_count == ours.data_file.record_count
    assert entries[0].data_file.lower_bounds == {1: to_bytes(LongType(), 0)}
    assert entries[0].data_file.value_counts == {1: 10}
    assert entries[0].data_file.split_offsets == [4]


def _py_entries() -> list[Any]:
    pm = pyiceberg_manifest

    def data_file(i: int) -> Any:
        return pm.DataFile.from_args(
            content=pm.DataFileContent.DATA,
            file_path=f"s3://b/py/{i}.parquet",
            file_format=pm.FileFormat.PARQUET,
            partition=Record(*_sample_partition(i)),
            record_count=100 + i,
            file_size_in_bytes=4096,
            value_counts={1: 100 + i},
            lower_bounds={1: to_bytes(LongType(), -i)},
            upper_bounds={1: to_bytes(LongType(), i)},
        )

    return [
        pm.ManifestEntry.from_args(
            status=pm.ManifestEntryStatus.ADDED, snapshot_id=None, data_file=data_file(0)
        ),
        pm.ManifestEntry.from_args(
            status=pm.ManifestEntryStatus.EXISTING,
            snapshot_id=3,
            sequence_number=2,
            file_sequence_number=2,
            data_file=data_file(1),
        ),
        pm.ManifestEntry.from_args(
            status=pm.ManifestEntryStatus.DELETED,
            snapshot_id=5,
            sequence_number=1,
            file_sequence_number=1,
            data_file=data_file(2),
        ),
    ]


def test_lakecat_reads_pyiceberg_manifest_lists_and_manifests(tmp_path: Path) -> None:
    pm = pyiceberg_manifest
    py_io = PyArrowFileIO()
    manifest_path = str(tmp_path / "py-m.avro")
    with pm.write_manifest(
        2, _py_spec(SPEC), _py_schema(SCHEMA), py_io.new_output(manifest_path), 5, "deflate"
    ) as writer:
        add, existing, deleted = _py_entries()
        writer.add(add)
        writer.existing(existing)
        writer.delete(deleted)
    list_path = str(tmp_path / "py-l.avro")
    with pm.write_manifest_list(2, py_io.new_output(list_path), 5, 4, 6, "deflate") as lw:
        lw.add_manifests([writer.to_manifest_file()])

    io = LocalFileIO()
    (row,) = read_manifest_list(io, list_path)
    assert (row.manifest_path, row.sequence_number, row.min_sequence_number) == (
        manifest_path,
        6,
        2,
    )
    assert (row.added_files_count, row.existing_files_count, row.deleted_files_count) == (1, 1, 1)
    assert row.manifest_length == os.path.getsize(manifest_path)
    entries = read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)
    assert [e.data_file.partition for e in entries] == [_sample_partition(i) for i in range(3)]
    assert [
        (e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in entries
    ] == [
        (Status.ADDED, 5, 6, 6),
        (Status.EXISTING, 3, 2, 2),
        (Status.DELETED, 5, 1, 1),
    ]
    assert entries[0].data_file.lower_bounds == {1: to_bytes(LongType(), 0)}
    assert entries[2].data_file.upper_bounds == {1: to_bytes(LongType(), 2)}
    assert entries[1].data_file.value_counts == {1: 101}
    assert all(e.data_file.spec_id == SPEC.spec_id for e in entries)
    # pyiceberg's summaries and ours agree on what the partition bounds are.
    ours = write_manifest(
        MemoryFileIO(), "mem://m", spec=SPEC, schema=SCHEMA, entries=entries, added_snapshot_id=5
    )
    assert ours.partitions == row.partitions


def test_lakecat_reads_v1_manifests_from_pyiceberg_with_sequence_number_zero(
    tmp_path: Path,
) -> None:
    pm = pyiceberg_manifest
    py_io = PyArrowFileIO()
    manifest_path = str(tmp_path / "v1-m.avro")
    with pm.write_manifest(
        1, _py_spec(SPEC), _py_schema(SCHEMA), py_io.new_output(manifest_path), 5, "null"
    ) as writer:
        add, existing, _ = _py_entries()
        writer.add(add)
        writer.existing(existing)
    list_path = str(tmp_path / "v1-l.avro")
    with pm.write_manifest_list(1, py_io.new_output(list_path), 5, None, None, "null") as lw:
        lw.add_manifests([writer.to_manifest_file()])
    io = LocalFileIO()
    (row,) = read_manifest_list(io, list_path)
    assert (row.sequence_number, row.min_sequence_number, row.content) == (
        0,
        0,
        ManifestContent.DATA,
    )
    entries = read_manifest(io, row, specs={SPEC.spec_id: SPEC}, schema=SCHEMA)
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in entries] == [
        (5, 0, 0),
        (3, 0, 0),
    ]
    assert entries[1].data_file.partition == _sample_partition(1)


def _strip_docs(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_docs(v) for k, v in node.items() if k != "doc"}
    if isinstance(node, list):
        return [_strip_docs(v) for v in node]
    return node


def test_manifest_avro_schema_matches_pyiceberg_for_the_same_partition_type(tmp_path: Path) -> None:
    pm = pyiceberg_manifest
    py_io = PyArrowFileIO()
    path = str(tmp_path / "py.avro")
    with pm.write_manifest(
        2, _py_spec(SPEC), _py_schema(SCHEMA), py_io.new_output(path), 5, "null"
    ) as writer:
        writer.add(_py_entries()[0])
    with open(path, "rb") as f:
        theirs = _strip_docs(fastavro.reader(f).writer_schema)
    ours_io = MemoryFileIO()
    _commit(ours_io, [])
    ours = fastavro.reader(_stream(ours_io, "mem://m.avro")).writer_schema
    # The one known difference: the spec (and Iceberg Java) type equality ids as
    # list<136: int>; pyiceberg 0.12 writes list<long>. Readers promote int to long.
    data_file = next(f for f in theirs["fields"] if f["name"] == "data_file")["type"]
    equality_ids = next(f for f in data_file["fields"] if f["name"] == "equality_ids")
    assert equality_ids["type"][1]["items"] == "long"
    equality_ids["type"][1]["items"] = "int"
    assert ours == theirs


def test_manifest_list_avro_schema_matches_pyiceberg(tmp_path: Path) -> None:
    pm = pyiceberg_manifest
    path = str(tmp_path / "py-l.avro")
    with pm.write_manifest_list(2, PyArrowFileIO().new_output(path), 5, 4, 6, "null") as lw:
        lw.add_manifests([])
    with open(path, "rb") as f:
        theirs = _strip_docs(fastavro.reader(f).writer_schema)
    io = MemoryFileIO()
    write_manifest_list(io, "mem://l", [], snapshot_id=5, parent_snapshot_id=4, sequence_number=6)
    assert fastavro.reader(_stream(io, "mem://l")).writer_schema == theirs


def _iter_fields(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if "name" in node and "type" in node and node.get("type") not in ("record", "fixed"):
            yield node
        for v in node.values():
            yield from _iter_fields(v)
    elif isinstance(node, list):
        for v in node:
            yield from _iter_fields(v)


def test_every_avro_field_carries_a_field_id() -> None:
    fields = list(_iter_fields(manifest_entry_schema(PTYPE)))
    assert fields and all("field-id" in f for f in fields)


def test_keep_order_writes_entries_as_given_so_v3_row_ids_inherit_in_that_order() -> None:
    schema = Schema.of(NestedField(1, "id", LongType()), NestedField(2, "region", StringType()))
    spec = PartitionSpec(0, (PartitionField(2, 1000, "identity", "region"),))
    entries = [
        ManifestEntry(Status.ADDED, DataFile(f"s3://b/{r}.parquet", "PARQUET", (r,), n, 10, 0))
        for r, n in (("us", 3), ("eu", 5), ("ap", 2))
    ]
    for keep_order, expected in ((True, ["us", "eu", "ap"]), (False, ["ap", "eu", "us"])):
        io = MemoryFileIO()
        written = write_manifest(
            io,
            "mem://m.avro",
            spec=spec,
            schema=schema,
            entries=entries,
            added_snapshot_id=1,
            format_version=3,
            keep_order=keep_order,
        )
        write_manifest_list(
            io,
            "mem://ml.avro",
            [written],
            snapshot_id=1,
            parent_snapshot_id=None,
            sequence_number=1,
            format_version=3,
            first_row_id=100,
        )
        (row,) = read_manifest_list(io, "mem://ml.avro")
        got = read_manifest(io, row, specs={0: spec}, schema=schema)
        assert [e.data_file.partition[0] for e in got] == expected
        counts = {"us": 3, "eu": 5, "ap": 2}
        starts = [100 + sum(counts[r] for r in expected[:i]) for i in range(3)]
        assert [e.data_file.first_row_id for e in got] == starts
