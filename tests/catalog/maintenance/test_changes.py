"""Incremental reads (changes) and the data version, across compaction and row-level writes."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import expire_snapshots, rewrite_data_files, rewrite_manifests
from lakecat.catalog.read.incremental import CHANGE_SNAPSHOT_ID, changes, data_version
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("v", pa.float64())])


def rows(ids: list[int], region: str = "eu", v: float = 0.0) -> pa.Table:
    return pa.table(
        {"id": ids, "region": [region] * len(ids), "v": [v + i for i in ids]}, schema=SCHEMA
    )


def id_list(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.events", SCHEMA, partition_by=["region"])
    t.append(rows([1, 2, 3]))
    t.append(rows([10, 11], "us"))
    return t


def head(t: Table) -> int:
    snap = t.current_snapshot()
    assert snap is not None
    return snap.snapshot_id


# ---- appends and deletes ---------------------------------------------------------------------
def test_changes_between_snapshots_are_the_appended_rows(table: Table) -> None:
    start = head(table)
    first = table.append(rows([4, 5])).snapshot_id
    second = table.append(rows([12], "us")).snapshot_id
    cs = changes(table, from_snapshot_id=start)
    assert id_list(cs.added) == [4, 5, 12] and cs.removed.num_rows == 0
    assert cs.snapshot_ids == (first, second)
    added = cs.added
    by_snapshot = dict(
        zip(added["id"].to_pylist(), added[CHANGE_SNAPSHOT_ID].to_pylist(), strict=True)
    )
    assert by_snapshot == {4: first, 5: first, 12: second}
    only_first = changes(table, from_snapshot_id=start, to_snapshot_id=first)
    assert id_list(only_first.added) == [4, 5]


def test_changes_from_the_beginning_are_every_live_row(table: Table) -> None:
    table.delete("id = 2")
    cs = changes(table)
    assert id_list(cs.added) == [1, 3, 10, 11] and cs.removed.num_rows == 0


def test_copy_on_write_delete_reports_only_the_deleted_rows(table: Table) -> None:
    start = head(table)
    result = table.delete("id = 2")  # rewrites the file holding 1, 2, 3
    assert result is not None
    deleted = result.snapshot_id
    cs = changes(table, from_snapshot_id=start)
    assert cs.added.num_rows == 0
    assert cs.removed.to_pylist() == [
        {"id": 2, "region": "eu", "v": 2.0, CHANGE_SNAPSHOT_ID: deleted}
    ]


def test_an_update_is_a_removed_and_an_added_row(table: Table) -> None:
    start = head(table)
    table.overwrite(rows([2], v=100.0), "id = 2")
    cs = changes(table, from_snapshot_id=start)
    assert cs.removed.select(["id", "v"]).to_pylist() == [{"id": 2, "v": 2.0}]
    assert cs.added.select(["id", "v"]).to_pylist() == [{"id": 2, "v": 102.0}]


def test_rows_added_and_removed_inside_the_range_cancel_out(table: Table) -> None:
    start = head(table)
    table.append(rows([7, 8]))
    table.delete("id = 7")
    table.delete("id = 1")
    cs = changes(table, from_snapshot_id=start)
    assert id_list(cs.added) == [8]
    assert id_list(cs.removed) == [1]


def test_rows_are_a_multiset(table: Table) -> None:
    table.append(rows([1]))  # now two identical rows with id 1
    start = head(table)
    table.overwrite(rows([1]), "id = 1")  # replaced by one
    cs = changes(table, from_snapshot_id=start)
    assert cs.added.num_rows == 0 and id_list(cs.removed) == [1]


# ---- compaction ------------------------------------------------------------------------------
def test_changes_across_a_compaction_skip_rows_it_merely_rewrote(table: Table) -> None:
    start = head(table)
    for i in range(3):
        table.append(rows([20 + i]))
    rewrite_data_files(table)
    table.append(rows([30]))
    rewrite_manifests(table)
    cs = changes(table, from_snapshot_id=start)
    assert id_list(cs.added) == [20, 21, 22, 30] and cs.removed.num_rows == 0
    assert all(table.snapshot(s).operation != "replace" for s in cs.snapshot_ids)
    # a range that holds only the compaction is empty
    before = head(table)
    rewrite_data_files(table, min_input_files=1, target_file_size_bytes=1)
    empty = changes(table, from_snapshot_id=before)
    assert empty.added.num_rows == empty.removed.num_rows == 0 and empty.snapshot_ids == ()


def test_a_delete_after_compaction_reports_only_the_deleted_rows(table: Table) -> None:
    start = head(table)
    table.append(rows([4]))
    rewrite_data_files(table)
    table.delete("id = 2")  # rewrites the compacted file
    cs = changes(table, from_snapshot_id=start)
    assert id_list(cs.added) == [4] and id_list(cs.removed) == [2]


def test_data_version_does_not_advance_on_compaction_or_manifest_rewrite(table: Table) -> None:
    assert data_version(table) == 2
    table.append(rows([4]))
    assert data_version(table) == 3
    compaction = rewrite_data_files(table)
    rewrite_manifests(table)
    assert compaction.snapshot_ids and data_version(table) == 3
    table.delete("id = 4")
    assert data_version(table) == 4
    first = table.snapshots()[0].snapshot_id
    assert data_version(table, first) == 1


def test_data_version_of_an_empty_table_is_zero(catalog: Catalog) -> None:
    empty = catalog.create_table("db.empty", SCHEMA)
    assert data_version(empty) == 0
    cs = changes(empty)
    assert cs.added.num_rows == 0 and cs.added.column_names == [*SCHEMA.names, CHANGE_SNAPSHOT_ID]


# ---- ranges and options ----------------------------------------------------------------------
def test_changes_since_a_timestamp(table: Table) -> None:
    time.sleep(0.002)
    cut = int(time.time() * 1000)
    time.sleep(0.002)
    table.append(rows([40]))
    assert id_list(changes(table, since=cut).added) == [40]
    assert id_list(changes(table, since=0).added) == [1, 2, 3, 10, 11, 40]


def test_columns_select_what_is_returned(table: Table) -> None:
    start = head(table)
    table.append(rows([5]))
    cs = changes(table, from_snapshot_id=start, columns=["id"])
    assert cs.added.column_names == ["id", CHANGE_SNAPSHOT_ID]


def test_invalid_ranges_are_refused(table: Table) -> None:
    first = table.snapshots()[0].snapshot_id
    with pytest.raises(ValidationError):
        changes(table, from_snapshot_id=first, since=0)
    with pytest.raises(NoSuchSnapshot):
        changes(table, from_snapshot_id=42)
    branch_base = head(table)
    table.create_branch("dev", branch_base)
    dev = table.append(rows([99]), branch="dev").snapshot_id
    table.append(rows([98]))
    with pytest.raises(ValidationError, match="not an ancestor"):
        changes(table, from_snapshot_id=dev)
    assert id_list(changes(table, from_snapshot_id=branch_base, to_snapshot_id=dev).added) == [99]


def test_changes_from_the_beginning_need_the_whole_history(table: Table) -> None:
    expire_snapshots(table, older_than=int(time.time() * 1000) + 60_000)
    with pytest.raises(NoSuchSnapshot, match="expired"):
        changes(table)
    start = head(table)
    table.append(rows([6]))
    assert id_list(changes(table, from_snapshot_id=start).added) == [6]


def test_rows_with_nested_values_cancel_too(catalog: Catalog) -> None:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("tags", pa.list_(pa.string())),
            ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
        ]
    )
    t = catalog.create_table("db.nested", schema)
    data = pa.table(
        {
            "id": [1, 2],
            "tags": [["a"], ["b", "c"]],
            "point": [{"x": 1.0, "y": 2.0}, {"x": float("nan"), "y": None}],
        },
        schema=schema,
    )
    t.append(data)
    start = head(t)
    t.delete("id = 1")  # rewrites the file: row 2 is removed and re-added unchanged
    cs = changes(t, from_snapshot_id=start)
    assert cs.added.num_rows == 0
    assert cs.removed.column("id").to_pylist() == [1]
