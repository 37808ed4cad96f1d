"""Spark's compaction knows where each row went, as lakecat's own does: a merge-on-read change
that loses the race to it finds its rows in the output (format v2: by the row-moves record it
commits; v3: by row id), and one that wins the race has its deletes carried over to the output
instead of failing the compaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import lakecat.spark_ext.dml.compaction as spark_compaction
from lakecat.catalog import Catalog, Table
from lakecat.catalog.commit.moves import ROW_MOVES_KEY, read_row_moves
from lakecat.spark_ext import compact

pytestmark = pytest.mark.spark

MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
N = 1000


def make(lake: Catalog, version: str) -> Table:
    t = lake.create_table(
        "db.r",
        pa.schema([("id", pa.int64()), ("v", pa.int64())]),
        properties={**MOR, "format-version": version},
    )
    for start in (0, N):
        ids = pa.array(range(start, start + N), pa.int64())
        t.append(pa.table({"id": ids, "v": pa.array([0] * N, pa.int64())}))
    t.delete("id IN (3, 1003)")  # position deletes the compaction applies as it reads
    return t


def state(lake: Catalog) -> dict[int, int]:
    t = lake.load_table("db.r")
    return dict(zip(*(t.to_arrow().column(c).to_pylist() for c in ("id", "v")), strict=True))


def expected(**changes: Any) -> dict[int, int]:
    rows = {i: 0 for i in range(2 * N) if i not in (3, 1003)}
    for i in changes.get("deleted", ()):
        rows.pop(i)
    rows.update(changes.get("updated", {}))
    return rows


LATER: dict[str, tuple[Callable[[Table], object], dict[int, int]]] = {
    "delete": (lambda t: t.delete("id IN (5, 1500, 1999)"), expected(deleted=(5, 1500, 1999))),
    "update": (lambda t: t.update({"v": 9}, "id IN (7, 1200)"), expected(updated={7: 9, 1200: 9})),
}


@pytest.mark.parametrize("version", ["2", "3"])
@pytest.mark.parametrize("name", sorted(LATER))
def test_a_merge_on_read_change_after_a_spark_compaction_of_its_files_commits(
    spark: Any, lake: Catalog, version: str, name: str
) -> None:
    make(lake, version)
    later = lake.load_table("db.r")  # plans on the files the compaction removes
    result = compact(spark, "db.r")
    assert (result.groups_committed, result.files_removed, result.files_added) == (1, 2, 1)
    replace = lake.load_table("db.r").current_snapshot()
    assert replace is not None and replace.operation == "replace"
    record = replace.summary.get(ROW_MOVES_KEY)
    if version == "2":  # no row ids: the record is how the change finds its rows
        assert record is not None
        moves = read_row_moves(lake.load_table("db.r").io, record)
        assert sorted(f.file_path for f in later.scan().plan_files()) == sorted(moves.inputs)
    else:
        assert record is None

    change, want = LATER[name]
    change(later)

    assert state(lake) == want
    after = lake.load_table("db.r")
    [output] = after.scan().plan_files() if name == "delete" else [None]
    if output is not None:  # the change's deletes name the compaction's output file only
        [deletes] = after.scan().plan().deletes.values()
        assert sum(d.record_count for d in deletes) == 3


@pytest.mark.parametrize("version", ["2", "3"])
def test_a_spark_compaction_that_loses_to_a_merge_on_read_delete_carries_it_over(
    spark: Any, lake: Catalog, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(lake, version)
    staged_write = spark_compaction.stage_write_by_task

    def delete_meanwhile(*args: Any, **kwargs: Any) -> Any:
        staged = staged_write(*args, **kwargs)  # the rows are written, not committed yet
        lake.load_table("db.r").delete("id IN (5, 1500)")
        return staged

    monkeypatch.setattr(spark_compaction, "stage_write_by_task", delete_meanwhile)
    result = compact(spark, "db.r")

    assert result.groups_failed == () and result.groups_committed == 1
    assert state(lake) == expected(deleted=(5, 1500))
    after = lake.load_table("db.r")
    plan = after.scan().plan()
    [output] = plan.files
    [carried] = plan.deletes[output.file_path]
    assert carried.record_count == 2


def test_a_group_whose_rows_went_to_several_partitions_commits_without_a_record(
    spark: Any, lake: Catalog
) -> None:
    """Files of an older partition spec are rewritten into the new spec's partitions: their
    rows do not stay in one run of output files, so no record is written (a change that loses
    the race then fails typed, as after a sorted compaction)."""
    t = lake.create_table(
        "db.r",
        pa.schema([("id", pa.int64()), ("v", pa.int64())]),
        properties={**MOR, "format-version": "2"},
    )
    for start in (0, 10):
        ids = pa.array(range(start, start + 10), pa.int64())
        t.append(pa.table({"id": ids, "v": pa.array([i % 2 for i in range(10)], pa.int64())}))
    with t.update_spec() as update:
        update.add_field("v")
    result = compact(spark, "db.r")
    assert result.groups_committed == 1 and result.files_added == 2
    replace = lake.load_table("db.r").current_snapshot()
    assert replace is not None and ROW_MOVES_KEY not in replace.summary
    assert sorted(state(lake)) == list(range(20))


def test_the_writer_notes_the_blocks_of_positions_across_batch_boundaries() -> None:
    from lakecat.spark_ext.source.write_jobs import _BlockRecorder
    from lakecat.spark_ext.types import ROW_ADDRESS_COLUMN, ROW_ADDRESS_SHIFT

    rows = [(0, p) for p in range(10) if p not in (4, 5)] + [(1, p) for p in range(3)]
    addresses = [(f << ROW_ADDRESS_SHIFT) + p for f, p in rows]
    batches = [
        pa.record_batch({"id": pa.array(range(k, min(k + 3, len(rows)))), ROW_ADDRESS_COLUMN: a})
        for k in range(0, len(rows), 3)
        for a in [pa.array(addresses[k : k + 3], pa.int64())]
    ]
    recorder = _BlockRecorder()
    written = list(recorder.strip(batches))
    assert [b.schema.names for b in written] == [["id"]] * len(batches)
    assert recorder.blocks == [(0, 0, 4), (0, 6, 4), (1, 0, 3)]
