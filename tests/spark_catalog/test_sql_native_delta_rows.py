"""Merge-on-read ``UPDATE``/``MERGE`` rows written by Spark's Parquet writer inside the tasks.

On a table that qualifies (``lakecat.spark_ext.native.delta_rows``), each task of a
merge-on-read statement writes its new rows itself (the plugin's ``NativeRows``; on format v3
with their lineage) into ``<data>/delta-<job>/<hidden column>=<value>/`` folders, and the
commit call describes them from their folders and footers. Tables that do not qualify, and
sessions that turn the native row-level writes off, stage the rows through the Python data
source as before.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from small_pages import ordinary_file_sizes

from lakecat.metadata.io.fileio import local_path
from lakecat.spark_ext.native.local_files import LOCAL_FILES_CLASS

pytestmark = pytest.mark.spark

MOR = ", ".join(f"'write.{kind}.mode' = 'merge-on-read'" for kind in ("delete", "update", "merge"))
IN_TASKS = re.compile(r"/data/delta-[0-9a-f]{32}/")
SETTING = "spark.lakecat.nativeRowLevelWrites"
# a row-level MERGE (a MERGE that only inserts is planned as an append)
UPSERT = (
    "MERGE INTO lake.db.sales t USING src s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *"
)


def new_files(table: Any, before: set[str]) -> list[Any]:
    """The data files of the table's current snapshot that ``before`` did not have."""
    return [f for f in table.refresh().scan().plan_files() if f.file_path not in before]


def paths(table: Any) -> set[str]:
    return {f.file_path for f in table.refresh().scan().plan_files()}


def make_sales(lake: Any, spec: str = "region", properties: str = "") -> Any:
    lake.sql(
        "CREATE TABLE lake.db.sales (id bigint, region string, amount double) "
        f"PARTITIONED BY ({spec}) TBLPROPERTIES ({MOR}{properties})"
    )
    lake.sql(
        "INSERT INTO lake.db.sales VALUES (1, 'eu', 1.0), (2, 'eu', 2.0), (3, 'eu', 3.0), "
        "(4, 'us', 4.0), (5, 'us', 5.0), (6, 'ap', 6.0)"
    )
    return lake.catalog.load_table("db.sales")


def new_source(spark: Any, rows: int, region: str, table: Any) -> set[str]:
    """``src``: ``rows`` new rows (ids from 100) in the regions ``region`` (SQL) gives; the
    table's files before the statement."""
    spark.range(rows).selectExpr(
        "id + 100 AS id", f"{region} AS region", "cast(id AS double) AS amount"
    ).createOrReplaceTempView("src")
    return paths(table)


def test_update_and_merge_rows_are_written_in_the_tasks(lake, spark) -> None:
    sales = make_sales(lake)
    before = paths(sales)
    statement = "UPDATE lake.db.sales SET amount = amount * 10 WHERE id % 2 = 0"
    assert "rows written by Spark's Parquet writer" in lake.sql(f"EXPLAIN {statement}")[0][0]

    lake.sql(statement)
    spark.createDataFrame(
        [(1, "eu", 100.0), (5, "us", -1.0), (9, None, 9.0)],
        "id bigint, region string, amount double",
    ).createOrReplaceTempView("src")
    lake.sql(
        "MERGE INTO lake.db.sales t USING src s ON t.id = s.id "
        "WHEN MATCHED AND s.amount < 0 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *"
    )

    expected = [(1, "eu", 100.0), (2, "eu", 20.0), (3, "eu", 3.0), (4, "us", 40.0)]
    expected += [(6, "ap", 60.0), (9, None, 9.0)]
    ours = lake.rows("db.sales", "id", "region", "amount")
    assert sorted(ours, key=lambda r: r[0]) == expected
    assert lake.iceberg_rows("db.sales", "id", "region", "amount") == ours
    written = new_files(sales, before)
    assert Counter((f.partition, f.record_count) for f in written if f.content == 0) == Counter(
        [(("eu",), 1), (("us",), 1), (("ap",), 1), (("eu",), 1), ((None,), 1)]
    )
    for f in written:
        if f.content != 0:
            continue  # the position delete files
        assert IN_TASKS.search(f.file_path), f.file_path
        local = local_path(f.file_path)
        assert local is not None
        schema = pq.read_schema(local)
        assert [schema.field(n).metadata[b"PARQUET:field_id"] for n in schema.names] == [
            b"1",
            b"2",
            b"3",
        ]
        assert pq.ParquetFile(local).metadata.row_group(0).column(0).compression == "ZSTD"
    on_disk = {p for p in lake.files_on_disk(sales) if "/delta-" in p}
    assert on_disk == {local_path(f.file_path) for f in written if IN_TASKS.search(f.file_path)}
    for snapshot in sales.refresh().snapshots()[1:]:
        assert "deleted-data-files" not in snapshot.summary


