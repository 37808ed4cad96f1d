"""Reads through the Spark catalog ``lake``: time travel in SQL, metadata tables, and the two
Spark facts the catalog plugin relies on."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pyarrow as pa
import pytest

from lakecat.metadata import StringType
from lakecat.spark_ext.sql.plugin import data_format

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def batch(ids: range, region: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "region": [region] * len(ids)})


@pytest.fixture
def history(lake):
    """db.t with three snapshots (ids 0-1, then 2-3, then eu deleted), a column added after
    the first, and the tag ``first``; returns (table, [snapshot ids])."""
    table = lake.catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    table.append(batch(range(0, 2), "eu"))
    table.create_tag("first")
    with table.update_schema() as update:
        update.add_column("note", StringType())
    time.sleep(0.01)  # distinct commit milliseconds for TIMESTAMP AS OF
    table.append(batch(range(2, 4), "us"))
    time.sleep(0.01)
    table.delete("region = 'eu'")
    return table, [s.snapshot_id for s in table.snapshots()]


def ids(rows) -> list[int]:
    return sorted(r.id for r in rows)


def test_version_as_of_reads_a_snapshot_or_a_tag_with_its_schema(lake, history) -> None:
    _table, (first, second, third) = history

    by_id = lake.sql(f"SELECT * FROM lake.db.t VERSION AS OF {first}")
    by_tag = lake.sql("SELECT * FROM lake.db.t VERSION AS OF 'first'")
    middle = lake.sql(f"SELECT * FROM lake.db.t VERSION AS OF {second}")
    current = lake.sql("SELECT * FROM lake.db.t")

    assert ids(by_id) == ids(by_tag) == [0, 1]
    assert list(by_id[0].asDict()) == ["id", "region"]  # the schema of the first snapshot
    assert ids(middle) == [0, 1, 2, 3] and "note" in middle[0].asDict()
    assert ids(current) == [2, 3]
    for snapshot_id, expected in ((first, [0, 1]), (second, [0, 1, 2, 3]), (third, [2, 3])):
        assert [i for (i,) in lake.rows("db.t", "id", snapshot_id=snapshot_id)] == expected
        assert [i for (i,) in lake.iceberg_rows("db.t", "id", snapshot_id=snapshot_id)] == expected
    with pytest.raises(Exception, match="no snapshot, tag or branch 'nope'"):
        lake.sql("SELECT * FROM lake.db.t VERSION AS OF 'nope'")


def test_timestamp_as_of_reads_the_snapshot_current_at_that_time(lake, history) -> None:
    table, (_first, second, _) = history
    committed = {s.snapshot_id: s.timestamp_ms for s in table.snapshots()}

    def at(ms: int) -> str:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")

    assert ids(lake.sql(f"SELECT * FROM lake.db.t TIMESTAMP AS OF '{at(committed[second])}'")) == [
        0,
        1,
        2,
        3,
    ]
    assert ids(
        lake.sql(f"SELECT * FROM lake.db.t TIMESTAMP AS OF '{at(committed[second] - 1)}'")
    ) == [0, 1]
    assert [i for (i,) in lake.rows("db.t", "id", as_of=committed[second] - 1)] == [0, 1]
    with pytest.raises(Exception, match="NoSuchSnapshot"):
        lake.sql("SELECT * FROM lake.db.t TIMESTAMP AS OF '2001-01-01 00:00:00'")


def test_metadata_tables_are_read_only(lake, history) -> None:
    table, _ = history
    before = table.refresh().metadata_location

    with pytest.raises(Exception, match="does not support append") as raised:
        lake.sql("INSERT INTO lake.db.t.refs VALUES ('x', 'tag', 1, null, null, null)")

    assert "t.refs" in str(raised.value)
    assert table.refresh().metadata_location == before


def test_metadata_tables_match_lakecat_and_pyiceberg(lake, history) -> None:
    table, snapshot_ids = history
    table.refresh()
    py = lake.pyiceberg()
    try:
        iceberg = py.load_table("db.t")
        inspect_snapshots = iceberg.inspect.snapshots().to_pylist()
        inspect_files = iceberg.inspect.files().to_pylist()
        inspect_refs = iceberg.inspect.refs().to_pylist()
    finally:
        py.engine.dispose()

    snapshots = lake.sql("SELECT * FROM lake.db.t.snapshots ORDER BY committed_at")
    assert [r.snapshot_id for r in snapshots] == snapshot_ids
    assert [r.operation for r in snapshots] == ["append", "append", "delete"]
    assert sorted((r.snapshot_id, r.parent_id, r.manifest_list) for r in snapshots) == sorted(
        (s["snapshot_id"], s["parent_id"], s["manifest_list"]) for s in inspect_snapshots
    )
    assert snapshots[1].summary["added-records"] == "2"

    history_rows = lake.sql("SELECT * FROM lake.db.t.history")
    assert [(r.snapshot_id, r.is_current_ancestor) for r in history_rows] == [
        (snapshot_id, ancestor) for _, snapshot_id, ancestor in table.history()
    ]

    files = lake.sql("SELECT file_path, record_count, partition FROM lake.db.t.files")
    assert sorted(r.file_path for r in files) == sorted(f["file_path"] for f in inspect_files)
    assert sorted(r.file_path for r in files) == sorted(
        f.file_path for f in table.scan().plan_files()
    )
    assert {r.partition["region"] for r in files} == {"us"}

    refs = lake.sql("SELECT name, type, snapshot_id FROM lake.db.t.refs")
    assert sorted(tuple(r) for r in refs) == sorted(
        (r["name"], r["type"], r["snapshot_id"]) for r in inspect_refs
    )
    assert ("first", "TAG", snapshot_ids[0]) in [tuple(r) for r in refs]  # as Iceberg names it


def test_spark_hands_out_the_registered_python_data_source_as_a_table_provider(lake) -> None:
    """Fact 1: ``DataSource.lookupDataSourceV2(name, conf)`` finds a Python data source
    registered in the session and returns it as a ``TableProvider`` (``PythonDataSourceV2``),
    which the catalog plugin wraps."""
    jvm = lake.spark.sparkContext._jvm
    conf = lake.spark._jsparkSession.sessionState().conf()
    found = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSourceV2(
        data_format("lake"), conf
    )

    assert found.isDefined()
    provider = found.get()
    assert provider.getClass().getName().endswith(".python.PythonDataSourceV2")
    table_provider = jvm.java.lang.Class.forName(
        "org.apache.spark.sql.connector.catalog.TableProvider"
    )
    assert table_provider.isInstance(provider)
    with pytest.raises(Exception, match="DATA_SOURCE_NOT_FOUND"):  # not registered: no None
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSourceV2(
            "lakecat_catalog_not_registered", conf
        )


def test_python_writers_see_only_the_write_commands_options(lake, monkeypatch) -> None:
    """Fact 2: a catalog table's options reach the Python reader (the plugin merges the
    table's read options with the query's own, ``WITH (...)`` included), but a Python writer
    gets only the write command's options: without the table identity the plugin adds to the
    write, the writer cannot tell which table it writes."""
    table = lake.catalog.create_table("db.t", SCHEMA)
    table.append(batch(range(2), "eu"))
    first = table.current_snapshot().snapshot_id
    table.append(batch(range(2, 3), "eu"))

    travelled = lake.sql(f"SELECT id FROM lake.db.t WITH ('snapshot-id' = '{first}')")
    assert ids(travelled) == [0, 1]

    describe = lake.bridge._descriptor

    def without_write_identity(*args, **kwargs):
        descriptor = describe(*args, **kwargs)
        if descriptor["write_options"] is not None:
            descriptor["write_options"] = {}
        return descriptor

    monkeypatch.setattr(lake.bridge, "_descriptor", without_write_identity)
    assert ids(lake.sql("SELECT id FROM lake.db.t")) == [0, 1, 2]  # reads carry their options
    with pytest.raises(Exception, match="name the table"):
        lake.sql("INSERT INTO lake.db.t VALUES (7, 'eu')")
    assert [i for (i,) in lake.rows("db.t", "id")] == [0, 1, 2]


# ---- pruning ---------------------------------------------------------------------------------
@pytest.fixture
def regions(lake):
    """db.r partitioned by region: one file each for eu (ids 0-9), us (10-19), ap (20-29)."""
    table = lake.catalog.create_table("db.r", SCHEMA, partition_by=["region"])
    for start, region in ((0, "eu"), (10, "us"), (20, "ap")):
        table.append(batch(range(start, start + 10), region))
    return table


def test_a_partition_filter_prunes_files_and_explain_shows_it(lake, regions) -> None:
    line = lake.scan_line("SELECT * FROM lake.db.r WHERE region = 'us'")

    assert "region = 'us'" in line  # the filter Spark pushed
    assert "lakecat-filter=region IS NOT NULL AND region = 'us'" in line
    assert "files=1]" in line
    assert "files=3]" in lake.scan_line("SELECT * FROM lake.db.r")
    # a filter lakecat cannot read exactly prunes nothing, and Spark still applies it
    assert "files=3]" in lake.scan_line("SELECT * FROM lake.db.r WHERE id % 2 = 0")
    assert ids(lake.sql("SELECT id FROM lake.db.r WHERE region = 'us' AND id % 5 = 0")) == [10, 15]


def row_filters(lake, query: str) -> list[str]:
    """The filters Spark's plan of ``query`` evaluates on rows (its Filter nodes)."""
    plan = lake.spark.sql(query)._jdf.queryExecution().executedPlan().toString()
    return [line.strip(" +-:*") for line in plan.splitlines() if "Filter " in line]


