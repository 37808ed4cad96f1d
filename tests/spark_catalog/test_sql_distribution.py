"""``write.distribution-mode`` on batch writes through the catalog: when the table sets it,
``hash`` writes the rows of one partition from one task (one file per partition here) and
``range`` gives each task a range of the sort order (files that do not overlap); unset, rows
are written where they are. On Spark's Parquet writer and through the Python data source.
Copy-on-write ``DELETE``/``UPDATE``/``MERGE`` follow ``write.<statement>.distribution-mode``,
else ``write.distribution-mode``."""

from __future__ import annotations

import itertools
import struct
from typing import Any

import pyarrow as pa
import pytest
from other_engines import set_properties_with_pyiceberg

from lakecat.spark_ext.native.distribution import distribution_mode

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
# 4,000 rows in 4 Spark partitions, each holding every region and ids spread over the range
ROWS = (
    "SELECT id, element_at(array('eu', 'us', 'ap', 'sa'), int(id % 4) + 1) AS region, "
    "id * 1.0 AS amount FROM range(0, 4000, 1, 4) DISTRIBUTE BY id % 7"
)
WRITERS = {
    "spark": {},
    "data source": {"write.parquet.compression-codec": "lz4"},  # Spark's writer cannot: lz4
}


def files(table: Any) -> list[Any]:
    return table.refresh().scan().plan_files()


def id_range(f: Any) -> tuple[int, int]:
    lower, upper = f.lower_bounds[1], f.upper_bounds[1]
    return struct.unpack("<q", lower)[0], struct.unpack("<q", upper)[0]


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("mode", [None, "hash"])
def test_hash_distribution_writes_each_partition_from_one_task(
    lake: Any, writer: str, mode: str | None
) -> None:
    properties = dict(WRITERS[writer])
    if mode is not None:
        properties["write.distribution-mode"] = mode
    table = lake.catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"], properties=properties
    )

    lake.sql(f"INSERT INTO lake.db.t {ROWS}")

    written = files(table)
    assert sum(f.record_count for f in written) == 4000
    if mode == "hash":
        assert len(written) == 4  # one per region
    else:
        assert len(written) > 4  # each task writes a file for each region it holds


@pytest.mark.parametrize("writer", list(WRITERS))
def test_range_distribution_writes_files_of_disjoint_sort_key_ranges(
    lake: Any, writer: str
) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA, properties=WRITERS[writer])
    lake.sql("ALTER TABLE lake.db.t WRITE ORDERED BY id")  # Iceberg's: range distribution
    assert table.refresh().properties["write.distribution-mode"] == "range"

    lake.sql(f"INSERT INTO lake.db.t {ROWS}")

    ranges = sorted(id_range(f) for f in files(table))
    assert len(ranges) > 1 and sum(f.record_count for f in files(table)) == 4000
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))

    lake.sql("ALTER TABLE lake.db.t WRITE LOCALLY ORDERED BY id")  # none: as the rows come
    lake.sql(f"INSERT OVERWRITE lake.db.t {ROWS}")
    ranges = sorted(id_range(f) for f in files(table))
    assert any(a[1] >= b[0] for a, b in itertools.pairwise(ranges))


def test_an_unknown_distribution_mode_is_refused_before_anything_is_written(lake: Any) -> None:
    """lakecat refuses to set such a value (tests/metadata/table/test_property_values.py);
    Iceberg Java sets any, and lakecat's writes then refuse it, as Iceberg Java's do."""
    table = lake.catalog.create_table("db.t", SCHEMA)
    set_properties_with_pyiceberg(lake.catalog, "db.t", {"write.distribution-mode": "sideways"})

    with pytest.raises(Exception, match=r"write\.distribution-mode='sideways'"):
        lake.sql(f"INSERT INTO lake.db.t {ROWS}")

    assert table.refresh().current_snapshot() is None


# Statements that rewrite every file of the table (copy-on-write: every file holds ids that
# are multiples of 5), and the rows they leave.
STATEMENTS = {
    "delete": ("DELETE FROM lake.db.t WHERE id % 5 = 0", 3200),
    "update": ("UPDATE lake.db.t SET id = id + 10000 WHERE id % 5 = 0", 4000),
    "merge": (
        "MERGE INTO lake.db.t USING (SELECT id FROM range(0, 4000, 5)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET id = t.id + 10000",
        4000,
    ),
}