def test_the_tasks_write_through_lakecats_local_file_system(lake, spark) -> None:
    """As ``lk.write`` does (``lakecat.spark_ext.native.local_files``): no ``chmod`` process
    and no checksum file per written file."""
    jvm = spark.sparkContext._jvm
    local_files = jvm.java.lang.Class.forName(LOCAL_FILES_CLASS)

    def written() -> int:
        stats = jvm.org.apache.hadoop.fs.FileSystem.getStatistics("file", local_files)
        return int(stats.getBytesWritten())

    sales = make_sales(lake)
    before, files_before = written(), paths(sales)
    lake.sql("UPDATE lake.db.sales SET amount = amount * 10 WHERE id % 2 = 0")
    assert written() > before
    assert all(
        IN_TASKS.search(f.file_path) for f in new_files(sales, files_before) if not f.content
    )
    assert not [p for p in lake.files_on_disk(sales) if p.endswith(".crc")]


SPECS = {
    "day, month, identity string": "days(ts), months(d), name",
    "hour, year, identity decimal, boolean, date": "hours(ts), years(d), amount, flag, d",
    "bucket of long, timestamp, date, string, decimal": (
        "bucket(5, id), bucket(2, ts), bucket(2, d), bucket(3, name), bucket(2, amount)"
    ),
    "truncate of string and long": "truncate(1, name), truncate(3, id)",
    "truncate of decimal": "truncate(10, amount), truncate(7, id)",
}


@pytest.mark.parametrize("spec", SPECS)
def test_partition_values_computed_in_the_tasks_are_lakecats(lake, spark, spec: str) -> None:
    """Every new row lands in the partition lakecat's own writer gives it: the same rows
    appended through the Python API to a twin table get the same partition tuples."""
    partitioned_by = SPECS[spec]
    columns = "id bigint, ts timestamp, d date, name string, amount decimal(9,2), flag boolean"
    columns += ", info struct<a: int, b: string>"
    for name in ("t", "twin"):
        lake.sql(
            f"CREATE TABLE lake.db.{name} ({columns}) PARTITIONED BY ({partitioned_by}) "
            f"TBLPROPERTIES ({MOR})"
        )
    lake.sql(
        """INSERT INTO lake.db.t VALUES
        (1, TIMESTAMP'1969-12-31 23:59:59.999999Z', DATE'1969-12-31', 'a b/c%*~', -1.50, true,
            named_struct('a', 1, 'b', 'x')),
        (2, TIMESTAMP'2024-02-29 12:00:00Z', DATE'2024-02-29', '', 0.00, false, NULL),
        (3, NULL, NULL, NULL, NULL, NULL, named_struct('a', NULL, 'b', NULL)),
        (4, TIMESTAMP'2024-03-01 00:00:00Z', DATE'1900-01-01', '__HIVE_DEFAULT_PARTITION__',
            1234567.89, true, named_struct('a', -4, 'b', '')),
        (5, TIMESTAMP'1970-01-01 00:59:59Z', DATE'2024-03-01', 'é', 0.01, false, NULL),
        (6, TIMESTAMP'1900-06-15 07:30:00Z', DATE'1970-01-01', 'x=y', -0.01, true, NULL)"""
    )
    table = lake.catalog.load_table("db.t")
    before = paths(table)
    original = table.to_arrow().sort_by("id").to_pylist()

    lake.sql("UPDATE lake.db.t SET id = id + 100")

    written = [f for f in new_files(table, before) if f.content == 0]
    assert all(IN_TASKS.search(f.file_path) for f in written)
    rows = table.refresh().to_arrow()
    twin = lake.catalog.load_table("db.twin")
    twin.append(rows)
    ours = Counter((f.partition, f.record_count) for f in written)
    lakecats = Counter((f.partition, f.record_count) for f in twin.refresh().scan().plan_files())
    assert ours == lakecats and len(ours) >= 4  # (the bucket and truncate specs share some)
    assert rows.sort_by("id").to_pylist() == [{**r, "id": r["id"] + 100} for r in original]
    assert lake.iceberg_rows("db.t") == lake.rows("db.t")
    # pyiceberg prunes by its own transforms: a row in a file of the wrong partition is lost
    for i in range(101, 107):
        assert lake.iceberg_rows("db.t", "id", row_filter=f"id = {i}") == [(i,)]


