"""Reading and writing lakecat tables through the Spark data source."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.metadata.errors import LakecatError, ValidationError

pytestmark = pytest.mark.spark

UTC = dt.UTC


def events(ids: range | list[int], region: str, day: int = 1) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([region] * len(ids), pa.string()),
            "ts": pa.array(
                [dt.datetime(2024, 1, day, tzinfo=UTC) + dt.timedelta(minutes=i) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )


EVENTS = events([], "eu").schema


def ids_of(rows: Any) -> list[int]:
    return sorted(r.id for r in rows)


def all_types() -> pa.Table:
    """One column of every type Spark can hold, nulls included, plus nested types."""
    point = pa.struct([pa.field("x", pa.int32()), pa.field("label", pa.string())])
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "flag": pa.array([True, None, False]),
            "small": pa.array([1, -2, None], pa.int32()),
            "real": pa.array([1.5, None, float("inf")], pa.float32()),
            "dbl": pa.array([2.25, -0.0, None], pa.float64()),
            "price": pa.array([Decimal("12.34"), None, Decimal("-0.01")], pa.decimal128(10, 2)),
            "big": pa.array(
                [Decimal("1" * 28 + ".1234567890"), None, Decimal(0)], pa.decimal128(38, 10)
            ),
            "day": pa.array([dt.date(2024, 2, 29), dt.date(1969, 12, 31), None], pa.date32()),
            "local": pa.array(
                [dt.datetime(2024, 1, 1, 12, 30, 0, 123456), None, dt.datetime(1900, 1, 1)],
                pa.timestamp("us"),
            ),
            "instant": pa.array(
                [dt.datetime(2024, 6, 1, 8, tzinfo=UTC), None, dt.datetime(1970, 1, 1, tzinfo=UTC)],
                pa.timestamp("us", tz="UTC"),
            ),
            "name": pa.array(["a", "ü€😀", None]),
            "key": pa.ExtensionArray.from_storage(
                pa.uuid(),
                pa.array(
                    [uuid.UUID(int=1).bytes, None, uuid.UUID(int=2**127).bytes], pa.binary(16)
                ),
            ),
            "code": pa.array([b"abcd", None, b"\x00\x01\x02\x03"], pa.binary(4)),
            "blob": pa.array([b"", b"\xff" * 100, None], pa.binary()),
            "point": pa.array([{"x": 1, "label": "p"}, None, {"x": None, "label": None}], point),
            "tags": pa.array([[1, 2], [], None], pa.list_(pa.int64())),
            "attrs": pa.array(
                [[("a", 1)], None, [("b", None), ("c", 3)]], pa.map_(pa.string(), pa.int32())
            ),
        }
    )


def test_rows_appended_from_python_read_back_through_spark(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.events", EVENTS)
    table.append(events(range(10), "eu"))
    df = spark.read.format("lakecat").load("db.events")
    assert ids_of(df.collect()) == list(range(10))
    assert df.schema.simpleString() == "struct<id:bigint,region:string,ts:timestamp>"


def test_spark_append_is_read_back_by_the_python_api(spark: Any, lake: Catalog) -> None:
    lake.create_table("db.events", EVENTS, partition_by=["region"])
    spark.createDataFrame(events(range(6), "us")).write.format("lakecat").mode("append").save(
        "db.events"
    )
    table = lake.load_table("db.events")
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(6))
    assert table.current_snapshot().operation == "append"


def test_every_supported_type_round_trips_through_spark(spark: Any, lake: Catalog) -> None:
    data = all_types()
    source = lake.create_table("db.source", data.schema)
    source.append(data)
    lake.create_table("db.copy", source.schema())  # same types, uuid and fixed included

    df = spark.read.format("lakecat").load("db.source")
    assert df.schema["key"].dataType.simpleString() == "string"  # uuids are text in Spark
    assert df.where("id = 1").first().key == "00000000-0000-0000-0000-000000000001"
    # A new DataFrame: Spark 4 would reuse the filtered plan of `df` (see test_pushdown).
    spark.read.format("lakecat").load("db.source").write.format("lakecat").mode("append").save(
        "db.copy"
    )

    copied = lake.load_table("db.copy").to_arrow().sort_by("id")
    assert copied.equals(source.to_arrow().sort_by("id"))


def test_uuid_and_fixed_values_that_do_not_fit_are_rejected(spark: Any, lake: Catalog) -> None:
    lake.create_table("db.keys", all_types().select(["id", "key", "code"]).schema)
    bad_uuid = spark.createDataFrame(
        [(1, "not-a-uuid", b"abcd")], "id long, key string, code binary"
    )
    with pytest.raises(Exception, match="not a uuid"):
        bad_uuid.write.format("lakecat").mode("append").save("db.keys")
    bad_fixed = spark.createDataFrame([(1, None, b"abc")], "id long, key string, code binary")
    with pytest.raises(Exception, match="code"):
        bad_fixed.write.format("lakecat").mode("append").save("db.keys")
    assert lake.load_table("db.keys").current_snapshot() is None


def test_partitioned_write_puts_each_partition_in_its_own_files(spark: Any, lake: Catalog) -> None:
    lake.create_table(
        "db.events", EVENTS, partition_by=["region", ("ts", "day"), ("id", "bucket[2]")]
    )
    rows = pa.concat_tables([events(range(0, 40), "eu", 1), events(range(40, 60), "us", 2)])
    spark.createDataFrame(rows).repartition(2).write.format("lakecat").mode("append").save(
        "db.events"
    )
    table = lake.load_table("db.events")
    files = table.scan().plan_files()
    partitions = {f.partition for f in files}
    assert {(p[0], p[1]) for p in partitions} == {("eu", 19723), ("us", 19724)}
    assert {p[2] for p in partitions} == {0, 1}
    for f in files:  # Hive-style folders; every row of a file is in the file's partition
        assert f"/region={f.partition[0]}/ts_day=" in f.file_path
    assert table.to_arrow().num_rows == 60
    # Spark's own reader sees the same rows per partition.
    counts = dict(
        spark.read.format("lakecat").load("db.events").groupBy("region").count().collect()
    )
    assert counts == {"eu": 40, "us": 20}


def test_a_write_creates_a_missing_table_partitioned_as_asked(spark: Any, lake: Catalog) -> None:
    df = spark.createDataFrame(events(range(4), "eu"))
    df.write.format("lakecat").mode("append").option("partition-by", "region, ts:month").save(
        "db.fresh"
    )
    table = lake.load_table("db.fresh")
    assert [(f.name, f.transform) for f in table.spec().fields] == [
        ("region", "identity"),
        ("ts_month", "month"),
    ]
    assert table.to_arrow().num_rows == 4


def test_a_given_schema_projects_columns(spark: Any, lake: Catalog) -> None:
    lake.create_table("db.events", EVENTS).append(events(range(3), "eu"))
    df = spark.read.format("lakecat").schema("ts timestamp, id long").load("db.events")
    rows = df.orderBy("id").collect()
    assert df.columns == ["ts", "id"]
    assert [r.id for r in rows] == [0, 1, 2]
    with pytest.raises(Exception, match="reads as bigint, not string"):
        spark.read.format("lakecat").schema("id string").load("db.events").collect()


def test_an_evolved_table_reads_old_files_by_field_id(spark: Any, lake: Catalog) -> None:
    from lakecat.metadata.schema.types import StringType

    table = lake.create_table("db.events", EVENTS)
    table.append(events(range(3), "eu"))
    with table.update_schema() as update:
        update.rename_column("region", "area")
        update.add_column("note", StringType())
        update.delete_column("ts")
    table.append(pa.table({"id": pa.array([9], pa.int64()), "area": ["us"], "note": ["new"]}))
    rows = spark.read.format("lakecat").load("db.events").orderBy("id").collect()
    assert [tuple(r) for r in rows] == [
        (0, "eu", None),
        (1, "eu", None),
        (2, "eu", None),
        (9, "us", "new"),
    ]


def test_overwrite_replaces_the_whole_table(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.events", EVENTS, partition_by=["region"])
    table.append(pa.concat_tables([events(range(5), "eu"), events(range(5, 8), "us")]))
    new = spark.createDataFrame(events(range(100, 102), "eu"))
    new.write.format("lakecat").mode("overwrite").save("db.events")
    table.refresh()
    assert sorted(table.to_arrow().column("id").to_pylist()) == [100, 101]
    assert table.current_snapshot().operation == "overwrite"


def test_dynamic_overwrite_replaces_only_the_partitions_written(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.events", EVENTS, partition_by=["region"])
    table.append(pa.concat_tables([events(range(5), "eu"), events(range(5, 8), "us")]))
    new = spark.createDataFrame(events(range(100, 102), "eu"))
    new.write.format("lakecat").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(
        "db.events"
    )
    table.refresh()
    assert sorted(table.to_arrow().column("id").to_pylist()) == [5, 6, 7, 100, 101]
    unpartitioned = lake.create_table("db.flat", EVENTS)
    with pytest.raises(Exception, match="not partitioned"):
        new.write.format("lakecat").mode("overwrite").option("overwrite-mode", "dynamic").save(
            "db.flat"
        )
    assert unpartitioned.current_snapshot() is None


def test_create_branch_lets_a_write_start_its_branch_at_main(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.events", EVENTS, partition_by=["region"])
    table.append(events(range(3), "eu"))
    main = table.current_snapshot()
    new = spark.createDataFrame(events(range(100, 102), "us"))
    with pytest.raises(Exception, match="NoSuchRef"):  # without the option: a typo is caught
        new.write.format("lakecat").mode("append").option("branch", "audit").save("db.events")

    new.write.format("lakecat").mode("append").option("branch", "audit").option(
        "create-branch", "true"
    ).save("db.events")  # the Python data source
    import lakecat.spark_ext as lk

    assert lk.write(new, "db.events", branch="audit2", **{"create-branch": "true"}).native

    table.refresh()
    assert table.current_snapshot() == main
    for branch in ("audit", "audit2"):
        head = table.snapshot(table.refs()[branch].snapshot_id)
        assert head.parent_snapshot_id == main.snapshot_id
        rows = table.to_arrow(ref=branch).column("id").to_pylist()
        assert sorted(rows) == [0, 1, 2, 100, 101]


def test_overwrite_by_filter_replaces_the_matching_rows(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.events", EVENTS)
    table.append(pa.concat_tables([events(range(5), "eu"), events(range(5, 8), "us")]))
    new = spark.createDataFrame(events([50], "eu"))
    new.write.format("lakecat").mode("overwrite").option(
        "overwrite-filter", "region = 'eu' and id >= 2"
    ).save("db.events")
    table.refresh()
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 5, 6, 7, 50]
    outside = spark.createDataFrame(events([60], "us"))
    with pytest.raises(Exception, match="do not match the filter"):
        outside.write.format("lakecat").mode("overwrite").option(
            "overwrite-filter", "region = 'eu'"
        ).save("db.events")
    table.refresh()
    assert table.to_arrow().num_rows == 6


def test_a_rerun_with_the_same_app_version_does_not_append_twice(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.events", EVENTS)
    df = spark.createDataFrame(events(range(3), "eu"))

    def run(version: int) -> None:
        df.write.format("lakecat").mode("append").option("app-id", "nightly").option(
            "app-version", str(version)
        ).save("db.events")

    run(1)
    run(1)  # a re-run of the same batch
    table.refresh()
    assert table.to_arrow().num_rows == 3
    run(2)
    table.refresh()
    assert table.to_arrow().num_rows == 6
    # The skipped re-run left no files behind.
    live = {f.file_path for f in lake.load_table("db.events").scan().plan_files()}
    on_disk = {
        info.location
        for info in lake.io.list_prefix(table.location + "/data")
        if info.location.endswith(".parquet")
    }
    assert on_disk == live


def test_a_commit_refused_as_a_repeat_deletes_the_written_files(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.events", EVENTS)
    df = spark.createDataFrame(events(range(3), "eu"))
    writer = (
        df.write.format("lakecat")
        .mode("append")
        .option("app-id", "nightly")
        .option("app-version", "7")
        .option("skip-if-committed", "false")
    )
    writer.save("db.events")
    with pytest.raises(Exception, match="ConcurrentTransaction"):
        writer.save("db.events")  # Spark then calls abort: the snapshot did not land
    table.refresh()
    live = {f.file_path for f in table.scan().plan_files()}
    on_disk = {
        info.location
        for info in lake.io.list_prefix(table.location)
        if info.location.endswith(".parquet")
        or ("/spark-jobs/" in info.location and not info.location.endswith("/_aborted"))
    }
    assert on_disk == live


def test_a_time_column_is_refused_unless_projected_away(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.clock", pa.schema([("id", pa.int64()), ("at", pa.time64("us"))]))
    table.append(
        pa.table(
            {"id": pa.array([1], pa.int64()), "at": pa.array([3_600_000_000], pa.time64("us"))}
        )
    )
    with pytest.raises(Exception, match="Spark 4 does not support"):
        spark.read.format("lakecat").load("db.clock")
    rows = spark.read.format("lakecat").schema("id long").load("db.clock").collect()
    assert [r.id for r in rows] == [1]


def test_write_options_are_validated_before_anything_is_written(spark: Any, lake: Catalog) -> None:
    lake.create_table("db.events", EVENTS)
    df = spark.createDataFrame(events(range(1), "eu"))
    with pytest.raises(Exception, match="need mode"):
        df.write.format("lakecat").mode("append").option("overwrite-filter", "id = 1").save(
            "db.events"
        )
    with pytest.raises(Exception, match="go together"):
        df.write.format("lakecat").mode("append").option("app-id", "x").save("db.events")
    assert issubclass(ValidationError, ValueError)


def test_merge_schema_adds_the_dataframe_s_new_columns_before_its_rows_are_written(
    spark: Any, lake: Catalog
) -> None:
    schema = pa.schema([("id", pa.int64()), ("key", pa.uuid()), ("n", pa.int32())])
    table = lake.create_table("db.drift", schema)
    ids_before = {f.name: f.field_id for f in table.schema().fields}
    frame = spark.createDataFrame(
        [(1, str(uuid.UUID(int=7)), 5, 2.5, (1, "a"))],
        "ID long, key string, n long, score double, tag struct<x:int, label:string>",
    )  # ID: Spark's names match case-insensitively; key: a uuid as Spark's text; n widens

    frame.write.format("lakecat").mode("append").option("mergeSchema", "true").save("db.drift")
    spark.createDataFrame([(2,)], "id long").write.format("lakecat").mode("append").option(
        "merge-schema", "TRUE"
    ).save("db.drift")  # nothing new: no schema commit, the missing columns as nulls

    table = lake.load_table("db.drift")
    assert [(f.name, str(f.field_type), f.required) for f in table.schema().fields] == [
        ("id", "long", False),
        ("key", "uuid", False),
        ("n", "long", False),
        ("score", "double", False),
        ("tag", "struct<6: x: int, 7: label: string>", False),
    ]
    assert {f.name: f.field_id for f in table.schema().fields[:3]} == ids_before
    assert [s.operation for s in table.snapshots()] == ["append", "append"]
    assert len(table.metadata.schemas) == 2  # one schema commit, before the first append
    got = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {
            "id": 1,
            "key": uuid.UUID(int=7),
            "n": 5,
            "score": 2.5,
            "tag": {"x": 1, "label": "a"},
        },
        {"id": 2, "key": None, "n": None, "score": None, "tag": None},
    ]


def test_merge_schema_refuses_a_type_a_column_cannot_become_and_commits_nothing(
    spark: Any, lake: Catalog
) -> None:
    table = lake.create_table("db.drift", pa.schema([("id", pa.int64()), ("n", pa.int32())]))
    before = table.metadata_location
    frame = spark.createDataFrame([(1, "x", 1.0)], "id long, n string, extra double")

    with pytest.raises(Exception, match="InvalidUpdate: cannot change 'n' from int to string"):
        frame.write.format("lakecat").mode("append").option("mergeSchema", "true").save("db.drift")

    assert lake.load_table("db.drift").metadata_location == before


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("id long, region string, ts timestamp, extra int", "columns the table schema does not"),
        ("id long, ts timestamp", "required column 'region' .* is missing"),
        ("id long, region int, ts timestamp", "'region' has Arrow type int32"),
    ],
)
def test_a_dataframe_that_does_not_fit_the_table_fails_before_any_task_writes(
    spark: Any, lake: Catalog, columns: str, message: str
) -> None:
    schema = pa.schema([("id", pa.int64()), pa.field("region", pa.string(), nullable=False)])
    table = lake.create_table("db.events", schema.append(pa.field("ts", pa.timestamp("us", "UTC"))))
    frame = spark.createDataFrame([], columns)

    with pytest.raises(
        Exception, match=f"Failed to initialize Python data source writer(?s:.*){message}"
    ):
        frame.write.format("lakecat").mode("append").save("db.events")

    assert lake.load_table("db.events").metadata_location == table.metadata_location


# ---- column names with dots, spaces, quotes ----------------------------------------------------


def test_a_table_partitioned_by_a_dotted_column_is_written_and_read_through_spark(
    spark: Any, lake: Catalog
) -> None:
    """``"a.b"`` is one top-level column: the data source write partitions by it (it used to
    fail with ``KeyError: 'Field "a" does not exist'``), the native write too, a read pushes
    a filter on it down to prune files, and delete and overwrite-filter find its rows."""
    import lakecat.spark_ext as lk

    schema = pa.schema([("id", pa.int64()), ("a.b", pa.string())])
    table = lake.create_table("db.t", schema, partition_by=["a.b", ("a.b", "truncate[1]")])

    def frame(rows: list[tuple[int, str]]) -> Any:
        return spark.createDataFrame(rows, "id long, `a.b` string").coalesce(1)

    frame([(1, "eu"), (2, "us"), (3, "eu")]).write.format("lakecat").mode("append").save("db.t")
    assert lk.write(frame([(4, "eu"), (5, "ap")]), "db.t").native

    table.refresh()
    files = table.scan().plan_files()
    assert sorted(f.partition for f in files) == [
        ("ap", "a"),
        ("eu", "e"),
        ("eu", "e"),
        ("us", "u"),
    ]
    df = spark.read.format("lakecat").option("split-size", "1").load("db.t")
    assert df.schema.names == ["id", "a.b"]
    eu = df.where("`a.b` = 'eu'")
    assert eu.rdd.getNumPartitions() == 2  # pushed down: only the two 'eu' files are read
    assert sorted(r.id for r in eu.collect()) == [1, 3, 4]
    assert sorted(r.id for r in lk.read(spark, "db.t", filter="`a.b` = 'us'").collect()) == [2]

    lk.delete(spark, "db.t", "`a.b` = 'us'")
    frame([(6, "eu")]).write.format("lakecat").mode("overwrite").option(
        "overwrite-filter", "`a.b` = 'eu'"
    ).save("db.t")
    assert sorted(map(tuple, spark.read.format("lakecat").load("db.t").collect())) == [
        (5, "ap"),
        (6, "eu"),
    ]


def test_a_write_creates_a_table_partitioned_by_a_dotted_struct_field(
    spark: Any, lake: Catalog
) -> None:
    import lakecat.spark_ext as lk

    df = spark.createDataFrame(
        [(1, ("p",), "x"), (2, ("q",), "y"), (3, ("p",), None)],
        "id long, s struct<`x.y`: string>, `a,b` string",
    ).coalesce(1)
    assert lk.write(df, "db.native", **{"partition-by": "s.x.y, `a,b`:truncate[1]"}).native
    df.write.format("lakecat").option("partition-by", "s.x.y:bucket[2], `a,b`").mode("append").save(
        "db.source"
    )

    native, source = lake.load_table("db.native"), lake.load_table("db.source")
    assert native.schema().column_path(native.spec().fields[0].source_id) == ("s", "x.y")
    assert source.schema().column_path(source.spec().fields[1].source_id) == ("a,b",)
    assert sorted((f.partition for f in native.scan().plan_files()), key=str) == [
        ("p", "x"),
        ("p", None),
        ("q", "y"),
    ]
    for name in ("db.native", "db.source"):
        rows = spark.read.format("lakecat").load(name).where("s.`x.y` = 'p'").collect()
        assert sorted(r.id for r in rows) == [1, 3]


def test_a_write_that_creates_a_table_keeps_the_dataframes_column_comments(
    spark: Any, lake: Catalog
) -> None:
    import lakecat.spark_ext as lk

    df = spark.createDataFrame(
        [(1, ("p",))], "id long COMMENT 'the key', s struct<x: string COMMENT 'inner'>"
    )
    assert lk.write(df, "db.native").native
    df.write.format("lakecat").mode("append").save("db.source")

    for name in ("db.native", "db.source"):
        schema = lake.load_table(name).schema()
        assert schema.find_field("id").doc == "the key", name
        assert schema.find_field("s.x").doc == "inner", name


def test_partition_by_option_quotes_names_with_commas_and_colons() -> None:
    from lakecat.spark_ext.source.write_jobs import parse_partition_by

    assert parse_partition_by("region, ts:day, id:bucket[16]") == [
        "region",
        ("ts", "day"),
        ("id", "bucket[16]"),
    ]
    assert parse_partition_by("a.b, s.x.y:day") == ["a.b", ("s.x.y", "day")]  # full names
    assert parse_partition_by("`a,b`:bucket[4], `x``y`, with space : truncate[2],") == [
        ("a,b", "bucket[4]"),
        "x`y",
        ("with space", "truncate[2]"),
    ]
    for bad in ("`unterminated", "`a` b", ":day"):
        with pytest.raises(ValidationError):
            parse_partition_by(bad)


def test_an_overwrite_by_filter_job_writes_the_rows_it_keeps_as_it_reads_them(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver's side of a data source overwrite by filter (run here in-process, as the
    Python data source's commit runs it): each partly matching file's kept rows are written
    before the next file is read (a bound of one byte held), then committed with the job's
    own files; a failure on the way deletes the files already written."""
    from pyspark.sql.types import LongType as SparkLong
    from pyspark.sql.types import StringType as SparkString
    from pyspark.sql.types import StructField, StructType, TimestampType

    from lakecat.catalog.write import row_ops
    from lakecat.spark_ext.settings import CatalogSettings
    from lakecat.spark_ext.source.write_jobs import plan_write

    table = catalog.create_table("db.kept", EVENTS, partition_by=["region"])
    for region in ("eu", "us", "ap"):
        table.append(events(range(10), region))
    spark_schema = StructType(
        [
            StructField("id", SparkLong()),
            StructField("region", SparkString()),
            StructField("ts", TimestampType()),
        ]
    )
    monkeypatch.setattr(row_ops, "KEPT_ROWS_FLUSH_BYTES", 1)
    writes: list[int] = []
    plan = row_ops.plan_delete

    def spied(*args: Any, **kwargs: Any) -> row_ops.RewritePlan:
        write = kwargs["write_kept"]
        kwargs["write_kept"] = lambda kept: writes.append(len(kept)) or write(kept)
        return plan(*args, **kwargs)

    monkeypatch.setattr("lakecat.spark_ext.source.write_jobs.plan_delete", spied)

    def overwrite(condition: str) -> Any:
        job = plan_write(
            CatalogSettings.of_catalog(catalog),
            "db.kept",
            {"overwrite-filter": condition},
            overwrite=True,
            spark_schema=spark_schema,
        )
        return job.commit([])

    assert overwrite("id = 3") is not None
    assert writes == [1, 1, 1]
    got = table.refresh().to_arrow()
    assert sorted(got.column("id").to_pylist()) == sorted([i for i in range(10) if i != 3] * 3)

    files = {info.location for info in catalog.io.list_prefix(table.location)}
    last = list(table.scan().plan_files())[-1]
    table.io.delete(last.file_path)  # read last: after the other files' kept rows are written
    writes.clear()
    with pytest.raises(LakecatError):
        overwrite("id = 4")
    assert writes == [1, 1]
    after = {info.location for info in catalog.io.list_prefix(table.location)}
    assert after == files - {last.file_path}
