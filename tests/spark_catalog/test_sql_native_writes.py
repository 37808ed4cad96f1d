"""Batch writes into catalog tables (``INSERT INTO``, ``INSERT OVERWRITE``, ``writeTo``) by
Spark's own Parquet writer when the write qualifies, as ``lk.write`` writes a DataFrame, else by
the Python data source: the rows are the same either way, one commit per statement."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from small_pages import ordinary_file_sizes

from lakecat.metadata.partitioning import parse_transform
from lakecat.metadata.schema import LongType, StringType

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
COLUMNS = "id bigint, region string, amount double"
SPARK_WRITER = "parquet-mr"  # parquet-java's created_by; pyarrow writes "parquet-cpp-arrow"


def writers(table: Any) -> set[str]:
    """The created_by of each data file of the table's current snapshot (its first word)."""
    return {
        pq.ParquetFile(f.file_path.removeprefix("file://")).metadata.created_by.split()[0]
        for f in table.refresh().scan().plan_files()
    }


def rows_of(lake, table: str) -> list[tuple[Any, ...]]:
    ours = lake.rows(table, "id", "region", "amount")
    assert lake.iceberg_rows(table, "id", "region", "amount") == ours
    return ours


@pytest.fixture
def sales(lake) -> Any:
    return lake.catalog.create_table("db.sales", SCHEMA, partition_by=["region"])


def test_insert_into_is_written_by_sparks_parquet_writer_in_one_commit(lake, sales) -> None:
    lake.sql("INSERT INTO lake.db.sales VALUES (1, 'eu', 1.5), (2, 'us', 2.5), (3, 'eu', 3.5)")

    assert writers(sales) == {SPARK_WRITER}
    assert len(sales.refresh().history()) == 1
    assert sales.current_snapshot().operation == "append"
    assert rows_of(lake, "db.sales") == [(1, "eu", 1.5), (2, "us", 2.5), (3, "eu", 3.5)]
    assert {f.partition for f in sales.scan().plan_files()} == {("eu",), ("us",)}


def test_insert_by_position_and_by_name_casts_to_the_table_columns(lake, sales) -> None:
    lake.sql("INSERT INTO lake.db.sales SELECT 1, 'eu', 2")  # int literals: cast by Spark
    lake.sql("INSERT INTO lake.db.sales (region, amount, id) VALUES ('us', 4.0, 3)")

    assert rows_of(lake, "db.sales") == [(1, "eu", 2.0), (3, "us", 4.0)]
    assert writers(sales) == {SPARK_WRITER}


def test_insert_overwrite_replaces_the_whole_table_natively(lake, sales) -> None:
    lake.sql("INSERT INTO lake.db.sales VALUES (1, 'eu', 1.0), (2, 'us', 2.0)")

    lake.sql("INSERT OVERWRITE lake.db.sales SELECT 9, 'ap', 9.0")

    assert rows_of(lake, "db.sales") == [(9, "ap", 9.0)]
    assert writers(sales) == {SPARK_WRITER}
    assert sales.refresh().current_snapshot().operation == "overwrite"


def test_insert_overwrite_of_a_static_partition_replaces_only_it(lake, sales) -> None:
    lake.sql("INSERT INTO lake.db.sales VALUES (1, 'eu', 1.0), (2, 'us', 2.0)")

    lake.sql("INSERT OVERWRITE lake.db.sales PARTITION (region = 'eu') SELECT 5, 7.0")

    assert rows_of(lake, "db.sales") == [(2, "us", 2.0), (5, "eu", 7.0)]


def test_dataframe_writer_v2_appends_natively(lake, sales, spark) -> None:
    df = spark.createDataFrame([(1, "eu", 1.0), (2, "us", 2.0)], COLUMNS)

    df.writeTo("lake.db.sales").append()
    df.writeTo("lake.db.sales").option("snapshot-property.source", "job-7").append()

    assert rows_of(lake, "db.sales") == [
        (1, "eu", 1.0), (1, "eu", 1.0), (2, "us", 2.0), (2, "us", 2.0),
    ]  # fmt: skip
    assert writers(sales) == {SPARK_WRITER}
    assert sales.refresh().current_snapshot().summary["source"] == "job-7"