def test_a_truncate_past_the_long_range_in_a_task_fails_the_statement(lake, spark) -> None:
    """truncate[3] of the smallest longs is below the long range: the task fails, as a
    native write does, and the statement commits nothing."""
    sales = make_sales(lake, "truncate(3, id)")
    snapshot = sales.current_snapshot().snapshot_id

    with pytest.raises(Exception, match="truncate\\[3\\] of -9223372036854775807 overflows"):
        lake.sql("UPDATE lake.db.sales SET id = -9223372036854775807 WHERE id = 1")

    assert sales.refresh().current_snapshot().snapshot_id == snapshot
    assert not [p for p in lake.files_on_disk(sales) if "/delta-" in p]


def test_binary_partition_values_computed_in_the_tasks_are_lakecats(lake, spark) -> None:
    """truncate of a binary column: the tasks write each new row in the partition lakecat's
    own writer gives it (its folder value in hexadecimal)."""
    for name in ("raws", "raws_twin"):
        lake.sql(
            f"CREATE TABLE lake.db.{name} (id bigint, raw binary) "
            f"PARTITIONED BY (truncate(2, raw)) TBLPROPERTIES ({MOR})"
        )
    lake.sql(
        "INSERT INTO lake.db.raws VALUES (1, X''), (2, X'00'), (3, X'0001FF'), (4, NULL), "
        "(5, X'616263'), (6, X'2525')"
    )
    table = lake.catalog.load_table("db.raws")
    before = paths(table)
    original = table.to_arrow().sort_by("id").to_pylist()

    lake.sql("UPDATE lake.db.raws SET id = id + 100")

    written = [f for f in new_files(table, before) if f.content == 0]
    assert written and all(IN_TASKS.search(f.file_path) for f in written)
    rows = table.refresh().to_arrow()
    twin = lake.catalog.load_table("db.raws_twin")
    twin.append(rows)
    ours = Counter((f.partition, f.record_count) for f in written)
    lakecats = Counter((f.partition, f.record_count) for f in twin.refresh().scan().plan_files())
    assert ours == lakecats and len(ours) == 6
    assert rows.sort_by("id").to_pylist() == [{**r, "id": r["id"] + 100} for r in original]
    assert ((b"ab",), 1) in ours and ((b"",), 1) in ours and ((None,), 1) in ours


def test_a_decimal_truncate_past_the_precision_in_a_task_fails_the_statement(lake, spark) -> None:
    """truncate[10] of -9999999.99 in a decimal(9,2) needs ten digits: the task fails, as
    lakecat's writer refuses it, and the statement commits nothing."""
    lake.sql(
        "CREATE TABLE lake.db.prices (id bigint, amount decimal(9,2)) "
        f"PARTITIONED BY (truncate(10, amount)) TBLPROPERTIES ({MOR})"
    )
    lake.sql("INSERT INTO lake.db.prices VALUES (1, 1.00), (2, 2.00)")
    prices = lake.catalog.load_table("db.prices")
    snapshot = prices.current_snapshot().snapshot_id

    with pytest.raises(Exception, match=r"truncate\[10\] of -9999999\.99 overflows"):
        lake.sql("UPDATE lake.db.prices SET amount = -9999999.99 WHERE id = 1")

    assert prices.refresh().current_snapshot().snapshot_id == snapshot
    assert not [p for p in lake.files_on_disk(prices) if "/delta-" in p]


