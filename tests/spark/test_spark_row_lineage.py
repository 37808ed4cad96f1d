"""Row lineage (format v3) through Spark: ``_row_id`` and ``_last_updated_sequence_number``.

The data source adds both columns with the read option ``row-lineage`` (or when a user-given
schema names them), assigned as the spec says: a value stored in the file, else the file's
``first_row_id`` plus the row's position, and the file's data sequence number. Spark reads the
same values as the Python scan at every snapshot of a history with merge-on-read changes, a
copy-on-write update and a compaction, with deletes applied, filters pushed down, the
metadata columns, and time travel; ``lk.read`` goes to the data source for them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import rewrite_data_files

pytestmark = pytest.mark.spark

LINEAGE = ["_row_id", "_last_updated_sequence_number"]
MOR = {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}


def rows(ids: range, v: int = 0) -> pa.Table:
    return pa.table(
        {"id": pa.array(list(ids), pa.int64()), "v": pa.array([v] * len(ids), pa.int64())}
    )


@pytest.fixture
def history(lake: Catalog) -> tuple[Table, list[int]]:
    """A v3 table: two appends, a merge-on-read delete and update, a compaction, a
    copy-on-write update; the snapshot ids in order."""
    table = lake.create_table("db.t", rows(range(0)).schema, properties={"format-version": "3"})
    snapshots = []

    def step() -> None:
        snapshots.append(table.refresh().metadata.current_snapshot_id)

    table.append(rows(range(0, 20)))
    step()
    table.append(rows(range(20, 40)))
    step()
    table.set_properties(MOR)
    table.delete("id IN (3, 25)")
    step()
    table.update({"v": 1}, "id IN (4, 30)")
    step()
    rewrite_data_files(table)
    step()
    table.set_properties({"write.update.mode": "copy-on-write"})
    table.update({"v": 2}, "id = 5")
    step()
    return table, snapshots


def python_lineage(table: Table, snapshot_id: int, row_filter: str | None = None) -> list[Any]:
    got = table.scan(row_filter, columns=["id", "v", *LINEAGE], snapshot_id=snapshot_id)
    return sorted(tuple(r.values()) for r in got.to_arrow().to_pylist())


def spark_lineage(df: Any) -> list[Any]:
    return sorted(tuple(r) for r in df.select("id", "v", *LINEAGE).collect())


def test_the_data_source_reads_the_lineage_python_reads_at_every_snapshot(
    spark: Any, history: tuple[Table, list[int]]
) -> None:
    table, snapshots = history
    for snapshot_id in snapshots:
        df = (
            spark.read.format("lakecat")
            .option("row-lineage", "true")
            .option("snapshot-id", str(snapshot_id))
            .load("db.t")
        )
        expected = python_lineage(table, snapshot_id)
        assert spark_lineage(df) == expected, snapshot_id
        ids = [r[2] for r in expected]
        assert None not in ids and len(set(ids)) == len(ids)
    # the current state: updated rows keep their id and carry their update's sequence number
    last = {r[0]: r for r in python_lineage(table, snapshots[-1])}
    first = {r[0]: r for r in python_lineage(table, snapshots[1])}
    assert last[4][2] == first[4][2] and last[4][3] > first[4][3]
    assert last[5][2] == first[5][2] and last[5][3] > last[4][3]
    assert last[6][2:] == first[6][2:]


def test_lineage_with_a_pushed_filter_counts_positions_over_every_row(
    spark: Any, history: tuple[Table, list[int]]
) -> None:
    table, snapshots = history
    for snapshot_id in (snapshots[3], snapshots[-1]):  # with deletes to apply; compacted
        df = (
            spark.read.format("lakecat")
            .option("row-lineage", "true")
            .option("snapshot-id", str(snapshot_id))
            .load("db.t")
            .where("id >= 10 AND id < 32")
        )
        assert spark_lineage(df) == python_lineage(table, snapshot_id, "id >= 10 AND id < 32")


def test_lineage_and_metadata_columns_read_together(
    spark: Any, history: tuple[Table, list[int]]
) -> None:
    table, snapshots = history
    df = (
        spark.read.format("lakecat")
        .option("row-lineage", "true")
        .option("metadata-columns", "true")
        .option("snapshot-id", str(snapshots[3]))
        .load("db.t")
    )
    assert df.columns == ["id", "v", *LINEAGE, "_file", "_pos"]
    got = df.collect()
    assert sorted((r.id, r.v, r._row_id, r._last_updated_sequence_number) for r in got) == (
        python_lineage(table, snapshots[3])
    )
    # before compaction, a row never updated has the id its file's first row id + position
    files = {f.file_path: f for f in table.scan(snapshot_id=snapshots[3]).plan().files}
    for r in got:
        f = files[r._file]
        if f.first_row_id is not None and r.v == 0:
            assert r._row_id == f.first_row_id + r._pos


def test_a_user_given_schema_may_name_the_lineage_columns(
    spark: Any, history: tuple[Table, list[int]]
) -> None:
    table, snapshots = history
    df = spark.read.format("lakecat").schema("id long, _row_id long").load("db.t")
    want = sorted((r[0], r[2]) for r in python_lineage(table, snapshots[-1]))
    assert sorted(tuple(r) for r in df.collect()) == want


def test_lk_read_reads_lineage_through_the_data_source(
    spark: Any, history: tuple[Table, list[int]]
) -> None:
    import lakecat.spark_ext as lk

    table, snapshots = history
    df = lk.read(spark, "db.t", **{"row-lineage": "true"})
    assert spark_lineage(df) == python_lineage(table, snapshots[-1])


def test_a_v2_table_reads_null_lineage(spark: Any, lake: Catalog) -> None:
    table = lake.create_table("db.v2", rows(range(0)).schema)
    table.append(rows(range(3)))
    df = spark.read.format("lakecat").option("row-lineage", "true").load("db.v2")
    assert sorted(tuple(r) for r in df.select("id", *LINEAGE).collect()) == [
        (0, None, None),
        (1, None, None),
        (2, None, None),
    ]


# ---- Spark's rewrites of a v3 table keep row lineage ------------------------------------------
def lineage_by_id(table: Table) -> dict[int, tuple[int, int]]:
    """id -> (_row_id, _last_updated_sequence_number) of the table's current rows."""
    got = table.refresh().scan(columns=["id", *LINEAGE]).to_arrow().to_pylist()
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in got}


