"""SQL ``UPDATE``, ``MERGE INTO`` and ``DELETE`` with any condition through the catalog ``lake``.

Spark plans them as copy-on-write rewrites of the files holding affected rows; lakecat commits
each as one snapshot that replaces exactly those files. Every test checks the rows through
lakecat's Python API and through pyiceberg, and what the commit replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from other_engines import set_properties_with_pyiceberg

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


def rows(*items: tuple[int, str, float]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in items], SCHEMA)


@pytest.fixture
def sales(lake) -> Any:
    """db.sales partitioned by region, one file per region: eu 1-3, us 4-5, ap 6."""
    table = lake.catalog.create_table("db.sales", SCHEMA, partition_by=["region"])
    table.append(
        rows(
            (1, "eu", 1.0),
            (2, "eu", 2.0),
            (3, "eu", 3.0),
            (4, "us", 4.0),
            (5, "us", 5.0),
            (6, "ap", 6.0),
        )
    )
    return table


def both_views(lake, table: str) -> list[tuple[Any, ...]]:
    """The rows through lakecat, after checking pyiceberg reads the same."""
    ours = lake.rows(table, "id", "region", "amount")
    assert lake.iceberg_rows(table, "id", "region", "amount") == ours
    return ours


def data_files(table: Any) -> set[str]:
    return {f.file_path for f in table.refresh().scan().plan_files()}


def source(spark: Any, *items: tuple[int, str, float]) -> None:
    df = spark.createDataFrame(list(items), "id bigint, region string, amount double")
    df.createOrReplaceTempView("src")


def test_update_with_an_expression_rewrites_only_the_files_with_matching_rows(lake, sales) -> None:
    before = data_files(sales)

    lake.sql("UPDATE lake.db.sales SET amount = amount * 10 WHERE id % 2 = 0 AND region <> 'ap'")

    snapshot = sales.refresh().current_snapshot()
    assert snapshot.operation == "overwrite"
    assert snapshot.summary["deleted-data-files"] == "2"  # eu and us; ap untouched
    assert len(before & data_files(sales)) == 1
    assert both_views(lake, "db.sales") == [
        (1, "eu", 1.0), (2, "eu", 20.0), (3, "eu", 3.0),
        (4, "us", 40.0), (5, "us", 5.0), (6, "ap", 6.0),
    ]  # fmt: skip


PUSHED = {
    "update": "UPDATE lake.db.big SET v = -1 WHERE id = 7",
    "delete": "DELETE FROM lake.db.big WHERE id = 9 AND v * 2 = 9",  # not lakecat's own delete
    "merge": (
        "MERGE INTO lake.db.big t USING (SELECT 11L AS id, -1D AS v) s "
        "ON t.id = s.id AND t.id = 11 WHEN MATCHED THEN UPDATE SET v = s.v"
    ),
}


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
@pytest.mark.parametrize("statement", sorted(PUSHED))
def test_a_statement_keeps_the_rows_of_the_row_groups_and_pages_its_condition_skips(
    lake, statement: str, mode: str
) -> None:
    """One file of 50,000 rows in several row groups and pages: Parquet's pruning by the
    pushed condition (``id = 7``) skips those with no match, which is right for the rows a
    statement changes but would drop, from a copy-on-write rewrite, the rows it must keep."""
    modes = ", ".join(f"'write.{k}.mode' = '{mode}'" for k in ("delete", "update", "merge"))
    lake.sql(
        "CREATE TABLE lake.db.big (id bigint, v double) "
        f"TBLPROPERTIES ({modes}, 'write.parquet.row-group-size-bytes' = '131072')"
    )
    lake.sql("INSERT INTO lake.db.big SELECT /*+ COALESCE(1) */ id, id * 0.5 FROM range(0, 50000)")
    table = lake.catalog.load_table("db.big")
    [written] = table.scan().plan_files()
    parquet = pq.ParquetFile(written.file_path.removeprefix("file://"))
    assert parquet.metadata.num_row_groups > 1 and parquet.metadata.num_rows == 50000

    lake.sql(PUSHED[statement])

    changed = {"update": 7, "delete": 9, "merge": 11}[statement]
    expected = [
        (i, -1.0 if i == changed else i * 0.5)
        for i in range(50000)
        if not (statement == "delete" and i == changed)
    ]
    assert lake.rows("db.big", "id", "v") == expected


def test_update_that_matches_nothing_commits_nothing(lake, sales) -> None:
    before = sales.metadata_location

    lake.sql("UPDATE lake.db.sales SET amount = 0 WHERE id % 100 = 99")

    assert sales.refresh().metadata_location == before


def test_delete_with_an_expression_lakecat_cannot_evaluate_is_rewritten_by_spark(
    lake, sales
) -> None:
    lake.sql("DELETE FROM lake.db.sales WHERE id % 3 = 0 OR amount > 5.5")  # double: Spark's

    assert sales.refresh().current_snapshot().operation == "overwrite"
    assert both_views(lake, "db.sales") == [
        (1, "eu", 1.0), (2, "eu", 2.0), (4, "us", 4.0), (5, "us", 5.0),
    ]  # fmt: skip


DRIVER_DELETE = "spark.lakecat.driverDeleteMaxBytes"


def delete_plan(lake, statement: str) -> str:
    """How Spark runs a DELETE: ``driver`` (lakecat's delete, Spark's DeleteFromTable) or
    ``tasks`` (a row-level operation)."""
    plan: str = lake.sql(f"EXPLAIN {statement}")[0][0]
    return "driver" if "DeleteFromTable" in plan else "tasks"


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_a_delete_that_would_read_more_than_the_setting_runs_in_tasks(
    lake, sales, spark, mode: str
) -> None:
    """A DELETE whose condition lakecat evaluates runs on the driver while the files it must
    read (holding matching rows and others) are at most spark.lakecat.driverDeleteMaxBytes;
    past that Spark runs it as a row-level operation. A delete that drops whole files reads
    none, and runs on the driver whatever the setting."""
    modes = ", ".join(f"'write.{k}.mode' = '{mode}'" for k in ("delete", "update", "merge"))
    lake.sql(f"ALTER TABLE lake.db.sales SET TBLPROPERTIES ({modes})")
    partial = "DELETE FROM lake.db.sales WHERE id = 2"
    whole = "DELETE FROM lake.db.sales WHERE id = 6"
    [eu_bytes] = [f.file_size_in_bytes for f in sales.scan().plan_files() if f.partition == ("eu",)]
    assert delete_plan(lake, partial) == "driver"  # the default: 128 MiB
    try:
        spark.conf.set(DRIVER_DELETE, str(eu_bytes))
        assert delete_plan(lake, partial) == "driver"
        spark.conf.set(DRIVER_DELETE, str(eu_bytes - 1))
        assert delete_plan(lake, partial) == "tasks"
        assert delete_plan(lake, whole) == "driver"  # ap holds only id 6: dropped whole

        lake.sql(partial)
        lake.sql(whole)
    finally:
        spark.conf.unset(DRIVER_DELETE)

    assert both_views(lake, "db.sales") == [
        (1, "eu", 1.0), (3, "eu", 3.0), (4, "us", 4.0), (5, "us", 5.0),
    ]  # fmt: skip
    dropped = sales.refresh().current_snapshot()  # the ap file, without reading it
    assert dropped.operation == "delete" and dropped.summary["deleted-data-files"] == "1"


def test_a_driver_delete_setting_that_is_not_a_size_is_refused(lake, sales, spark) -> None:
    snapshot = sales.current_snapshot().snapshot_id
    spark.conf.set(DRIVER_DELETE, "lots")
    try:
        with pytest.raises(Exception, match=f"ValidationError: {DRIVER_DELETE} is 'lots'"):
            lake.sql("DELETE FROM lake.db.sales WHERE id = 2")
    finally:
        spark.conf.unset(DRIVER_DELETE)
    assert sales.refresh().current_snapshot().snapshot_id == snapshot


def test_delete_with_a_subquery(lake, sales, spark) -> None:
    source(spark, (2, "eu", 0.0), (5, "us", 0.0), (99, "eu", 0.0))

    lake.sql("DELETE FROM lake.db.sales WHERE id IN (SELECT id FROM src)")

    assert both_views(lake, "db.sales") == [
        (1, "eu", 1.0), (3, "eu", 3.0), (4, "us", 4.0), (6, "ap", 6.0),
    ]  # fmt: skip


def test_merge_with_every_clause(lake, sales, spark) -> None:
    source(spark, (1, "eu", 100.0), (4, "us", -1.0), (7, "eu", 7.0), (8, "us", -8.0))

    lake.sql(
        """MERGE INTO lake.db.sales t USING src s ON t.id = s.id
        WHEN MATCHED AND s.amount < 0 THEN DELETE
        WHEN MATCHED THEN UPDATE SET amount = s.amount
        WHEN NOT MATCHED AND s.amount > 0 THEN INSERT *
        WHEN NOT MATCHED BY SOURCE AND t.region = 'us' THEN DELETE
        WHEN NOT MATCHED BY SOURCE THEN UPDATE SET amount = t.amount + 0.5"""
    )

    assert sales.refresh().current_snapshot().operation == "overwrite"
    assert both_views(lake, "db.sales") == [
        (1, "eu", 100.0),  # matched: updated
        (2, "eu", 2.5), (3, "eu", 3.5),  # not matched by source: updated
        # 4: matched, deleted; 5: not matched by source in us, deleted
        (6, "ap", 6.5),
        (7, "eu", 7.0),  # not matched: inserted (8 is not: its condition is false)
    ]  # fmt: skip


def test_merge_that_only_inserts_appends(lake, sales, spark) -> None:
    source(spark, (1, "eu", 100.0), (9, "ap", 9.0))

    lake.sql("MERGE INTO lake.db.sales t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")

    assert sales.refresh().current_snapshot().operation == "append"
    assert (9, "ap", 9.0) in both_views(lake, "db.sales")


def test_merge_matching_a_row_twice_fails_and_commits_nothing(lake, sales, spark) -> None:
    source(spark, (1, "eu", 10.0), (1, "eu", 11.0))
    before = sales.metadata_location

    with pytest.raises(Exception, match=r"MERGE_CARDINALITY_VIOLATION|more than one"):
        lake.sql(
            "MERGE INTO lake.db.sales t USING src s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET amount = s.amount"
        )

    assert sales.refresh().metadata_location == before


def test_update_reads_through_delete_files(lake, sales) -> None:
    sales.set_properties({"write.delete.mode": "merge-on-read"})
    sales.delete("id = 2")  # a position delete file; the data file keeps the row
    assert sales.refresh().current_snapshot().summary["added-position-delete-files"] == "1"

    lake.sql("UPDATE lake.db.sales SET amount = -amount WHERE region = 'eu'")

    assert both_views(lake, "db.sales") == [
        (1, "eu", -1.0), (3, "eu", -3.0), (4, "us", 4.0), (5, "us", 5.0), (6, "ap", 6.0),
    ]  # fmt: skip


LINEAGE = ["_row_id", "_last_updated_sequence_number"]


def lineage_by_id(table: Any) -> dict[int, tuple[int, int]]:
    """id -> (_row_id, _last_updated_sequence_number) of the table's current rows."""
    got = table.refresh().scan(columns=["id", *LINEAGE]).to_arrow().to_pylist()
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in got}


