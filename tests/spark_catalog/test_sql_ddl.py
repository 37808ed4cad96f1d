"""DDL through the Spark catalog ``lake``: namespaces, CREATE / DESCRIBE / ALTER / DROP TABLE.

Each statement runs in a real SparkSession against the registered catalog; the result is
checked through lakecat's Python API and through pyiceberg on the same catalog database.
"""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import AnalysisException

from lakecat.catalog import Catalog
from lakecat.metadata import DecimalType, IntegerType, LongType, StringType, TimestamptzType
from lakecat.spark_ext import attach_catalog

pytestmark = pytest.mark.spark


def events(ids: range, region: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "ts": pa.array(
                [dt.datetime(2024, 3, 1 + i % 3, tzinfo=dt.UTC) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "region": pa.array([region] * len(ids)),
        }
    )


def test_namespaces_are_listed_created_and_dropped_in_lakecat(lake) -> None:
    assert [r.namespace for r in lake.sql("SHOW NAMESPACES IN lake")] == ["db"]

    lake.sql("CREATE NAMESPACE lake.sales WITH DBPROPERTIES ('team' = 'ads')")
    lake.sql("CREATE TABLE lake.sales.orders (id bigint)")

    assert lake.catalog.namespace_exists("sales")
    assert lake.catalog.namespace_properties("sales")["team"] == "ads"
    py = lake.pyiceberg()
    try:
        assert ("sales",) in py.list_namespaces()
    finally:
        py.engine.dispose()
    assert sorted(r.namespace for r in lake.sql("SHOW NAMESPACES IN lake")) == ["db", "sales"]
    with pytest.raises(AnalysisException, match="SCHEMA_ALREADY_EXISTS"):
        lake.sql("CREATE NAMESPACE lake.sales")
    with pytest.raises(AnalysisException, match="SCHEMA_NOT_EMPTY"):
        lake.sql("DROP NAMESPACE lake.sales")
    assert lake.catalog.table_exists("sales.orders")

    lake.sql("DROP NAMESPACE lake.sales CASCADE")
    assert not lake.catalog.namespace_exists("sales")


def test_create_table_keeps_partition_transforms_types_and_properties(lake) -> None:
    lake.sql(
        "CREATE TABLE lake.db.events (id bigint NOT NULL, ts timestamp, region string, "
        "name string, amount decimal(10, 2)) "
        "PARTITIONED BY (days(ts), region, bucket(16, id), truncate(4, name)) "
        "TBLPROPERTIES ('write.delete.isolation-level' = 'serializable', 'team' = 'ads')"
    )

    table = lake.catalog.load_table("db.events")
    schema = table.schema()
    assert [(f.name, f.field_type, f.required) for f in schema.fields] == [
        ("id", LongType(), True),
        ("ts", TimestamptzType(), False),
        ("region", StringType(), False),
        ("name", StringType(), False),
        ("amount", DecimalType(10, 2), False),
    ]
    assert [(schema.column_name(f.source_id), f.transform) for f in table.spec().fields] == [
        ("ts", "day"),
        ("region", "identity"),
        ("id", "bucket[16]"),
        ("name", "truncate[4]"),
    ]
    assert table.properties["write.delete.isolation-level"] == "serializable"
    assert table.properties["team"] == "ads"
    assert "provider" not in table.properties and "location" not in table.properties

    py = lake.pyiceberg()
    try:
        iceberg = py.load_table("db.events")
        assert [str(f.transform) for f in iceberg.spec().fields] == [
            "day",
            "identity",
            "bucket[16]",
            "truncate[4]",
        ]
        assert [f.name for f in iceberg.schema().fields] == [f.name for f in schema.fields]
        assert iceberg.properties["team"] == "ads"
    finally:
        py.engine.dispose()

    described = {
        r.col_name: r.data_type for r in lake.sql("DESCRIBE TABLE EXTENDED lake.db.events")
    }
    assert [described[f"Part {i}"] for i in range(4)] == [
        "days(ts)",
        "identity(region)",
        "bucket(16, id)",
        "truncate(4, name)",
    ]
    assert described["Location"] == table.location
    assert described["Provider"] == "iceberg"  # as Iceberg's runtime shows its tables
    assert "team=ads" in described["Table Properties"]


def test_sql_partitions_by_a_dotted_column_and_a_dotted_struct_field(lake) -> None:
    """``a.b`` is one column and ``s.`x.y``` one struct field, from CREATE TABLE through
    DESCRIBE, INSERT, a filtered SELECT and DELETE (the Python data source write used to
    fail on ``"a.b"`` with a plain ``KeyError``, DESCRIBE printed ``identity(a.b)``)."""
    lake.sql(
        "CREATE TABLE lake.db.t (id bigint, `a.b` string, s struct<`x.y`: string>) "
        "PARTITIONED BY (`a.b`, bucket(2, s.`x.y`))"
    )
    table = lake.catalog.load_table("db.t")
    schema = table.schema()
    assert [schema.column_path(f.source_id) for f in table.spec().fields] == [
        ("a.b",),
        ("s", "x.y"),
    ]
    described = {r.col_name: r.data_type for r in lake.sql("DESCRIBE TABLE EXTENDED lake.db.t")}
    assert [described["Part 0"], described["Part 1"]] == ["identity(`a.b`)", "bucket(2, s.`x.y`)"]

    lake.sql(
        "INSERT INTO lake.db.t VALUES (1, 'eu', named_struct('x.y', 'p')), "
        "(2, 'us', named_struct('x.y', 'q')), (3, 'eu', named_struct('x.y', 'q'))"
    )
    assert {f.partition[0] for f in table.refresh().scan().plan_files()} == {"eu", "us"}
    eu = lake.sql("SELECT id FROM lake.db.t WHERE `a.b` = 'eu'")
    assert sorted(r.id for r in eu) == [1, 3]
    q = lake.sql("SELECT id FROM lake.db.t WHERE s.`x.y` = 'q'")
    assert sorted(r.id for r in q) == [2, 3]
    lake.sql("DELETE FROM lake.db.t WHERE `a.b` = 'eu'")
    assert lake.rows("db.t", "id", "a.b") == [(2, "us")]
    assert lake.iceberg_rows("db.t", "id", "a.b") == [(2, "us")]


def test_create_table_refuses_another_provider_and_creates_nothing(lake) -> None:
    with pytest.raises(Exception, match="stores Iceberg tables, not 'delta'"):
        lake.sql("CREATE TABLE lake.db.t (id bigint) USING delta")
    with pytest.raises(Exception, match="writes Parquet data files only, not 'orc'"):
        lake.sql("CREATE TABLE lake.db.t (id bigint) USING orc")  # Iceberg Java takes it
    with pytest.raises(Exception, match="stores Iceberg tables, not 'json'"):
        lake.spark.range(3).write.format("json").saveAsTable("lake.db.t")
    with pytest.raises(Exception, match=r"write.format.default='orc': use one of \('parquet',\)"):
        lake.sql("CREATE TABLE lake.db.t (id bigint) TBLPROPERTIES ('write.format.default'='orc')")
    assert not lake.catalog.table_exists("db.t")
    lake.sql("CREATE TABLE lake.db.u (id bigint)")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        lake.sql("CREATE TABLE lake.db.u (x int)")
    lake.sql("CREATE TABLE IF NOT EXISTS lake.db.u (x int)")  # tolerated, unchanged
    assert [f.name for f in lake.catalog.load_table("db.u").schema().fields] == ["id"]


def test_using_parquet_makes_an_iceberg_table_of_parquet_files_as_in_iceberg(lake) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint) USING parquet")
    lake.sql("INSERT INTO lake.db.t VALUES (1)")

    table = lake.catalog.load_table("db.t")
    assert table.properties["write.format.default"] == "parquet"  # Iceberg's runtime sets it
    assert lake.rows("db.t", "id") == lake.iceberg_rows("db.t", "id") == [(1,)]


