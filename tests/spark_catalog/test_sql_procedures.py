"""``CALL lake.system.<procedure>(...)``: Iceberg's procedure names, arguments (positional and
named) and result columns, each checked through lakecat's Python API; bad calls are Spark
``AnalysisException``s that name the problem and commit nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

from lakecat.catalog.maintenance import rewrite_data_files
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError
from lakecat.metadata.io import local_path
from lakecat.metadata.manifests import read_manifest_list
from lakecat.metadata.properties import DELETE_MODE
from lakecat.spark_ext import lakecat_error
from lakecat.spark_ext.sql.procedures import Parameter, Procedure, accepts, identifier_parts

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def rows(*items: tuple[int, str]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "region": r} for i, r in items], SCHEMA)


@pytest.fixture
def three_appends(lake) -> Any:
    """db.t partitioned by region with three snapshots, one file each: eu 1, eu 2, us 3."""
    table = lake.catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    for item in ((1, "eu"), (2, "eu"), (3, "us")):
        table.append(rows(item))
    return table


def call(lake, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The result columns and rows of a CALL."""
    df = lake.spark.sql(statement)
    return df.columns, [tuple(r) for r in df.collect()]


def data_files(table: Any) -> set[str]:
    return {f.file_path for f in table.refresh().scan().plan_files()}


def local(location: str) -> str:
    path = local_path(location)
    assert path is not None, location
    return path


# ---- the procedures -------------------------------------------------------------------------
def test_ancestors_of_lists_the_current_snapshot_and_its_ancestors_newest_first(
    lake, three_appends
) -> None:
    history = three_appends.metadata.ancestors(three_appends.metadata.current_snapshot_id)

    columns, result = call(lake, "CALL lake.system.ancestors_of('db.t')")

    assert columns == ["snapshot_id", "timestamp"]
    assert result == [(s.snapshot_id, s.timestamp_ms) for s in history]
    assert len(result) == 3
    # named arguments, the catalog's name in the table, an older snapshot
    _, older = call(
        lake,
        f"CALL lake.system.ancestors_of(snapshot_id => {history[1].snapshot_id}, "
        "table => 'lake.db.t')",
    )
    assert older == result[1:]


def test_create_tag_tags_the_current_or_the_given_snapshot(lake, three_appends) -> None:
    first = three_appends.metadata.ancestors(three_appends.metadata.current_snapshot_id)[-1]

    columns, current = call(lake, "CALL lake.system.create_tag('db.t', 'release')")
    _, given = call(
        lake, f"CALL lake.system.create_tag(table => 'db.t', tag => 'first', "
        f"snapshot_id => {first.snapshot_id}, max_ref_age_ms => 86400000)",
    )  # fmt: skip

    refs = three_appends.refresh().refs()
    assert columns == ["ref_name", "ref_type", "snapshot_id"]
    head = three_appends.metadata.current_snapshot_id
    assert current == [("release", "tag", head)]
    assert given == [("first", "tag", first.snapshot_id)]
    assert (refs["release"].ref_type, refs["release"].snapshot_id) == ("tag", head)
    assert (refs["first"].snapshot_id, refs["first"].max_ref_age_ms) == (
        first.snapshot_id,
        86400000,
    )


def test_create_branch_keeps_its_retention_settings(lake, three_appends) -> None:
    _, result = call(
        lake,
        "CALL lake.system.create_branch(table => 'db.t', branch => 'audit', "
        "min_snapshots_to_keep => 2, max_snapshot_age_ms => 3600000)",
    )

    ref = three_appends.refresh().refs()["audit"]
    assert result == [("audit", "branch", three_appends.metadata.current_snapshot_id)]
    assert (ref.ref_type, ref.min_snapshots_to_keep, ref.max_snapshot_age_ms) == (
        "branch",
        2,
        3600000,
    )
    # the branch takes writes of its own (checked through the Python API)
    three_appends.append(rows((9, "eu")), branch="audit")
    assert sorted(three_appends.to_arrow(ref="audit").column("id").to_pylist()) == [1, 2, 3, 9]


def test_drop_ref_removes_a_tag_or_branch_and_returns_what_it_was(lake, three_appends) -> None:
    three_appends.create_tag("old", three_appends.snapshots()[0].snapshot_id)

    _, result = call(lake, "CALL lake.system.drop_ref('db.t', 'old')")

    assert result == [("old", "tag", three_appends.snapshots()[0].snapshot_id)]
    assert set(three_appends.refresh().refs()) == {"main"}


def test_register_table_adds_a_table_by_its_metadata_file(lake, three_appends) -> None:
    location = three_appends.metadata_location
    lake.catalog.drop_table("db.t")  # the files stay

    columns, result = call(
        lake, f"CALL lake.system.register_table(table => 'db.back', metadata_file => '{location}')"
    )

    back = lake.catalog.load_table("db.back")
    assert columns == ["current_snapshot_id", "total_records_count", "total_data_files_count"]
    assert result == [(three_appends.metadata.current_snapshot_id, 3, 3)]
    assert back.metadata_location == location
    assert lake.rows("db.back", "id") == [(1,), (2,), (3,)]