def test_on_format_v3_updated_and_copied_rows_keep_their_ids(lake, sales) -> None:
    sales.set_properties({"format-version": "3"})
    sales.append(rows((7, "eu", 7.0)))  # rows with assigned ids in a second eu file
    before = lineage_by_id(sales)

    lake.sql("UPDATE lake.db.sales SET amount = 0 WHERE id % 2 = 0")

    after = lineage_by_id(sales)
    stamp = sales.metadata.current_snapshot.sequence_number
    assert {i: rid for i, (rid, _) in after.items()} == {i: rid for i, (rid, _) in before.items()}
    assert {i for i, (_, seq) in after.items() if seq == stamp} == {2, 4, 6}
    assert {i: v for i, v in after.items() if i % 2} == {i: v for i, v in before.items() if i % 2}
    assert both_views(lake, "db.sales")[1] == (2, "eu", 0.0)


def test_on_format_v3_a_merge_gives_inserted_rows_new_ids(lake, sales, spark) -> None:
    sales.set_properties({"format-version": "3"})
    sales.append(rows((7, "eu", 7.0)))
    before = lineage_by_id(sales)
    source(spark, (1, "eu", 10.0), (8, "ap", 8.0))

    lake.sql(
        "MERGE INTO lake.db.sales t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *"
    )

    after = lineage_by_id(sales)
    stamp = sales.metadata.current_snapshot.sequence_number
    assert {i: after[i][0] for i in before} == {i: before[i][0] for i in before}
    assert {i for i, (_, seq) in after.items() if seq == stamp} == {1, 8}
    assert after[8][0] is not None and after[8][0] not in {r for r, _ in before.values()}