def test_a_filter_the_partitions_decide_is_not_evaluated_again_on_the_rows(lake, regions) -> None:
    lake.sql("INSERT INTO lake.db.r VALUES (30, NULL)")
    query = "SELECT id FROM lake.db.r WHERE {}"

    assert row_filters(lake, query.format("region = 'us'")) == []
    assert ids(lake.sql(query.format("region = 'us'"))) == list(range(10, 20))
    # on null regions '<>' is not true, in Spark and in lakecat's pruning alike
    assert row_filters(lake, query.format("region <> 'us'")) == []
    assert ids(lake.sql(query.format("region <> 'us'"))) == [*range(10), *range(20, 30)]
    assert ids(lake.sql(query.format("region IS NULL"))) == [30]
    assert ids(lake.sql(query.format("region IN ('eu', 'ap') OR region IS NULL"))) == [
        *range(10),
        *range(20, 31),
    ]
    # a filter on another column is still evaluated, without the decided one
    both = query.format("region = 'us' AND id % 5 = 0")
    (kept,) = row_filters(lake, both)
    assert "id" in kept and "us" not in kept
    assert ids(lake.sql(both)) == [10, 15]


def test_a_time_range_on_partition_boundaries_is_not_evaluated_again_on_the_rows(lake) -> None:
    lake.sql("CREATE TABLE lake.db.events (id BIGINT, at TIMESTAMP) PARTITIONED BY (hours(at))")
    lake.sql(
        "INSERT INTO lake.db.events SELECT id, TIMESTAMP '2024-01-01 00:00:00Z' + "
        "make_dt_interval(0, 0, id * 20) FROM range(12)"  # every 20 minutes for 4 hours
    )
    query = "SELECT id FROM lake.db.events WHERE at >= TIMESTAMP '{}' AND at < TIMESTAMP '{}'"
    whole_hours = query.format("2024-01-01 01:00:00Z", "2024-01-01 03:00:00Z")
    part_of_an_hour = query.format("2024-01-01 01:00:00Z", "2024-01-01 02:30:00Z")

    assert row_filters(lake, whole_hours) == []
    assert ids(lake.sql(whole_hours)) == [3, 4, 5, 6, 7, 8]
    (kept,) = row_filters(lake, part_of_an_hour)  # its last hour holds rows after 02:30
    assert "at" in kept
    assert ids(lake.sql(part_of_an_hour)) == [3, 4, 5, 6, 7]


