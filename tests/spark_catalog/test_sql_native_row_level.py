"""Copy-on-write ``UPDATE``/``MERGE``/``DELETE`` written by Spark's own Parquet writer.

With lakecat's SQL extension (``lk.session``; the shared test session sets it), Spark plans the
new rows of a copy-on-write statement as a DataFrame write (``NativeRowLevelWrites``): the rows
are staged with Spark's Parquet writer into a job folder, then committed in place of the files
holding affected rows, which Spark's runtime ``_file`` filter still chooses. On format v3 the
rows carry their lineage columns, which the files keep.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.metadata.io.fileio import local_path

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
JOB_FOLDER = re.compile(r"/data/[0-9a-f]{32}/")


def make_sales(lake: Any, format_version: int = 2) -> Any:
    """db.sales partitioned by region, one file per region: eu 1-3, us 4-5, ap 6."""
    table = lake.catalog.create_table(
        "db.sales",
        SCHEMA,
        partition_by=["region"],
        properties={"format-version": str(format_version)},
    )
    table.append(
        pa.Table.from_pylist(
            [
                {"id": i, "region": r, "amount": float(i)}
                for i, r in [(1, "eu"), (2, "eu"), (3, "eu"), (4, "us"), (5, "us"), (6, "ap")]
            ],
            SCHEMA,
        )
    )
    return table


def source(spark: Any, *rows: tuple[int, str, float]) -> None:
    df = spark.createDataFrame(list(rows), "id bigint, region string, amount double")
    df.createOrReplaceTempView("src")


def physical_plan(lake: Any, statement: str) -> str:
    plan: str = lake.sql(f"EXPLAIN {statement}")[0][0]
    return plan


def test_copy_on_write_rows_are_written_by_sparks_parquet_writer(lake) -> None:
    sales = make_sales(lake)
    statement = "UPDATE lake.db.sales SET amount = amount * 10 WHERE id % 2 = 0"
    plan = physical_plan(lake, statement)
    assert "AppendDataExecV1" in plan
    # EXPLAIN names the write and the read under it (Spark plans that read when it runs)
    assert (
        "lakecat copy-on-write UPDATE of lake.db.sales (Spark's Parquet writer), reading " in plan
    )
    assert (
        "reading lakecat lake.db.sales [filters=[], lakecat-filter=true, reader=parquet, files=3]"
        in plan
    )
    before = {f.file_path for f in sales.scan().plan_files()}

    lake.sql(statement)

    sales.refresh()
    snapshot = sales.current_snapshot()
    assert snapshot.summary["deleted-data-files"] == "3"
    added = {f.file_path for f in sales.scan().plan_files()} - before
    assert len(added) == 3 and all(JOB_FOLDER.search(path) for path in added)
    for path in added:  # Spark's writer, with the table's field ids
        local = local_path(path)
        assert local is not None
        parquet = pq.ParquetFile(local)
        assert "parquet-mr" in (parquet.metadata.created_by or "")
        assert parquet.schema_arrow.field("id").metadata[b"PARQUET:field_id"] == b"1"
    expected = [
        (1, "eu", 1.0), (2, "eu", 20.0), (3, "eu", 3.0),
        (4, "us", 40.0), (5, "us", 5.0), (6, "ap", 60.0),
    ]  # fmt: skip
    assert lake.rows("db.sales", "id", "region", "amount") == expected
    assert lake.iceberg_rows("db.sales", "id", "region", "amount") == expected


def test_the_runtime_file_filter_still_picks_the_files_to_rewrite(lake, spark) -> None:
    sales = make_sales(lake)
    source(spark, (5, "us", 50.0), (7, "ap", 7.0))
    untouched = {f.file_path for f in sales.scan(row_filter="region = 'eu'").plan_files()}
    merge = (
        "MERGE INTO lake.db.sales t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *"
    )
    assert "narrowed at run time by Spark's _file filter" in physical_plan(lake, merge)

    lake.sql(merge)
    lake.sql("DELETE FROM lake.db.sales WHERE id IN (SELECT id FROM src WHERE id = 7)")

    sales.refresh()
    assert untouched <= {f.file_path for f in sales.scan().plan_files()}  # eu never rewritten
    assert lake.rows("db.sales", "id", "amount") == [
        (1, 1.0),
        (2, 2.0),
        (3, 3.0),
        (4, 4.0),
        (5, 50.0),
        (6, 6.0),
    ]
    before = sales.metadata_location
    lake.sql("UPDATE lake.db.sales SET amount = 0 WHERE id % 100 = 99")  # matches nothing
    assert sales.refresh().metadata_location == before


def test_a_delete_rewrites_only_the_files_the_runtime_filter_picks(lake) -> None:
    """A condition lakecat cannot evaluate (arithmetic) plans every file and runs in tasks;
    Spark's optimizer folds the DELETE's runtime _file filter into the filter on the read, and
    it still narrows."""
    sales = make_sales(lake)
    untouched = {f.file_path for f in sales.scan(row_filter="region <> 'eu'").plan_files()}
    statement = "DELETE FROM lake.db.sales WHERE amount * 2 = 4.0"
    assert "narrowed at run time by Spark's _file filter" in physical_plan(lake, statement)

    lake.sql(statement)

    snapshot = sales.refresh().current_snapshot()
    assert snapshot.summary["deleted-data-files"] == "1"  # eu only
    assert untouched <= {f.file_path for f in sales.scan().plan_files()}
    assert [r[0] for r in lake.rows("db.sales", "id")] == [1, 3, 4, 5, 6]
    before = sales.metadata_location
    lake.sql("DELETE FROM lake.db.sales WHERE amount * 2 = 5.0")  # matches nothing
    assert sales.refresh().metadata_location == before


def jobs_of(lake: Any, statement: str) -> int:
    """How many Spark jobs ``statement`` ran."""
    context = lake.spark.sparkContext
    group = f"jobs-of-{id(statement)}-{len(statement)}"
    context.setJobGroup(group, statement)
    try:
        lake.sql(statement)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    return len(context.statusTracker().getJobIdsForGroup(group))


MATCHING_NOTHING = {  # and, after "->", the same statement matching a row
    "delete": "DELETE FROM lake.db.sales WHERE amount * 2 = {5.0->4.0}",
    "update": "UPDATE lake.db.sales SET amount = 0 WHERE id % 100 = {99->3}",
    "merge": "MERGE INTO lake.db.sales t USING src s ON t.id = s.id + {100->0}"
    " WHEN MATCHED AND s.amount > 0 THEN UPDATE SET amount = s.amount"
    " WHEN MATCHED THEN DELETE",
}


def _version(statement: str, matching: bool) -> str:
    head, _, rest = statement.partition("{")
    values, _, tail = rest.partition("}")
    nothing, _, something = values.partition("->")
    return head + (something if matching else nothing) + tail


@pytest.mark.parametrize("kind", sorted(MATCHING_NOTHING))
def test_a_statement_whose_runtime_filter_picks_no_file_writes_nothing(
    lake, spark, monkeypatch, kind: str
) -> None:
    """Spark's runtime filter finds no file with an affected row, and the statement's rows
    all come from the files read (an UPDATE, a DELETE, a MERGE without WHEN NOT MATCHED): no
    write job runs (Spark would run one over no rows), nor a commit."""
    import lakecat.spark_ext.sql.bridge as bridge

    writes: list[Any] = []
    real = bridge.insert_rows
    monkeypatch.setattr(bridge, "insert_rows", lambda *a, **k: (writes.append(a), real(*a, **k)))
    sales = make_sales(lake)
    source(spark, (3, "eu", 30.0))
    before = sales.metadata_location
    statement = MATCHING_NOTHING[kind]

    jobs = jobs_of(lake, _version(statement, matching=False))

    assert (writes, sales.refresh().metadata_location) == ([], before)
    if kind != "merge":  # (a MERGE's runtime filter is a join: AQE runs it in stages)
        assert jobs == 1  # the runtime filter's
    lake.sql(_version(statement, matching=True))
    assert len(writes) == 1 and sales.refresh().metadata_location != before


def test_a_merge_that_may_insert_still_writes_when_no_file_matches(lake, spark) -> None:
    make_sales(lake)
    source(spark, (7, "ap", 7.0))

    lake.sql(
        "MERGE INTO lake.db.sales t USING src s ON t.id = s.id"
        " WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *"
    )

    assert [r[0] for r in lake.rows("db.sales", "id")] == [1, 2, 3, 4, 5, 6, 7]


def test_a_merge_joining_on_bucketed_columns_runs_without_the_dynamic_pruning(lake) -> None:
    """Spark's optimizer adds dynamic partition pruning on id and region to the runtime filter's
    query (a small source, a table partitioned by both); that query runs on its own first, and
    Spark's analysis refused the pruning filters in it (INTERNAL_ERROR)."""
    sales = make_sales(lake)
    with sales.update_spec() as spec:
        spec.add_field("id", "bucket[4]")
    sales.refresh().append(pa.Table.from_pylist([{"id": 7, "region": "eu", "amount": 7.0}], SCHEMA))

    lake.sql(
        "MERGE INTO lake.db.sales t USING (SELECT * FROM VALUES (2, 'eu', 20.0), (7, 'eu', 70.0)"
        " AS v(id, region, amount)) s ON t.id = s.id AND t.region = s.region"
        " WHEN MATCHED THEN UPDATE SET amount = s.amount"
    )

    assert lake.rows("db.sales", "id", "amount") == [
        (1, 1.0), (2, 20.0), (3, 3.0), (4, 4.0), (5, 5.0), (6, 6.0), (7, 70.0),
    ]  # fmt: skip


