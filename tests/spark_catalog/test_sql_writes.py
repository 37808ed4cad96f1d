"""DML through the Spark catalog ``lake``: INSERT INTO / OVERWRITE, DELETE FROM, CTAS and
``DataFrameWriterV2``, each checked through lakecat's Python API and through pyiceberg."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


def rows(*items: tuple[int, str, float]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in items], SCHEMA)


@pytest.fixture
def by_region(lake) -> Any:
    """db.sales partitioned by region, one file per region: eu 1-3, us 4-5."""
    table = lake.catalog.create_table("db.sales", SCHEMA, partition_by=["region"])
    table.append(
        rows((1, "eu", 1.0), (2, "eu", 2.0), (3, "eu", 3.0), (4, "us", 4.0), (5, "us", 5.0))
    )
    return table


@pytest.fixture
def dynamic_overwrite(spark: Any) -> Iterator[None]:
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")


def both_views(lake, table: str) -> list[tuple[Any, ...]]:
    """The rows through lakecat, after checking pyiceberg reads the same."""
    ours = lake.rows(table, "id", "region")
    assert lake.iceberg_rows(table, "id", "region") == ours
    return ours


def test_insert_into_appends_one_snapshot(lake, by_region) -> None:
    before = by_region.current_snapshot().snapshot_id

    lake.sql("INSERT INTO lake.db.sales VALUES (6, 'eu', 6.0), (7, 'ap', 7.0)")
    lake.sql(
        "INSERT INTO lake.db.sales SELECT id + 100, region, amount FROM lake.db.sales WHERE id < 3"
    )

    table = by_region.refresh()
    assert both_views(lake, "db.sales") == [
        (1, "eu"), (2, "eu"), (3, "eu"), (4, "us"), (5, "us"), (6, "eu"), (7, "ap"),
        (101, "eu"), (102, "eu"),
    ]  # fmt: skip
    appended = [s for s in table.snapshots() if s.sequence_number > 1]
    assert [s.operation for s in appended] == ["append", "append"]
    assert appended[0].parent_snapshot_id == before


def test_insert_overwrite_of_a_static_partition_replaces_only_it(lake, by_region) -> None:
    lake.sql("INSERT OVERWRITE lake.db.sales PARTITION (region = 'eu') SELECT 10, 10.0")

    assert both_views(lake, "db.sales") == [(4, "us"), (5, "us"), (10, "eu")]
    assert by_region.refresh().current_snapshot().operation == "overwrite"


def test_static_insert_overwrite_replaces_the_whole_table(lake, by_region) -> None:
    lake.sql("INSERT OVERWRITE lake.db.sales VALUES (20, 'ap', 1.0)")

    assert both_views(lake, "db.sales") == [(20, "ap")]


def test_insert_replace_where_replaces_the_rows_matching_its_condition(lake, by_region) -> None:
    lake.sql("INSERT INTO lake.db.sales REPLACE WHERE id >= 3 SELECT 40L, 'us', 4.0")

    assert both_views(lake, "db.sales") == [(1, "eu"), (2, "eu"), (40, "us")]
    assert by_region.refresh().current_snapshot().operation == "overwrite"


def test_an_overwrite_condition_lakecat_would_evaluate_differently_is_refused_with_the_reason(
    lake, by_region
) -> None:
    before = by_region.metadata_location

    with pytest.raises(
        Exception, match=r"UnsupportedByCatalog: cannot overwrite the rows of db\.sales"
    ):
        lake.sql("INSERT INTO lake.db.sales REPLACE WHERE id % 2 = 0 SELECT 40L, 'us', 4.0")

    assert by_region.refresh().metadata_location == before


def test_dynamic_insert_overwrite_replaces_the_partitions_written(
    lake, by_region, dynamic_overwrite
) -> None:
    lake.sql("INSERT OVERWRITE lake.db.sales VALUES (30, 'us', 1.0), (31, 'ap', 1.0)")

    assert both_views(lake, "db.sales") == [(1, "eu"), (2, "eu"), (3, "eu"), (30, "us"), (31, "ap")]


def test_delete_from_drops_whole_files_and_rewrites_the_others(lake, by_region) -> None:
    us_files = {f.file_path for f in by_region.scan("region = 'us'").plan_files()}

    lake.sql("DELETE FROM lake.db.sales WHERE region = 'us'")

    table = by_region.refresh()
    whole = table.current_snapshot()
    assert whole.operation == "delete"
    assert whole.summary["deleted-data-files"] == str(len(us_files))
    assert "added-data-files" not in whole.summary  # nothing rewritten
    assert both_views(lake, "db.sales") == [(1, "eu"), (2, "eu"), (3, "eu")]

    lake.sql("DELETE FROM lake.db.sales WHERE id = 2 OR id IN (50, 51)")

    assert table.refresh().current_snapshot().summary["added-data-files"] == "1"  # copy-on-write
    assert both_views(lake, "db.sales") == [(1, "eu"), (3, "eu")]


def test_delete_from_a_merge_on_read_table_writes_a_position_delete_file(lake, by_region) -> None:
    by_region.set_properties({"write.delete.mode": "merge-on-read"})
    files = {f.file_path for f in by_region.scan().plan_files()}

    lake.sql("DELETE FROM lake.db.sales WHERE id = 2 OR id = 4")

    snapshot = by_region.refresh().current_snapshot()
    assert snapshot.operation == "delete"
    assert "added-data-files" not in snapshot.summary
    assert snapshot.summary["added-position-delete-files"] == "2"
    assert {f.file_path for f in by_region.scan().plan_files()} == files  # none rewritten
    assert both_views(lake, "db.sales") == [(1, "eu"), (3, "eu"), (5, "us")]


def test_truncate_table_deletes_every_row_in_one_commit_and_keeps_the_history(
    lake, by_region
) -> None:
    before = by_region.current_snapshot().snapshot_id

    lake.sql("TRUNCATE TABLE lake.db.sales")

    snapshot = by_region.refresh().current_snapshot()
    assert snapshot.operation == "delete" and snapshot.parent_snapshot_id == before
    assert snapshot.summary["deleted-data-files"] == "2"  # whole files dropped
    assert both_views(lake, "db.sales") == []
    assert len(lake.sql(f"SELECT * FROM lake.db.sales VERSION AS OF {before}")) == 5


def test_truncate_table_of_a_branch_empties_only_the_branch(lake, by_region) -> None:
    lake.sql("ALTER TABLE lake.db.sales CREATE BRANCH audit")
    lake.sql("ALTER TABLE lake.db.sales CREATE TAG v1")

    lake.sql("TRUNCATE TABLE lake.db.sales.branch_audit")

    assert lake.sql("SELECT * FROM lake.db.sales.branch_audit") == []
    assert len(both_views(lake, "db.sales")) == 5
    for relation in ("lake.db.sales.tag_v1", "lake.db.sales.snapshots"):
        with pytest.raises(Exception, match="read-only"):
            lake.sql(f"TRUNCATE TABLE {relation}")
    assert len(both_views(lake, "db.sales")) == 5


def test_delete_where_true_drops_every_file_without_rewriting(lake, by_region) -> None:
    lake.sql("DELETE FROM lake.db.sales WHERE true")

    snapshot = by_region.refresh().current_snapshot()
    assert snapshot.summary["deleted-data-files"] == "2"
    assert "added-data-files" not in snapshot.summary
    assert both_views(lake, "db.sales") == []


def test_merge_and_insert_with_schema_evolution_add_the_source_s_new_columns(lake) -> None:
    lake.sql("CREATE TABLE lake.db.ev (id bigint, s string) PARTITIONED BY (s)")
    lake.sql("INSERT INTO lake.db.ev VALUES (1, 'a')")

    lake.sql(
        "MERGE WITH SCHEMA EVOLUTION INTO lake.db.ev t USING (SELECT 1L AS id, 'a' AS s, 5 AS n, "
        "named_struct('x', 1) AS st UNION ALL SELECT 2L, 'b', 6, named_struct('x', 2)) u "
        "ON t.id = u.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    lake.sql("INSERT WITH SCHEMA EVOLUTION INTO lake.db.ev BY NAME SELECT 3L AS id, 7L AS m")

    table = lake.catalog.load_table("db.ev")
    assert list(table.schema().column_names)[:4] == ["id", "s", "n", "st"]
    got = lake.sql("SELECT id, s, n, st.x, m FROM lake.db.ev ORDER BY id")
    assert [tuple(r) for r in got] == [
        (1, "a", 5, 1, None),
        (2, "b", 6, 2, None),
        (3, None, None, None, 7),
    ]
    assert lake.iceberg_rows("db.ev", "id", "n") == [(1, 5), (2, 6), (3, None)]


def test_schema_evolution_refuses_a_type_change_lakecat_cannot_make(lake) -> None:
    lake.sql("CREATE TABLE lake.db.ev (id bigint, s string)")
    lake.sql("INSERT INTO lake.db.ev VALUES (1, 'a')")
    before = lake.catalog.load_table("db.ev").metadata_location

    with pytest.raises(Exception, match="InvalidUpdate: cannot change 's' from string to double"):
        lake.sql(
            "MERGE WITH SCHEMA EVOLUTION INTO lake.db.ev t USING (SELECT 1L AS id, 1.5D AS s) u "
            "ON t.id = u.id WHEN MATCHED THEN UPDATE SET *"
        )

    assert lake.catalog.load_table("db.ev").metadata_location == before


def test_merge_schema_option_adds_the_dataframe_s_new_columns_and_nulls_the_missing_ones(
    lake, spark
) -> None:
    lake.sql("CREATE TABLE lake.db.ms (id bigint, s string, st struct<x:int>) PARTITIONED BY (s)")
    lake.sql("INSERT INTO lake.db.ms VALUES (1, 'a', named_struct('x', 1))")
    fields_before = {f.name: f.field_id for f in lake.catalog.load_table("db.ms").schema().fields}

    # Iceberg's spelling and its other key; the nested field y is new too, s is missing
    spark.sql(
        "SELECT 2L AS id, 'b' AS s, 2.5D AS extra, named_struct('x', 2, 'y', 'q') AS st"
    ).writeTo("lake.db.ms").option("mergeSchema", "true").append()
    spark.sql("SELECT 3L AS id, named_struct('x', 3, 'y', 'r') AS st, 7 AS n").writeTo(
        "lake.db.ms"
    ).option("merge-schema", "TRUE").append()

    schema = lake.catalog.load_table("db.ms").schema()
    assert [f.name for f in schema.fields] == ["id", "s", "st", "extra", "n"]
    assert {f.name: f.field_id for f in schema.fields if f.name in fields_before} == fields_before
    expected = [
        (1, "a", 1, None, None, None),
        (2, "b", 2, "q", 2.5, None),
        (3, None, 3, "r", None, 7),
    ]
    got = lake.sql("SELECT id, s, st.x, st.y, extra, n FROM lake.db.ms ORDER BY id")
    assert [tuple(r) for r in got] == expected
    assert lake.iceberg_rows("db.ms", "id", "extra", "n") == [
        (1, None, None),
        (2, 2.5, None),
        (3, None, 7),
    ]


def test_merge_schema_option_evolves_save_as_table_appends_and_partition_overwrites(
    lake, spark
) -> None:
    lake.sql("CREATE TABLE lake.db.ms (id bigint, s string, n int) PARTITIONED BY (s)")
    lake.sql("INSERT INTO lake.db.ms VALUES (1, 'a', 1), (2, 'b', 2)")

    spark.sql("SELECT 3L AS id, 'c' AS s, 3L AS n, true AS flag").write.option(
        "mergeSchema", "true"
    ).mode("append").saveAsTable("lake.db.ms")  # n widens from int to long
    spark.sql("SELECT 4L AS id, 'a' AS s, 'new' AS note").writeTo("lake.db.ms").option(
        "mergeSchema", "true"
    ).overwritePartitions()  # replaces partition a only

    table = lake.catalog.load_table("db.ms")
    assert [(f.name, str(f.field_type)) for f in table.schema().fields] == [
        ("id", "long"),
        ("s", "string"),
        ("n", "long"),
        ("flag", "boolean"),
        ("note", "string"),
    ]
    expected = [(2, "b", 2, None, None), (3, "c", 3, True, None), (4, "a", None, None, "new")]
    assert lake.rows("db.ms", "id", "s", "n", "flag", "note") == expected
    assert lake.iceberg_rows("db.ms", "id", "s", "n", "flag", "note") == expected


def test_merge_schema_option_refuses_a_type_change_lakecat_cannot_make_and_commits_nothing(
    lake, spark
) -> None:
    lake.sql("CREATE TABLE lake.db.ms (id bigint, n int)")
    lake.sql("INSERT INTO lake.db.ms VALUES (1, 1)")
    before = lake.catalog.load_table("db.ms").metadata_location

    with pytest.raises(Exception, match="InvalidUpdate: cannot change 'n' from int to string"):
        spark.sql("SELECT 2L AS id, 'x' AS n, 1 AS extra").writeTo("lake.db.ms").option(
            "mergeSchema", "true"
        ).append()

    assert lake.catalog.load_table("db.ms").metadata_location == before


@pytest.mark.parametrize("options", [{}, {"mergeSchema": "false"}])
def test_a_write_without_merge_schema_refuses_the_dataframe_s_extra_columns(
    lake, spark, options
) -> None:
    lake.sql("CREATE TABLE lake.db.ms (id bigint)")
    before = lake.catalog.load_table("db.ms").metadata_location

    with pytest.raises(Exception, match=r"TOO_MANY_DATA_COLUMNS|EXTRA_COLUMNS"):
        spark.sql("SELECT 1L AS id, 1 AS extra").writeTo("lake.db.ms").options(**options).append()

    assert lake.catalog.load_table("db.ms").metadata_location == before


def test_delete_from_by_a_double_comparison_deletes_the_rows_spark_matches(lake, by_region) -> None:
    # lakecat takes it in Spark's NaN order (amount > 2.5 OR amount IS NAN), on the driver
    lake.sql("DELETE FROM lake.db.sales WHERE amount > 2.5")

    snapshot = by_region.refresh().current_snapshot()
    assert snapshot.summary["deleted-data-files"] == "2"  # copy-on-write, Spark's condition
    assert both_views(lake, "db.sales") == [(1, "eu"), (2, "eu")]


def test_create_table_as_select_writes_the_rows_in_the_new_partitioned_table(
    lake, by_region
) -> None:
    lake.sql(
        "CREATE TABLE lake.db.big PARTITIONED BY (region) "
        "AS SELECT id, region, amount * 2 AS doubled FROM lake.db.sales WHERE amount >= 3"
    )

    table = lake.catalog.load_table("db.big")
    assert [f.name for f in table.schema().fields] == ["id", "region", "doubled"]
    assert [f.transform for f in table.spec().fields] == ["identity"]
    assert lake.rows("db.big", "id", "doubled") == [(3, 6.0), (4, 8.0), (5, 10.0)]
    assert lake.iceberg_rows("db.big", "id", "doubled") == [(3, 6.0), (4, 8.0), (5, 10.0)]


def test_dataframe_writer_v2_creates_appends_and_overwrites_partitions(lake, spark) -> None:
    day = dt.datetime(2024, 5, 1)
    first = spark.createDataFrame(
        [(1, day, "eu"), (2, day, "us")], "id long, ts timestamp, region string"
    )

    first.writeTo("lake.db.events").partitionedBy(F.col("region")).create()
    spark.createDataFrame([(3, day, "eu")], first.schema).writeTo("lake.db.events").append()
    spark.createDataFrame([(4, day, "us")], first.schema).writeTo(
        "lake.db.events"
    ).overwritePartitions()

    table = lake.catalog.load_table("db.events")
    assert [f.transform for f in table.spec().fields] == ["identity"]
    assert [s.operation for s in table.snapshots()] == ["append", "append", "overwrite"]
    assert both_views(lake, "db.events") == [(1, "eu"), (3, "eu"), (4, "us")]


def test_create_or_replace_over_a_table_with_deletes_in_its_history_writes_the_new_rows(
    lake, by_region, spark
) -> None:
    """Spark used to run createOrReplace as drop + create + write under the same name; the
    new table's first commit was validated against the dropped table's history (a stale
    commit-lock hint) and failed, and Spark then dropped the table. It is now one staged
    replace (test_sql_replace.py)."""
    lake.sql("DELETE FROM lake.db.sales WHERE region = 'us'")
    by_region.refresh().overwrite(rows((9, "eu", 9.0)), "region = 'eu'")
    replacement = spark.createDataFrame(
        [(20, "ap", 2.0), (21, "ap", 3.0)], "id long, region string, amount double"
    )
    replacement.writeTo("lake.db.sales").createOrReplace()
    assert both_views(lake, "db.sales") == [(20, "ap"), (21, "ap")]