def test_a_partition_filter_is_evaluated_on_the_rows_of_files_an_earlier_spec_wrote(
    lake,
) -> None:
    table = lake.catalog.create_table("db.late", SCHEMA)
    table.append(pa.concat_tables([batch(range(0, 3), "eu"), batch(range(3, 6), "us")]))
    lake.sql("ALTER TABLE lake.db.late ADD PARTITION FIELD region")
    lake.sql("INSERT INTO lake.db.late VALUES (6, 'us'), (7, 'eu')")
    query = "SELECT id FROM lake.db.late WHERE region = 'us'"

    assert ids(lake.sql(query)) == [3, 4, 5, 6]
    assert row_filters(lake, query) != []  # the unpartitioned file holds both regions


def test_a_row_level_operation_evaluates_a_partition_filter_on_the_rows(lake, regions) -> None:
    lake.sql("UPDATE lake.db.r SET id = id + 100 WHERE region = 'us'")
    lake.sql("DELETE FROM lake.db.r WHERE region = 'eu' AND id < 5")

    expected = [*range(5, 10), *range(20, 30), *range(110, 120)]
    assert ids(lake.sql("SELECT id FROM lake.db.r")) == expected


def test_a_reused_dataframe_and_a_self_join_see_every_row(lake, regions) -> None:
    df = lake.spark.table("lake.db.r")

    assert df.where("region = 'eu'").count() == 10
    assert df.count() == 30  # not the filtered plan of the query before
    assert df.where("region = 'us'").count() == 10
    joined = df.where("region = 'eu'").alias("a").join(df.alias("b"), "id")
    assert joined.count() == 10
    pairs = df.where("region = 'eu'").alias("a").crossJoin(df.alias("b"))
    assert pairs.count() == 10 * 30


