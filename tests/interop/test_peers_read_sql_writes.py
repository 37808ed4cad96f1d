"""Tables written through lakecat's Spark SQL catalog read the same in the three peers.

Each table gets a history of SQL statements only: INSERT (Spark's Parquet writer), UPDATE,
DELETE with an expression, MERGE with every clause kind, DELETE of whole files. Copy-on-write
tables rewrite with Spark's Parquet writer (``NativeRowLevelWrites``; on v3 the rewritten rows
keep their lineage); merge-on-read tables get
position delete files (v2) or deletion vectors (v3), and their new rows are written by Spark's
Parquet writer in the statement's tasks (``NativeRows``; on v3 with their row lineage). Every
snapshot is read by lakecat and by the peers: pyiceberg and DuckDB must return exactly
lakecat's rows, Iceberg Java (through Spark, by metadata path) the same count and sum, and on
the v3 tables the same ``_row_id`` and ``_last_updated_sequence_number`` for every row.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from peers import (
    canonical_rows,
    counts_misread,
    lakecat_snapshot_rows,
    read_rows,
    require_peers,
    rows_misread,
    snapshot_jobs,
)

from lakecat.catalog import Catalog, Table

pytestmark = [pytest.mark.interop, pytest.mark.spark]

COLUMNS = ["id", "cat", "note"]
LINEAGE = ["id", "_row_id", "_last_updated_sequence_number"]
MODES = {
    "copy-on-write v2": ("copy-on-write", 2),
    "copy-on-write v3": ("copy-on-write", 3),
    "merge-on-read v2": ("merge-on-read", 2),
    "merge-on-read v3": ("merge-on-read", 3),
}


def history(spark: Any, catalog: Catalog, name: str, mode: str, version: int) -> Table:
    table = f"peersql.db.{name}"
    spark.sql(
        f"CREATE TABLE {table} (id bigint, cat string, note string) PARTITIONED BY (cat) "
        f"TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = '{mode}', "
        f"'write.update.mode' = '{mode}', 'write.merge.mode' = '{mode}')"
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 "
        "THEN 'b' ELSE NULL END, concat('n', id) FROM range(0, 300)"
    )
    spark.sql(f"UPDATE {table} SET note = 'updated' WHERE id % 7 = 0")
    spark.sql(f"DELETE FROM {table} WHERE id % 11 = 0")
    spark.createDataFrame(
        [(5, "b", "merged"), (6, "a", "gone"), (1000, "a", "new"), (1001, None, "new")],
        "id bigint, cat string, note string",
    ).createOrReplaceTempView("peersql_src")
    spark.sql(
        f"MERGE INTO {table} t USING peersql_src s ON t.id = s.id "
        "WHEN MATCHED AND s.note = 'gone' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET note = s.note "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(f"DELETE FROM {table} WHERE cat = 'b' AND id < 100")
    return catalog.load_table(f"db.{name}")


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Table]]:
    require_peers()
    from lakecat.spark_ext import attach_catalog

    root: Path = tmp_path_factory.mktemp("sql-peers")
    with Catalog.embedded(root) as catalog:
        catalog.create_namespace("db")
        attach_catalog(spark, "peersql", catalog=catalog)
        yield {
            key: history(spark, catalog, key.replace(" ", "_").replace("-", "_"), mode, version)
            for key, (mode, version) in MODES.items()
        }


def lakecat_rows(tables: dict[str, Table], key: list[Any]) -> list[list[Any]]:
    return lakecat_snapshot_rows(tables, key, COLUMNS)


def test_the_histories_hold_the_expected_rows_and_files(tables: dict[str, Table]) -> None:
    for key, t in tables.items():
        rows = {r[0]: r for r in lakecat_rows(tables, [key, t.current_snapshot().snapshot_id])}
        gone = {i for i in range(300) if i % 11 == 0 or (i % 3 == 1 and i < 100)} | {6}
        assert set(rows) == ({*range(300), 1000, 1001} - gone)
        assert rows[14][2] == "updated" and rows[1001][1] is None
        deletes = t.scan().plan().deletes
        assert bool(deletes) is key.startswith("merge-on-read"), key
        # merge-on-read: the new rows written by Spark's Parquet writer in the tasks
        in_tasks = any("/data/delta-" in f.file_path for f in t.scan().plan_files())
        assert in_tasks is key.startswith("merge-on-read"), key


@pytest.mark.parametrize("peer", ["pyiceberg", "duckdb"])
def test_pyiceberg_and_duckdb_read_every_snapshot_as_lakecat_does(
    tables: dict[str, Table], peer: str
) -> None:
    assert rows_misread(peer, tables, COLUMNS) == []


def test_iceberg_java_reads_every_snapshot_as_lakecat_does(tables: dict[str, Table]) -> None:
    assert counts_misread(tables, "id") == []


def test_iceberg_java_reads_the_row_lineage_lakecat_wrote(tables: dict[str, Table]) -> None:
    v3 = {k: t for k, t in tables.items() if t.metadata.format_version == 3}
    assert sorted(v3) == ["copy-on-write v3", "merge-on-read v3"]
    answers = read_rows("spark", snapshot_jobs(v3, columns=LINEAGE))
    wrong = []
    for a in answers:
        key, snapshot_id = a["key"]
        scan = v3[key].scan(snapshot_id=snapshot_id, columns=LINEAGE)
        if a.get("rows") != canonical_rows(scan.to_arrow(), LINEAGE):
            wrong.append((a["key"], a.get("error") or "lineage differs"))
    assert wrong == []


def test_the_peers_read_the_defaults_of_columns_added_with_one(spark: Any, tmp_path: Path) -> None:
    """A v3 column added by ``ALTER TABLE ... ADD COLUMN ... DEFAULT``: rows written before it
    read its ``initial-default``, rows an ``INSERT`` left it out of hold the ``write-default``
    of their time, in every peer."""
    require_peers()
    from lakecat.spark_ext import attach_catalog

    with Catalog.embedded(tmp_path) as catalog:
        catalog.create_namespace("db")
        attach_catalog(spark, "peerdef", catalog=catalog)
        spark.sql("CREATE TABLE peerdef.db.t (id bigint) TBLPROPERTIES ('format-version' = '3')")
        spark.sql("INSERT INTO peerdef.db.t VALUES (1), (2)")
        spark.sql("ALTER TABLE peerdef.db.t ADD COLUMN region string DEFAULT 'eu'")
        spark.sql("ALTER TABLE peerdef.db.t ADD COLUMN n int DEFAULT 7")
        spark.sql("INSERT INTO peerdef.db.t (id) VALUES (3)")
        spark.sql("ALTER TABLE peerdef.db.t ALTER COLUMN region SET DEFAULT 'us'")
        spark.sql("INSERT INTO peerdef.db.t (id, n) VALUES (4, 0)")
        table = catalog.load_table("db.t")
        want = [[1, "eu", 7], [2, "eu", 7], [3, "eu", 7], [4, "us", 0]]
        columns = ["id", "region", "n"]
        assert canonical_rows(table.to_arrow(), columns) == want
        job = [{"key": "t", "metadata": table.metadata_location, "snapshot": None}]
        for peer in ("pyiceberg", "duckdb", "spark"):
            (answer,) = read_rows(peer, [job[0] | {"columns": columns}])
            assert answer.get("rows") == want, (peer, answer)