MERGE_ON_READ = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


@pytest.mark.parametrize("version", ["2", "3"])
def test_merge_on_read_tables_get_delete_files_and_keep_their_data_files(
    lake, sales, spark, version
) -> None:
    sales.set_properties({**MERGE_ON_READ, "format-version": version})
    extra: list[tuple[int, str, float]] = []
    if version == "3":  # rows written after the upgrade have row ids
        sales.refresh().append(rows((7, "eu", 7.0), (8, "us", 8.0)))
        extra = [(7, "eu", 7.0), (8, "us", 80.0)]
    before = data_files(sales)
    lineage = lineage_by_id(sales) if version == "3" else {}

    lake.sql("UPDATE lake.db.sales SET amount = amount * 10 WHERE id % 2 = 0")
    update = sales.refresh().current_snapshot()
    lake.sql("DELETE FROM lake.db.sales WHERE id % 3 = 0")
    source(spark, (1, "eu", 100.0), (4, "us", -1.0), (9, "ap", 9.0))
    lake.sql(
        """MERGE INTO lake.db.sales t USING src s ON t.id = s.id
        WHEN MATCHED AND s.amount < 0 THEN DELETE
        WHEN MATCHED THEN UPDATE SET amount = s.amount
        WHEN NOT MATCHED THEN INSERT *"""
    )

    assert "deleted-data-files" not in update.summary  # no file rewritten
    # one per file with updated rows (v3: one deletion vector each, and the new file's)
    assert int(update.summary["added-delete-files"]) == (3 if version == "2" else 4)
    for snapshot in sales.refresh().snapshots()[1:]:
        assert "deleted-data-files" not in snapshot.summary
    assert before <= data_files(sales)  # every original data file is still there
    assert both_views(lake, "db.sales") == sorted(
        [(1, "eu", 100.0), (2, "eu", 20.0), (5, "us", 5.0), (9, "ap", 9.0), *extra]
    )
    if version == "3":  # deletion vectors; an updated row keeps its id, a new row gets one
        after = lineage_by_id(sales)
        assert lineage[8][0] is not None and after[8][0] == lineage[8][0]
        assert after[7] == lineage[7]  # untouched
        assert after[9][0] is not None
        assert after[9][0] not in {rid for rid, _ in lineage.values()}