def test_add_files_adds_a_folder_of_parquet_files_spark_wrote(lake, tmp_path) -> None:
    # files Spark wrote without field ids (and its _SUCCESS marker): read by name
    folder = tmp_path / "import"
    lake.spark.sql(
        "SELECT id, CASE WHEN id < 3 THEN 'eu' ELSE 'us' END AS region FROM range(0, 6)"
    ).repartition(1, "region").write.partitionBy("region").parquet(str(folder / "by_region"))
    lake.spark.sql("SELECT id, 'ap' AS region FROM range(10, 13)").coalesce(1).write.parquet(
        str(folder / "flat")
    )
    table = lake.catalog.create_table("db.imported", SCHEMA)

    columns, result = call(
        lake,
        "CALL lake.system.add_files(table => 'db.imported', "
        f"source_table => '`parquet`.`{folder / 'flat'}`')",
    )

    assert columns == ["added_files_count", "changed_partition_count"]
    assert result == [(1, None)]
    assert lake.rows("db.imported", "id", "region") == [(10, "ap"), (11, "ap"), (12, "ap")]
    assert "schema.name-mapping.default" in table.refresh().properties
    # Hive's layout (region in the folders, not in the files): refused by an unpartitioned
    # table, where region would read as nulls; a table partitioned by region takes them
    with pytest.raises(Exception, match="its folder names a value of column 'region'"):
        lake.spark.sql(
            "CALL lake.system.add_files(table => 'db.imported', "
            f"source_table => '`parquet`.`{folder / 'by_region'}`', check_duplicate_files => true)"
        ).collect()
    lake.catalog.create_table("db.by_region", SCHEMA, partition_by=["region"])
    columns, result = call(
        lake,
        "CALL lake.system.add_files(table => 'db.by_region', "
        f"source_table => '`parquet`.`{folder / 'by_region'}`')",
    )
    assert result == [(2, 2)]
    assert lake.rows("db.by_region", "id", "region") == [
        (0, "eu"),
        (1, "eu"),
        (2, "eu"),
        (3, "us"),
        (4, "us"),
        (5, "us"),
    ]
    assert lake.spark.sql("SELECT id FROM lake.db.by_region WHERE region = 'us'").count() == 3
    # a file-based Spark table of the session catalog
    lake.spark.sql("SELECT id, 'sa' AS region FROM range(20, 22)").write.format("parquet").option(
        "path", str(folder / "session")
    ).saveAsTable("spark_catalog.default.legacy")
    try:
        columns, result = call(
            lake,
            "CALL lake.system.add_files(table => 'db.imported', "
            "source_table => 'spark_catalog.default.legacy')",
        )
    finally:
        lake.spark.sql("DROP TABLE spark_catalog.default.legacy")
    assert result[0][0] >= 1
    assert [i for (i,) in lake.rows("db.imported", "id")] == [10, 11, 12, 20, 21]
    with pytest.raises(Exception, match="already"):  # the same files again
        lake.spark.sql(
            "CALL lake.system.add_files(table => 'db.imported', "
            f"source_table => '`parquet`.`{folder / 'flat'}`')"
        ).collect()


def test_snapshot_makes_a_lakecat_table_over_a_spark_tables_files(lake, tmp_path) -> None:
    source = tmp_path / "legacy"
    lake.spark.sql(
        "CREATE TABLE spark_catalog.default.legacy (id BIGINT, region STRING) USING parquet "
        f"PARTITIONED BY (region) LOCATION '{source}'"
    )
    try:
        lake.spark.sql(
            "INSERT INTO spark_catalog.default.legacy VALUES (1, 'eu'), (2, 'eu'), (3, 'us')"
        )
        before = sorted(str(p) for p in source.rglob("*.parquet"))

        columns, result = call(
            lake,
            "CALL lake.system.snapshot(source_table => 'spark_catalog.default.legacy', "
            "table => 'db.snap')",
        )

        assert columns == ["imported_files_count"]
        assert result == [(len(before),)]
        table = lake.catalog.load_table("db.snap")
        assert [f.name for f in table.spec().fields] == ["region"]
        assert table.properties["gc.enabled"] == "false"
        assert lake.rows("db.snap", "id", "region") == [(1, "eu"), (2, "eu"), (3, "us")]
        # the lakecat table changes on its own; the source and its files stay as they were
        lake.spark.sql("DELETE FROM lake.db.snap WHERE id = 1")
        lake.spark.sql("INSERT INTO lake.db.snap VALUES (4, 'us')")
        assert lake.rows("db.snap", "id") == [(2,), (3,), (4,)]
        assert sorted(str(p) for p in source.rglob("*.parquet")) == before
        assert lake.spark.sql("SELECT * FROM spark_catalog.default.legacy").count() == 3
        with pytest.raises(Exception, match="gc"):
            lake.spark.sql("CALL lake.system.expire_snapshots(table => 'db.snap')").collect()
    finally:
        lake.spark.sql("DROP TABLE spark_catalog.default.legacy")
    with pytest.raises(Exception, match="no source table"):
        lake.spark.sql(
            "CALL lake.system.snapshot(source_table => 'spark_catalog.default.nope', "
            "table => 'db.snap2')"
        ).collect()
    assert not lake.catalog.table_exists("db.snap2")


def test_replace_partition_field_swaps_a_field_in_one_spec_update(lake) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
    table = lake.catalog.create_table("db.events", schema, partition_by=[("ts", "day")])
    specs_before = len(table.metadata.partition_specs)

    _, result = call(
        lake,
        "CALL lake.system.replace_partition_field(table => 'db.events', field => 'days(ts)', "
        "new_field => 'hours(ts)', name => 'ts_hour')",
    )

    spec = table.refresh().spec()
    assert [(f.name, f.transform) for f in spec.fields] == [("ts_hour", "hour")]
    assert len(table.metadata.partition_specs) == specs_before + 1  # one new spec
    assert result == [(spec.spec_id, "ts_hour=hour")]
    with pytest.raises(Exception, match="not partitioned by"):
        lake.spark.sql(
            "CALL lake.system.replace_partition_field('db.events', 'days(ts)', 'months(ts)')"
        ).collect()


def test_set_identifier_fields_sets_and_drops_them(lake) -> None:
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("k", pa.string(), nullable=False)]
    )
    table = lake.catalog.create_table("db.keyed", schema)

    columns, result = call(
        lake, "CALL lake.system.set_identifier_fields('db.keyed', array('id', 'k'))"
    )
    assert columns == ["schema_id", "identifier_fields"]
    assert result[0][1] == "id, k"
    schema_now = table.refresh().schema()
    assert [schema_now.find_field(i).name for i in schema_now.identifier_field_ids] == ["id", "k"]

    _, result = call(
        lake,
        "CALL lake.system.set_identifier_fields(table => 'db.keyed', fields => array('k'), "
        "drop => true)",
    )
    assert result[0][1] == "id"
    with pytest.raises(Exception, match="not an identifier field"):
        lake.spark.sql(
            "CALL lake.system.set_identifier_fields('db.keyed', array('k'), true)"
        ).collect()