def test_using_parquet_at_a_folder_of_files_is_refused_and_the_files_are_left(
    lake, tmp_path
) -> None:
    # Spark's own catalog would read the files as the table; an Iceberg table made there starts
    # empty, and removing its orphan files would delete them
    folder = tmp_path / "legacy"
    folder.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), folder / "part-0.parquet")
    with pytest.raises(Exception, match=r"the folder holds files .*add_files"):
        lake.sql(f"CREATE TABLE lake.db.t (id bigint) USING parquet LOCATION '{folder}'")
    with pytest.raises(Exception, match="the folder holds files"):
        lake.sql(f"CREATE TABLE lake.db.t USING parquet LOCATION '{folder}' AS SELECT 1L AS id")
    assert not lake.catalog.table_exists("db.t")
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet"]

    fresh = tmp_path / "fresh"
    lake.sql(f"CREATE TABLE lake.db.t (id bigint) USING parquet LOCATION '{fresh}'")
    lake.sql("INSERT INTO lake.db.t VALUES (1)")
    # replacing the table at its own location (its files are there) is the table's business
    lake.sql(
        f"CREATE OR REPLACE TABLE lake.db.t USING parquet LOCATION '{fresh}' AS SELECT 2L AS id"
    )
    assert lake.rows("db.t", "id") == [(2,)]