@pytest.mark.parametrize("key", ["operation", "total-records", "lakecat.app-version"])
def test_a_snapshot_property_the_writer_computes_fails_and_commits_nothing(
    lake, sales, spark, key: str
) -> None:
    """A ``snapshot-property.operation`` of ``x`` made the table unreadable to pyiceberg and
    DuckDB (an operation they do not know); a count or a lakecat key would mislead readers."""
    from lakecat.metadata.errors import ValidationError
    from lakecat.spark_ext import lakecat_error

    df = spark.createDataFrame([(1, "eu", 1.0)], COLUMNS)
    df.writeTo("lake.db.sales").append()
    before = sales.refresh().metadata_location

    with pytest.raises(Exception) as raised:
        df.writeTo("lake.db.sales").option(f"snapshot-property.{key}", "x").append()

    assert isinstance(lakecat_error(raised.value), ValidationError), raised.value
    assert key in str(lakecat_error(raised.value))
    assert sales.refresh().metadata_location == before
    assert rows_of(lake, "db.sales") == [(1, "eu", 1.0)]


def test_insert_into_a_bucket_partitioned_table_is_written_natively(lake) -> None:
    """The catalog's own bucket function computes each row's bucket in Spark's write: every
    file holds the rows of one bucket, the bucket lakecat's Python transform gives them."""
    table = lake.catalog.create_table(
        "db.buckets", SCHEMA, partition_by=[("id", "bucket[4]"), ("region", "bucket[3]")]
    )
    values = ", ".join(f"({i}, 'r{i % 7}', {i}.5)" for i in range(40))

    lake.sql(f"INSERT INTO lake.db.buckets VALUES {values}")

    assert writers(table) == {SPARK_WRITER}
    ids, regions = (parse_transform("bucket[4]"), parse_transform("bucket[3]"))
    files = table.refresh().scan().plan_files()
    assert len({f.partition for f in files}) > 4
    for f in files:
        rows = pq.read_table(f.file_path.removeprefix("file://")).to_pylist()
        assert {
            (ids.apply(LongType(), r["id"]), regions.apply(StringType(), r["region"])) for r in rows
        } == {f.partition}
    assert rows_of(lake, "db.buckets") == [(i, f"r{i % 7}", i + 0.5) for i in range(40)]
    # pyiceberg prunes by its own bucket hash: a row in a file of the wrong bucket is lost
    for i in range(0, 40, 3):
        found = lake.iceberg_rows(
            "db.buckets", "id", row_filter=f"id = {i} AND region = 'r{i % 7}'"
        )
        assert found == [(i,)]


def test_a_write_spark_cannot_write_as_lakecat_does_goes_through_the_data_source(lake) -> None:
    table = lake.catalog.create_table(
        "db.lz", SCHEMA, properties={"write.parquet.compression-codec": "lz4"}
    )

    lake.sql("INSERT INTO lake.db.lz VALUES (1, 'eu', 1.0)")

    assert rows_of(lake, "db.lz") == [(1, "eu", 1.0)]
    assert writers(table) != {SPARK_WRITER}


def test_insert_into_a_branch_leaves_main_alone(lake, sales) -> None:
    lake.sql("INSERT INTO lake.db.sales VALUES (1, 'eu', 1.0)")
    lake.sql("ALTER TABLE lake.db.sales CREATE BRANCH audit")

    lake.sql("INSERT INTO lake.db.sales.branch_audit VALUES (2, 'us', 2.0)")

    assert rows_of(lake, "db.sales") == [(1, "eu", 1.0)]
    branch = lake.sql("SELECT id FROM lake.db.sales.branch_audit ORDER BY id")
    assert [r.id for r in branch] == [1, 2]


def test_a_required_column_left_null_fails_and_commits_nothing(lake) -> None:
    from pyspark.errors import PySparkException

    table = lake.catalog.create_table(
        "db.req", pa.schema([pa.field("id", pa.int64(), nullable=False), ("n", pa.string())])
    )
    lake.sql("INSERT INTO lake.db.req VALUES (1, 'a')")
    before = table.refresh().metadata_location

    with pytest.raises(PySparkException):
        lake.sql("INSERT INTO lake.db.req SELECT CAST(NULL AS BIGINT), 'b'")

    assert table.refresh().metadata_location == before
    assert lake.rows("db.req", "id", "n") == [(1, "a")]


TARGET = 256 * 1024


def _rows(spark, n: int) -> Any:
    return spark.range(n).selectExpr(
        "id", "IF(id % 2 = 0, 'eu', 'us') AS region", "CAST(id AS double) * 0.5 AS amount"
    )


def test_the_plugin_reads_the_size_of_the_file_sparks_parquet_writer_writes(spark) -> None:
    # by reflection into Spark's and parquet-java's writers; without it files roll at the rows'
    # uncompressed size, far below the target
    assert spark._jvm.lakecat.spark.TargetFileSize.measured()