def test_a_failed_native_rewrite_commits_nothing_and_leaves_no_files(lake, spark) -> None:
    sales = make_sales(lake)
    before, on_disk = sales.metadata_location, lake.files_on_disk(sales)
    source(spark, (1, "eu", 10.0), (1, "eu", 11.0))

    with pytest.raises(Exception, match=r"MERGE_CARDINALITY_VIOLATION|more than one"):
        lake.sql(
            "MERGE INTO lake.db.sales t USING src s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET amount = s.amount"
        )

    assert sales.refresh().metadata_location == before
    assert lake.files_on_disk(sales) == on_disk


def test_a_sorted_table_gets_sorted_rewrites(lake) -> None:
    sales = make_sales(lake)
    lake.sql("ALTER TABLE lake.db.sales WRITE ORDERED BY amount DESC")
    order_id = sales.refresh().sort_order().order_id

    lake.sql("UPDATE lake.db.sales SET amount = -amount WHERE region = 'eu' AND id % 2 = 1")

    rewritten = [f for f in sales.refresh().scan(row_filter="region = 'eu'").plan_files()]
    assert len(rewritten) == 1 and rewritten[0].sort_order_id == order_id
    local = local_path(rewritten[0].file_path)
    assert local is not None
    assert pq.read_table(local).column("amount").to_pylist() == [2.0, -1.0, -3.0]


