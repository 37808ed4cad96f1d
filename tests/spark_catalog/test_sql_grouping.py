"""Storage-partitioned reads (``spark.lakecat.preserveDataGrouping``): scans report how their
files are grouped by partition, and Spark joins and aggregates by those keys without a shuffle,
with the rows it gets without the grouping."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sql_lake import Lake

from lakecat.spark_ext.native.write import session_conf

pytestmark = pytest.mark.spark

GROUPING = "spark.lakecat.preserveDataGrouping"
NO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1"}


def run(lake: Lake, query: str, *, grouped: bool, **conf: str) -> tuple[list[tuple[Any, ...]], str]:
    """The query's rows (sorted) and executed plan, with the grouping on or off."""
    settings = {GROUPING: str(grouped).lower(), **NO_BROADCAST, **conf}
    with session_conf(lake.spark, settings):
        df = lake.spark.sql(query)
        plan = str(df._jdf.queryExecution().executedPlan().toString())
        return sorted((tuple(r) for r in df.collect()), key=repr), plan


def shuffles(plan: str) -> int:
    return sum(1 for line in plan.splitlines() if "Exchange" in line)


@pytest.fixture
def pair(lake: Lake) -> Iterator[Lake]:
    """db.a and db.b, both partitioned by ``bucket(4, id), part``; db.b in two commits, with
    keys db.a lacks, and a row deleted from db.a by a deletion vector."""
    for name in ("a", "b"):
        lake.sql(
            f"CREATE TABLE lake.db.{name} (id bigint, part string, v int) "
            "PARTITIONED BY (bucket(4, id), part) "
            "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read')"
        )
    lake.sql(
        "INSERT INTO lake.db.a SELECT id, concat('p', id % 3), CAST(id AS INT) FROM range(600)"
    )
    lake.sql("INSERT INTO lake.db.b SELECT id, concat('p', id % 3), 2 FROM range(0, 900, 2)")
    lake.sql("INSERT INTO lake.db.b SELECT id, concat('q', id % 2), 3 FROM range(1, 700, 7)")
    lake.sql("DELETE FROM lake.db.a WHERE id = 42")
    yield lake


JOIN = (
    "SELECT a.id, a.part, a.v, b.v FROM lake.db.a a JOIN lake.db.b b "
    "ON a.id = b.id AND a.part = b.part"
)


def test_a_join_of_two_tables_partitioned_alike_does_not_shuffle(pair: Lake) -> None:
    expected, shuffled = run(pair, JOIN, grouped=False)
    rows, plan = run(pair, JOIN, grouped=True)

    assert shuffles(shuffled) == 2
    assert shuffles(plan) == 0
    assert rows == expected
    assert len(rows) == 300 - 1  # the even ids below 600, one deleted
    with session_conf(pair.spark, {GROUPING: "true"}):
        assert "grouped-by=[bucket(4, id), identity(part)]" in pair.scan_line(JOIN)


def test_the_grouping_is_off_unless_asked(pair: Lake) -> None:
    assert "grouped-by" not in pair.scan_line(JOIN)
    _, plan = run(pair, "SELECT part, count(*) FROM lake.db.a GROUP BY part", grouped=False)
    assert shuffles(plan) == 1


def test_an_aggregate_by_the_partition_columns_does_not_shuffle(lake: Lake) -> None:
    lake.sql(
        "CREATE TABLE lake.db.events (id bigint, part string, d date, amount decimal(10, 2)) "
        "PARTITIONED BY (part, d)"
    )
    for day in range(3):  # a commit per day; some rows without a part (a null key value)
        lake.sql(
            "INSERT INTO lake.db.events SELECT id, IF(id % 5 = 0, NULL, concat('p', id % 3)), "
            f"date_add(DATE '2024-02-28', {day} + CAST(id % 2 AS INT)), "
            "CAST(id AS DECIMAL(10, 2)) / 8 FROM range(300)"
        )
    query = "SELECT part, d, count(*), sum(amount) FROM lake.db.events GROUP BY part, d"

    expected, shuffled = run(lake, query, grouped=False)
    rows, plan = run(lake, query, grouped=True)

    assert shuffles(shuffled) == 1
    assert shuffles(plan) == 0
    assert rows == expected
    assert len(rows) == 4 * 4  # three parts and null, four days


def test_a_join_with_another_source_shuffles_that_side_by_lakecats_bucket_function(
    pair: Lake,
) -> None:
    pair.spark.range(0, 900, 3).selectExpr(
        "id", "concat('p', id % 3) AS part", "CAST(id AS INT) AS w"
    ).createOrReplaceTempView("other")
    query = "SELECT a.id, a.v, o.w FROM lake.db.a a JOIN other o ON a.id = o.id AND a.part = o.part"
    shuffle_one_side = {"spark.sql.sources.v2.bucketing.shuffle.enabled": "true"}

    expected, _ = run(pair, query, grouped=False)
    rows, plan = run(pair, query, grouped=True, **shuffle_one_side)

    assert shuffles(plan) == 1  # the temp view's side only, by the table's transforms
    assert rows == expected
    assert len(rows) == 200 - 1