def test_a_row_level_mode_reads_as_the_python_api_reads_it(lake, sales) -> None:
    """Case does not matter (as in Iceberg's ``RowLevelOperationMode.fromName``): SQL and
    ``Table.delete`` both take this for merge-on-read."""
    sales.set_properties({"write.delete.mode": "Merge-On-Read"})
    before = data_files(sales)

    lake.sql("DELETE FROM lake.db.sales WHERE id % 2 = 0")  # Spark's row-level plan

    summary = sales.refresh().current_snapshot().summary
    assert "deleted-data-files" not in summary and summary["added-delete-files"] == "3"
    assert data_files(sales) == before
    assert both_views(lake, "db.sales") == [(1, "eu", 1.0), (3, "eu", 3.0), (5, "us", 5.0)]


BAD_MODE_STATEMENTS = {
    "delete": "DELETE FROM lake.db.sales WHERE id % 2 = 0",
    "update": "UPDATE lake.db.sales SET amount = 0 WHERE id % 2 = 0",
    "merge": """MERGE INTO lake.db.sales t USING src s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *""",
}


def test_a_row_level_mode_that_is_not_a_mode_is_refused_before_anything_runs(
    lake, sales, spark
) -> None:
    """As in Iceberg ("Unknown row-level operation mode"): not read as copy-on-write. lakecat
    refuses to set such a value (``ALTER TABLE``); Iceberg Java sets any."""
    import lakecat.spark_ext as lk
    from lakecat.metadata.errors import ValidationError

    before = sales.metadata_location
    with pytest.raises(Exception) as raised:
        lake.sql("ALTER TABLE lake.db.sales SET TBLPROPERTIES ('write.merge.mode' = 'nope')")
    assert str(raised.value).splitlines()[0] == (
        "lakecat ValidationError: table property write.merge.mode='nope': "
        "use one of ('copy-on-write', 'merge-on-read')"
    )
    assert sales.refresh().metadata_location == before
    bad = {f"write.{statement}.mode": "nope" for statement in BAD_MODE_STATEMENTS}
    set_properties_with_pyiceberg(lake.catalog, "db.sales", bad)
    before = sales.refresh().metadata_location
    source(spark, (2, "eu", 20.0), (7, "ap", 7.0))

    for statement, sql in BAD_MODE_STATEMENTS.items():
        with pytest.raises(Exception) as raised:
            lake.sql(sql)
        assert str(raised.value).splitlines()[0] == (
            f"lakecat ValidationError: table property write.{statement}.mode='nope': "
            "use one of ('copy-on-write', 'merge-on-read')"
        )
        assert type(lk.lakecat_error(raised.value)) is ValidationError

    assert sales.refresh().metadata_location == before
    assert len(both_views(lake, "db.sales")) == 6  # the table still reads