def test_on_format_v3_the_tasks_write_the_rows_lineage(lake, spark) -> None:
    """An updated row keeps its ``_row_id`` and takes the commit's sequence number; an
    inserted row gets a new id: the tasks write ``_row_id`` (null for an inserted row) and a
    null ``_last_updated_sequence_number`` after the table's columns."""
    sales = make_sales(lake, properties=", 'format-version' = '3'")
    lineage = "SELECT id, _row_id, _last_updated_sequence_number FROM lake.db.sales"
    before = {r[0]: (r[1], r[2]) for r in lake.sql(lineage)}
    old_files = paths(sales)
    spark.createDataFrame(
        [(2, "eu", 20.0), (7, "ap", 7.0)], "id bigint, region string, amount double"
    ).createOrReplaceTempView("src")

    lake.sql(UPSERT)

    snapshot = sales.refresh().current_snapshot()
    after = {r[0]: (r[1], r[2]) for r in lake.sql(lineage)}
    assert after[2] == (before[2][0], snapshot.sequence_number)  # the same id, a new number
    assert after[7][0] not in {rid for rid, _ in before.values()}
    assert after[7][1] == snapshot.sequence_number
    assert {i: after[i] for i in (1, 3, 4, 5, 6)} == {i: before[i] for i in (1, 3, 4, 5, 6)}
    written = [f for f in new_files(sales, old_files) if f.content == 0]
    assert len(written) == 2 and all(IN_TASKS.search(f.file_path) for f in written)
    for f in written:
        local = local_path(f.file_path)
        assert local is not None
        schema = pq.read_schema(local)
        assert schema.names[-2:] == ["_row_id", "_last_updated_sequence_number"]
        assert schema.field("_row_id").metadata[b"PARQUET:field_id"] == b"2147483540"
    ours = lake.rows("db.sales", "id", "region", "amount")
    assert lake.iceberg_rows("db.sales", "id", "region", "amount") == ours


@pytest.mark.parametrize("case", ["bucket of binary", "sort order", "session setting off"])
def test_rows_the_tasks_cannot_write_are_staged_through_the_data_source(
    lake, spark, case: str
) -> None:
    sales = make_sales(lake)
    if case == "sort order":
        lake.sql("ALTER TABLE lake.db.sales WRITE ORDERED BY amount")
    if case == "bucket of binary":
        lake.sql("ALTER TABLE lake.db.sales ADD COLUMNS (raw binary)")
        lake.sql("ALTER TABLE lake.db.sales ADD PARTITION FIELD bucket(2, raw)")
        sales.refresh()
    statement = "UPDATE lake.db.sales SET amount = -amount WHERE id % 2 = 1"
    before = paths(sales)
    if case == "session setting off":
        spark.conf.set(SETTING, "false")
    try:
        assert "Spark's Parquet writer" not in lake.sql(f"EXPLAIN {statement}")[0][0]
        lake.sql(statement)
    finally:
        spark.conf.unset(SETTING)

    assert lake.rows("db.sales", "id", "amount") == [
        (1, -1.0), (2, 2.0), (3, -3.0), (4, 4.0), (5, -5.0), (6, 6.0)
    ]  # fmt: skip
    written = new_files(sales, before)
    assert written and not any(IN_TASKS.search(f.file_path) for f in written)
    assert not [p for p in lake.files_on_disk(sales) if "/delta-" in p]


def test_a_delete_needs_no_python_write_whatever_the_table(lake) -> None:
    """A DELETE's tasks write no rows, so it is planned without the Python data source's write
    even on a table whose rows would be staged (a sort order)."""
    from pyspark.sql.types import StructType

    sales = make_sales(lake)
    lake.sql("ALTER TABLE lake.db.sales WRITE ORDERED BY amount")
    sales.refresh()
    options = {"metadata-location": sales.metadata_location}
    rows_schema = lake.bridge.begin_row_level(
        ["db"], "sales", options, delta_schema=StructType([]).json()
    )
    update_schema = lake.bridge.begin_row_level(
        ["db"], "sales", options, delta_schema=lake.spark.table("lake.db.sales").schema.json()
    )
    assert "native_rows" in rows_schema and "native_rows" not in update_schema
    assert "sort order" in update_schema["native_reason"]

    lake.sql("DELETE FROM lake.db.sales WHERE id % 2 = 0")

    assert lake.rows("db.sales", "id") == [(1,), (3,), (5,)]
    assert lake.iceberg_rows("db.sales", "id") == [(1,), (3,), (5,)]
    assert int(sales.refresh().current_snapshot().summary["added-delete-files"]) > 0