@ordinary_file_sizes
def test_insert_rolls_to_a_new_file_at_the_tables_target_size(lake, spark) -> None:
    table = lake.catalog.create_table(
        "db.big",
        SCHEMA,
        partition_by=["region"],
        properties={"write.target-file-size-bytes": str(TARGET)},
    )
    _rows(spark, 400_000).repartition(1).createOrReplaceTempView("big_rows")

    lake.sql("INSERT INTO lake.db.big SELECT * FROM big_rows")

    files = table.refresh().scan().plan_files()
    assert writers(table) == {SPARK_WRITER}
    assert len(table.history()) == 1
    by_region = {r: [f for f in files if f.partition == (r,)] for r in ("eu", "us")}
    # one task, two partitions: unrolled, that is one file each of about 1.1 MB
    assert all(len(fs) >= 3 for fs in by_region.values())
    assert all(f.file_size_in_bytes <= TARGET for f in files)
    assert sum(f.record_count for f in files) == 400_000
    counted = lake.sql("SELECT count(*), count(DISTINCT id), sum(amount) FROM lake.db.big")
    assert [tuple(r) for r in counted] == [(400_000, 400_000, sum(range(400_000)) * 0.5)]


@ordinary_file_sizes
def test_the_target_file_size_write_option_rolls_a_native_write(lake, spark) -> None:
    import lakecat.spark_ext as lk

    table = lake.catalog.create_table("db.big", SCHEMA, partition_by=["region"])
    frame = _rows(spark, 300_000).repartition(1)

    done = lk.write(
        frame, "db.big", catalog=lake.catalog, **{"target-file-size-bytes": str(TARGET)}
    )

    assert done.native
    files = table.refresh().scan().plan_files()
    assert len(files) >= 6 and all(f.file_size_in_bytes <= TARGET for f in files)
    assert sorted(r[0] for r in lake.rows("db.big", "id")) == list(range(300_000))


@ordinary_file_sizes
def test_a_copy_on_write_update_rewrites_its_file_in_files_of_the_target_size(lake, spark) -> None:
    table = lake.catalog.create_table("db.big", SCHEMA, partition_by=["region"])
    _rows(spark, 200_000).repartition(1).createOrReplaceTempView("big_rows")
    lake.sql("INSERT INTO lake.db.big SELECT * FROM big_rows")
    assert len(table.refresh().scan().plan_files()) == 2  # the default target: no roll
    lake.sql(
        f"ALTER TABLE lake.db.big SET TBLPROPERTIES ('write.target-file-size-bytes' = '{TARGET}')"
    )

    lake.sql("UPDATE lake.db.big SET amount = -amount WHERE region = 'eu' AND id < 10")

    files = table.refresh().scan().plan_files()
    assert writers(table) == {SPARK_WRITER}
    eu = [f for f in files if f.partition == ("eu",)]
    assert len(eu) >= 3 and all(f.file_size_in_bytes <= TARGET for f in eu)
    assert len([f for f in files if f.partition == ("us",)]) == 1  # not rewritten
    counted = lake.sql("SELECT count(*), sum(amount) FROM lake.db.big WHERE region = 'eu'")
    expected = sum(i * 0.5 for i in range(0, 200_000, 2)) - 2 * sum(
        i * 0.5 for i in range(0, 10, 2)
    )
    assert [tuple(r) for r in counted] == [(100_000, expected)]


@pytest.mark.parametrize("value", ["big", "0", "-5"])
def test_a_target_file_size_option_that_is_no_size_is_refused_before_anything_is_written(
    lake, spark, value
) -> None:
    import lakecat.spark_ext as lk
    from lakecat.metadata.errors import ValidationError

    table = lake.catalog.create_table("db.big", SCHEMA, partition_by=["region"])
    option = {"target-file-size-bytes": value}

    with pytest.raises(ValidationError, match="target-file-size-bytes must be"):
        lk.native_write_support(_rows(spark, 10), "db.big", catalog=lake.catalog, **option)
    with pytest.raises(ValidationError, match="target-file-size-bytes must be"):
        lk.write(_rows(spark, 10), "db.big", catalog=lake.catalog, **option)

    assert table.refresh().current_snapshot() is None
    assert lake.files_on_disk(table) == set()


