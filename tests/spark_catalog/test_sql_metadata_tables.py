"""Iceberg's metadata tables through the Spark catalog ``lake``: every table's columns are
Iceberg's, and its rows are what lakecat's Python API (manifest lists, manifests, scan plans,
the table metadata) and pyiceberg's ``inspect`` tables say about the same table.

One catalog and two tables for the module (Spark tests are slow): ``db.t`` (format v2) and
``db.v3`` (format v3, deletion vectors), each with appends, a merge-on-read delete and update,
a partition-spec change, an append under the new spec and a compaction of one partition.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.engine import Scan
from lakecat.catalog.maintenance import rewrite_data_files
from lakecat.metadata.io import LocalFileIO
from lakecat.metadata.manifests import Content, DataFile, read_manifest, read_manifest_list
from lakecat.metadata.partitioning import parse_transform
from lakecat.metadata.schema import LongType
from lakecat.spark_ext import SparkCatalogError, attach_catalog
from lakecat.spark_ext.sql.metadata_tables import METADATA_TABLES, deleted_positions, plan_rows

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("ts", pa.timestamp("us"))])
MERGE_ON_READ = {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}

# Iceberg 1.10's columns (core/.../DataFile.java getType)
FILE_COLUMNS = [
    "content",
    "file_path",
    "file_format",
    "spec_id",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
    "first_row_id",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
]
MANIFEST_COLUMNS = [
    "content",
    "path",
    "length",
    "partition_spec_id",
    "added_snapshot_id",
    "added_data_files_count",
    "existing_data_files_count",
    "deleted_data_files_count",
    "added_delete_files_count",
    "existing_delete_files_count",
    "deleted_delete_files_count",
    "partition_summaries",
]
FILE_TABLES = (
    "files",
    "data_files",
    "delete_files",
    "all_files",
    "all_data_files",
    "all_delete_files",
)
ENTRY_COLUMNS = [
    "status",
    "snapshot_id",
    "sequence_number",
    "file_sequence_number",
    "data_file",
    "readable_metrics",
]
ICEBERG_COLUMNS = {
    "manifests": MANIFEST_COLUMNS,
    "all_manifests": [*MANIFEST_COLUMNS, "reference_snapshot_id", "key_metadata"],
    **{kind: ENTRY_COLUMNS for kind in ("entries", "all_entries")},
    **{kind: [*FILE_COLUMNS, "readable_metrics"] for kind in FILE_TABLES},
    "partitions": [
        "partition",
        "spec_id",
        "record_count",
        "file_count",
        "total_data_file_size_in_bytes",
        "position_delete_record_count",
        "position_delete_file_count",
        "equality_delete_record_count",
        "equality_delete_file_count",
        "last_updated_at",
        "last_updated_snapshot_id",
    ],
    "metadata_log_entries": [
        "timestamp",
        "file",
        "latest_snapshot_id",
        "latest_schema_id",
        "latest_sequence_number",
    ],
    "position_deletes": [
        "file_path",
        "pos",
        "row",
        "partition",
        "spec_id",
        "delete_file_path",
    ],  # format v3 adds content_offset, content_size_in_bytes
}


def batch(ids: range, region: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "region": [region] * len(ids),
            "ts": [dt.datetime(2024, 1, 1 + i % 3) for i in ids],
        },
        schema=SCHEMA,
    )


def build(catalog: Catalog, name: str, format_version: str) -> Table:
    """Appends to eu and us, a merge-on-read delete (eu, id 3) and update (us, id 12), a spec
    change (+ day(ts)), an append under it, a compaction of us, a second delete (eu, id 5)."""
    table = catalog.create_table(
        name,
        SCHEMA,
        partition_by=["region"],
        properties={"format-version": format_version, **MERGE_ON_READ},
    )
    table.append(batch(range(0, 10), "eu"))
    table.append(batch(range(10, 20), "us"))
    table.delete("id = 3")
    table.update({"ts": dt.datetime(2024, 2, 1)}, "id = 12")
    with table.update_spec() as spec:
        spec.add_field("ts", "day")
    table.append(batch(range(30, 34), "us"))
    rewrite_data_files(table, row_filter="region = 'us'", min_input_files=1)
    table.delete("id = 5")
    return table.refresh()


class Lake:
    def __init__(self, spark: Any, catalog: Catalog) -> None:
        self.spark, self.catalog = spark, catalog

    def sql(self, statement: str) -> list[Any]:
        return self.spark.sql(statement).collect()

    def table(self, name: str) -> Table:
        return self.catalog.load_table(name)

    def inspect(self, name: str, kind: str, *args: Any) -> list[dict[str, Any]]:
        """pyiceberg's ``inspect.<kind>()`` of the same table (same catalog database)."""
        from pyiceberg.catalog.sql import SqlCatalog

        py = SqlCatalog(self.catalog.name, uri=self.catalog.uri, warehouse=self.catalog.warehouse)
        try:
            result: list[dict[str, Any]] = getattr(py.load_table(name).inspect, kind)(
                *args
            ).to_pylist()
            return result
        finally:
            py.engine.dispose()