def test_migrate_moves_a_spark_table_to_lakecat_over_its_files(lake, tmp_path) -> None:
    source = tmp_path / "moving"
    lake.spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.default")
    lake.spark.sql(
        "CREATE TABLE spark_catalog.default.moving (id BIGINT, region STRING) USING parquet "
        f"PARTITIONED BY (region) LOCATION '{source}'"
    )
    lake.spark.sql("INSERT INTO spark_catalog.default.moving VALUES (1, 'eu'), (2, 'us')")
    files = sorted(str(p) for p in source.rglob("*.parquet"))
    try:
        columns, result = call(
            lake, "CALL lake.system.migrate(table => 'spark_catalog.default.moving')"
        )
        assert columns == ["migrated_files_count"]
        assert result == [(len(files),)]
        table = lake.catalog.load_table("default.moving")
        assert table.properties.get("gc.enabled", "true") == "true"  # the files are its own
        assert lake.rows("default.moving", "id", "region") == [(1, "eu"), (2, "us")]
        tables = {t.name for t in lake.spark.catalog.listTables("spark_catalog.default")}
        assert "moving" not in tables and "moving_backup_" in tables
        lake.spark.sql("INSERT INTO lake.default.moving VALUES (3, 'eu')")
        assert [i for (i,) in lake.rows("default.moving", "id")] == [1, 2, 3]
        # an external source's backup may be dropped: its files stay, the lakecat table's
        lake.spark.sql(
            "CREATE TABLE spark_catalog.default.other (id BIGINT) USING parquet "
            f"LOCATION '{tmp_path / 'other'}'"
        )
        lake.spark.sql("INSERT INTO spark_catalog.default.other VALUES (7)")
        call(
            lake,
            "CALL lake.system.migrate(table => 'spark_catalog.default.other', drop_backup => true)",
        )
        assert lake.rows("default.other", "id") == [(7,)]
        assert "other_backup_" not in {
            t.name for t in lake.spark.catalog.listTables("spark_catalog.default")
        }
    finally:
        lake.spark.sql("DROP TABLE IF EXISTS spark_catalog.default.moving_BACKUP_")
        lake.spark.sql("DROP TABLE IF EXISTS spark_catalog.default.other_BACKUP_")
    assert {str(p) for p in source.rglob("*.parquet")} >= set(files)  # none deleted


def test_rewrite_data_files_compacts_on_spark_and_counts_like_iceberg(lake, three_appends) -> None:
    before = data_files(three_appends)
    bytes_before = sum(f.file_size_in_bytes for f in three_appends.scan().plan_files())

    columns, result = call(
        lake,
        "CALL lake.system.rewrite_data_files(table => 'db.t', "
        "options => map('min-input-files', '2'))",
    )

    after = data_files(three_appends)
    us_bytes = sum(  # the file left
        f.file_size_in_bytes for f in three_appends.scan().plan_files() if f.file_path in before
    )
    assert columns == [
        "rewritten_data_files_count",
        "added_data_files_count",
        "rewritten_bytes_count",
        "failed_data_files_count",
        "removed_delete_files_count",
    ]
    # eu: 2 files -> 1; us's lone small file is left (rewritten alone it comes out the same)
    assert result == [(2, 1, bytes_before - us_bytes, 0, 0)]
    assert len(after) == 2 and len(after & before) == 1
    assert three_appends.current_snapshot().operation == "replace"
    assert lake.rows("db.t", "id", "region") == [(1, "eu"), (2, "eu"), (3, "us")]


def test_rewrite_data_files_takes_iceberg_s_file_selection_and_tuning_options(
    lake, three_appends
) -> None:
    # by default nothing: Iceberg's min-input-files is 5, and two small files hold less than
    # the target
    [default] = lake.sql("CALL lake.system.rewrite_data_files('db.t')")
    assert default[0] == 0
    three_appends.append(rows((4, "us")))

    [row] = lake.sql(
        "CALL lake.system.rewrite_data_files('db.t', options => map("
        "'rewrite-all', 'true', 'max-concurrent-file-group-rewrites', '4', "
        "'rewrite-job-order', 'bytes-desc', 'min-input-files', '5'))"
    )

    assert row[0] == 4  # every file: eu's two and us's two
    assert len(data_files(three_appends)) == 2
    assert lake.rows("db.t", "id") == [(1,), (2,), (3,), (4,)]


@pytest.mark.parametrize(
    ("options", "snapshots"),
    [
        ("", 1),  # Iceberg's default: no partial progress, one commit
        (", 'partial-progress.enabled', 'true'", 2),
        (", 'partial-progress.enabled', 'true', 'partial-progress.max-commits', '1'", 1),
    ],
)
def test_rewrite_data_files_commits_in_at_most_max_commits_snapshots(
    lake, three_appends, options: str, snapshots: int
) -> None:
    three_appends.append(rows((4, "us")))
    before = len(three_appends.snapshots())
    extra = options

    [row] = lake.sql(
        "CALL lake.system.rewrite_data_files('db.t', options => map('min-input-files', '2'"
        f"{extra}))"
    )

    assert row[0] == 4  # both partitions' groups
    assert len(three_appends.refresh().snapshots()) == before + snapshots