def optimized_plan(lake: Any, sql: str) -> str:
    """The optimized logical plan of ``sql``: where Spark's distribution of a write shows
    (``RepartitionByExpression``), whatever the data and the tasks it lands in."""
    plan = "\n".join(r[0] for r in lake.spark.sql(f"EXPLAIN EXTENDED {sql}").collect())
    return plan.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]


def files_per_region(table: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in files(table):
        region = f.partition[0]
        counts[region] = counts.get(region, 0) + 1
    return counts


@pytest.mark.parametrize("writer", [True, False], ids=["spark writer", "python writer"])
@pytest.mark.parametrize("statement", list(STATEMENTS))
@pytest.mark.parametrize("key", ["own", "table", None])
def test_a_copy_on_write_statement_spreads_its_rows_by_its_distribution_mode(
    lake: Any, statement: str, key: str | None, writer: bool
) -> None:
    # Iceberg's names: write.<statement>.distribution-mode, else write.distribution-mode
    table = lake.catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"], properties=WRITERS["spark"]
    )
    lake.sql(f"INSERT INTO lake.db.t {ROWS}")  # no mode: each region in several files
    assert min(files_per_region(table).values()) > 1
    property = {
        "own": f"write.{statement}.distribution-mode",
        "table": "write.distribution-mode",
        None: None,
    }[key]
    if property is not None:
        lake.sql(f"ALTER TABLE lake.db.t SET TBLPROPERTIES ('{property}' = 'hash')")
    sql, count = STATEMENTS[statement]
    lake.spark.conf.set("spark.lakecat.nativeRowLevelWrites", str(writer).lower())
    try:
        spread = "RepartitionByExpression [region" in optimized_plan(lake, sql)
        lake.sql(sql)
    finally:
        lake.spark.conf.unset("spark.lakecat.nativeRowLevelWrites")

    assert sum(f.record_count for f in files(table)) == count
    assert lake.sql("SELECT count(*) FROM lake.db.t WHERE id % 5 = 0 AND id < 4000")[0][0] == 0
    # without a mode the rows stay in the tasks Spark read them in (how many files that makes
    # depends on how Spark packed the files it read, so the plan is what tells)
    assert spread == (property is not None)
    if property is not None:
        assert files_per_region(table) == {"eu": 1, "us": 1, "ap": 1, "sa": 1}


def test_a_statement_s_own_distribution_mode_wins_over_the_table_s(lake: Any) -> None:
    table = lake.catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["region"],
        properties={"write.delete.distribution-mode": "none"},
    )
    lake.sql(f"INSERT INTO lake.db.t {ROWS}")
    lake.sql("ALTER TABLE lake.db.t SET TBLPROPERTIES ('write.distribution-mode' = 'hash')")

    sql = "DELETE FROM lake.db.t WHERE id % 5 = 0"
    assert "RepartitionByExpression" not in optimized_plan(lake, sql)  # rows stay in their tasks
    lake.sql(sql)

    assert sum(f.record_count for f in files(table)) == 3200


def test_an_unknown_statement_distribution_mode_is_refused_before_anything_is_written(
    lake: Any,
) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    lake.sql(f"INSERT INTO lake.db.t {ROWS}")
    before = table.refresh().current_snapshot()
    with pytest.raises(Exception, match=r"write\.update\.distribution-mode='x'"):
        lake.sql("ALTER TABLE lake.db.t SET TBLPROPERTIES ('write.update.distribution-mode' = 'x')")
    assert table.refresh().properties.get("write.update.distribution-mode") is None
    set_properties_with_pyiceberg(lake.catalog, "db.t", {"write.update.distribution-mode": "x"})

    with pytest.raises(Exception, match=r"write\.update\.distribution-mode='x'"):
        lake.sql("UPDATE lake.db.t SET amount = 0 WHERE id % 5 = 0")

    assert table.refresh().current_snapshot() == before


@pytest.mark.parametrize(
    ("properties", "partitioned", "expected"),
    [
        ({}, True, {"delete": "none", "update": "none", "merge": "none"}),
        ({"write.distribution-mode": "none"}, True, dict.fromkeys(STATEMENTS, "hash")),
        ({"write.distribution-mode": "range"}, True, dict.fromkeys(STATEMENTS, "hash")),
        (
            {"write.distribution-mode": "range"},
            False,
            {"delete": "hash", "update": "hash", "merge": "range"},
        ),
        (
            {"write.distribution-mode": "hash", "write.update.distribution-mode": "Range"},
            True,
            {"delete": "hash", "update": "range", "merge": "hash"},
        ),
        (
            {"write.merge.distribution-mode": "none"},
            False,
            {"delete": "none", "update": "none", "merge": "none"},
        ),
    ],
)
def test_without_its_own_mode_a_statement_takes_iceberg_s_choice_for_the_table_s_mode(
    lake: Any, properties: dict[str, str], partitioned: bool, expected: dict[str, str]
) -> None:
    table = lake.catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"] if partitioned else [], properties=properties
    )

    assert {s: distribution_mode(table.metadata, s) for s in STATEMENTS} == expected