def current_sequence_number(table: Table) -> int:
    snapshot = table.refresh().metadata.current_snapshot
    assert snapshot is not None
    return int(snapshot.sequence_number)


@pytest.fixture
def v3(lake: Catalog) -> Table:
    table = lake.create_table("db.v3", rows(range(0)).schema, properties={"format-version": "3"})
    table.append(rows(range(0, 10)))
    table.append(rows(range(10, 20)))
    return table


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_spark_deletes_and_updates_keep_row_ids(spark: Any, v3: Table, mode: str) -> None:
    import lakecat.spark_ext as lk

    v3.set_properties({"write.delete.mode": mode, "write.update.mode": mode})
    before = lineage_by_id(v3)
    lk.delete(spark, "db.v3", "id % 10 = 3")
    deleted = lineage_by_id(v3)
    assert deleted == {i: before[i] for i in before if i % 10 != 3}  # nothing restamped
    lk.update(spark, "db.v3", "id IN (4, 15)", {"v": "v + 1"})
    updated = lineage_by_id(v3)
    stamp = current_sequence_number(v3)
    assert {i: rid for i, (rid, _) in updated.items()} == {i: r for i, (r, _) in deleted.items()}
    assert {i for i, (_, seq) in updated.items() if seq == stamp} == {4, 15}
    assert {i: v for i, v in updated.items() if i not in (4, 15)} == {
        i: v for i, v in deleted.items() if i not in (4, 15)
    }


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_a_spark_merge_keeps_the_ids_of_kept_and_updated_rows_and_gives_new_rows_new_ids(
    spark: Any, v3: Table, mode: str
) -> None:
    import lakecat.spark_ext as lk

    v3.set_properties({"write.merge.mode": mode})
    before = lineage_by_id(v3)
    source = spark.createDataFrame([(2, 7), (12, 7), (100, 7)], "id long, v long")
    lk.merge(
        spark,
        target="db.v3",
        source=source,
        on="t.id = s.id",
        when_matched_update="*",
        when_not_matched_insert="*",
    )
    after = lineage_by_id(v3)
    stamp = current_sequence_number(v3)
    assert {i: after[i][0] for i in before} == {i: before[i][0] for i in before}
    assert {i for i, (_, seq) in after.items() if seq == stamp} == {2, 12, 100}
    assert after[100][0] is not None and after[100][0] not in {r for r, _ in before.values()}
    assert sorted(v3.to_arrow().column("v").to_pylist()).count(7) == 3


def test_spark_compaction_keeps_every_row_id_and_sequence_number(spark: Any, v3: Table) -> None:
    import lakecat.spark_ext as lk

    v3.set_properties({"write.delete.mode": "merge-on-read"})
    v3.delete("id = 3")
    before = lineage_by_id(v3)
    result = lk.compact(spark, "db.v3")
    assert result.files_removed == 2 and result.files_added == 1
    assert lineage_by_id(v3) == before
    assert not v3.scan().plan().deletes  # the deletion vector applied and dropped