def test_rewrite_data_files_takes_iceberg_s_newer_planner_and_commit_options(
    lake, three_appends
) -> None:
    three_appends.append(rows((4, "us")))  # two small files in each partition

    [capped] = lake.sql(
        "CALL lake.system.rewrite_data_files('db.t', options => map('min-input-files', '2', "
        "'max-files-to-rewrite', '2', 'max-file-group-input-files', '2', "
        "'partial-progress.max-failed-commits', '0', 'use-starting-sequence-number', 'false', "
        "'remove-dangling-deletes', 'true'))"
    )

    assert capped[0] == 2 and capped[1] == 1  # one partition's group: the cap reached
    assert capped[4] == 0  # nothing dangling in a table lakecat wrote
    assert len(data_files(three_appends)) == 3
    # a file whose deletes remove a third of its rows is rewritten (Iceberg's default 0.3)
    table = merge_on_read_table(lake)
    table.append(rows(*((i, "eu") for i in range(1, 10))))
    table.delete("id IN (1, 2, 3)")
    [kept] = lake.sql(
        "CALL lake.system.rewrite_data_files('db.m', options => map("
        "'delete-ratio-threshold', '0.5'))"
    )
    [ratio] = lake.sql("CALL lake.system.rewrite_data_files('db.m')")
    assert kept[0] == 0 and (ratio[0], ratio[1], ratio[4]) == (1, 1, 1)
    assert own_deletes(table) == []
    assert lake.rows("db.m", "id") == [(i,) for i in range(4, 10)]


@pytest.mark.parametrize(
    "where",
    [
        "\"region = 'eu'\"",
        "'region = \"eu\"'",  # Iceberg's docs' form: in Spark SQL "eu" is a string
    ],
)
def test_rewrite_data_files_where_compacts_only_the_matching_partition(
    lake, three_appends, where: str
) -> None:
    three_appends.append(rows((4, "us")))
    us_before = {f for f in data_files(three_appends) if "region=us" in f}

    _, result = call(
        lake,
        f"CALL lake.system.rewrite_data_files('db.t', where => {where}, "
        "options => map('min-input-files', '2'))",
    )

    after = data_files(three_appends)
    assert result[0][:2] == (2, 1)
    assert us_before <= after  # the us files were not rewritten
    assert lake.rows("db.t", "id") == [(1,), (2,), (3,), (4,)]


def manifest_paths(table: Any, snapshot_id: int | None = None) -> list[str]:
    snapshot = table.current_snapshot() if snapshot_id is None else table.snapshot(snapshot_id)
    return [m.manifest_path for m in read_manifest_list(table.io, snapshot.manifest_list)]


def merge_on_read_table(lake) -> Any:
    """db.m (v2, unpartitioned) whose deletes write position delete files."""
    return lake.catalog.create_table("db.m", SCHEMA, properties={DELETE_MODE: "merge-on-read"})


def own_deletes(table: Any) -> list[Any]:
    """The delete files of the current snapshot, one data file's (the table has one)."""
    plan = table.refresh().scan().plan()
    return [d for deletes in plan.deletes.values() for d in deletes]


def test_rewrite_manifests_regroups_the_manifests_into_one_and_counts_them(
    lake, three_appends
) -> None:
    before = manifest_paths(three_appends)
    head = three_appends.metadata.current_snapshot_id

    columns, result = call(lake, "CALL lake.system.rewrite_manifests('db.t', use_caching => false)")

    three_appends.refresh()
    after = manifest_paths(three_appends)
    assert columns == ["rewritten_manifests_count", "added_manifests_count"]
    assert result == [(len(before), 1)] and len(before) > 1
    assert len(after) == 1 and not set(after) & set(before)
    assert three_appends.current_snapshot().parent_snapshot_id == head
    assert lake.rows("db.t", "id") == [(1,), (2,), (3,)]
    # nothing left to regroup: no commit, nothing counted
    _, again = call(lake, "CALL lake.system.rewrite_manifests(table => 'db.t', spec_id => 0)")
    assert again == [(0, 0)]
    assert manifest_paths(three_appends.refresh()) == after


def test_compute_partition_stats_writes_and_registers_the_snapshot_s_stats(
    lake, three_appends
) -> None:
    first = three_appends.snapshots()[0].snapshot_id

    columns, result = call(lake, "CALL lake.system.compute_partition_stats('db.t')")
    _, older = call(
        lake, f"CALL lake.system.compute_partition_stats(table => 'db.t', snapshot_id => {first})"
    )

    assert columns == ["partition_statistics_file"]
    registered = {
        s["snapshot-id"]: s["statistics-path"]
        for s in three_appends.refresh().metadata.partition_statistics
    }
    assert registered == {
        three_appends.metadata.current_snapshot_id: result[0][0],
        first: older[0][0],
    }
    stats = pq.read_table(local_path(result[0][0])).to_pylist()
    assert sum(r["data_record_count"] for r in stats) == 3
    with pytest.raises(Exception, match="NoSuchSnapshot"):
        lake.sql("CALL lake.system.compute_partition_stats('db.t', 42)")


def test_rewrite_data_files_delete_file_threshold_rewrites_a_file_with_deletes(lake) -> None:
    table = merge_on_read_table(lake)
    table.append(rows(*((i, "eu") for i in range(1, 11))))
    table.delete("id = 2")  # 10% of the rows: under the delete-ratio-threshold
    options = "options => map('min-input-files', '5', 'delete-file-threshold', '{}')"

    [untouched] = lake.sql(f"CALL lake.system.rewrite_data_files('db.m', {options.format(2)})")
    [row] = lake.sql(f"CALL lake.system.rewrite_data_files('db.m', {options.format(1)})")

    assert untouched[0] == 0  # one delete file: under the threshold of 2
    assert (row[0], row[1], row[4]) == (1, 1, 1)  # the file rewritten, its delete file removed
    assert own_deletes(table) == []
    assert lake.rows("db.m", "id") == [(1,), *((i,) for i in range(3, 11))]