def test_save_as_table_creates_and_replaces_a_table_as_one_commit_each(lake) -> None:
    # DataFrameWriter.saveAsTable without format() hands Spark's default source, parquet
    frame = lake.spark.range(6).selectExpr("id", "CAST(id % 2 AS STRING) AS parity")
    frame.write.saveAsTable("lake.db.saved")
    created = lake.catalog.load_table("db.saved")
    frame.where("id < 2").write.mode("overwrite").partitionBy("parity").saveAsTable("lake.db.saved")
    frame.where("id = 5").write.mode("append").saveAsTable("lake.db.saved")

    assert lake.rows("db.saved", "id") == lake.iceberg_rows("db.saved", "id") == [(0,), (1,), (5,)]
    table = lake.catalog.load_table("db.saved")
    # replaced atomically: the same table, its history kept
    assert table.metadata.table_uuid == created.metadata.table_uuid
    assert [s.operation for s in table.snapshots()] == ["append", "overwrite", "append"]
    assert [f.name for f in table.spec().fields] == ["parity"]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        frame.write.saveAsTable("lake.db.saved")  # the default mode, errorifexists
    assert len(lake.catalog.load_table("db.saved").snapshots()) == 3


def test_column_comments_are_field_docs_that_describe_shows(lake) -> None:
    lake.sql(
        "CREATE TABLE lake.db.docs (id bigint NOT NULL COMMENT 'the key', "
        "s struct<a: int COMMENT 'inner', b: string>, "
        "l array<struct<x: int COMMENT 'in a list'>>, "
        "m map<string, struct<y: int COMMENT 'in a map'>>, plain string)"
    )
    lake.sql("ALTER TABLE lake.db.docs ALTER COLUMN plain COMMENT 'added later'")

    schema = lake.catalog.load_table("db.docs").schema()
    assert [(f.name, f.doc) for f in schema.fields] == [
        ("id", "the key"),
        ("s", None),
        ("l", None),
        ("m", None),
        ("plain", "added later"),
    ]
    assert schema.find_field("s.a").doc == "inner"
    assert schema.find_field("l.element.x").doc == "in a list"
    assert schema.find_field("m.value.y").doc == "in a map"
    py = lake.pyiceberg()
    try:
        iceberg = py.load_table("db.docs").schema()
        assert iceberg.find_field("id").doc == "the key"
        assert iceberg.find_field("s.a").doc == "inner"
    finally:
        py.engine.dispose()
    described = {r.col_name: r.comment for r in lake.sql("DESCRIBE TABLE lake.db.docs")}
    assert described["id"] == "the key" and described["plain"] == "added later"
    created = lake.sql("SHOW CREATE TABLE lake.db.docs")[0][0]
    assert "a: INT COMMENT 'inner'" in created and "x: INT COMMENT 'in a list'" in created
    # the comments are the table's, not the rows': writes and reads go on as before
    lake.sql(
        "INSERT INTO lake.db.docs VALUES (1, named_struct('a', 2, 'b', 'x'), "
        "array(named_struct('x', 3)), map('k', named_struct('y', 4)), 'p')"
    )
    lake.spark.sql(
        "SELECT 5L AS id, named_struct('a', 6, 'b', 'y') AS s, array(named_struct('x', 7)) AS l, "
        "map('k', named_struct('y', 8)) AS m, 'q' AS plain"
    ).writeTo("lake.db.docs").append()
    lake.sql("UPDATE lake.db.docs SET plain = 'r' WHERE id = 5")
    assert lake.rows("db.docs", "id", "plain") == [(1, "p"), (5, "r")]
    assert [
        tuple(r) for r in lake.sql("SELECT s.a, l[0].x, m['k'].y FROM lake.db.docs ORDER BY id")
    ] == [(2, 3, 4), (6, 7, 8)]