def test_a_task_meeting_many_partitions_writes_one_file_for_each(lake, spark) -> None:
    """Rows of 40 partitions in any order: 16 files stay open, the other partitions' rows are
    buffered and written at the end, so a task writes one file per partition it met, not a
    file per change of partition."""
    sales = make_sales(lake)
    before = new_source(spark, 4000, "concat('r', cast(id % 40 AS string))", sales)

    lake.sql(UPSERT)

    written = new_files(sales, before)
    assert all(IN_TASKS.search(f.file_path) for f in written)
    per_task = Counter(
        (f.partition, re.search(r"/(\d{5})-\d+-", f.file_path).group(1)) for f in written
    )
    assert len({p for p, _ in per_task}) == 40
    assert set(per_task.values()) == {1}
    assert sum(f.record_count for f in written) == 4000
    ours = lake.rows("db.sales", "id", "region", "amount")
    assert len(ours) == 4006
    assert lake.iceberg_rows("db.sales", "id", "region", "amount") == ours


def test_a_failed_statement_commits_nothing_and_leaves_no_files(lake, spark) -> None:
    sales = make_sales(lake)
    before, on_disk = sales.metadata_location, lake.files_on_disk(sales)
    spark.createDataFrame(
        [(1, "eu", 10.0), (1, "eu", 11.0)], "id bigint, region string, amount double"
    ).createOrReplaceTempView("src")

    with pytest.raises(Exception, match=r"MERGE_CARDINALITY_VIOLATION|more than one"):
        lake.sql(
            "MERGE INTO lake.db.sales t USING src s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET amount = s.amount"
        )

    assert sales.refresh().metadata_location == before
    root = local_path(sales.location)
    assert root is not None
    assert lake.files_on_disk(sales) == on_disk
    assert not list(Path(root, "data").glob("delta-*"))


@ordinary_file_sizes
def test_a_task_rolls_to_a_new_file_at_the_target_size(lake, spark) -> None:
    sales = make_sales(lake, properties=", 'write.target-file-size-bytes' = '65536'")
    before = new_source(spark, 20_000, "'eu'", sales)

    lake.sql(UPSERT)

    written = new_files(sales, before)
    assert len(written) > 2 and all(IN_TASKS.search(f.file_path) for f in written)
    assert {f.partition for f in written} == {("eu",)}
    assert sum(f.record_count for f in written) == 20_000
    assert all(f.file_size_in_bytes <= 65536 for f in written)
    assert lake.catalog.load_table("db.sales").to_arrow().num_rows == 20_006


def test_the_commit_describes_the_reported_files_and_deletes_the_others(tmp_path) -> None:
    """What the commit call does with a job folder: a reported file becomes a data file of
    its folders' partition; a file no committed task reported (a failed attempt's) is deleted;
    a reported file the folder does not hold fails the commit."""
    from lakecat.catalog import Catalog
    from lakecat.metadata.errors import CorruptMetadata
    from lakecat.metadata.io import join
    from lakecat.spark_ext.native.delta_rows import describe_delta_rows

    catalog = Catalog.embedded(tmp_path / "lake")
    try:
        catalog.create_namespace("db")
        schema = pa.schema([("id", pa.int64()), ("region", pa.string())])
        table = catalog.create_table("db.t", schema, partition_by=["region"])
        folder = join(table.location, "data", "delta-" + "0" * 32)
        local = local_path(folder)
        assert local is not None
        with_ids = pa.schema(
            [
                pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"}),
                pa.field("region", pa.string(), metadata={"PARQUET:field_id": "2"}),
            ]
        )
        Path(local, "region_1=eu").mkdir(parents=True)
        rows = pa.table({"id": [1, 2], "region": ["eu", "eu"]}, schema=with_ids)
        pq.write_table(rows, Path(local, "region_1=eu", "a.parquet"))
        pq.write_table(rows, Path(local, "region_1=eu", "failed-attempt.parquet"))
        reported = [join(folder, "region_1=eu", "a.parquet")]

        (described,) = describe_delta_rows(table.io, table.metadata, folder, reported)

        assert described.partition == ("eu",) and described.record_count == 2
        assert sorted(p.name for p in Path(local, "region_1=eu").iterdir()) == ["a.parquet"]
        with pytest.raises(CorruptMetadata, match="does not hold"):
            describe_delta_rows(
                table.io, table.metadata, folder, [join(folder, "region_1=eu", "gone.parquet")]
            )
    finally:
        catalog.close()