@pytest.fixture(scope="module")
def lake(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root: Path = tmp_path_factory.mktemp("metadata_tables")
    catalog = Catalog.embedded(root / "lake")
    catalog.create_namespace("db")
    try:
        attach_catalog(spark, "lake", catalog=catalog)
    except SparkCatalogError as exc:
        catalog.close()
        pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    try:
        build(catalog, "db.t", "2")
        build(catalog, "db.v3", "3")
        flat = catalog.create_table("db.flat", SCHEMA, properties=MERGE_ON_READ)
        flat.append(batch(range(0, 10), "eu"))
        flat.delete("id = 7")
        yield Lake(spark, catalog)
    finally:
        catalog.close()


def manifests(table: Table, snapshot_id: int | None = None) -> list[Any]:
    snapshot = table.snapshot(snapshot_id or table.metadata.current_snapshot_id)
    return read_manifest_list(table.io, snapshot.manifest_list)


def entries(table: Table, manifest: Any) -> list[Any]:
    m = table.metadata
    return read_manifest(table.io, manifest, specs=m.specs_by_id(), schema=m.schema())


def as_map(m: Any) -> dict[Any, Any] | None:
    return None if m is None else dict(m)


def plan(table: Table) -> Any:
    m = table.metadata
    return Scan(table.io, m, m.current_snapshot, m.schema()).plan()


def test_every_metadata_table_has_icebergs_columns_in_icebergs_order(lake: Lake) -> None:
    for kind, columns in ICEBERG_COLUMNS.items():
        assert lake.spark.table(f"lake.db.t.{kind}").columns == columns, kind
    data_file = lake.spark.table("lake.db.t.entries").schema["data_file"].dataType
    assert data_file.names == FILE_COLUMNS
    assert set(ICEBERG_COLUMNS) | {"snapshots", "history", "refs"} == set(METADATA_TABLES)


@pytest.mark.parametrize("name", ["db.t", "db.v3"])
def test_files_tables_are_the_live_entries_of_the_current_manifests(lake: Lake, name: str) -> None:
    table = lake.table(name)
    planned = plan(table)
    data = {f.file_path for f in planned.files}
    deletes = {d.file_path for ds in planned.deletes.values() for d in ds}
    assert data and deletes  # the build left position deletes (eu) behind

    def paths(kind: str) -> Counter[str]:
        return Counter(r.file_path for r in lake.sql(f"SELECT file_path FROM lake.{name}.{kind}"))

    assert paths("data_files") == Counter(data)
    assert paths("delete_files") == Counter(deletes)
    assert paths("files") == Counter(data) + Counter(deletes)
    rows = {r.file_path: r for r in lake.sql(f"SELECT * FROM lake.{name}.files")}
    for f in [*planned.files, *(d for ds in planned.deletes.values() for d in ds)]:
        row = rows[f.file_path]
        assert (row.content, row.file_format, row.spec_id) == (
            int(f.content),
            f.file_format.upper(),
            f.spec_id,
        )
        assert (row.record_count, row.file_size_in_bytes) == (f.record_count, f.file_size_in_bytes)
        assert row.column_sizes == as_map(f.column_sizes)
        assert row.null_value_counts == as_map(f.null_value_counts)
        assert row.lower_bounds == as_map(f.lower_bounds)
        assert row.upper_bounds == as_map(f.upper_bounds)
        assert row.split_offsets == (None if f.split_offsets is None else list(f.split_offsets))
        assert (
            row.first_row_id,
            row.referenced_data_file,
            row.content_offset,
            row.content_size_in_bytes,
        ) == (f.first_row_id, f.referenced_data_file, f.content_offset, f.content_size_in_bytes)
    if name == "db.v3":  # row lineage: every data file has its first row id
        assert all(rows[p].first_row_id is not None for p in data)

    # pyiceberg reads the same manifests to the same rows
    for kind in ("files", "data_files", "delete_files"):
        iceberg = lake.inspect(name, kind)
        assert Counter(f["file_path"] for f in iceberg) == paths(kind), kind
    for f in lake.inspect(name, "files"):
        row = rows[f["file_path"]]
        assert (row.content, row.record_count, row.file_size_in_bytes, row.spec_id) == (
            f["content"],
            f["record_count"],
            f["file_size_in_bytes"],
            f["spec_id"],
        )
        assert (row.value_counts or {}) == dict(f["value_counts"] or {})
        assert (row.lower_bounds or {}) == dict(f["lower_bounds"] or {})


def test_partition_is_the_union_of_the_specs_fields_with_their_types(lake: Lake) -> None:
    table = lake.table("db.t")
    frame = lake.spark.sql("SELECT spec_id, partition, file_path FROM lake.db.t.data_files")
    assert frame.schema["partition"].dataType.simpleString() == "struct<region:string,ts_day:date>"
    rows = frame.collect()
    by_spec = {r.spec_id: r.partition for r in rows}
    us_days = {t.date() for t in table.to_arrow("region = 'us'").column("ts").to_pylist()}
    assert dt.date(2024, 2, 1) in us_days  # the update moved id 12

    assert set(by_spec) == {0, 1}  # eu kept its spec-0 file; us was compacted under spec 1
    assert by_spec[0].asDict() == {"region": "eu", "ts_day": None}
    for r in rows:
        if r.spec_id == 1:
            assert r.partition.region == "us"
            assert r.partition.ts_day in us_days
            assert f"ts_day={r.partition.ts_day.isoformat()}" in r.file_path
    assert [f.name for f in table.spec().fields] == ["region", "ts_day"]


@pytest.mark.parametrize("name", ["db.t", "db.v3"])
def test_entries_are_every_entry_of_the_current_manifests(lake: Lake, name: str) -> None:
    table = lake.table(name)
    expected = Counter(
        (
            int(e.status),
            e.snapshot_id,
            e.sequence_number,
            e.file_sequence_number,
            e.data_file.file_path,
        )
        for m in manifests(table)
        for e in entries(table, m)
    )
    rows = lake.sql(f"SELECT * FROM lake.{name}.entries")
    got = Counter(
        (r.status, r.snapshot_id, r.sequence_number, r.file_sequence_number, r.data_file.file_path)
        for r in rows
    )
    assert got == expected
    assert {status for status, *_ in got} >= {1, 2}  # the compaction's DELETED entries too

    # pyiceberg 0.12's inspect.entries fails on a deletion vector's entry (it calls
    # dict(None) on its column_sizes): it checks the v2 table
    if name == "db.t":
        iceberg = Counter(
            (
                e["status"],
                e["snapshot_id"],
                e["sequence_number"],
                e["file_sequence_number"],
                e["data_file"]["file_path"],
            )
            for e in lake.inspect(name, "entries")
        )
        assert iceberg == got

    every = lake.sql(f"SELECT status, data_file.file_path AS path FROM lake.{name}.all_entries")
    reachable = {
        m.manifest_path: m for s in table.snapshots() for m in manifests(table, s.snapshot_id)
    }
    assert Counter((r.status, r.path) for r in every) == Counter(
        (int(e.status), e.data_file.file_path)
        for m in reachable.values()
        for e in entries(table, m)
    )


@pytest.mark.parametrize("name", ["db.t", "db.v3"])
def test_manifests_match_the_manifest_lists_and_pyiceberg(lake: Lake, name: str) -> None:
    table = lake.table(name)
    rows = {r.path: r for r in lake.sql(f"SELECT * FROM lake.{name}.manifests")}
    listed = manifests(table)
    assert set(rows) == {m.manifest_path for m in listed}
    assert {r.content for r in rows.values()} == {0, 1}

    for m in lake.inspect(name, "manifests"):
        row = rows[m["path"]]
        assert row.asDict(recursive=True) == {
            **m,
            "partition_summaries": [dict(s) for s in m["partition_summaries"]],
        }
    spec1 = [r for r in rows.values() if r.partition_spec_id == 1 and r.content == 0]
    assert spec1 and spec1[0].partition_summaries[1].lower_bound == "2024-01-01"

    every = lake.sql(f"SELECT path, reference_snapshot_id FROM lake.{name}.all_manifests")
    assert Counter((r.path, r.reference_snapshot_id) for r in every) == Counter(
        (m.manifest_path, s.snapshot_id)
        for s in table.snapshots()
        for m in manifests(table, s.snapshot_id)
    )
    assert Counter((r.path, r.reference_snapshot_id) for r in every) == Counter(
        (m["path"], m["reference_snapshot_id"]) for m in lake.inspect(name, "all_manifests")
    )


@pytest.mark.parametrize("name", ["db.t", "db.v3"])
def test_all_files_tables_read_every_reachable_manifest_once(lake: Lake, name: str) -> None:
    table = lake.table(name)
    reachable = {
        m.manifest_path: m for s in table.snapshots() for m in manifests(table, s.snapshot_id)
    }

    def live(content: int | None) -> Counter[str]:
        return Counter(
            e.data_file.file_path
            for m in reachable.values()
            if content is None or int(m.content) == content
            for e in entries(table, m)
            if int(e.status) != 2
        )

    for kind, content in (("all_files", None), ("all_data_files", 0), ("all_delete_files", 1)):
        got = Counter(r.file_path for r in lake.sql(f"SELECT file_path FROM lake.{name}.{kind}"))
        assert got == live(content), kind
        assert got == Counter(f["file_path"] for f in lake.inspect(name, kind)), kind
    # the compacted-away us files are still listed by older snapshots
    current = {f.file_path for f in plan(table).files}
    assert set(live(0)) - current


@pytest.mark.parametrize("name", ["db.t", "db.v3"])
def test_partitions_aggregate_the_live_files_per_partition(lake: Lake, name: str) -> None:
    table = lake.table(name)
    planned = plan(table)
    expected: dict[tuple[str, dt.date | None], list[int]] = {}
    for f in planned.files:
        key = (
            f.partition[0],
            None if f.spec_id == 0 else dt.date(1970, 1, 1) + dt.timedelta(days=f.partition[1]),
        )
        counts = expected.setdefault(key, [0, 0, 0, 0, 0])
        counts[0] += f.record_count
        counts[1] += 1
        counts[2] += f.file_size_in_bytes
    for d in {d for ds in planned.deletes.values() for d in ds}:
        key = (d.partition[0], None)
        counts = expected.setdefault(key, [0, 0, 0, 0, 0])
        counts[3] += d.record_count
        counts[4] += 1

    rows = lake.sql(f"SELECT * FROM lake.{name}.partitions")
    got = {
        (r.partition.region, r.partition.ts_day): [
            r.record_count,
            r.file_count,
            r.total_data_file_size_in_bytes,
            r.position_delete_record_count,
            r.position_delete_file_count,
        ]
        for r in rows
    }
    assert got == expected
    # ids 3 and 5: two position delete files (v2), one deletion vector holding both (v3)
    assert got[("eu", None)][3:] == ([2, 2] if name == "db.t" else [2, 1])
    assert all(r.equality_delete_file_count == 0 for r in rows)

    # the last snapshot that added a live file to the partition (pyiceberg agrees)
    snapshots = {s.snapshot_id: s for s in table.snapshots()}
    for r in rows:
        assert r.last_updated_at == dt.datetime.fromtimestamp(
            snapshots[r.last_updated_snapshot_id].timestamp_ms / 1000, dt.UTC
        ).replace(tzinfo=None)
    eu = next(r for r in rows if r.partition.region == "eu")
    assert eu.last_updated_snapshot_id == table.metadata.current_snapshot_id  # the id 5 delete
    iceberg = lake.inspect(name, "partitions")
    assert sorted(
        (
            p["record_count"],
            p["file_count"],
            p["position_delete_file_count"],
            p["last_updated_snapshot_id"],
        )
        for p in iceberg
    ) == sorted(
        (r.record_count, r.file_count, r.position_delete_file_count, r.last_updated_snapshot_id)
        for r in rows
    )


@pytest.mark.parametrize("name", ["db.t", "db.v3"])
def test_metadata_log_entries_end_with_the_current_metadata_file(lake: Lake, name: str) -> None:
    table = lake.table(name)
    rows = lake.sql(f"SELECT * FROM lake.{name}.metadata_log_entries ORDER BY timestamp")

    assert [r.file for r in rows] == [
        *(e.metadata_file for e in table.metadata.metadata_log),
        table.metadata_location,
    ]
    current = table.current_snapshot()
    assert current is not None
    assert (rows[-1].latest_snapshot_id, rows[-1].latest_sequence_number) == (
        current.snapshot_id,
        current.sequence_number,
    )
    assert rows[0].latest_snapshot_id is None  # the table's creation: no snapshot yet
    assert [
        (r.file, r.latest_snapshot_id, r.latest_schema_id, r.latest_sequence_number) for r in rows
    ] == [
        (e["file"], e["latest_snapshot_id"], e["latest_schema_id"], e["latest_sequence_number"])
        for e in sorted(lake.inspect(name, "metadata_log_entries"), key=lambda e: e["timestamp"])
    ]


def _deleted_ids(table: Table) -> dict[tuple[str, int], int]:
    """(data file, position) -> id of every row of the current data files that the table's
    reads no longer return: what position deletes must name."""
    alive = set(table.to_arrow().column("id").to_pylist())
    out = {}
    for f in plan(table).files:
        ids = pq.read_table(pa.BufferReader(table.io.read(f.file_path)), columns=["id"])
        for pos, i in enumerate(ids.column("id").to_pylist()):
            if i not in alive:
                out[(f.file_path, pos)] = i
    return out


@pytest.mark.parametrize("name", ["db.t", "db.v3"])
def test_position_deletes_name_every_deleted_row(lake: Lake, name: str) -> None:
    table = lake.table(name)
    deleted = _deleted_ids(table)
    assert sorted(deleted.values()) == [3, 5]  # id 12's update was compacted away

    rows = lake.sql(f"SELECT * FROM lake.{name}.position_deletes")
    assert sorted((r.file_path, r.pos) for r in rows) == sorted(deleted)
    delete_files = {r.file_path: r for r in lake.sql(f"SELECT * FROM lake.{name}.delete_files")}
    for r in rows:
        source = delete_files[r.delete_file_path]
        assert (r.partition, r.spec_id) == (source.partition, source.spec_id)
        assert r.row is None
    if name == "db.v3":  # deletion vectors: one DV per data file, replaced by the second delete
        assert {f.file_format for f in delete_files.values()} == {"PUFFIN"}
        assert len(delete_files) == 1 and all(r.content_offset is not None for r in rows)
        [dv] = delete_files.values()
        assert dv.referenced_data_file == rows[0].file_path and dv.record_count == 2
        for r in rows:
            assert (r.content_offset, r.content_size_in_bytes) == (
                dv.content_offset,
                dv.content_size_in_bytes,
            )
    else:  # Iceberg adds the blob's columns from format v3 on
        assert {f.file_format for f in delete_files.values()} == {"PARQUET"}
        assert "content_offset" not in rows[0].asDict()


def test_partitions_of_specs_with_other_field_counts_stay_apart_as_in_iceberg(
    lake: Lake,
) -> None:
    # Iceberg's PartitionsTable keys a file by its partition over the union of the specs'
    # fields and by how many of them its spec has: a null region under the first spec and a
    # null region and day under the second are two rows (found by the random scripts)
    table = lake.catalog.create_table("db.nulls", SCHEMA, partition_by=["region"])
    nothing = pa.table({"id": [1], "region": [None], "ts": [None]}, SCHEMA)
    table.append(nothing)
    with table.update_spec() as spec:
        spec.add_field("ts", "day")
    table.append(nothing)
    table.append(nothing)

    rows = lake.sql("SELECT partition, spec_id, record_count FROM lake.db.nulls.partitions")
    assert sorted((tuple(r.partition), r.spec_id, r.record_count) for r in rows) == [
        ((None, None), 0, 1),
        ((None, None), 1, 2),
    ]


def test_a_partition_field_name_given_to_a_new_field_names_the_old_one_by_its_id(
    lake: Lake,
) -> None:
    # Iceberg Java 1.10 builds the union with the name twice; its partitions table then fails
    # ("Duplicate field id_bucket"), and so did lakecat's (Spark's Arrow reader)
    lake.sql("CREATE TABLE lake.db.rebucketed (id BIGINT) PARTITIONED BY (bucket(4, id))")
    lake.sql("INSERT INTO lake.db.rebucketed VALUES (1), (2)")
    lake.sql(
        "ALTER TABLE lake.db.rebucketed REPLACE PARTITION FIELD bucket(4, id) "
        "WITH bucket(8, id) AS id_bucket"
    )
    lake.sql("INSERT INTO lake.db.rebucketed VALUES (3)")

    bucket4, bucket8 = (parse_transform(f"bucket[{n}]") for n in (4, 8))
    expected = {  # id: (partition, spec id)
        1: ((bucket4.apply(LongType(), 1), None), 0),
        2: ((bucket4.apply(LongType(), 2), None), 0),
        3: ((None, bucket8.apply(LongType(), 3)), 1),
    }

    partitions = lake.spark.table("lake.db.rebucketed.partitions")
    assert partitions.schema["partition"].dataType.simpleString() == (
        "struct<id_bucket_1000:int,id_bucket:int>"
    )
    counts = Counter(
        {(tuple(r.partition), r.spec_id): r.record_count for r in partitions.collect()}
    )
    assert counts == Counter(expected.values())
    read = lake.sql("SELECT id, _partition FROM lake.db.rebucketed")
    assert {r.id: tuple(r._partition) for r in read} == {i: p for i, (p, _) in expected.items()}
    files = lake.sql("SELECT partition, spec_id FROM lake.db.rebucketed.files")
    assert Counter((tuple(r.partition), r.spec_id) for r in files) == Counter(expected.values())


def test_an_unpartitioned_table_has_one_partition_and_no_partition_columns(lake: Lake) -> None:
    table = lake.table("db.flat")
    [row] = lake.sql("SELECT * FROM lake.db.flat.partitions")
    [data] = plan(table).files
    current = table.current_snapshot()
    assert current is not None

    assert "partition" not in row.asDict() and "spec_id" not in row.asDict()  # as Iceberg
    assert (row.record_count, row.file_count, row.total_data_file_size_in_bytes) == (
        data.record_count,
        1,
        data.file_size_in_bytes,
    )
    assert (row.position_delete_record_count, row.position_delete_file_count) == (1, 1)
    assert row.last_updated_snapshot_id == current.snapshot_id
    [iceberg] = lake.inspect("db.flat", "partitions")
    assert "partition" not in iceberg
    assert (iceberg["record_count"], iceberg["position_delete_file_count"]) == (
        row.record_count,
        row.position_delete_file_count,
    )
    [deleted] = lake.sql("SELECT * FROM lake.db.flat.position_deletes")
    assert deleted.pos == 7 and "partition" not in deleted.asDict()
    assert "partition" not in lake.spark.table("lake.db.flat.files").columns


def test_a_position_delete_file_that_stores_rows_shows_them_in_the_tables_columns(
    lake: Lake, tmp_path: Path
) -> None:
    """Other writers may store the deleted row (the optional ``row`` column); lakecat's
    position delete files do not, so this one is written here. ``row`` is the table's row
    struct, as in Iceberg: the stored columns by name, null for the ones the file lacks."""
    path = tmp_path / "deletes.parquet"
    row = pa.struct([("id", pa.int64()), ("region", pa.string())])
    pq.write_table(
        pa.table(
            {
                "file_path": ["a.parquet", "a.parquet"],
                "pos": pa.array([1, 4], pa.int64()),
                "row": pa.array([{"id": 7, "region": "eu"}, {"id": 9, "region": None}], row),
            }
        ),
        path,
    )
    f = DataFile(str(path), "PARQUET", (), 2, path.stat().st_size, content=Content.POSITION_DELETES)

    stored = list(deleted_positions(LocalFileIO(), f))
    assert stored == [
        ("a.parquet", 1, {"id": 7, "region": "eu"}),
        ("a.parquet", 4, {"id": 9, "region": None}),
    ]
    decoder = plan_rows(lake.table("db.t"), "position_deletes").decoder
    assert [decoder.row(r) for _, _, r in stored] == [(7, "eu", None), (9, None, None)]
    columns = lake.spark.table("lake.db.t.position_deletes").schema["row"].dataType
    assert columns.simpleString() == "struct<id:bigint,region:string,ts:timestamp_ntz>"


PER_MANIFEST_TABLES = ["entries", "all_entries", *FILE_TABLES, "position_deletes"]


def test_tables_of_entries_and_files_are_read_a_group_of_manifests_per_task(lake: Lake) -> None:
    """Manifests are read by the tasks, in groups of at most read.split.metadata-target-size
    bytes (Iceberg's property): a task per manifest at 1 byte, one task for this small table
    by default, the same rows either way."""
    table = build(lake.catalog, "db.split", "2")

    def read(kind: str) -> tuple[int, list[str]]:
        frame = lake.spark.table(f"lake.db.split.{kind}")
        return frame.rdd.getNumPartitions(), sorted(str(r) for r in frame.collect())

    whole = {kind: read(kind) for kind in PER_MANIFEST_TABLES}
    assert {tasks for tasks, _ in whole.values()} == {1}
    table.set_properties({"read.split.metadata-target-size": "1"})
    split = {kind: read(kind) for kind in PER_MANIFEST_TABLES}
    current = manifests(table)
    reachable = {
        m.manifest_path for s in table.snapshots() for m in manifests(table, s.snapshot_id)
    }
    assert split["files"][0] == len(current) > 1
    assert split["all_files"][0] == len(reachable) > len(current)
    assert split["delete_files"][0] == sum(int(m.content) == 1 for m in current)
    for kind in PER_MANIFEST_TABLES:
        assert split[kind][1] == whole[kind][1], kind
        assert whole[kind][1], kind  # every table has rows here


def test_readable_metrics_decode_every_primitive_columns_bounds_in_its_type(lake: Lake) -> None:
    """Nested columns by qualified name, in name order; bounds in the column's Spark type;
    a time column's as text (Spark has no time type)."""
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("day", pa.date32()),
            ("at", pa.time64("us")),
            ("price", pa.decimal128(9, 2)),
            ("where", pa.struct([("lat", pa.float64()), ("city", pa.string())])),
            ("tags", pa.list_(pa.string())),
        ]
    )
    table = lake.catalog.create_table("db.typed", schema, partition_by=[("day", "month")])
    table.append(
        pa.table(
            {
                "id": [1, 2],
                "day": [dt.date(2024, 3, 5), dt.date(2024, 3, 9)],
                "at": [dt.time(10, 15, 30), dt.time(8, 0)],
                "price": pa.array([Decimal("1.50"), Decimal("20.25")], pa.decimal128(9, 2)),
                "where": [{"lat": 1.5, "city": "Oslo"}, {"lat": -3.0, "city": None}],
                "tags": [["a"], ["b", "c"]],
            },
            schema=schema,
        )
    )
    frame = lake.spark.sql("SELECT partition, readable_metrics FROM lake.db.typed.files")
    metrics = frame.schema["readable_metrics"].dataType
    assert metrics.names == [
        "at", "day", "id", "price", "tags.element", "where.city", "where.lat"
    ]  # fmt: skip
    bound_types = {f.name: f.dataType["lower_bound"].dataType.simpleString() for f in metrics}
    assert bound_types == {
        "at": "string",
        "day": "date",
        "id": "bigint",
        "price": "decimal(9,2)",
        "tags.element": "string",
        "where.city": "string",
        "where.lat": "double",
    }
    assert frame.schema["partition"].dataType.simpleString() == "struct<day_month:int>"
    [row] = frame.collect()
    m = row.readable_metrics
    assert (m.id.lower_bound, m.id.upper_bound, m.id.value_count) == (1, 2, 2)
    assert (m.day.lower_bound, m.day.upper_bound) == (dt.date(2024, 3, 5), dt.date(2024, 3, 9))
    assert (m.at.lower_bound, m.at.upper_bound) == ("08:00", "10:15:30")
    assert (m.price.lower_bound, m.price.upper_bound) == (Decimal("1.50"), Decimal("20.25"))
    assert m["where.lat"].lower_bound == -3.0 and m["where.city"].null_value_count == 1
    assert row.partition.day_month == (2024 - 1970) * 12 + 2  # months since 1970-01