def test_create_table_like_copies_a_lakecat_table_as_iceberg_does(lake) -> None:
    lake.sql(
        "CREATE TABLE lake.db.src (id bigint NOT NULL COMMENT 'the key', ts timestamp, "
        "region string) PARTITIONED BY (bucket(4, id), days(ts)) "
        "TBLPROPERTIES ('format-version' = '3', 'team' = 'ads', 'write.data.path' = "
        "'/nowhere/src-data') COMMENT 'events'"
    )
    lake.sql(
        "ALTER TABLE lake.db.src WRITE ORDERED BY region, days(ts) DESC, bucket(4, id), "
        "truncate(2, region) DESC NULLS FIRST"
    )
    lake.sql("ALTER TABLE lake.db.src SET IDENTIFIER FIELDS id")
    lake.sql("ALTER TABLE lake.db.src UNSET TBLPROPERTIES ('write.data.path')")
    lake.sql("INSERT INTO lake.db.src VALUES (1, TIMESTAMP '2024-03-01 10:00:00', 'eu')")
    lake.sql("ALTER TABLE lake.db.src SET TBLPROPERTIES ('write.data.path' = '/nowhere/src')")
    source = lake.catalog.load_table("db.src")

    lake.sql("CREATE TABLE lake.db.copy LIKE lake.db.src TBLPROPERTIES ('team' = 'web')")

    copy = lake.catalog.load_table("db.copy")
    assert copy.metadata.format_version == 3
    assert copy.schema().fields == source.schema().fields
    assert copy.schema().identifier_field_ids == source.schema().identifier_field_ids
    assert copy.spec().fields == source.spec().fields
    assert copy.sort_order().fields == source.sort_order().fields
    assert copy.properties["team"] == "web" and copy.properties["comment"] == "events"
    assert copy.properties["write.distribution-mode"] == "range"  # WRITE ORDERED BY's
    assert "write.data.path" not in copy.properties  # the copy's files are its own
    assert copy.current_snapshot() is None and copy.location.endswith("/db/copy")
    assert lake.catalog.load_table("db.src").metadata_location == source.metadata_location
    lake.sql("INSERT INTO lake.db.copy VALUES (2, TIMESTAMP '2024-03-02 10:00:00', 'us')")
    assert lake.rows("db.copy", "id", "region") == lake.iceberg_rows("db.copy", "id", "region")
    assert lake.rows("db.copy", "id", "region") == [(2, "us")]
    described = {r.col_name: r.comment for r in lake.sql("DESCRIBE TABLE lake.db.copy")}
    assert described["id"] == "the key"
    shown = {r.key: r.value for r in lake.sql("SHOW TBLPROPERTIES lake.db.copy")}
    assert shown["format-version"] == "3"  # as Iceberg's runtime shows a table
    assert shown["sort-order"] == (  # Iceberg's form, truncate's arguments in its order
        "region ASC NULLS FIRST, days(ts) DESC NULLS LAST, bucket(4, id) ASC NULLS FIRST, "
        "truncate(region, 2) DESC NULLS FIRST"
    )
    assert shown["identifier-fields"] == "[id]"
    # SHOW CREATE TABLE's statement makes the same table again, without storing what it shows
    statement = lake.sql("SHOW CREATE TABLE lake.db.copy")[0][0]
    assert "\nUSING iceberg\n" in statement  # Iceberg's runtime runs it too
    lake.sql(statement.replace("lake.db.copy", "lake.db.again").replace("LOCATION", "-- "))
    again = lake.catalog.load_table("db.again")
    assert again.metadata.format_version == 3
    assert [(f.name, f.field_type, f.doc) for f in again.schema().fields] == [
        (f.name, f.field_type, f.doc) for f in copy.schema().fields
    ]
    assert again.spec().fields == copy.spec().fields
    assert again.properties == {**copy.properties, "owner": again.properties["owner"]}

    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        lake.sql("CREATE TABLE lake.db.copy LIKE lake.db.src")
    lake.sql("CREATE TABLE IF NOT EXISTS lake.db.copy LIKE lake.db.src")
    assert len(lake.catalog.load_table("db.copy").snapshots()) == 1

    lake.sql(
        "CREATE TABLE lake.db.v2 LIKE lake.db.src TBLPROPERTIES ('format-version' = '2') "
        f"LOCATION '{copy.location}-v2'"
    )
    v2 = lake.catalog.load_table("db.v2")
    assert v2.metadata.format_version == 2 and v2.location.endswith("/db/copy-v2")