# Spark's optimizer proves this condition can never hold (it puts 2.5 for amount in amount > 5)
# and replaces the table's read with an empty relation: Spark never builds the statement's scan.
NEVER = "{t}amount > 5 AND {t}amount = 2.5"

STATEMENTS = {
    "delete": f"DELETE FROM lake.db.sales WHERE {NEVER.format(t='')}",
    "update": f"UPDATE lake.db.sales SET amount = 0 WHERE {NEVER.format(t='')}",
    "merge": f"""MERGE INTO lake.db.sales t USING src s ON t.id = s.id AND {NEVER.format(t="t.")}
        WHEN MATCHED THEN UPDATE SET amount = s.amount
        WHEN NOT MATCHED THEN INSERT *""",
}


@pytest.mark.parametrize(
    ("mode", "version"),
    [("copy-on-write", "2"), ("merge-on-read", "2"), ("merge-on-read", "3")],
)
@pytest.mark.parametrize("statement", sorted(STATEMENTS))
def test_a_statement_whose_read_spark_optimizes_away_changes_no_row(
    lake, sales, spark, statement, mode, version
) -> None:
    sales.set_properties({"format-version": version, **{k: mode for k in MERGE_ON_READ}})
    before = both_views(lake, "db.sales")
    unchanged = sales.refresh().metadata_location
    source(spark, (1, "eu", 100.0), (9, "ap", 9.0))

    lake.sql(STATEMENTS[statement])

    if statement == "merge":  # it matched nothing: both source rows are inserted
        assert both_views(lake, "db.sales") == sorted([*before, (1, "eu", 100.0), (9, "ap", 9.0)])
    else:  # nothing to commit
        assert sales.refresh().metadata_location == unchanged
        assert both_views(lake, "db.sales") == before