def test_a_query_planned_before_a_partition_change_fails_clearly_when_run(lake: Lake) -> None:
    table = lake.catalog.create_table("db.changing", SCHEMA, partition_by=[("region", "identity")])
    table.append(batch(range(3), "eu"))
    frame = lake.spark.table("lake.db.changing.files")
    assert frame.count() == 1
    with table.update_spec() as update:
        update.add_field("ts", "day")
    with pytest.raises(Exception, match=r"SchemaMismatch.*run it again"):
        frame.collect()
    assert lake.spark.table("lake.db.changing.files").count() == 1  # a new query reads


def test_a_read_makes_only_the_columns_the_query_selects(lake: Lake) -> None:
    """The plugin prunes a metadata table's columns: readable_metrics (decoded per file and
    column) is made only when selected; here a file whose id bound is corrupt fails only
    the queries that select it."""
    import shutil
    from dataclasses import replace

    from lakecat.catalog.engine import Intent, OpKind

    table = lake.catalog.create_table("db.pruned", SCHEMA)
    table.append(batch(range(3), "eu"))
    [good] = table.scan().plan_files()
    path = good.file_path.removeprefix("file://").replace(".parquet", "-copy.parquet")
    shutil.copy(good.file_path.removeprefix("file://"), path)
    bounds = {**(good.lower_bounds or {}), 1: b"\x01\x02\x03"}  # 3 bytes for a bigint
    table.commit_intent(
        Intent(
            kind=OpKind.APPEND,
            added_files=(replace(good, file_path=f"file://{path}", lower_bounds=bounds),),
        )
    )

    paths = lake.sql("SELECT file_path FROM lake.db.pruned.files ORDER BY file_path")
    assert [r.file_path for r in paths] == sorted([good.file_path, f"file://{path}"])
    assert lake.sql("SELECT count(*) FROM lake.db.pruned.entries")[0][0] == 2
    assert len(lake.sql("SELECT data_file.record_count FROM lake.db.pruned.entries")) == 2
    with pytest.raises(Exception, match="CorruptMetadata"):
        lake.sql("SELECT readable_metrics.id.lower_bound FROM lake.db.pruned.files")
    with pytest.raises(Exception, match="CorruptMetadata"):
        lake.sql("SELECT * FROM lake.db.pruned.entries")