def test_rewrite_position_delete_files_merges_a_data_files_deletes(lake) -> None:
    table = merge_on_read_table(lake)
    table.append(rows((1, "eu"), (2, "eu"), (3, "eu")))
    table.delete("id = 1")
    table.delete("id = 2")
    old = own_deletes(table)

    columns, result = call(
        lake,
        "CALL lake.system.rewrite_position_delete_files(table => 'db.m', "
        "options => map('min-input-files', '2'))",
    )

    new = own_deletes(table)
    assert columns == [
        "rewritten_delete_files_count",
        "added_delete_files_count",
        "rewritten_bytes_count",
        "added_bytes_count",
    ]
    assert len(old) == 2 and len(new) == 1
    assert result == [(2, 1, sum(d.file_size_in_bytes for d in old), new[0].file_size_in_bytes)]
    assert table.current_snapshot().operation == "replace"
    assert lake.rows("db.m", "id") == [(3,)]
    # one delete file per data file now: nothing to merge, no commit
    location = table.metadata_location
    assert call(lake, "CALL lake.system.rewrite_position_delete_files('db.m')")[1] == [(0, 0, 0, 0)]
    assert table.refresh().metadata_location == location


def test_expire_snapshots_deletes_what_only_old_snapshots_used_and_counts_it_by_kind(
    lake,
) -> None:
    table = merge_on_read_table(lake)
    table.append(rows((1, "eu"), (2, "eu")))
    (first_file,) = data_files(table)
    table.append(rows((3, "us")))
    table.delete("id = 1")  # a position delete file on the first data file
    (position_delete,) = own_deletes(table)
    table.set_properties({DELETE_MODE: "copy-on-write"})
    table.delete("id = 2")  # drops the first data file, and its delete file with it
    old = [s.snapshot_id for s in table.snapshots()[:-1]]
    kept = table.metadata.current_snapshot_id
    old_lists = {table.snapshot(i).manifest_list for i in old}
    old_manifests = {m for i in old for m in manifest_paths(table, i)} - set(manifest_paths(table))
    assert first_file not in data_files(table) and own_deletes(table) == []

    columns, result = call(
        lake,
        "CALL lake.system.expire_snapshots(table => 'db.m', "
        f"older_than => timestamp_millis({int(time.time() * 1000) + 1000}), retain_last => 1, "
        "max_concurrent_deletes => 4, stream_results => true)",
    )

    assert columns == [
        "deleted_data_files_count",
        "deleted_position_delete_files_count",
        "deleted_equality_delete_files_count",
        "deleted_manifest_files_count",
        "deleted_manifest_lists_count",
        "deleted_statistics_files_count",
    ]
    assert result == [(1, 1, 0, len(old_manifests), 3, 0)]
    assert [s.snapshot_id for s in table.refresh().snapshots()] == [kept]
    gone = [first_file, position_delete.file_path, *old_manifests, *old_lists]
    assert [p for p in gone if os.path.exists(local(p))] == []
    assert lake.rows("db.m", "id") == [(3,)]


def test_expire_snapshots_by_id_expires_only_those(lake, three_appends) -> None:
    first, second, head = (s.snapshot_id for s in three_appends.snapshots())
    _, stats = call(lake, f"CALL lake.system.compute_partition_stats('db.t', {first})")

    _, result = call(
        lake, f"CALL lake.system.expire_snapshots('db.t', snapshot_ids => array({first}))"
    )

    assert [s.snapshot_id for s in three_appends.refresh().snapshots()] == [second, head]
    # appends: every manifest is still listed; the snapshot's statistics file goes with it
    assert result == [(0, 0, 0, 0, 1, 1)]
    assert not os.path.exists(local(stats[0][0]))
    assert three_appends.metadata.partition_statistics == ()


def test_remove_orphan_files_deletes_only_old_unreferenced_files(lake, three_appends) -> None:
    root = Path(local(three_appends.location))
    old = time.time() - 2 * 24 * 3600
    orphan = root / "data" / "region=eu" / "left-by-a-dead-writer.parquet"
    orphan.write_bytes(b"x")
    for path in root.rglob("*"):  # every file old: only the references protect the table's
        os.utime(path, (old, old))
    fresh = root / "data" / "in-flight.parquet"
    fresh.write_bytes(b"y")
    cutoff = f"timestamp_millis({int(time.time() * 1000) - 25 * 3600 * 1000})"

    columns, dry = call(
        lake, f"CALL lake.system.remove_orphan_files('db.t', {cutoff}, dry_run => true)"
    )
    assert columns == ["orphan_file_location"]
    assert [local(p) for (p,) in dry] == [str(orphan)] and orphan.exists()

    _, removed = call(
        lake,
        f"CALL lake.system.remove_orphan_files(table => 'db.t', older_than => {cutoff}, "
        "max_concurrent_deletes => 2, prefix_listing => true)",
    )

    assert removed == dry
    assert not orphan.exists() and fresh.exists()
    assert lake.rows("db.t", "id") == [(1,), (2,), (3,)]


def test_rollback_to_snapshot_makes_an_ancestor_current(lake, three_appends) -> None:
    first, _, head = (s.snapshot_id for s in three_appends.snapshots())

    columns, result = call(lake, f"CALL lake.system.rollback_to_snapshot('db.t', {first})")

    assert columns == ["previous_snapshot_id", "current_snapshot_id"]
    assert result == [(head, first)]
    assert three_appends.refresh().metadata.current_snapshot_id == first
    assert lake.rows("db.t", "id") == [(1,)]


def test_rollback_to_timestamp_goes_to_the_newest_ancestor_older_than_it(lake) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    for item in ((1, "eu"), (2, "eu"), (3, "us")):
        time.sleep(0.01)  # distinct commit times
        table.append(rows(item))
    _, second, head = table.snapshots()

    columns, result = call(
        lake,
        "CALL lake.system.rollback_to_timestamp(table => 'db.t', "
        f"timestamp => timestamp_millis({head.timestamp_ms}))",
    )

    assert columns == ["previous_snapshot_id", "current_snapshot_id"]
    assert result == [(head.snapshot_id, second.snapshot_id)]
    assert table.refresh().metadata.current_snapshot_id == second.snapshot_id
    assert lake.rows("db.t", "id") == [(1,), (2,)]