def test_a_merge_into_an_unpartitioned_table_follows_its_range_mode(lake: Any) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    lake.sql("ALTER TABLE lake.db.t WRITE LOCALLY ORDERED BY id")  # none: files overlap
    lake.sql(
        "INSERT INTO lake.db.t SELECT id, 'eu', 0.0 FROM range(0, 4000, 1, 4) DISTRIBUTE BY id % 7"
    )
    lake.sql("ALTER TABLE lake.db.t WRITE ORDERED BY id")  # range

    def overlapping() -> bool:
        ranges = sorted(id_range(f) for f in files(table))
        return any(a[1] >= b[0] for a, b in itertools.pairwise(ranges))

    assert overlapping()
    lake.sql(
        "MERGE INTO lake.db.t USING (SELECT id FROM range(1, 4000, 5)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET amount = 1"
    )
    assert not overlapping() and len(files(table)) > 1
    assert lake.sql("SELECT count(*), sum(amount) FROM lake.db.t")[0] == (4000, 800.0)


@pytest.mark.parametrize(
    ("field", "partitions"),
    [(("id", "bucket[3]"), [0, 1, 2]), (("region", "truncate[1]"), ["a", "e", "s", "u"])],
)
def test_a_transformed_partition_s_statements_cluster_by_the_catalog_s_function(
    lake: Any, field: tuple[str, str], partitions: list[Any]
) -> None:
    # Spark evaluates the bucket and truncate transforms with the catalog's functions
    table = lake.catalog.create_table("db.t", SCHEMA, partition_by=[field])
    lake.sql(f"INSERT INTO lake.db.t {ROWS}")
    assert len(files(table)) > len(partitions)
    lake.sql("ALTER TABLE lake.db.t SET TBLPROPERTIES ('write.update.distribution-mode' = 'hash')")

    lake.sql("UPDATE lake.db.t SET amount = -1 WHERE id % 5 = 0")

    assert sorted(f.partition[0] for f in files(table)) == partitions
    assert lake.sql("SELECT count(*), sum(amount) FROM lake.db.t WHERE amount < 0")[0] == (
        800,
        -800,
    )


@pytest.mark.parametrize("mode", ["hash", None])
def test_a_merge_on_read_merge_writes_its_new_rows_by_partition(
    lake: Any, mode: str | None
) -> None:
    properties = {"write.merge.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
    if mode is not None:
        properties["write.merge.distribution-mode"] = mode
    table = lake.catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"], properties=properties
    )
    lake.sql(f"INSERT INTO lake.db.t {ROWS}")
    before = {f.file_path for f in files(table)}

    # every region's new rows in both of Spark's tasks (two shuffle partitions of the join)
    lake.sql(
        "MERGE INTO lake.db.t USING (SELECT id, id % 4 AS r FROM range(0, 8000, 5)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET amount = -1 WHEN NOT MATCHED THEN "
        "INSERT (id, region, amount) VALUES (s.id, element_at(array('eu', 'us', 'ap', 'sa'), "
        "int(s.r) + 1), 0)"
    )

    added = [f for f in files(table) if f.file_path not in before]
    assert sum(f.record_count for f in added) == 1600
    assert lake.sql("SELECT count(*) FROM lake.db.t")[0][0] == 4800
    if mode == "hash":
        assert sorted(f.partition[0] for f in added) == ["ap", "eu", "sa", "us"]
    else:
        assert len(added) > 4


@pytest.mark.parametrize("statement", ["delete", "update", "merge"])
def test_an_unpartitioned_table_s_rows_cluster_by_file_for_a_delete_or_update(
    lake: Any, statement: str
) -> None:
    # Iceberg's hash for an unpartitioned table's DELETE and UPDATE: each file's rows
    # rewritten by one task, whatever splits Spark read it in; a MERGE's by nothing
    lake.catalog.create_table(
        "db.t", SCHEMA, properties={f"write.{statement}.distribution-mode": "hash"}
    )
    lake.sql(f"INSERT INTO lake.db.t {ROWS}")
    sql = STATEMENTS[statement][0]

    optimized = optimized_plan(lake, sql)

    assert ("RepartitionByExpression [_file" in optimized) == (statement != "merge")
    lake.sql(sql)
    assert lake.sql("SELECT count(*) FROM lake.db.t")[0][0] == STATEMENTS[statement][1]