def test_readable_bounds_read_promoted_bounds_and_refuse_corrupt_ones() -> None:
    """Bounds written before an int -> long or float -> double promotion keep their 4 bytes,
    as Iceberg Java reads them; a bound of the wrong size is corrupt metadata."""
    from lakecat.metadata.errors import CorruptMetadata
    from lakecat.metadata.schema import DoubleType, IntegerType, LongType, StringType
    from lakecat.spark_ext.sql.metadata_tables.rows import _bound_reader

    assert _bound_reader(LongType())((-5).to_bytes(4, "little", signed=True)) == -5
    assert _bound_reader(LongType())((2**40).to_bytes(8, "little")) == 2**40
    assert _bound_reader(DoubleType())(struct.pack("<f", 1.5)) == 1.5
    assert _bound_reader(StringType())("héllo".encode()) == "héllo"
    for t, data in ((IntegerType(), bytes(8)), (LongType(), bytes(3)), (DoubleType(), bytes(5))):
        with pytest.raises(CorruptMetadata):
            _bound_reader(t)(data)
    with pytest.raises(CorruptMetadata):
        _bound_reader(StringType())(b"\xff\xfe")


@pytest.mark.parametrize("name", ["db.t", "db.v3"])
def test_time_travel_shows_the_metadata_tables_of_an_older_snapshot(lake: Lake, name: str) -> None:
    table = lake.table(name)
    for snapshot in table.snapshots():
        at = f"VERSION AS OF {snapshot.snapshot_id}"
        m = table.metadata
        planned = Scan(table.io, m, snapshot, m.schema()).plan()
        data = Counter(f.file_path for f in planned.files)
        deletes = Counter(d.file_path for ds in planned.deletes.values() for d in ds)
        got = Counter(r[0] for r in lake.sql(f"SELECT file_path FROM lake.{name}.files {at}"))
        assert got == data + deletes, snapshot.snapshot_id
        iceberg = lake.inspect(name, "files", snapshot.snapshot_id)
        assert Counter(f["file_path"] for f in iceberg) == got
        listed = {r[0] for r in lake.sql(f"SELECT path FROM lake.{name}.manifests {at}")}
        assert listed == {mf.manifest_path for mf in manifests(table, snapshot.snapshot_id)}
        counted = lake.sql(f"SELECT sum(record_count) FROM lake.{name}.partitions {at}")[0][0]
        assert counted == sum(f.record_count for f in planned.files)
        positions = lake.sql(f"SELECT count(*) FROM lake.{name}.position_deletes {at}")[0][0]
        named = lake.sql(f"SELECT sum(record_count) FROM lake.{name}.files {at} WHERE content = 1")[
            0
        ][0]
        assert positions == (named or 0)

    first = table.snapshots()[0]
    at_time = dt.datetime.fromtimestamp(first.timestamp_ms / 1000, tz=dt.UTC)
    by_time = lake.sql(
        f"SELECT count(*) FROM lake.{name}.files TIMESTAMP AS OF '{at_time.isoformat()}'"
    )
    assert by_time[0][0] == 1  # the first append's one file


def test_time_travel_of_the_history_tables_is_refused(lake: Lake) -> None:
    snapshot = lake.table("db.t").snapshots()[0].snapshot_id
    for kind in ("snapshots", "history", "all_files"):
        with pytest.raises(Exception, match=f"the {kind} metadata table has no time travel"):
            lake.sql(f"SELECT * FROM lake.db.t.{kind} VERSION AS OF {snapshot}")
    with pytest.raises(Exception, match="has no snapshot, tag or branch 'nope'"):
        lake.sql("SELECT * FROM lake.db.t.files VERSION AS OF 'nope'")