def test_a_runtime_filter_plans_again_with_the_same_key(pair: Lake) -> None:
    pair.spark.createDataFrame(
        [("p0", "x"), ("p1", "y"), ("p2", "x")], "part string, label string"
    ).createOrReplaceTempView("dim")
    query = (  # dim broadcast: its values prune a's files at run time
        "SELECT /*+ BROADCAST(d) */ a.id, a.v FROM lake.db.a a JOIN dim d "
        "ON a.part = d.part WHERE d.label = 'x'"
    )

    expected, _ = run(pair, query, grouped=False)
    rows, plan = run(pair, query, grouped=True)

    assert "dynamicpruningexpression(part" in plan.lower()
    assert rows == expected
    assert len(rows) == 400 - 1  # the ids of p0 and p2 below 600, one deleted


def test_the_key_is_the_fields_every_planned_file_shares(lake: Lake) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint, part string) PARTITIONED BY (part)")
    lake.sql("INSERT INTO lake.db.t SELECT id, concat('p', id % 3) FROM range(90)")
    before = lake.catalog.load_table("db.t").metadata.current_snapshot_id
    lake.sql("ALTER TABLE lake.db.t ADD PARTITION FIELD bucket(4, id)")
    lake.sql("INSERT INTO lake.db.t SELECT id, concat('p', id % 3) FROM range(90, 150)")
    lake.sql("CREATE TABLE lake.db.u (id bigint, part string) PARTITIONED BY (part)")
    lake.sql("INSERT INTO lake.db.u SELECT id, concat('p', id % 3) FROM range(0, 150, 5)")
    query = "SELECT t.id, u.id FROM lake.db.t t JOIN lake.db.u u ON t.part = u.part"
    old = f"SELECT part, count(*) FROM lake.db.t VERSION AS OF {before} GROUP BY part"
    new_only = "SELECT id, part FROM lake.db.t WHERE id >= 90"

    expected, _ = run(lake, query, grouped=False)
    rows, plan = run(lake, query, grouped=True)
    old_rows, old_plan = run(lake, old, grouped=True)

    assert shuffles(plan) == 0  # both grouped by part: the new field is not in the old files
    assert rows == expected
    assert len(rows) == 3 * 50 * 10
    assert shuffles(old_plan) == 0
    assert old_rows == [("p0", 30), ("p1", 30), ("p2", 30)]
    with session_conf(lake.spark, {GROUPING: "true"}):
        assert "grouped-by=[identity(part)]" in lake.scan_line(query)
        # only files written after the change: both fields
        assert "grouped-by=[identity(part), bucket(4, id)]" in lake.scan_line(new_only)
        # the key's columns must be read: without part, nothing groups the files
        assert "grouped-by" not in lake.scan_line("SELECT id FROM lake.db.t")


def test_reads_through_the_python_data_source_report_no_grouping(pair: Lake) -> None:
    query = "SELECT a._partition, a.id FROM lake.db.a a"
    with session_conf(pair.spark, {GROUPING: "true"}):
        line = pair.scan_line(query)
    assert "reader=lakecat" in line
    assert "grouped-by" not in line
    rows, _ = run(pair, query, grouped=True)
    assert len(rows) == 599


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_row_level_operations_on_grouped_reads_change_the_same_rows(lake: Lake, mode: str) -> None:
    statements = [
        "MERGE INTO lake.db.{t} t USING lake.db.src s ON t.id = s.id AND t.part = s.part "
        "WHEN MATCHED AND s.v < 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT *",
        "UPDATE lake.db.{t} SET v = v + 1000 WHERE id IN (SELECT id FROM lake.db.src WHERE v > 50)",
        "DELETE FROM lake.db.{t} WHERE id % 7 = 0 AND part = 'p2'",
    ]
    spj = {
        "spark.sql.sources.v2.bucketing.pushPartValues.enabled": "true",
        "spark.sql.requireAllClusterKeysForCoPartition": "false",
        "spark.sql.sources.v2.bucketing.partiallyClusteredDistribution.enabled": "true",
    }
    for name in ("src", "off", "on"):
        lake.sql(
            f"CREATE TABLE lake.db.{name} (id bigint, part string, v int) "
            "PARTITIONED BY (bucket(4, id), part) "
            f"TBLPROPERTIES ('write.delete.mode' = '{mode}', 'write.update.mode' = '{mode}', "
            f"'write.merge.mode' = '{mode}')"
        )
    lake.sql(
        "INSERT INTO lake.db.src SELECT id, concat('p', id % 3), CAST(id % 97 AS INT) - 10 "
        "FROM range(0, 400, 3)"
    )
    for name in ("off", "on"):
        lake.sql(
            f"INSERT INTO lake.db.{name} SELECT id, concat('p', id % 3), CAST(id AS INT) "
            "FROM range(300)"
        )
    for statement in statements:
        run(lake, statement.format(t="off"), grouped=False)
        _, plan = run(lake, statement.format(t="on"), grouped=True, **spj)
        if mode == "merge-on-read" and statement.startswith("MERGE"):
            # the target and source joined by their keys, neither shuffled
            assert "GroupPartitions" in plan
            assert "Exchange hashpartitioning(id" not in plan

    assert lake.rows("db.on") == lake.rows("db.off")
    assert len(lake.rows("db.on")) > 300  # the MERGE inserted rows