def test_set_current_snapshot_by_id_or_by_ref(lake, three_appends) -> None:
    first, _, head = (s.snapshot_id for s in three_appends.snapshots())
    three_appends.create_tag("v3", head)

    columns, back = call(lake, f"CALL lake.system.set_current_snapshot('db.t', {first})")
    assert three_appends.refresh().metadata.current_snapshot_id == first
    _, forward = call(lake, "CALL lake.system.set_current_snapshot(table => 'db.t', ref => 'v3')")

    assert columns == ["previous_snapshot_id", "current_snapshot_id"]
    assert (back, forward) == ([(head, first)], [(first, head)])
    assert three_appends.refresh().metadata.current_snapshot_id == head
    assert lake.rows("db.t", "id") == [(1,), (2,), (3,)]


def test_cherrypick_snapshot_reapplies_a_branch_append_on_main(lake, three_appends) -> None:
    three_appends.create_branch("audit")
    picked = three_appends.append(rows((7, "us")), branch="audit").snapshot_id
    three_appends.append(rows((4, "eu")))  # main moved on: a re-commit, not a fast-forward

    columns, result = call(lake, f"CALL lake.system.cherrypick_snapshot('db.t', {picked})")

    current = three_appends.refresh().current_snapshot()
    assert columns == ["source_snapshot_id", "current_snapshot_id"]
    assert result == [(picked, current.snapshot_id)] and current.snapshot_id != picked
    assert current.summary["source-snapshot-id"] == str(picked)
    assert lake.rows("db.t", "id") == [(1,), (2,), (3,), (4,), (7,)]


def test_fast_forward_moves_main_to_a_branch_head_or_creates_the_branch(
    lake, three_appends
) -> None:
    head = three_appends.metadata.current_snapshot_id
    three_appends.create_branch("audit")
    audit = three_appends.append(rows((9, "eu")), branch="audit").snapshot_id

    columns, result = call(lake, "CALL lake.system.fast_forward('db.t', 'main', 'audit')")
    _, created = call(
        lake, "CALL lake.system.fast_forward(table => 'db.t', branch => 'qa', to => 'audit')"
    )

    refs = three_appends.refresh().refs()
    assert columns == ["branch_updated", "previous_ref", "updated_ref"]
    assert result == [("main", head, audit)]
    assert created == [("qa", None, audit)]
    assert (refs["main"].snapshot_id, refs["qa"].snapshot_id) == (audit, audit)
    assert refs["qa"].ref_type == "branch"
    assert lake.rows("db.t", "id") == [(1,), (2,), (3,), (9,)]


@pytest.fixture
def history(lake) -> tuple[Any, list[int]]:
    """db.c: three appends, a compaction, a copy-on-write delete and an update; the ids of the
    five data-changing snapshots."""
    table = lake.catalog.create_table("db.c", SCHEMA)
    for item in ((1, "eu"), (2, "eu"), (3, "us")):
        table.append(rows(item))
        time.sleep(0.005)  # distinct commit times
    rewrite_data_files(table)  # a replace snapshot: no change, no ordinal
    table.delete("id = 1")  # rewrites the compacted file: 2 and 3 are carried over
    table.update({"region": "us"}, "id = 2")
    changing = [s.snapshot_id for s in table.snapshots() if s.operation != "replace"]
    assert len(changing) == 5 and len(table.snapshots()) == 6
    return table, changing


def view_rows(lake, view: str) -> list[tuple[Any, ...]]:
    df = lake.spark.sql(f"SELECT * FROM {view}")
    assert df.columns == [
        "id", "region", "_change_type", "_change_ordinal", "_commit_snapshot_id"
    ]  # fmt: skip
    return sorted((tuple(r) for r in df.collect()), key=lambda r: (r[3], r[2], r[0]))


def test_create_changelog_view_lists_each_snapshots_inserts_and_deletes(lake, history) -> None:
    _, (s1, s2, s3, s4, s5) = history

    columns, result = call(lake, "CALL lake.system.create_changelog_view('db.c')")

    assert columns == ["changelog_view"] and result == [("`c_changes`",)]
    assert view_rows(lake, "c_changes") == [
        (1, "eu", "INSERT", 0, s1),
        (2, "eu", "INSERT", 1, s2),
        (3, "us", "INSERT", 2, s3),
        (1, "eu", "DELETE", 3, s4),  # 2 and 3, rewritten by the delete, are not changes
        (2, "eu", "DELETE", 4, s5),
        (2, "us", "INSERT", 4, s5),
    ]
    # after the snapshot current at start-timestamp, up to the one current at end-timestamp
    first, second, third = (history[0].snapshot(i).timestamp_ms for i in (s1, s2, s3))
    call(
        lake,
        "CALL lake.system.create_changelog_view('db.c', 'by_time', map("
        f"'start-timestamp', '{first}', 'end-timestamp', '{third}'))",
    )
    assert view_rows(lake, "by_time") == [
        (2, "eu", "INSERT", 0, s2),
        (3, "us", "INSERT", 1, s3),
    ]
    assert first < second < third


def test_create_changelog_view_update_images_and_net_changes(lake, history) -> None:
    _, (s1, _, s3, s4, s5) = history

    _, updates = call(
        lake,
        "CALL lake.system.create_changelog_view(table => 'db.c', changelog_view => 'upd', "
        f"options => map('start-snapshot-id', '{s3}'), identifier_columns => array('id'))",
    )
    _, net = call(
        lake,
        "CALL lake.system.create_changelog_view(table => 'lake.db.c', changelog_view => 'net', "
        f"options => map('start-snapshot-id', '{s1}', 'end-snapshot-id', '{s5}'), "
        "net_changes => true)",
    )

    assert (updates, net) == ([("upd",)], [("net",)])
    assert view_rows(lake, "upd") == [
        (1, "eu", "DELETE", 0, s4),
        (2, "us", "UPDATE_AFTER", 1, s5),
        (2, "eu", "UPDATE_BEFORE", 1, s5),
    ]
    # 2 was inserted and changed inside the range: only its final form is a change. 3, which
    # the delete and the update rewrote, counts as written by the last of them (Iceberg's
    # net changes keep the newest of the cancelling inserts and deletes too).
    assert view_rows(lake, "net") == [
        (1, "eu", "DELETE", 2, s4),
        (2, "us", "INSERT", 3, s5),
        (3, "us", "INSERT", 3, s5),
    ]