def test_create_table_like_copies_a_table_of_another_lakecat_catalog(lake, tmp_path) -> None:
    lake.sql(
        "CREATE TABLE lake.db.src (id bigint COMMENT 'the key', region string) "
        "PARTITIONED BY (region) TBLPROPERTIES ('team' = 'ads')"
    )
    lake.sql("INSERT INTO lake.db.src VALUES (1, 'eu')")
    with Catalog.embedded(tmp_path / "other") as other:
        other.create_namespace("db")
        attach_catalog(lake.spark, "other_lake", catalog=other)

        lake.sql("CREATE TABLE other_lake.db.copy LIKE lake.db.src")

        copy = other.load_table("db.copy")
        source = lake.catalog.load_table("db.src")
        assert copy.schema().fields == source.schema().fields
        assert copy.spec().fields == source.spec().fields
        assert copy.properties["team"] == "ads"
        assert copy.location.startswith(other.default_location(("db",), "copy"))
        assert copy.current_snapshot() is None
        assert not lake.catalog.table_exists("db.copy")


def test_create_table_like_a_table_that_is_not_lakecat_data_takes_its_columns(lake) -> None:
    """A source whose Iceberg metadata lakecat does not copy (here a metadata table) gives
    the copy the columns and partitioning Spark reads off it."""
    lake.sql("CREATE TABLE lake.db.src (id bigint) PARTITIONED BY (id)")
    lake.sql("INSERT INTO lake.db.src VALUES (1)")

    lake.sql("CREATE TABLE lake.db.snaps LIKE lake.db.src.snapshots")

    copy = lake.catalog.load_table("db.snaps")
    assert [f.name for f in copy.schema().fields] == [
        "committed_at",
        "snapshot_id",
        "parent_id",
        "operation",
        "manifest_list",
        "summary",
    ]
    assert copy.current_snapshot() is None
    with pytest.raises(AnalysisException, match="lakecat UnsupportedByCatalog"):
        lake.sql("CREATE TABLE lake.db.orc LIKE lake.db.src USING orc")
    assert not lake.catalog.table_exists("db.orc")


def test_alter_table_adds_renames_columns_and_sets_properties(lake) -> None:
    table = lake.catalog.create_table("db.events", events(range(1), "eu").schema)
    table.append(events(range(3), "eu"))
    ids_before = {f.name: f.field_id for f in table.schema().fields}

    lake.sql("ALTER TABLE lake.db.events ADD COLUMN note string COMMENT 'free text'")
    lake.sql("ALTER TABLE lake.db.events ADD COLUMNS (score int FIRST)")
    lake.sql("ALTER TABLE lake.db.events RENAME COLUMN region TO area")
    lake.sql(
        "ALTER TABLE lake.db.events SET TBLPROPERTIES ("
        "'write.delete.isolation-level' = 'serializable', 'team' = 'ads')"
    )
    lake.sql("ALTER TABLE lake.db.events UNSET TBLPROPERTIES ('team')")

    table.refresh()
    schema = table.schema()
    assert [f.name for f in schema.fields] == ["score", "id", "ts", "area", "note"]
    assert schema.find_field("area").field_id == ids_before["region"]  # renamed, same field
    assert schema.find_field("score").field_type == IntegerType()
    assert schema.find_field("note").doc == "free text"
    assert table.properties["write.delete.isolation-level"] == "serializable"
    assert "team" not in table.properties
    py = lake.pyiceberg()
    try:
        iceberg = py.load_table("db.events")
        assert [f.name for f in iceberg.schema().fields] == ["score", "id", "ts", "area", "note"]
        assert iceberg.properties["write.delete.isolation-level"] == "serializable"
    finally:
        py.engine.dispose()
    lake.sql("ALTER TABLE lake.db.events ALTER COLUMN score TYPE bigint")
    lake.sql("ALTER TABLE lake.db.events DROP COLUMN ts")
    assert table.refresh().schema().find_field("score").field_type == LongType()
    assert [f.name for f in table.schema().fields] == ["score", "id", "area", "note"]
    rows = lake.sql("SELECT id, area, note, score FROM lake.db.events ORDER BY id")
    assert [tuple(r) for r in rows] == [
        (0, "eu", None, None),
        (1, "eu", None, None),
        (2, "eu", None, None),
    ]


def test_alter_table_with_a_bad_property_changes_nothing(lake) -> None:
    table = lake.catalog.create_table("db.events", events(range(1), "eu").schema)
    before = table.metadata_location

    with pytest.raises(Exception, match=r"isolation-level=.sometimes.: use one of"):
        lake.sql(
            "ALTER TABLE lake.db.events SET TBLPROPERTIES ("
            "'team' = 'ads', 'write.delete.isolation-level' = 'sometimes')"
        )
    with pytest.raises(Exception, match="already exists"):
        lake.sql("ALTER TABLE lake.db.events ADD COLUMNS (note string, id bigint)")

    table.refresh()
    assert table.metadata_location == before
    assert "team" not in table.properties
    assert [f.name for f in table.schema().fields] == ["id", "ts", "region"]