@pytest.mark.parametrize(
    ("spec", "keys", "shuffled"),
    [
        ("days(ts), bucket(3, name)", ["ts", "name"], 0),
        ("hours(ts)", ["ts"], 0),
        ("months(ts), d", ["ts", "d"], 0),
        ("years(d), amount", ["d", "amount"], 0),
        ("d, flag", ["d", "flag"], 0),
        # Spark 4.3 does not co-partition by a truncate key (a transform with a width): it
        # shuffles both sides, with the same rows
        ("truncate(2, name)", ["name"], 2),
    ],
)
def test_tables_partitioned_alike_by_a_transform_join_without_a_shuffle(
    lake: Lake, spec: str, keys: list[str], shuffled: int
) -> None:
    for name in ("x", "y"):
        lake.sql(
            f"CREATE TABLE lake.db.{name} (id bigint, ts timestamp, d date, name string, "
            f"amount decimal(9, 2), flag boolean) PARTITIONED BY ({spec})"
        )
        step = 1 if name == "x" else 3
        lake.sql(
            f"INSERT INTO lake.db.{name} SELECT id, "
            "TIMESTAMP '2023-12-31 20:00:00' + make_interval(0, 0, 0, 0, CAST(id * 5 AS INT)), "
            "date_add(DATE '2023-11-30', CAST(id * 7 AS INT)), IF(id % 9 = 0, NULL, "
            "concat('n', id % 4, id % 3)), CAST(id % 5 AS DECIMAL(9, 2)) / 4, id % 2 = 0 "
            f"FROM range(0, 200, {step})"
        )
    on = " AND ".join(f"x.{c} = y.{c}" for c in keys)
    query = f"SELECT x.id, y.id FROM lake.db.x x JOIN lake.db.y y ON {on}"

    expected, _ = run(lake, query, grouped=False)
    rows, plan = run(lake, query, grouped=True)

    assert shuffles(plan) == shuffled
    assert rows == expected
    assert rows


def test_keys_leave_out_values_spark_orders_otherwise(lake: Lake) -> None:
    # floats (NaN, -0.0) and binary values: the files are grouped by the other fields
    lake.sql(
        "CREATE TABLE lake.db.t (id bigint, f double, b binary, part string) "
        "PARTITIONED BY (f, b, part)"
    )
    lake.sql(
        "INSERT INTO lake.db.t SELECT id, IF(id = 3, double('NaN'), CAST(id % 2 AS DOUBLE)), "
        "CAST(concat('b', id % 2) AS BINARY), concat('p', id % 3) FROM range(12)"
    )
    query = "SELECT part, count(*) FROM lake.db.t GROUP BY part"
    with session_conf(lake.spark, {GROUPING: "true"}):
        assert "grouped-by=[identity(part)]" in lake.scan_line(query)
    rows, plan = run(lake, query, grouped=True)
    assert rows == [("p0", 4), ("p1", 4), ("p2", 4)]
    assert shuffles(plan) == 0


@pytest.mark.parametrize(
    ("left", "right", "shuffled"),
    [
        (4, 8, 0),  # the 8 buckets reduced to 4 (bucket % 4)
        (6, 4, 0),  # both reduced to their greatest common divisor, 2
        (3, 8, 2),  # no common divisor: both sides shuffled
    ],
)
def test_tables_bucketed_by_different_counts_join_by_their_common_divisor(
    lake: Lake, left: int, right: int, shuffled: int
) -> None:
    for name, buckets, step in (("x", left, 1), ("y", right, 3)):
        lake.sql(
            f"CREATE TABLE lake.db.{name} (id bigint, v int) PARTITIONED BY (bucket({buckets}, id))"
        )
        lake.sql(
            f"INSERT INTO lake.db.{name} SELECT id, CAST(id % 11 AS INT) FROM range(0, 300, {step})"
        )
    query = "SELECT x.id, x.v, y.v FROM lake.db.x x JOIN lake.db.y y ON x.id = y.id"
    compatible = {"spark.sql.sources.v2.bucketing.allowCompatibleTransforms.enabled": "true"}

    expected, _ = run(lake, query, grouped=False)
    rows, plan = run(lake, query, grouped=True, **compatible)
    _, without = run(lake, query, grouped=True)

    assert shuffles(plan) == shuffled
    assert rows == expected
    assert len(rows) == 100
    assert shuffles(without) == 2  # Spark reduces buckets only when told to