def test_create_changelog_view_counts_rows_removed_by_delete_files(lake) -> None:
    table = merge_on_read_table(lake)
    table.append(rows((1, "eu"), (2, "eu")))
    table.delete("id = 1")  # a position delete file (Iceberg's changelog refuses these)
    first, second = (s.snapshot_id for s in table.snapshots())

    call(lake, "CALL lake.system.create_changelog_view('db.m', 'm_log')")

    assert own_deletes(table) != []
    assert view_rows(lake, "m_log") == [
        (1, "eu", "INSERT", 0, first),
        (2, "eu", "INSERT", 0, first),
        (1, "eu", "DELETE", 1, second),
    ]


def test_show_and_describe_procedures_list_the_system_procedures(lake) -> None:
    shown = lake.sql("SHOW PROCEDURES IN lake.system")
    described = lake.sql("DESCRIBE PROCEDURE lake.system.create_branch")

    assert [r.procedure_name for r in shown] == [
        "add_files",
        "add_partition_field",
        "ancestors_of",
        "cherrypick_snapshot",
        "compute_partition_stats",
        "compute_table_stats",
        "create_branch",
        "create_changelog_view",
        "create_tag",
        "drop_partition_field",
        "drop_ref",
        "expire_snapshots",
        "fast_forward",
        "migrate",
        "publish_changes",
        "register_table",
        "remove_orphan_files",
        "replace_partition_field",
        "rewrite_data_files",
        "rewrite_manifests",
        "rewrite_position_delete_files",
        "rewrite_table_path",
        "rollback_to_snapshot",
        "rollback_to_timestamp",
        "set_current_snapshot",
        "set_identifier_fields",
        "set_write_order",
        "snapshot",
    ]
    assert lake.sql("SHOW PROCEDURES IN lake.db") == []
    assert "create_branch" in described[0].procedure_desc


# ---- bad calls ------------------------------------------------------------------------------
TAG = "CALL lake.system.create_tag"
COMPACT = "CALL lake.system.rewrite_data_files"
COMPACT_OPTIONS = f"{COMPACT}('db.t', options => map"
MANIFESTS = "CALL lake.system.rewrite_manifests"
DELETES = "CALL lake.system.rewrite_position_delete_files"
EXPIRE = "CALL lake.system.expire_snapshots"
ORPHANS = "CALL lake.system.remove_orphan_files"
AT_TIME = "CALL lake.system.rollback_to_timestamp"
SET_CURRENT = "CALL lake.system.set_current_snapshot"
CHANGELOG = "CALL lake.system.create_changelog_view"
BAD_CALLS = [
    ("CALL lake.system.no_such_thing('db.t')", "NoSuchProcedure", "no procedure system.no_such"),
    (f"{TAG}(tabel => 'db.t', tag => 'x')", "UNRECOGNIZED_PARAMETER", "tabel"),
    (f"{TAG}(table => 'db.t')", "REQUIRED_PARAMETER_NOT_FOUND", "`tag`"),
    (f"{TAG}('db.t', 'x', 'abc')", "ValidationError", "snapshot_id takes a bigint, not a string"),
    (f"{TAG}('db.t', 'x', 123456789)", "NoSuchSnapshot", "123456789"),
    (f"{TAG}('db.t', map('a', 'b'))", "ValidationError", "tag takes a string, not a map"),
    ("CALL lake.system.drop_ref('db.t', 'main')", "ValidationError", "main branch"),
    ("CALL lake.system.ancestors_of('nope.t')", "NoSuchTable", "nope.t"),
    (f"{COMPACT}('db.t', options => map('bogus', '1'))", "ValidationError", "bogus"),
    (f"{COMPACT}('db.t', options => map('rewrite-job-order', 'x'))", "ValidationError", "one of"),
    (f"{COMPACT}('db.t', options => map('rewrite-all', 'maybe'))", "ValidationError", "true or"),
    (f"{COMPACT}('db.t', options => map('min-file-size-bytes', '-1'))", "Validation", "at least 0"),
    (f"{COMPACT}('db.t', options => map('compression-factor', '2'))", "Validation", "sort only"),
    (f"{COMPACT_OPTIONS}('delete-ratio-threshold', '1.5'))", "Validation", "at most 1"),
    (f"{COMPACT_OPTIONS}('delete-ratio-threshold', 'x'))", "Validation", "a number"),
    (f"{COMPACT_OPTIONS}('max-files-to-rewrite', '0'))", "Validation", "at least 1"),
    (f"{COMPACT_OPTIONS}('max-file-group-input-files', '0'))", "Validation", "at least 1"),
    (f"{COMPACT_OPTIONS}('partial-progress.max-failed-commits', '-1'))", "Valid", "least 0"),
    (f"{COMPACT_OPTIONS}('remove-dangling-deletes', 'x'))", "Validation", "true or false"),
    (f"{COMPACT_OPTIONS}('use-starting-sequence-number', 'yes'))", "Validation", "true or"),
    (f"{COMPACT_OPTIONS}('output-spec-id', '7'))", "ValidationError", "partition spec 7"),
    (f"{MANIFESTS}('db.t', spec_id => 7)", "ValidationError", "no partition spec 7"),
    (f"{MANIFESTS}('db.t', use_caching => 'yes')", "ValidationError", "use_caching takes a"),
    (f"{DELETES}('db.t', where => 'id = 1')", "UnsupportedByCatalog", "where"),
    (f"{DELETES}('db.t', map('max-file-size-bytes', '1'))", "ValidationError", "max-file-size"),
    (f"{DELETES}('db.t', map('min-input-files', 'x'))", "ValidationError", "min-input-files"),
    (f"{DELETES}('db.t', map('min-input-files', '1'))", "ValidationError", "at least 2"),
    (f"{EXPIRE}('db.t', retain_last => 0)", "ValidationError", "retain_last"),
    (f"{EXPIRE}('db.t', max_concurrent_deletes => 0)", "ValidationError", "greater than 0"),
    (f"{EXPIRE}('db.t', clean_expired_metadata => true)", "Unsupported", "clean_expired"),
    (f"{EXPIRE}('db.t', snapshot_ids => array(123456789))", "NoSuchSnapshot", "123456789"),
    (f"{EXPIRE}('db.t', snapshot_ids => array('a'))", "ValidationError", "array<bigint>"),
    (f"{ORPHANS}('db.t', current_timestamp())", "ValidationError", "24 hours"),
    (f"{ORPHANS}('db.t', file_list_view => 'v')", "UnsupportedByCatalog", "file_list_view"),
    (f"{ORPHANS}('db.t', equal_schemes => map('a', 'b'))", "Unsupported", "equal_schemes"),
    ("CALL lake.system.rollback_to_snapshot('db.t', 123456789)", "NoSuchSnapshot", "123456789"),
    (f"{AT_TIME}('db.t', timestamp_millis(0))", "NoSuchSnapshot", "older than"),
    (f"{SET_CURRENT}('db.t')", "ValidationError", "either snapshot_id or ref"),
    (f"{SET_CURRENT}('db.t', 1, 'main')", "ValidationError", "either snapshot_id or ref"),
    (f"{SET_CURRENT}('db.t', ref => 'nope')", "NoSuchRef", "nope"),
    ("CALL lake.system.cherrypick_snapshot('db.t')", "REQUIRED_PARAMETER", "snapshot_id"),
    ("CALL lake.system.fast_forward('db.t', 'main', 'nope')", "NoSuchRef", "nope"),
    (f"{CHANGELOG}('db.t', options => map('snapshot-id', '1'))", "ValidationError", "snapshot-id"),
    (f"{CHANGELOG}('db.t', options => map('start-snapshot-id', '1'))", "NoSuchSnapshot", "1"),
    (f"{CHANGELOG}('db.t', identifier_columns => array('nope'))", "ValidationError", "nope"),
    (f"{CHANGELOG}('db.t', compute_updates => true)", "ValidationError", "identifier_columns"),
    (
        f"{CHANGELOG}('db.t', options => map('start-timestamp', '5', 'end-timestamp', '5'))",
        "ValidationError",
        "start-timestamp must be before end-timestamp",
    ),
    (
        f"{CHANGELOG}('db.t', identifier_columns => array('id'), net_changes => true)",
        "ValidationError",
        "net_changes cannot be combined",
    ),
]


