"""The change feed (``changes``) over snapshots with delete files.

A merge-on-read delete, update or merge adds position delete files (v2) or deletion vectors
(v3) instead of rewriting data files; the rows they delete are changes like any other. The
property: for any two snapshots A and B of one line of history, ``changes(A, B)`` returns as
``added`` and ``removed`` exactly the multiset difference of the rows the table reads at B and
at A, whatever mix of copy-on-write and merge-on-read changes, appends and compactions lies
between; and every returned row names a data-changing snapshot of the range.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from row_change_steps import KINDS, SCHEMA, apply, rows, steps

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import rewrite_data_files
from lakecat.catalog.read.incremental import CHANGE_SNAPSHOT_ID, changes

STEPS = steps(max_id=29, max_ids=6)


def bag(data: pa.Table) -> Counter[tuple[int, int]]:
    return Counter(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))


def read_at(t: Table, snapshot_id: int) -> Counter[tuple[int, int]]:
    return bag(t.to_arrow(snapshot_id=snapshot_id))


def history(t: Table) -> list[int]:
    """The current snapshot's line of history, oldest first."""
    metadata = t.refresh().metadata
    assert metadata.current_snapshot_id is not None
    return [s.snapshot_id for s in reversed(metadata.ancestors(metadata.current_snapshot_id))]


def assert_changes_are_the_difference(t: Table, start: int, end: int) -> None:
    got = changes(t, from_snapshot_id=start, to_snapshot_id=end)
    before, after = read_at(t, start), read_at(t, end)
    assert bag(got.added) == after - before, (start, end)
    assert bag(got.removed) == before - after, (start, end)
    in_range = set(got.snapshot_ids)
    for side in (got.added, got.removed):
        assert set(side.column(CHANGE_SNAPSHOT_ID).to_pylist()) <= in_range


def table(lake: Catalog, properties: dict[str, str]) -> Table:
    t = lake.create_table(f"db.t{len(lake.list_tables('db'))}", SCHEMA, properties=properties)
    t.append(rows(list(range(0, 15)), 0))
    t.append(rows(list(range(15, 30)), 0))
    return t


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(STEPS, min_size=1, max_size=5), data=st.data())
def test_changes_between_any_two_snapshots_are_the_difference_of_their_rows(
    embedded_lake: Catalog, steps: list[Any], data: st.DataObject
) -> None:
    for properties in KINDS.values():
        t = table(embedded_lake, properties)
        for step in steps:
            apply(t, step)
        line = history(t)
        start = data.draw(st.integers(0, len(line) - 2), label="start")
        end = data.draw(st.integers(start + 1, len(line) - 1), label="end")
        assert_changes_are_the_difference(t, line[start], line[end])


@pytest.mark.parametrize("kind", ["mor v2", "mor v3"])
def test_a_merge_on_read_delete_is_a_change_that_removes_the_deleted_rows(
    embedded_lake: Catalog, kind: str
) -> None:
    t = table(embedded_lake, KINDS[kind])
    start = t.refresh().metadata.current_snapshot_id
    assert start is not None
    t.delete("id IN (3, 17)")
    deleted = t.refresh().metadata.current_snapshot_id
    summary = t.metadata.current_snapshot.summary  # type: ignore[union-attr]
    assert int(summary.get("added-delete-files", "0")) > 0  # merge-on-read: no file rewritten
    assert int(summary.get("deleted-data-files", "0")) == 0
    got = changes(t, from_snapshot_id=start)
    assert got.added.num_rows == 0
    assert sorted(got.removed.column("id").to_pylist()) == [3, 17]
    assert set(got.removed.column(CHANGE_SNAPSHOT_ID).to_pylist()) == {deleted}


@pytest.mark.parametrize("kind", ["mor v2", "mor v3"])
def test_each_deleted_row_is_credited_to_the_snapshot_that_deleted_it(
    embedded_lake: Catalog, kind: str
) -> None:
    """A second delete of the same file on v3 replaces the first deletion vector with the
    union; the rows the first deleted are still credited to the first."""
    t = table(embedded_lake, KINDS[kind])
    start = t.refresh().metadata.current_snapshot_id
    t.delete("id = 3")
    first = t.refresh().metadata.current_snapshot_id
    t.delete("id = 4")
    second = t.refresh().metadata.current_snapshot_id
    rewrite_data_files(t)  # a compaction in the range changes nothing
    got = changes(t, from_snapshot_id=start)
    credited = dict(
        zip(
            got.removed.column("id").to_pylist(),
            got.removed.column(CHANGE_SNAPSHOT_ID).to_pylist(),
            strict=True,
        )
    )
    assert credited == {3: first, 4: second}
    assert got.added.num_rows == 0
    assert got.snapshot_ids == (first, second)


@pytest.mark.parametrize("kind", ["mor v2", "mor v3"])
def test_rows_added_and_deleted_inside_the_range_are_no_change(
    embedded_lake: Catalog, kind: str
) -> None:
    t = table(embedded_lake, KINDS[kind])
    start = t.refresh().metadata.current_snapshot_id
    t.append(rows([100, 101, 102], 7))
    t.delete("id IN (101, 5)")
    got = changes(t, from_snapshot_id=start)
    assert sorted(bag(got.added)) == [(100, 7), (102, 7)]
    assert sorted(bag(got.removed)) == [(5, 0)]


@pytest.mark.parametrize("kind", ["mor v2", "mor v3"])
def test_a_merge_on_read_update_removes_the_old_versions_and_adds_the_new(
    embedded_lake: Catalog, kind: str
) -> None:
    t = table(embedded_lake, KINDS[kind])
    start = t.refresh().metadata.current_snapshot_id
    t.update({"v": 5}, "id IN (2, 20)")
    updated = t.refresh().metadata.current_snapshot_id
    got = changes(t, from_snapshot_id=start)
    assert sorted(bag(got.removed)) == [(2, 0), (20, 0)]
    assert sorted(bag(got.added)) == [(2, 5), (20, 5)]
    for side in (got.added, got.removed):
        assert set(side.column(CHANGE_SNAPSHOT_ID).to_pylist()) == {updated}