def test_format_v3_rewrites_keep_the_rows_lineage(lake) -> None:
    """The rewritten rows carry their ``_row_id`` and ``_last_updated_sequence_number`` to
    Spark's writer: copied rows keep both, an updated row keeps its id and takes the commit's
    sequence number."""
    sales = make_sales(lake, format_version=3)
    statement = "UPDATE lake.db.sales SET amount = 0 WHERE id % 2 = 0"
    assert "AppendDataExecV1" in physical_plan(lake, statement)
    lineage = "SELECT id, _row_id, _last_updated_sequence_number FROM lake.db.sales"
    before = {r[0]: (r[1], r[2]) for r in lake.sql(lineage)}

    lake.sql(statement)

    snapshot = sales.refresh().current_snapshot()
    after = {r[0]: (r[1], r[2]) for r in lake.sql(lineage)}
    assert {i: after[i][0] for i in after} == {i: before[i][0] for i in before}
    assert {i: after[i][1] for i in (2, 4, 6)} == dict.fromkeys((2, 4, 6), snapshot.sequence_number)
    assert {i: after[i] for i in (1, 3, 5)} == {i: before[i] for i in (1, 3, 5)}
    rewritten = [f for f in sales.scan().plan_files() if JOB_FOLDER.search(f.file_path)]
    assert len(rewritten) == 3  # eu, us and ap each had an even id
    for f in rewritten:
        local = local_path(f.file_path)
        assert local is not None
        names = pq.read_schema(local).names
        assert names == ["id", "region", "amount", "_row_id", "_last_updated_sequence_number"]
    assert lake.rows("db.sales", "id", "amount") == [
        (1, 1.0), (2, 0.0), (3, 3.0), (4, 0.0), (5, 5.0), (6, 0.0)
    ]  # fmt: skip
    assert lake.iceberg_rows("db.sales", "id", "amount") == lake.rows("db.sales", "id", "amount")


