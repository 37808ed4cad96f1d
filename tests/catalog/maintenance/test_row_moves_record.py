"""A compaction's row-moves record (format v2): written with the snapshot, kept as long as it.

A merge-on-read change of a v2 table that loses the race to a compaction finds its rows in the
compaction's output through this record (``tests/catalog/commit/test_row_level_conflicts.py``
races them). Here: which compactions write one, that it maps every live row of the inputs to
where the output holds it, that orphan removal keeps it and expiry deletes it with its
snapshot, that a compaction that did not land leaves none, and that an unreadable one fails the
change typed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.commit.moves import ROW_MOVES_KEY, read_row_moves
from lakecat.catalog.maintenance import (
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
)
from lakecat.catalog.read.scan import Scan
from lakecat.metadata.errors import ConcurrentDeleteRead
from lakecat.metadata.io.fileio import local_path

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
MOR = {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}


def rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": pa.array([0] * len(ids))})


def make(catalog: Catalog, version: str = "2") -> Table:
    t = catalog.create_table("db.m", SCHEMA, properties={**MOR, "format-version": version})
    t.append(rows(range(0, 100)))
    t.append(rows(range(100, 200)))
    t.delete("id IN (3, 150)")  # deleted before the compaction reads: not in the output
    return t


def record_of(t: Table) -> str | None:
    snap = t.refresh().metadata.current_snapshot
    assert snap is not None and snap.operation == "replace"
    return snap.summary.get(ROW_MOVES_KEY)


def row_moves_files(t: Table) -> list[Path]:
    return sorted(Path(local_path(t.location)).rglob("*-row-moves.parquet"))


def test_the_record_maps_every_live_input_row_to_the_same_row_of_the_output(
    catalog: Catalog,
) -> None:
    t = make(catalog)
    before = Scan(t.io, t.metadata, t.metadata.current_snapshot, t.schema())
    plan = before.plan()
    inputs = {f.file_path: before.live_rows(f, plan, position_column="_pos") for f in plan.files}
    rewrite_data_files(t)
    location = record_of(t)
    assert location is not None and Path(local_path(location)).exists()
    moves = read_row_moves(t.io, location)
    [output] = t.scan().plan_files()
    written = t.to_arrow()  # one output file, read in order
    assert output.record_count == written.num_rows == 198
    for path, live in inputs.items():
        assert moves.covers(path)
        moved = moves.moved(path, live.column("_pos").combine_chunks())
        assert list(moved) == [output.file_path]
        got = pc.take(written.column("id"), moved[output.file_path])
        assert got.to_pylist() == live.column("id").to_pylist()
    [first] = [p for p, live in inputs.items() if 0 in live.column("id").to_pylist()]
    assert moves.moved(first, pa.array([3], pa.int64())) == {}  # deleted before it was read


def test_a_v3_or_sorted_compaction_writes_no_record(catalog: Catalog) -> None:
    t = make(catalog, "3")
    rewrite_data_files(t)
    assert record_of(t) is None  # v3 finds rows by row id
    other = catalog.create_table("db.s", SCHEMA, properties=MOR)
    other.append(rows(range(0, 10)))
    other.append(rows(range(10, 20)))
    rewrite_data_files(other, sort_by=["id"])
    assert record_of(other) is None
    assert row_moves_files(t) == [] and row_moves_files(other) == []


def test_orphan_removal_keeps_the_record_and_expiry_deletes_it_with_its_snapshot(
    catalog: Catalog,
) -> None:
    t = make(catalog)
    rewrite_data_files(t)
    location = record_of(t)
    assert location is not None
    remove_orphan_files(t, older_than=int(time.time() * 1000) + 60_000)
    assert Path(local_path(location)).exists()
    t.append(rows(range(200, 201)))
    expire_snapshots(t, older_than=int(time.time() * 1000) + 60_000, retain_last=1)
    assert not Path(local_path(location)).exists()
    assert row_moves_files(t) == []


def test_a_compaction_that_loses_leaves_no_record(catalog: Catalog) -> None:
    t = make(catalog)
    t.set_properties({"write.delete.mode": "copy-on-write"})

    def progress(done: int, total: int) -> None:
        if done == 0:  # planned and about to commit: a copy-on-write delete removes an input
            catalog.load_table("db.m").delete("id = 7")

    result = rewrite_data_files(t, progress=progress)
    assert result.groups_committed == 0 and len(result.groups_failed) == 1
    assert row_moves_files(t) == []


def test_an_unreadable_record_fails_the_change_typed_and_changes_nothing(
    catalog: Catalog,
) -> None:
    t = make(catalog)
    later = catalog.load_table("db.m")
    rewrite_data_files(catalog.load_table("db.m"))
    location = record_of(t)
    assert location is not None
    Path(local_path(location)).write_bytes(b"not parquet")
    head = t.refresh().metadata_location
    with pytest.raises(ConcurrentDeleteRead, match="no row moves"):
        later.delete("id = 5")
    assert t.refresh().metadata_location == head