def test_alter_table_changes_iceberg_tables_lack_are_refused_in_one_line(lake) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint, part string)")
    before = lake.catalog.load_table("db.t").metadata_location
    with pytest.raises(Exception) as info:
        lake.sql("ALTER TABLE lake.db.t CLUSTER BY (id)")
    first = str(info.value).strip().splitlines()[0]
    assert "lakecat UnsupportedByCatalog: ALTER TABLE change ClusterBy is not supported" in first
    assert "WRITE ORDERED BY" in first
    assert lake.catalog.load_table("db.t").metadata_location == before


def test_set_location_moves_where_new_files_go_and_keeps_the_old_ones(lake, tmp_path) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint, part string) PARTITIONED BY (part)")
    lake.sql("INSERT INTO lake.db.t VALUES (1, 'a'), (2, 'b')")
    moved = tmp_path / "moved table"

    lake.sql(f"ALTER TABLE lake.db.t SET LOCATION '{moved}'")
    lake.sql("INSERT INTO lake.db.t VALUES (3, 'a')")

    table = lake.catalog.load_table("db.t")
    uri = f"file://{moved}"  # lakecat's locations keep a path's characters as they are
    assert table.location == uri
    assert "location" not in table.properties  # Spark's reserved key is not a property
    assert table.metadata_location.startswith(uri + "/metadata/")
    newest = [
        f for f in table.scan().plan_files() if f.record_count == 1 and "moved" in f.file_path
    ]
    assert len(newest) == 1  # the new file under the new location, the old ones where they were
    assert lake.rows("db.t") == lake.iceberg_rows("db.t") == [(1, "a"), (2, "b"), (3, "a")]
    described = dict((r[0], r[1]) for r in lake.sql("DESCRIBE TABLE EXTENDED lake.db.t") if r[0])
    assert described["Location"] == uri
    with pytest.raises(Exception, match="separate ALTER TABLE"):
        table_change = [
            {"change": "SetProperty", "key": "location", "value": str(moved)},
            {"change": "SetProperty", "key": "team", "value": "ads"},
        ]
        from lakecat.spark_ext.sql.alter import alter_table

        alter_table(table, table_change)


def test_drop_table_keeps_files_and_purge_deletes_them(lake) -> None:
    kept = lake.catalog.create_table("db.kept", events(range(1), "eu").schema)
    kept.append(events(range(5), "eu"))
    purged = lake.catalog.create_table("db.purged", events(range(1), "eu").schema)
    purged.append(events(range(5), "eu"))
    kept_files = [f.file_path for f in kept.scan().plan_files()]
    purged_root = purged.location.removeprefix("file://")

    lake.sql("DROP TABLE lake.db.kept")
    lake.sql("DROP TABLE lake.db.purged PURGE")

    assert not lake.catalog.table_exists("db.kept")
    assert not lake.catalog.table_exists("db.purged")
    assert all(os.path.exists(p.removeprefix("file://")) for p in kept_files)
    assert not any(files for _, _, files in os.walk(purged_root))
    py = lake.pyiceberg()
    try:
        assert not py.table_exists("db.kept") and not py.table_exists("db.purged")
    finally:
        py.engine.dispose()
    assert lake.sql("SHOW TABLES IN lake.db") == []
    lake.sql("DROP TABLE IF EXISTS lake.db.kept")  # tolerated
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        lake.sql("DROP TABLE lake.db.kept")


def test_rename_table_moves_it_in_the_catalog(lake) -> None:
    table = lake.catalog.create_table("db.old", events(range(1), "eu").schema)
    table.append(events(range(2), "eu"))

    lake.sql("ALTER TABLE lake.db.old RENAME TO db.new")

    assert not lake.catalog.table_exists("db.old")
    assert lake.rows("db.new", "id") == [(0,), (1,)]
    # the new name with this catalog's name in front, as Iceberg's docs write it
    lake.sql("ALTER TABLE lake.db.new RENAME TO lake.db.newer")
    assert lake.rows("db.newer", "id") == [(0,), (1,)]
    # a namespace that exists under that name is taken as it is
    lake.catalog.create_namespace(("lake", "db"))
    lake.sql("ALTER TABLE lake.db.newer RENAME TO lake.db.newest")
    assert lake.catalog.table_exists(("lake", "db", "newest"))