def test_a_task_failing_after_it_rolled_files_leaves_no_commit_and_no_files(lake, spark) -> None:
    from pyspark.errors import PySparkException

    table = lake.catalog.create_table(
        "db.big",
        SCHEMA,
        partition_by=["region"],
        properties={"write.target-file-size-bytes": "65536"},
    )
    lake.sql("INSERT INTO lake.db.big VALUES (1, 'eu', 1.0)")
    before, on_disk = table.refresh().metadata_location, lake.files_on_disk(table)
    _rows(spark, 200_000).repartition(1).createOrReplaceTempView("failing_rows")

    with pytest.raises(PySparkException, match="injected"):
        lake.sql(
            "INSERT INTO lake.db.big SELECT id, region, "
            "IF(id = 199000, CAST(raise_error('injected') AS double), amount) FROM failing_rows"
        )

    assert table.refresh().metadata_location == before
    assert lake.files_on_disk(table) == on_disk
    assert lake.rows("db.big", "id", "region", "amount") == [(1, "eu", 1.0)]


@pytest.fixture
def dynamic_mode(spark) -> Any:
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    yield
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")


def test_a_dynamic_insert_overwrite_is_written_natively_and_replaces_only_its_partitions(
    lake, sales, dynamic_mode
) -> None:
    lake.sql("INSERT INTO lake.db.sales VALUES (1, 'eu', 1.0), (2, 'us', 2.0), (3, 'ap', 3.0)")
    ap = {f.file_path for f in sales.refresh().scan("region = 'ap'").plan_files()}
    statement = "INSERT OVERWRITE lake.db.sales VALUES (7, 'eu', 7.0), (8, 'us', 8.0)"
    plan = "\n".join(r[0] for r in lake.sql(f"EXPLAIN {statement}"))
    assert "lakecat dynamic overwrite" in plan

    lake.sql(statement)

    snapshot = sales.refresh().current_snapshot()
    assert snapshot.operation == "overwrite"
    assert len(sales.history()) == 2
    assert writers(sales) == {SPARK_WRITER}
    assert {f.file_path for f in sales.scan("region = 'ap'").plan_files()} == ap  # untouched
    assert rows_of(lake, "db.sales") == [(3, "ap", 3.0), (7, "eu", 7.0), (8, "us", 8.0)]


def test_overwrite_partitions_of_a_dataframe_is_written_natively(lake, sales, spark) -> None:
    lake.sql("INSERT INTO lake.db.sales VALUES (1, 'eu', 1.0), (2, 'us', 2.0)")
    df = spark.createDataFrame([(5, "us", 5.0), (6, "us", 6.0)], COLUMNS)

    df.writeTo("lake.db.sales").overwritePartitions()

    assert writers(sales) == {SPARK_WRITER}
    assert sales.refresh().current_snapshot().operation == "overwrite"
    assert rows_of(lake, "db.sales") == [(1, "eu", 1.0), (5, "us", 5.0), (6, "us", 6.0)]


def test_a_dynamic_overwrite_spark_cannot_write_natively_goes_through_the_data_source(
    lake, spark, dynamic_mode
) -> None:
    table = lake.catalog.create_table(
        "db.lz4",
        SCHEMA,
        partition_by=["region"],
        properties={"write.parquet.compression-codec": "lz4"},
    )
    lake.sql("INSERT INTO lake.db.lz4 VALUES (1, 'eu', 1.0), (2, 'us', 2.0)")

    lake.sql("INSERT OVERWRITE lake.db.lz4 VALUES (9, 'us', 9.0)")

    assert table.refresh().current_snapshot().operation == "overwrite"
    assert writers(table) == {"parquet-cpp-arrow"}
    assert rows_of(lake, "db.lz4") == [(1, "eu", 1.0), (9, "us", 9.0)]


def test_a_session_can_keep_dynamic_overwrites_in_the_data_source(
    lake, sales, spark, dynamic_mode
) -> None:
    lake.sql("INSERT INTO lake.db.sales VALUES (1, 'eu', 1.0), (2, 'us', 2.0)")
    spark.conf.set("spark.lakecat.nativeDynamicOverwrites", "false")
    try:
        lake.sql("INSERT OVERWRITE lake.db.sales VALUES (4, 'us', 4.0)")
    finally:
        spark.conf.unset("spark.lakecat.nativeDynamicOverwrites")

    assert writers(sales) == {SPARK_WRITER, "parquet-cpp-arrow"}
    assert rows_of(lake, "db.sales") == [(1, "eu", 1.0), (4, "us", 4.0)]


def test_the_rewrites_marker_option_given_by_a_user_leaves_an_append_an_append(
    lake, sales, spark
) -> None:
    lake.sql("INSERT INTO lake.db.sales VALUES (1, 'us', 1.0)")
    df = spark.createDataFrame([(2, "us", 2.0)], COLUMNS)

    df.writeTo("lake.db.sales").option("lakecat.dynamic-overwrite", "true").append()

    assert sales.refresh().current_snapshot().operation == "append"
    assert rows_of(lake, "db.sales") == [(1, "us", 1.0), (2, "us", 2.0)]