def test_a_session_setting_turns_the_native_rewrite_off(lake, spark) -> None:
    make_sales(lake)
    statement = "UPDATE lake.db.sales SET amount = 0 WHERE id % 2 = 0"
    spark.conf.set("spark.lakecat.nativeRowLevelWrites", "false")
    try:
        assert "AppendDataExecV1" not in physical_plan(lake, statement)
        lake.sql(statement)
    finally:
        spark.conf.unset("spark.lakecat.nativeRowLevelWrites")
    assert lake.rows("db.sales", "id", "amount") == [
        (1, 1.0), (2, 0.0), (3, 3.0), (4, 0.0), (5, 5.0), (6, 0.0)
    ]  # fmt: skip
    assert not any(
        JOB_FOLDER.search(f.file_path)
        for f in lake.catalog.load_table("db.sales").scan().plan_files()
    )


def test_a_sort_order_the_native_writer_cannot_apply_goes_through_the_data_source(lake) -> None:
    """A transformed sort field: the bridge stages the rows through the Python data source,
    which sorts each task's rows by the order."""
    sales = make_sales(lake)
    lake.sql("ALTER TABLE lake.db.sales WRITE ORDERED BY truncate(2, region), amount DESC")
    order_id = sales.refresh().sort_order().order_id

    lake.sql("UPDATE lake.db.sales SET amount = amount + 10 WHERE region = 'eu' AND id = 1")

    (rewritten,) = sales.refresh().scan(row_filter="region = 'eu'").plan_files()
    assert rewritten.sort_order_id == order_id
    assert not JOB_FOLDER.search(rewritten.file_path)
    local = local_path(rewritten.file_path)
    assert local is not None
    assert pq.read_table(local).column("amount").to_pylist() == [11.0, 3.0, 2.0]


@pytest.mark.parametrize("native", ["true", "false"])
def test_a_cached_table_shows_the_rows_of_each_copy_on_write_statement(
    lake, spark, native: str
) -> None:
    lake.sql("CREATE TABLE lake.db.c (id bigint, s string) PARTITIONED BY (s)")
    lake.sql("INSERT INTO lake.db.c VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    spark.conf.set("spark.lakecat.nativeRowLevelWrites", native)
    lake.sql("CACHE TABLE lake.db.c")
    try:

        def ids() -> list[int]:
            return sorted(r.id for r in lake.sql("SELECT id FROM lake.db.c"))

        assert ids() == [1, 2, 3]
        lake.sql("UPDATE lake.db.c SET id = id + 10 WHERE id = 1")
        assert ids() == [2, 3, 11]
        lake.sql("DELETE FROM lake.db.c WHERE id % 2 = 0")
        assert ids() == [3, 11]
        lake.sql(
            "MERGE INTO lake.db.c t USING (SELECT 3L AS id) u ON t.id = u.id "
            "WHEN MATCHED THEN UPDATE SET id = 30"
        )
        assert ids() == [11, 30]
        assert spark.catalog.isCached("lake.db.c")
    finally:
        lake.sql("UNCACHE TABLE IF EXISTS lake.db.c")
        spark.conf.unset("spark.lakecat.nativeRowLevelWrites")