def plan_stats(lake, query: str) -> tuple[int, int | None]:
    """The size in bytes and the rows Spark's optimizer estimates for the read of ``query``."""
    stats = lake.read_statistics(query)
    rows = stats.rowCount()
    return int(str(stats.sizeInBytes())), int(str(rows.get())) if rows.isDefined() else None


def test_a_read_tells_spark_its_planned_rows_and_their_size(lake, regions) -> None:
    """As Iceberg's runtime estimates them: the rows of the files the filter plans (their
    manifests' counts) times the default size of the columns read (a long 8 bytes, a string
    20), so that Spark's optimizer knows a small table from a large one."""
    assert plan_stats(lake, "SELECT * FROM lake.db.r") == (30 * 28, 30)
    assert plan_stats(lake, "SELECT id FROM lake.db.r WHERE region = 'us'") == (10 * 8, 10)
    lake.sql("CREATE TABLE lake.db.empty (id bigint)")
    assert plan_stats(lake, "SELECT * FROM lake.db.empty") == (0, 0)


def test_a_join_broadcasts_a_small_table(lake, regions) -> None:
    """Without an estimate Spark takes a table as larger than any broadcast (its
    ``defaultSizeInBytes``) and shuffles both sides of every join."""
    big = lake.spark.range(100_000).selectExpr("id % 30 AS id", "id AS n")
    big.createOrReplaceTempView("big")
    query = "SELECT b.n, r.region FROM big b JOIN lake.db.r r ON b.id = r.id"

    plan = lake.spark.sql(query)._jdf.queryExecution().executedPlan().toString()

    assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan
    us = sum(1 for i in range(100_000) if 10 <= i % 30 < 20)  # ids 10-19
    assert lake.spark.sql(query).where("region = 'us'").count() == us


def test_metadata_columns_name_the_file_and_position_of_each_row(lake, regions) -> None:
    files = {f.partition[0]: f.file_path for f in regions.scan().plan_files()}

    got = lake.sql("SELECT id, _file, _pos FROM lake.db.r WHERE region = 'us' ORDER BY id")

    assert [(r.id, r._file, r._pos) for r in got] == [(10 + i, files["us"], i) for i in range(10)]
    assert [r._pos for r in lake.sql("SELECT _pos FROM lake.db.r WHERE id = 23")] == [3]


def test_spec_id_and_partition_are_each_row_s_file_s_over_every_spec(lake, regions) -> None:
    lake.sql("ALTER TABLE lake.db.r ADD PARTITION FIELD bucket(4, id)")  # spec 1
    lake.sql("INSERT INTO lake.db.r VALUES (30, 'eu')")
    bucket = lake.sql("SELECT lake.system.bucket(4, 30L)")[0][0]

    got = lake.sql("SELECT id, _spec_id, _partition FROM lake.db.r WHERE id IN (0, 15, 30)")

    assert sorted((r.id, r._spec_id, r._partition.asDict()) for r in got) == [
        (0, 0, {"region": "eu", "id_bucket_4": None}),  # spec 0 has no bucket field
        (15, 0, {"region": "us", "id_bucket_4": None}),
        (30, 1, {"region": "eu", "id_bucket_4": bucket}),
    ]
    counts = lake.sql(
        "SELECT _spec_id, _partition.region, count(*) FROM lake.db.r GROUP BY 1, 2 ORDER BY 1, 2"
    )
    assert [tuple(r) for r in counts] == [(0, "ap", 10), (0, "eu", 10), (0, "us", 10), (1, "eu", 1)]
    # the data source reads them (Spark's Parquet reader does not know the files' partitions)
    assert "reader=lakecat" in lake.scan_line("SELECT _partition FROM lake.db.r")


