"""Spark reads tables with delete files exactly as Iceberg Java does, on every read path.

The tables of ``java_fixtures.py`` (position deletes, equality deletes, deletion vectors, across
partition-spec evolution; format versions 2 and 3), opened with lakecat on Java's JDBC catalog
(read only), are read through the ``lakecat`` data source (``spark.read.format("lakecat")``),
through ``lk.read`` (native: Spark's Parquet reader with an anti join on
``_metadata.row_index`` for position deletes and deletion vectors; the data source for
equality deletes) and through the Spark SQL catalog, at every snapshot: the rows equal what
Iceberg Java read (``expected.json``).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from peers import canonical_rows

from lakecat.catalog import Catalog

pytestmark = [pytest.mark.interop, pytest.mark.spark]

COLUMNS = ["id", "cat", "note"]
POSITIONAL = [
    "pos_unpartitioned",
    "pos_identity",
    "pos_bucket",
    "pos_spec_evolution",
    "dv_unpartitioned",
    "dv_identity",
    "dv_upgraded_from_v2",
]
EQUALITY = ["eq_unpartitioned", "eq_identity", "eq_global_after_evolution"]


@pytest.fixture(scope="module")
def lake(java_lake: Catalog) -> Catalog:
    return java_lake


@pytest.fixture
def registered(spark: Any, lake: Catalog) -> Catalog:
    from lakecat.spark_ext import register

    register(spark, catalog=lake)
    return lake


def spark_rows(df: Any, columns: list[str] = COLUMNS) -> list[list[Any]]:
    table: pa.Table = df.toArrow()
    return canonical_rows(table, columns)


def snapshots(expected: dict[str, Any], name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = expected["tables"][name]["snapshots"]
    assert found
    return found


@pytest.mark.parametrize("name", POSITIONAL + EQUALITY)
def test_the_data_source_reads_every_snapshot_as_java_does(
    spark: Any, registered: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    for snap in snapshots(java_expected, name):
        df = (
            spark.read.format("lakecat")
            .option("snapshot-id", str(snap["snapshot_id"]))
            .load(f"db.{name}")
        )
        assert spark_rows(df) == snap["rows"], f"{name} at {snap['snapshot_id']}"
        assert df.count() == len(snap["rows"])


@pytest.mark.parametrize("name", POSITIONAL + EQUALITY)
def test_lk_read_reads_every_snapshot_as_java_does(
    spark: Any, registered: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    import lakecat.spark_ext as lk

    for snap in snapshots(java_expected, name):
        options = {"snapshot-id": snap["snapshot_id"]}
        df = lk.read(spark, f"db.{name}", **options)
        assert spark_rows(df) == snap["rows"], f"{name} at {snap['snapshot_id']}"
        assert df.count() == len(snap["rows"])


@pytest.mark.parametrize("name", POSITIONAL)
def test_position_deletes_and_deletion_vectors_keep_lk_read_native(
    spark: Any, registered: Catalog, name: str
) -> None:
    import lakecat.spark_ext as lk

    assert lk.native_read_support(spark, f"db.{name}").reason is None


@pytest.mark.parametrize("name", EQUALITY)
def test_equality_deletes_send_lk_read_to_the_data_source(
    spark: Any, registered: Catalog, name: str
) -> None:
    import lakecat.spark_ext as lk

    reason = lk.native_read_support(spark, f"db.{name}").reason
    assert reason is not None and "equality deletes" in reason


@pytest.mark.parametrize("name", ["pos_identity", "dv_identity", "eq_identity"])
def test_filters_apply_after_the_deletes_on_both_paths(
    spark: Any, registered: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    import lakecat.spark_ext as lk

    last = snapshots(java_expected, name)[-1]
    want = sorted(
        ([r[0], r[1]] for r in last["rows"] if r[1] != "b" and r[0] >= 40),
        key=lambda r: tuple((v is None, v) for v in r),
    )
    condition = "(cat IS NULL OR cat <> 'b') AND id >= 40"
    native = lk.read(spark, f"db.{name}", filter=condition).select("id", "cat")
    assert spark_rows(native, ["id", "cat"]) == want
    source = spark.read.format("lakecat").option("filter", condition).load(f"db.{name}")
    assert spark_rows(source.select("id", "cat"), ["id", "cat"]) == want
    pushed = spark.read.format("lakecat").load(f"db.{name}").where(condition).select("id", "cat")
    assert spark_rows(pushed, ["id", "cat"]) == want


@pytest.mark.parametrize("name", ["pos_spec_evolution", "dv_upgraded_from_v2"])
def test_metadata_columns_give_each_row_its_position_in_its_file(
    spark: Any, registered: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    """``_pos`` counts every row of the file, deleted ones included: exactly the positions
    no delete names are read (what a copy-on-write rewrite by position relies on)."""
    last = snapshots(java_expected, name)[-1]
    df = (
        spark.read.format("lakecat")
        .option("metadata-columns", "true")
        .load(f"db.{name}")
        .select("_file", "_pos")
    )
    got = {(r["_file"], r["_pos"]) for r in df.collect()}
    want = {
        (f["file_path"], p)
        for f in last["data_files"]
        for p in range(f["record_count"])
        if p not in set(f["deleted_positions"])
    }
    assert got == want
    assert len(want) == len(last["rows"])


def test_the_sql_catalog_reads_deletes_as_java_does_with_time_travel(
    spark: Any, lake: Catalog, java_expected: dict[str, Any]
) -> None:
    from lakecat.spark_ext import SparkCatalogError, attach_catalog

    try:
        attach_catalog(spark, "peersql", catalog=lake)
    except SparkCatalogError as exc:
        pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    for name in POSITIONAL + EQUALITY:
        snaps = snapshots(java_expected, name)
        query = f"SELECT * FROM peersql.db.{name}"
        current = spark.sql(query)
        assert spark_rows(current) == snaps[-1]["rows"], name
        # Spark's reader applies every delete: position deletes and DVs as they are, equality
        # deletes as the positions the driver found them to delete
        plan = spark.sql(f"EXPLAIN {query}").collect()[0][0]
        assert "reader=parquet" in plan, (name, plan)
        if name in POSITIONAL:  # each row's file and position, deleted positions skipped
            last = snaps[-1]
            got = spark.sql(f"SELECT _file, _pos FROM peersql.db.{name}").collect()
            want = {
                (f["file_path"], p)
                for f in last["data_files"]
                for p in range(f["record_count"])
                if p not in set(f["deleted_positions"])
            }
            assert {(r["_file"], r["_pos"]) for r in got} == want, name
        for snap in snaps[1:-1]:
            old = spark.sql(f"SELECT * FROM peersql.db.{name} VERSION AS OF {snap['snapshot_id']}")
            assert spark_rows(old) == snap["rows"], f"{name} at {snap['snapshot_id']}"
        counted = spark.sql(f"SELECT count(*) AS n FROM peersql.db.{name}").collect()
        assert counted[0]["n"] == len(snaps[-1]["rows"])


def test_equality_deletes_past_the_drivers_bound_go_to_the_data_source(
    spark: Any, lake: Catalog, java_expected: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakecat.spark_ext import SparkCatalogError, attach_catalog
    from lakecat.spark_ext.native import scan as native_scan

    try:
        attach_catalog(spark, "peersql", catalog=lake)
    except SparkCatalogError as exc:
        pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    monkeypatch.setattr(native_scan, "MAX_EQUALITY_DELETE_ROWS", 10)
    for name in EQUALITY:
        query = f"SELECT * FROM peersql.db.{name}"
        plan = spark.sql(f"EXPLAIN {query}").collect()[0][0]
        assert "reader=lakecat" in plan, (name, plan)
        assert spark_rows(spark.sql(query)) == snapshots(java_expected, name)[-1]["rows"], name


# the partitioned tables, and the key their files are grouped by for storage-partitioned reads
# (none where the snapshot's files share no partition field across specs)
GROUPED_BY = {
    "pos_identity": "identity(cat)",
    "pos_bucket": "bucket(4, id)",
    "dv_identity": "identity(cat)",
    "eq_identity": "identity(cat)",
    "pos_spec_evolution": None,
    "eq_global_after_evolution": None,
}


@pytest.mark.parametrize("name", sorted(GROUPED_BY))
def test_reads_grouped_by_javas_partition_values_give_javas_rows(
    spark: Any, lake: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    """With ``spark.lakecat.preserveDataGrouping``, the files are grouped by the partition
    values Java's manifests hold (NULL included): the rows are Java's, and an aggregate by the
    key column, or a self-join on it, runs without a shuffle."""
    from collections import Counter

    from lakecat.spark_ext import SparkCatalogError, attach_catalog
    from lakecat.spark_ext.native.write import session_conf

    try:
        attach_catalog(spark, "peersgrp", catalog=lake)
    except SparkCatalogError as exc:
        pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    want = snapshots(java_expected, name)[-1]["rows"]
    table = f"peersgrp.db.{name}"
    settings = {
        "spark.lakecat.preserveDataGrouping": "true",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
    }
    with session_conf(spark, settings):
        plan = spark.sql(f"EXPLAIN SELECT * FROM {table}").collect()[0][0]
        key = GROUPED_BY[name]
        assert (f"grouped-by=[{key}]" in plan) if key else ("grouped-by" not in plan), plan
        assert spark_rows(spark.sql(f"SELECT * FROM {table}")) == want
        if key == "identity(cat)":
            query = f"SELECT cat, count(*) AS n FROM {table} GROUP BY cat"
            expected = Counter(row[1] for row in want)
        elif key is not None:
            query = f"SELECT a.id, 1 AS n FROM {table} a JOIN {table} b ON a.id = b.id"
            expected = Counter(row[0] for row in want)
        else:
            return
        df = spark.sql(query)
        executed = str(df._jdf.queryExecution().executedPlan().toString())
        assert "Exchange" not in executed, executed
        got: Counter[Any] = Counter()
        for row in df.collect():
            got[row[0]] += row["n"]
        assert got == expected