@pytest.mark.parametrize(("statement", "kind", "names"), BAD_CALLS)
def test_a_bad_call_is_an_analysis_exception_naming_the_problem_and_commits_nothing(
    lake, three_appends, statement: str, kind: str, names: str
) -> None:
    location = three_appends.metadata_location

    with pytest.raises(AnalysisException) as raised:
        lake.spark.sql(statement).collect()

    first_line = str(raised.value).splitlines()[0]
    assert kind in first_line and names in first_line
    assert three_appends.refresh().metadata_location == location


def test_a_failed_procedure_gives_the_typed_lakecat_error_back(lake, three_appends) -> None:
    with pytest.raises(AnalysisException) as raised:
        lake.spark.sql("CALL lake.system.ancestors_of('db.t', 42)").collect()

    error = lakecat_error(raised.value)
    assert isinstance(error, NoSuchSnapshot) and "42" in str(error)
    assert error.__cause__ is raised.value
    with pytest.raises(AnalysisException) as bad_type:
        lake.spark.sql("CALL lake.system.create_tag('db.t', 'x', 'abc')").collect()
    assert isinstance(lakecat_error(bad_type.value), ValidationError)


def test_argument_values_are_checked_and_converted_by_parameter_type() -> None:
    procedure = Procedure(
        "p",
        "",
        (
            Parameter("table", StringType(), required=True),
            Parameter("older_than", TimestampType()),
            Parameter("ids", ArrayType(LongType())),
        ),
        StructType([]),
        lambda ctx, **kwargs: [],
    )

    assert procedure.arguments({"table": "db.t", "older_than": 1_700_000_000_123_456}) == {
        "table": "db.t",
        "older_than": 1_700_000_000_123,  # Spark's microseconds, as milliseconds
        "ids": None,
    }
    with pytest.raises(ValidationError, match="needs a value for table"):
        procedure.arguments({"ids": [1]})
    with pytest.raises(ValidationError, match="ids must be a array<bigint>"):
        procedure.arguments({"table": "t", "ids": "1"})
    with pytest.raises(ValidationError, match="has no parameter nope"):
        procedure.arguments({"table": "t", "nope": 1})
    assert accepts(LongType(), IntegerType()) and not accepts(LongType(), StringType())
    assert accepts(TimestampType(), StringType()) and not accepts(StringType(), LongType())
    assert identifier_parts("lake.`my.db`.`t``x`") == ["lake", "my.db", "t`x"]
    with pytest.raises(ValidationError, match="not a table name"):
        identifier_parts("db..t")


def test_a_cached_table_shows_what_a_procedure_changed(lake, three_appends) -> None:
    first = three_appends.snapshots()[0].snapshot_id
    latest = three_appends.current_snapshot().snapshot_id
    lake.sql("CACHE TABLE lake.db.t")
    try:
        assert len(lake.sql("SELECT * FROM lake.db.t")) == 3

        lake.sql(f"CALL lake.system.rollback_to_snapshot('db.t', {first})")
        assert lake.rows("db.t", "id") == [(1,)]
        assert [r.id for r in lake.sql("SELECT id FROM lake.db.t")] == [1]  # not the cache's

        lake.sql(f"CALL lake.system.set_current_snapshot('db.t', {latest})")
        assert sorted(r.id for r in lake.sql("SELECT id FROM lake.db.t")) == [1, 2, 3]
        assert lake.spark.catalog.isCached("lake.db.t")
    finally:
        lake.sql("UNCACHE TABLE IF EXISTS lake.db.t")