@pytest.mark.parametrize("mode", ["hash", None])
def test_a_stream_s_micro_batches_follow_the_distribution_mode(
    lake: Any, tmp_path: Any, mode: str | None
) -> None:
    import pyarrow.parquet as pq

    properties = {} if mode is None else {"write.distribution-mode": mode}
    table = lake.catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"], properties=properties
    )
    source = tmp_path / "source"
    source.mkdir()
    for part in range(2):  # two files: two tasks, each holding every region
        ids = list(range(part * 100, part * 100 + 100))
        regions = [("eu", "us", "ap", "sa")[i % 4] for i in ids]
        rows = pa.table({"id": ids, "region": regions, "amount": [0.0] * 100}, schema=SCHEMA)
        pq.write_table(rows, source / f"part-{part}.parquet")

    query = (
        lake.spark.readStream.schema("id long, region string, amount double")
        .parquet(str(source))
        .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .toTable("lake.db.t")
    )
    query.awaitTermination(120)
    assert query.exception() is None

    per_region = files_per_region(table)
    assert sum(f.record_count for f in files(table)) == 200
    if mode == "hash":
        assert per_region == {"eu": 1, "us": 1, "ap": 1, "sa": 1}
    else:
        assert per_region == {"eu": 2, "us": 2, "ap": 2, "sa": 2}


@pytest.mark.parametrize("mode", ["hash", None])
def test_a_dynamic_overwrite_follows_the_distribution_mode(lake: Any, mode: str | None) -> None:
    properties = {} if mode is None else {"write.distribution-mode": mode}
    table = lake.catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"], properties=properties
    )
    lake.spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        lake.sql(f"INSERT OVERWRITE lake.db.t {ROWS}")
    finally:
        lake.spark.conf.unset("spark.sql.sources.partitionOverwriteMode")

    assert table.refresh().current_snapshot().operation == "overwrite"
    per_region = files_per_region(table)
    assert (per_region == {"eu": 1, "us": 1, "ap": 1, "sa": 1}) == (mode == "hash")


@pytest.mark.parametrize("mode", ["hash", None])
def test_an_insert_into_a_bucketed_table_clusters_by_the_catalog_s_bucket_function(
    lake: Any, mode: str | None
) -> None:
    properties = {} if mode is None else {"write.distribution-mode": mode}
    table = lake.catalog.create_table(
        "db.t", SCHEMA, partition_by=[("id", "bucket[3]")], properties=properties
    )

    lake.sql(f"INSERT INTO lake.db.t {ROWS}")

    buckets = sorted(f.partition[0] for f in files(table))
    assert sum(f.record_count for f in files(table)) == 4000
    assert (buckets == [0, 1, 2]) == (mode == "hash")


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_range_orders_a_statement_s_rows_by_partition_transform_and_sort_order(
    lake: Any, mode: str
) -> None:
    # ordered by bucket(3, id) (the catalog's function), then id: within a bucket the files a
    # statement writes do not overlap
    table = lake.catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=[("id", "bucket[3]")],
        properties={"write.update.mode": mode, "write.update.distribution-mode": "range"},
    )
    lake.sql(f"INSERT INTO lake.db.t {ROWS}")
    lake.sql("ALTER TABLE lake.db.t WRITE LOCALLY ORDERED BY id")  # the sort order; none
    before = {f.file_path for f in files(table)}

    lake.sql("UPDATE lake.db.t SET amount = -1 WHERE id % 5 = 0")

    written: dict[int, list[tuple[int, int]]] = {}
    for f in files(table):
        if f.file_path not in before:
            written.setdefault(f.partition[0], []).append(id_range(f))
    assert sorted(written) == [0, 1, 2]
    for ranges in written.values():
        ranges.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
    assert lake.sql("SELECT count(*), sum(amount) FROM lake.db.t WHERE amount < 0")[0] == (
        800,
        -800,
    )