def test_a_merge_on_read_statement_filters_its_files_at_run_time_only_where_it_pays(
    lake, sales, spark
) -> None:
    """Spark's runtime ``_file`` filter costs a job of its own; a merge-on-read statement's
    commit does not depend on the files it reads, so the filter is offered only where it can
    save reading: on more files than the session's cores (one wave of tasks either way) whose
    rows are wide (these tiny files are, per row)."""
    sales.set_properties(MERGE_ON_READ)
    source(spark, (5, "us", 50.0))
    cores = spark.sparkContext.defaultParallelism
    assert len(data_files(sales)) > cores  # eu, us, ap; the test session runs local[2]
    whole = "MERGE INTO lake.db.sales t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
    one_region = (
        "MERGE INTO lake.db.sales t USING src s ON t.id = s.id AND t.region = 'us' "
        "WHEN MATCHED THEN UPDATE SET *"
    )
    assert "dynamicpruning" in lake.sql(f"EXPLAIN {whole}")[0][0].lower()
    assert "dynamicpruning" not in lake.sql(f"EXPLAIN {one_region}")[0][0].lower()

    lake.sql(one_region)

    assert both_views(lake, "db.sales") == [
        (1, "eu", 1.0), (2, "eu", 2.0), (3, "eu", 3.0),
        (4, "us", 4.0), (5, "us", 50.0), (6, "ap", 6.0),
    ]  # fmt: skip
    assert "deleted-data-files" not in sales.refresh().current_snapshot().summary


def test_a_merge_on_read_merge_of_narrow_rows_reads_its_files_once(lake, spark) -> None:
    """Rows of a few bytes each on disk: the runtime filter's job would read nearly what the
    statement's scan reads, so a merge-on-read MERGE on many files plans without it."""
    table = lake.catalog.create_table("db.narrow", SCHEMA, partition_by=["region"])
    table.set_properties(MERGE_ON_READ)
    count = 20_000
    for region in ("eu", "us", "ap"):
        table.refresh().append(
            pa.table(
                {
                    "id": pa.array(range(count), pa.int64()),
                    "region": pa.array([region] * count),
                    "amount": pa.array([1.0] * count),
                },
                schema=SCHEMA,
            )
        )
    files = table.refresh().scan().plan_files()
    assert len(files) > spark.sparkContext.defaultParallelism
    assert sum(f.file_size_in_bytes for f in files) < 32 * sum(f.record_count for f in files)
    source(spark, (7, "us", 70.0))
    merge = (
        "MERGE INTO lake.db.narrow t USING src s ON t.id = s.id AND t.region = s.region "
        "WHEN MATCHED THEN UPDATE SET *"
    )
    assert "dynamicpruning" not in lake.sql(f"EXPLAIN {merge}")[0][0].lower()

    lake.sql(merge)

    sevens = [r for r in lake.rows("db.narrow", "id", "region", "amount") if r[0] == 7]
    assert sevens == [(7, "ap", 1.0), (7, "eu", 1.0), (7, "us", 70.0)]
    assert "deleted-data-files" not in table.refresh().current_snapshot().summary


def test_a_merge_on_read_commit_gets_every_position_and_leaves_no_temporary_file(
    lake, spark
) -> None:
    """The deleted positions reach the commit through a temporary file of the JVM's (not
    JSON), one run per data file, and the file is gone once the commit call returns."""
    table = lake.catalog.create_table("db.many", SCHEMA, partition_by=["region"])
    table.set_properties(MERGE_ON_READ)
    count = 30_000
    for region in ("eu", "us"):
        table.refresh().append(
            pa.table(
                {
                    "id": pa.array(range(count), pa.int64()),
                    "region": pa.array([region] * count),
                    "amount": pa.array([float(i) for i in range(count)]),
                },
                schema=SCHEMA,
            )
        )
    temporary = Path(spark._jvm.java.lang.System.getProperty("java.io.tmpdir"))
    before = set(temporary.glob("lakecat-positions-*"))

    lake.sql("DELETE FROM lake.db.many WHERE id % 3 = 0 OR (region = 'us' AND id >= 29990)")
    lake.sql("UPDATE lake.db.many SET amount = -amount WHERE region = 'eu' AND id % 3 = 1")

    assert set(temporary.glob("lakecat-positions-*")) == before
    rows = lake.rows("db.many", "id", "region", "amount")
    kept = [
        (i, r, -float(i) if r == "eu" and i % 3 == 1 else float(i))
        for r in ("eu", "us")
        for i in range(count)
        if i % 3 and not (r == "us" and i >= 29990)
    ]
    assert sorted(rows) == sorted(kept)
    assert lake.iceberg_rows("db.many", "id", "region", "amount") == sorted(rows)
    assert "deleted-data-files" not in table.refresh().current_snapshot().summary