def test_an_unpartitioned_table_has_a_spec_id_and_no_partition_column(lake) -> None:
    lake.catalog.create_table("db.flat", SCHEMA).append(batch(range(3), "eu"))

    assert [tuple(r) for r in lake.sql("SELECT id, _spec_id FROM lake.db.flat ORDER BY id")] == [
        (0, 0),
        (1, 0),
        (2, 0),
    ]
    with pytest.raises(Exception, match="_partition"):
        lake.sql("SELECT _partition FROM lake.db.flat")


def test_a_read_of_some_fields_of_a_struct_through_the_data_source_reads_them(lake) -> None:
    # Spark prunes nested columns: asks the data source (deletes to apply) for some fields of a
    # struct, of the structs in a list and in a map's values, in its own order; renamed and
    # widened fields too
    lake.sql(
        "CREATE TABLE lake.db.nested (id bigint, s struct<a: int, b: string, c: struct<x: int, "
        "y: int>>, l array<struct<p: int, q: string>>, m map<string, struct<u: int, v: int>>) "
        "TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')"
    )
    lake.sql(
        "INSERT INTO lake.db.nested VALUES "
        "(1, named_struct('a', 1, 'b', 'x', 'c', named_struct('x', 1, 'y', 2)), "
        "array(named_struct('p', 1, 'q', 'a')), map('k', named_struct('u', 1, 'v', 2))), "
        "(2, named_struct('a', 2, 'b', 'y', 'c', named_struct('x', 3, 'y', 4)), "
        "array(named_struct('p', 2, 'q', 'b'), named_struct('p', 3, 'q', 'c')), "
        "map('k', named_struct('u', 5, 'v', 6)))"
    )
    lake.sql("DELETE FROM lake.db.nested WHERE id = 1")

    def query(columns: str, where: str = "true") -> list[tuple[Any, ...]]:
        rows = lake.sql(f"SELECT {columns} FROM lake.db.nested WHERE {where} ORDER BY id")
        return [tuple(r) for r in rows]

    assert query("id, s.a") == [(2, 2)]
    assert query("id, s.c.y, s.b") == [(2, 4, "y")]
    assert query("id, l.q") == [(2, ["b", "c"])]
    assert query("id, m['k'].v") == [(2, 6)]
    assert query("id, s.c.x", "s.a = 2") == [(2, 3)]
    assert query("id, s.c.y, _file IS NOT NULL") == [(2, 4, True)]
    lake.sql("ALTER TABLE lake.db.nested RENAME COLUMN s.b TO bb")
    lake.sql("ALTER TABLE lake.db.nested ALTER COLUMN s.a TYPE bigint")
    assert query("id, s.bb, s.a", "s.a > 1") == [(2, "y", 2)]


def test_a_struct_is_projected_in_part_in_its_own_order_only() -> None:
    from pyspark.sql import types as st

    from lakecat.metadata.errors import SchemaMismatch
    from lakecat.metadata.schema import IntegerType, NestedField, Schema, StringType, StructType
    from lakecat.spark_ext.types import project

    s = StructType(
        (
            NestedField(2, "a", IntegerType()),
            NestedField(3, "b", StringType()),
            NestedField(4, "c", IntegerType()),
        )
    )
    schema = Schema((NestedField(1, "s", s),))

    def asking(*names: str) -> st.StructType:
        types = {"a": st.IntegerType(), "b": st.StringType(), "c": st.IntegerType()}
        inner = st.StructType([st.StructField(n, types[n]) for n in names])
        return st.StructType([st.StructField("s", inner)])

    projected, _ = project(schema, asking("a", "c"))
    [column] = projected.fields
    assert isinstance(column.field_type, StructType)
    assert [f.field_id for f in column.field_type.fields] == [2, 4]
    # batches map a struct's fields by position: another order is refused, not misread
    with pytest.raises(SchemaMismatch):
        project(schema, asking("c", "a"))