def test_a_nested_partition_column_and_sort_field_spread_a_statement_s_rows(lake: Any) -> None:
    # the transforms and sort order name a struct's field: Spark resolves them in the rows
    lake.sql(
        "CREATE TABLE lake.db.n (id bigint, s struct<r: string, x: int>) PARTITIONED BY (s.r) "
        "TBLPROPERTIES ('write.distribution-mode' = 'hash', 'write.update.mode' = 'merge-on-read')"
    )
    lake.sql(
        "INSERT INTO lake.db.n SELECT id, named_struct('r', element_at(array('a', 'b'), "
        "int(id % 2) + 1), 'x', int(id % 3)) FROM range(0, 100, 1, 4)"
    )
    lake.sql("UPDATE lake.db.n SET id = id + 1000 WHERE id % 5 = 0")  # hash by s.r
    lake.sql("ALTER TABLE lake.db.n WRITE ORDERED BY s.x, id")  # range by s.r, s.x, id
    lake.sql("ALTER TABLE lake.db.n SET TBLPROPERTIES ('write.update.mode' = 'copy-on-write')")
    lake.sql("UPDATE lake.db.n SET id = id + 100000 WHERE id % 2 = 0")

    assert lake.sql("SELECT count(*), count(DISTINCT id) FROM lake.db.n")[0] == (100, 100)
    assert lake.sql("SELECT count(*) FROM lake.db.n WHERE id >= 100000")[0][0] == 50
    assert lake.sql("SELECT count(*) FROM lake.db.n WHERE id BETWEEN 1000 AND 1100")[0][0] == 10


# The statements that write into a staged table: the new definition's mode applies.
STAGED = {
    "create as select": "CREATE TABLE lake.db.s PARTITIONED BY (region) TBLPROPERTIES ({props}) "
    "AS {rows}",
    "replace as select": "REPLACE TABLE lake.db.s PARTITIONED BY (region) "
    "TBLPROPERTIES ({props}) AS {rows}",
    "create or replace": "CREATE OR REPLACE TABLE lake.db.s PARTITIONED BY (region) "
    "TBLPROPERTIES ({props}) AS {rows}",
}


@pytest.mark.parametrize("statement", list(STAGED))
@pytest.mark.parametrize("mode", ["hash", "none"])
def test_a_create_or_replace_as_select_follows_the_new_definition_s_distribution_mode(
    lake: Any, statement: str, mode: str
) -> None:
    if statement != "create as select":
        lake.sql("CREATE TABLE lake.db.s (id bigint, region string, amount double)")
        lake.sql("INSERT INTO lake.db.s VALUES (1, 'eu', 1.0)")
    props = f"'write.distribution-mode' = '{mode}'"

    lake.sql(STAGED[statement].format(props=props, rows=ROWS))

    table = lake.catalog.load_table("db.s")
    assert sum(f.record_count for f in files(table)) == 4000
    if mode == "hash":
        assert files_per_region(table) == {"eu": 1, "us": 1, "ap": 1, "sa": 1}
    else:
        assert len(files(table)) > 4  # each task writes a file for each region it holds


def test_a_dataframe_create_or_replace_follows_the_new_definition_s_distribution_mode(
    lake: Any,
) -> None:
    lake.sql("CREATE TABLE lake.db.s (id bigint, region string, amount double)")
    rows = lake.spark.sql(ROWS)

    (
        rows.writeTo("lake.db.s")
        .partitionedBy(rows.region)
        .tableProperty("write.distribution-mode", "hash")
        .createOrReplace()
    )

    assert files_per_region(lake.catalog.load_table("db.s")) == {
        "eu": 1,
        "us": 1,
        "ap": 1,
        "sa": 1,
    }


def test_a_create_as_select_with_an_unknown_mode_creates_nothing(lake: Any) -> None:
    lake.sql("CREATE TABLE lake.db.s (id bigint, region string, amount double)")
    lake.sql("INSERT INTO lake.db.s VALUES (1, 'eu', 1.0)")
    before = lake.catalog.load_table("db.s").metadata_location

    with pytest.raises(Exception, match=r"write\.distribution-mode='sideways'"):
        lake.sql(
            STAGED["create or replace"].format(
                props="'write.distribution-mode' = 'sideways'", rows=ROWS
            )
        )
    with pytest.raises(Exception, match=r"write\.distribution-mode='sideways'"):
        lake.sql(
            STAGED["create as select"]
            .replace("lake.db.s", "lake.db.fresh")
            .format(props="'write.distribution-mode' = 'sideways'", rows=ROWS)
        )

    assert lake.catalog.load_table("db.s").metadata_location == before
    assert not lake.catalog.table_exists("db.fresh")
    assert lake.sql("SELECT * FROM lake.db.s") == [(1, "eu", 1.0)]
