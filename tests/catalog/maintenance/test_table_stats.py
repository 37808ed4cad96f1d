"""Table statistics files from column sketches: written, registered, replaced, read back,
and refused without a trace when the input or the table is not what the job thinks."""

from __future__ import annotations

import struct
from dataclasses import replace

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import (
    expire_snapshots,
    sketch_columns,
    table_statistics,
    write_table_statistics,
)
from lakecat.metadata.deletes.puffin import blob_data, footer_size, read_footer
from lakecat.metadata.errors import (
    CommitStateUnknown,
    CorruptMetadata,
    InvalidUpdate,
    NoSuchSnapshot,
    UnknownColumn,
    ValidationError,
)

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("region", pa.string()),
        ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
        ("tags", pa.list_(pa.string())),
    ]
)


def rows(ids: range) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": i, "region": "eu", "point": {"x": i, "y": 0.0}, "tags": ["t"]} for i in ids],
        SCHEMA,
    )


def exact_sketch(n: int) -> bytes:
    """A compact theta sketch of ``n`` distinct hashes in exact mode (DataSketches' layout)."""
    if n == 0:
        return struct.pack("<BBBBBBH", 1, 3, 3, 0, 0, 0x1E, 0x93CC)
    head = struct.pack("<BBBBBBHif", 2, 3, 3, 0, 0, 0x1A, 0x93CC, n, 1.0)
    return head + b"".join(struct.pack("<q", h) for h in range(1, n + 1))


def stats_files(t: Table) -> list[str]:
    return [f.location for f in t.io.list_prefix(t.location) if f.location.endswith(".stats")]


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(10)))
    return t


def test_sketches_are_written_registered_and_read_back(table: Table) -> None:
    t = table
    snapshot = t.current_snapshot()
    schema = t.metadata.schema()
    ids = {schema.find_field("id").field_id: exact_sketch(10)}
    ids[schema.find_field("point.x").field_id] = exact_sketch(0)

    written = write_table_statistics(t, snapshot.snapshot_id, ids, created_by="test")

    assert written.path.startswith(t.location + "/metadata/")
    assert written.path.endswith(".stats") and f"/{snapshot.snapshot_id}-" in written.path
    assert written.ndvs == {
        schema.find_field("id").field_id: 10,
        schema.find_field("point.x").field_id: 0,
    }
    assert table_statistics(t.refresh()) == written
    data = t.io.read(written.path)
    assert (written.file_size_in_bytes, written.file_footer_size_in_bytes) == (
        len(data),
        footer_size(data),
    )
    footer = read_footer(data)
    assert footer.properties == {"created-by": "test"}
    assert [blob_data(data, b) for b in footer.blobs] == list(ids.values())
    assert table_statistics(t, 12345) is None


def test_a_second_file_for_the_snapshot_replaces_the_first(table: Table) -> None:
    t = table
    snapshot_id = t.current_snapshot().snapshot_id
    field = t.metadata.schema().find_field("id").field_id
    first = write_table_statistics(t, snapshot_id, {field: exact_sketch(3)}, created_by="a")
    second = write_table_statistics(t, snapshot_id, {field: exact_sketch(4)}, created_by="b")

    assert [s["statistics-path"] for s in t.refresh().metadata.statistics] == [second.path]
    assert first.path in stats_files(t)  # unregistered, left for orphan removal as Iceberg does


def test_sketch_columns_are_top_level_primitives_or_the_named_ones(table: Table) -> None:
    metadata = table.metadata
    snapshot = metadata.current_snapshot
    assert [f.name for f in sketch_columns(metadata, snapshot)] == ["id", "region"]
    assert [f.name for f in sketch_columns(metadata, snapshot, ["point.y", "id", "point.y"])] == [
        "y",
        "id",
    ]
    with pytest.raises(UnknownColumn, match="nope"):
        sketch_columns(metadata, snapshot, ["nope"])
    with pytest.raises(ValidationError, match="non-primitive column: point"):
        sketch_columns(metadata, snapshot, ["point"])
    with pytest.raises(ValidationError, match="inside a list or map"):
        sketch_columns(metadata, snapshot, ["tags.element"])
    with pytest.raises(ValidationError, match="no columns"):
        sketch_columns(metadata, snapshot, [])


@pytest.mark.parametrize(
    ("sketches", "error", "message"),
    [
        ({}, ValidationError, "at least one column"),
        ({999: exact_sketch(1)}, ValidationError, "field id 999"),
        ({3: exact_sketch(1)}, ValidationError, "field id 3 is not a primitive"),  # point
        ({1: b"garbage!"}, CorruptMetadata, "theta sketch"),
    ],
)
def test_bad_sketches_are_refused_before_anything_is_written(
    table: Table, sketches: dict[int, bytes], error: type[Exception], message: str
) -> None:
    t = table
    assert t.metadata.schema().find_field("point").field_id == 3
    before = t.metadata_location
    snapshot_id = t.current_snapshot().snapshot_id

    with pytest.raises(error, match=message):
        write_table_statistics(t, snapshot_id, sketches, created_by="x")
    with pytest.raises(NoSuchSnapshot):
        write_table_statistics(t, 42, {1: exact_sketch(1)}, created_by="x")

    assert t.refresh().metadata_location == before
    assert stats_files(t) == []


def test_statistics_of_a_snapshot_expired_meanwhile_are_refused_and_leave_no_file(
    catalog: Catalog, table: Table
) -> None:
    t = table
    first = t.current_snapshot().snapshot_id
    t.append(rows(range(10, 20)))
    expire_snapshots(catalog.load_table("db.t"), snapshot_ids=[first])  # another job

    with pytest.raises(InvalidUpdate, match=f"unknown snapshot {first}"):
        write_table_statistics(t, first, {1: exact_sketch(10)}, created_by="x")

    assert t.refresh().metadata.statistics == ()
    assert stats_files(t) == []


def test_a_commit_of_unknown_outcome_keeps_the_file(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unknown(*args: object, **kwargs: object) -> None:
        raise CommitStateUnknown("the catalog did not answer")

    monkeypatch.setattr(table, "commit_updates", unknown)
    snapshot_id = table.current_snapshot().snapshot_id

    with pytest.raises(CommitStateUnknown):
        write_table_statistics(table, snapshot_id, {1: exact_sketch(2)}, created_by="x")

    assert len(stats_files(table)) == 1  # it may be registered: kept


def test_expiring_the_snapshot_deletes_its_statistics_file(table: Table) -> None:
    t = table
    first = t.current_snapshot().snapshot_id
    written = write_table_statistics(t, first, {1: exact_sketch(10)}, created_by="x")
    t.append(rows(range(10, 20)))

    expire_snapshots(t, snapshot_ids=[first])

    assert written.path not in stats_files(t)
    assert t.refresh().metadata.statistics == ()


def test_a_malformed_registered_entry_reads_as_corrupt_metadata(table: Table) -> None:
    snapshot_id = table.current_snapshot().snapshot_id
    # as another engine might have registered it: no path, sizes or blobs
    table.metadata = replace(table.metadata, statistics=({"snapshot-id": snapshot_id},))
    with pytest.raises(CorruptMetadata, match="malformed statistics entry"):
        table_statistics(table)
