"""Snapshot management: rollback, set current, cherry-pick, fast-forward."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import (
    cherry_pick,
    fast_forward,
    remove_orphan_files,
    rollback_to_snapshot,
    rollback_to_timestamp,
    set_current_snapshot,
)
from lakecat.metadata.errors import NoSuchRef, NoSuchSnapshot, RequirementFailed, ValidationError
from lakecat.metadata.table.snapshots import APPEND, Snapshot

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def current(t: Table) -> Snapshot:
    """The table's current snapshot (the tests only ask once there is one)."""
    snap = t.current_snapshot()
    assert snap is not None
    return snap


def rows(ids: list[int], region: str = "eu") -> pa.Table:
    return pa.table({"id": ids, "region": [region] * len(ids)}, schema=SCHEMA)


def ids(t: Table, **kwargs: Any) -> list[int]:
    return sorted(t.to_arrow(**kwargs).column("id").to_pylist())


def paths(t: Table, **kwargs: Any) -> set[str]:
    return {f.file_path for f in t.scan(**kwargs).plan_files()}


def snapshot_ids(t: Table) -> list[int]:
    return [s.snapshot_id for s in t.snapshots()]


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.events", SCHEMA, partition_by=["region"])
    for i in range(3):
        t.append(rows([i]))
        time.sleep(0.002)  # distinct commit times for rollback_to_timestamp
    return t


# ---- rollback and set current --------------------------------------------------------------
def test_rollback_makes_an_ancestor_current_again(table: Table) -> None:
    _, second, _ = snapshot_ids(table)
    result = rollback_to_snapshot(table, second)
    assert current(table).snapshot_id == second == result.metadata.current_snapshot_id
    assert ids(table) == [0, 1]
    assert len(table.snapshots()) == 3  # nothing is deleted; the rolled-back snapshot stays
    assert table.history()[-1][1] == second


def test_rollback_to_a_non_ancestor_is_refused(table: Table) -> None:
    first, _, third = snapshot_ids(table)
    rollback_to_snapshot(table, first)
    with pytest.raises(ValidationError, match="not an ancestor"):
        rollback_to_snapshot(table, third)
    with pytest.raises(NoSuchSnapshot):
        rollback_to_snapshot(table, 42)


def test_set_current_snapshot_allows_any_snapshot(table: Table) -> None:
    first, _, third = snapshot_ids(table)
    rollback_to_snapshot(table, first)
    set_current_snapshot(table, third)  # undo the rollback
    assert ids(table) == [0, 1, 2]
    with pytest.raises(NoSuchSnapshot):
        set_current_snapshot(table, 42)


def test_rollback_to_timestamp_picks_the_newest_ancestor_before_it(table: Table) -> None:
    first, second, third = table.snapshots()
    rollback_to_timestamp(table, third.timestamp_ms)
    assert current(table).snapshot_id == second.snapshot_id
    with pytest.raises(NoSuchSnapshot, match=r"older than 2\d{3}-\d\d-\d\dT[\d:.]+Z$"):
        rollback_to_timestamp(table, first.timestamp_ms)  # said as a time, not in ms


def test_rollback_refuses_to_discard_a_commit_it_has_not_seen(
    catalog: Catalog, table: Table
) -> None:
    first = snapshot_ids(table)[0]
    catalog.load_table("db.events").append(rows([99]))
    with pytest.raises(RequirementFailed):
        rollback_to_snapshot(table, first)  # `table` has not seen the append
    assert 99 in ids(table.refresh())
    rollback_to_snapshot(table, first)  # after a refresh the caller has decided knowingly
    assert ids(table) == [0]


# ---- fast-forward ----------------------------------------------------------------------------
def test_fast_forward_moves_a_branch_to_a_descendant(table: Table) -> None:
    head = current(table).snapshot_id
    table.create_branch("dev", head, min_snapshots_to_keep=3)
    table.append(rows([10]), branch="dev")
    table.append(rows([11]), branch="dev")
    dev_head = table.refs()["dev"].snapshot_id
    fast_forward(table, "main", "dev")
    assert current(table).snapshot_id == dev_head
    assert ids(table) == [0, 1, 2, 10, 11]
    assert table.refs()["dev"].min_snapshots_to_keep == 3


def test_fast_forward_requires_the_branch_to_be_an_ancestor(table: Table) -> None:
    head = current(table).snapshot_id
    table.create_branch("dev", head)
    table.append(rows([10]), branch="dev")
    table.append(rows([20]))  # main diverged
    with pytest.raises(ValidationError, match="not an ancestor"):
        fast_forward(table, "main", "dev")
    table.create_tag("v1", head)
    with pytest.raises(ValidationError, match="tag"):
        fast_forward(table, "v1", "main")
    with pytest.raises(NoSuchRef):
        fast_forward(table, "nope", "main")
    with pytest.raises(NoSuchRef):
        fast_forward(table, "main", "nope")


def test_fast_forward_to_a_tag(table: Table) -> None:
    first, second, _ = snapshot_ids(table)
    table.create_branch("old", first)
    table.create_tag("v2", second)
    fast_forward(table, "old", "v2")
    assert table.refs()["old"].snapshot_id == second


# ---- cherry-pick ---------------------------------------------------------------------------
def test_cherry_pick_of_an_append_recommits_its_files_on_main(table: Table) -> None:
    base = snapshot_ids(table)[1]
    table.create_branch("staging", base)
    table.append(rows([50, 51]), branch="staging")
    staged = table.refs()["staging"].snapshot_id
    result = cherry_pick(table, staged)
    head = current(table)
    assert result.snapshot_id == head.snapshot_id != staged
    assert head.operation == APPEND and head.summary["source-snapshot-id"] == str(staged)
    assert ids(table) == [0, 1, 2, 50, 51]
    # the staged data files are reused, not copied
    staged_files = paths(table, snapshot_id=staged) - paths(table, snapshot_id=base)
    assert len(staged_files) == 1 and staged_files <= paths(table)
    with pytest.raises(ValidationError, match="already cherry-picked"):
        cherry_pick(table, staged)
    with pytest.raises(ValidationError, match="already part"):
        cherry_pick(table, base)
    assert remove_orphan_files(table, older_than=int(time.time() * 1000) + 60_000).orphans == ()


def test_cherry_pick_fast_forwards_when_the_parent_is_current(table: Table) -> None:
    head = current(table).snapshot_id
    table.create_branch("fix", head)
    table.delete("id = 1", branch="fix")
    fixed = table.refs()["fix"].snapshot_id
    result = cherry_pick(table, fixed)
    assert current(table).snapshot_id == fixed == result.snapshot_id
    assert ids(table) == [0, 2]


def test_cherry_pick_of_an_overwrite_not_based_on_current_is_refused(table: Table) -> None:
    base = snapshot_ids(table)[1]
    table.create_branch("fix", base)
    table.delete("id = 1", branch="fix")
    with pytest.raises(ValidationError, match="cannot cherry-pick"):
        cherry_pick(table, table.refs()["fix"].snapshot_id)
    assert ids(table) == [0, 1, 2]
