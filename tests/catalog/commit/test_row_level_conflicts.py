"""Row-level conflict cells: merge-on-read operations on the same data file.

Two writers load a one-file table at the same snapshot. The *earlier* one commits; the *later*
one, planned on the old snapshot, commits next: its commit refreshes, checks the commits in
between and either re-applies (its delete files are valid on the new state: no data rewritten)
or raises the typed conflict. On SQLite and PostgreSQL, both isolation levels, format v2
(position delete files) and v3 (deletion vectors, merged on the retry).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance.compaction import rewrite_data_files
from lakecat.metadata.errors import (
    CommitConflict,
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    ConcurrentRowChange,
)

MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
N = 1000

pytestmark = pytest.mark.parametrize("version", ["2", "3"])


def make(catalog: Catalog, version: str, isolation: str = "snapshot") -> None:
    props = {
        **MOR,
        "format-version": version,
        "write.delete.isolation-level": isolation,
        "write.update.isolation-level": isolation,
        "write.merge.isolation-level": isolation,
    }
    t = catalog.create_table(
        "db.r", pa.schema([("id", pa.int64()), ("v", pa.int64())]), properties=props
    )
    t.append(pa.table({"id": pa.array(range(N), pa.int64()), "v": pa.array([0] * N, pa.int64())}))


def two_handles(catalog: Catalog) -> tuple[Table, Table]:
    return catalog.load_table("db.r"), catalog.load_table("db.r")


def state(catalog: Catalog) -> dict[int, int]:
    t = catalog.load_table("db.r")
    return dict(zip(*(t.to_arrow().column(c).to_pylist() for c in ("id", "v")), strict=True))


def upsert(t: Table, ids: list[int], v: int) -> None:
    t.upsert(
        pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([v] * len(ids), pa.int64())}),
        on="id",
    )


Op = Callable[[Table], object]
DISJOINT: dict[str, tuple[Op, Op, Callable[[dict[int, int]], bool]]] = {
    "delete/delete": (
        lambda t: t.delete("id < 100"),
        lambda t: t.delete("id >= 900"),
        lambda s: len(s) == 800 and min(s) == 100 and max(s) == 899,
    ),
    "update/delete": (
        lambda t: t.update({"v": 1}, "id < 100"),
        lambda t: t.delete("id >= 900"),
        lambda s: len(s) == 900 and s[5] == 1 and s[500] == 0,
    ),
    "delete/update": (
        lambda t: t.delete("id >= 900"),
        lambda t: t.update({"v": 1}, "id < 100"),
        lambda s: len(s) == 900 and s[5] == 1 and s[500] == 0,
    ),
    "update/update": (
        lambda t: t.update({"v": 1}, "id < 100"),
        lambda t: t.update({"v": 2}, "id >= 900"),
        lambda s: len(s) == N and s[5] == 1 and s[950] == 2 and s[500] == 0,
    ),
    "merge/merge": (
        lambda t: upsert(t, [1, 2, 3], 7),
        lambda t: upsert(t, [997, 998, 999], 8),
        lambda s: len(s) == N and s[2] == 7 and s[998] == 8,
    ),
    "interleaved update/delete": (  # the new versions' id bounds cover the deleted ids
        lambda t: t.update({"v": 1}, "id IN (" + ", ".join(map(str, range(1, 100, 2))) + ")"),
        lambda t: t.delete("id IN (" + ", ".join(map(str, range(0, 100, 2))) + ")"),
        lambda s: len(s) == N - 50 and s[1] == 1 and 2 not in s and s[500] == 0,
    ),
    "interleaved update/update": (
        lambda t: t.update({"v": 1}, "id IN (10, 30, 50)"),
        lambda t: t.update({"v": 2}, "id IN (20, 40)"),
        lambda s: len(s) == N and s[30] == 1 and s[40] == 2,
    ),
    "update/merge": (
        lambda t: t.update({"v": 1}, "id < 100"),
        lambda t: upsert(t, [997, 998], 8),
        lambda s: len(s) == N and s[5] == 1 and s[998] == 8,
    ),
}


@pytest.mark.parametrize("isolation", ["snapshot", "serializable"])
@pytest.mark.parametrize("cell", sorted(DISJOINT))
def test_different_rows_of_one_file_both_commit(
    catalog: Catalog, version: str, cell: str, isolation: str
) -> None:
    make(catalog, version, isolation)
    earlier_op, later_op, check = DISJOINT[cell]
    earlier, later = two_handles(catalog)
    [original] = earlier.scan().plan_files()
    earlier_op(earlier)
    first = earlier.current_snapshot().snapshot_id
    later_op(later)  # planned on the old snapshot: re-applied at metadata level
    assert later.current_snapshot().parent_snapshot_id == first
    assert check(state(catalog))
    # the original data file is still there, unrewritten
    assert original in catalog.load_table("db.r").scan().plan_files()


def test_two_deletes_of_the_same_row_both_commit(catalog: Catalog, version: str) -> None:
    make(catalog, version)
    earlier, later = two_handles(catalog)
    earlier.delete("id < 10")
    later.delete("id < 20")  # rows 0..9 are gone either way
    assert sorted(state(catalog)) == list(range(20, N))


SAME_ROW: dict[str, tuple[Op, Op]] = {
    "update/update": (
        lambda t: t.update({"v": 1}, "id = 5"),
        lambda t: t.update({"v": 2}, "id = 5"),
    ),
    "delete/update": (lambda t: t.delete("id = 5"), lambda t: t.update({"v": 2}, "id = 5")),
    "update/merge": (lambda t: t.update({"v": 1}, "id = 5"), lambda t: upsert(t, [5], 2)),
    "merge/merge": (lambda t: upsert(t, [5, 6], 1), lambda t: upsert(t, [5], 2)),
    "delete/merge": (lambda t: t.delete("id = 5"), lambda t: upsert(t, [5], 2)),
}


@pytest.mark.parametrize("cell", sorted(SAME_ROW))
def test_a_change_of_a_row_changed_concurrently_is_a_conflict(
    catalog: Catalog, version: str, cell: str
) -> None:
    make(catalog, version)
    earlier_op, later_op = SAME_ROW[cell]
    earlier, later = two_handles(catalog)
    earlier_op(earlier)
    after_earlier = state(catalog)
    with pytest.raises(ConcurrentRowChange) as info:
        later_op(later)
    assert isinstance(info.value, ConcurrentDeleteDelete)  # a subtype callers already catch
    assert state(catalog) == after_earlier  # nothing of the loser landed


def test_a_delete_after_an_update_of_the_same_row_conflicts_through_the_new_version(
    catalog: Catalog,
    version: str,
) -> None:
    make(catalog, version)
    earlier, later = two_handles(catalog)
    earlier.update({"v": 1}, "id = 5")  # the new version is a new data file holding id 5
    with pytest.raises(CommitConflict):
        later.delete("id = 5")  # would keep the updated row it never saw: not serial
    assert state(catalog)[5] == 1


def test_compaction_applies_merge_on_read_deletes_and_drops_their_files(
    catalog: Catalog, version: str
) -> None:
    make(catalog, version)
    t = catalog.load_table("db.r")
    t.append(pa.table({"id": pa.array([N], pa.int64()), "v": pa.array([0], pa.int64())}))
    t.delete("id = 5")
    t.update({"v": 3}, "id = 6")
    before = state(catalog)
    rewrite_data_files(catalog.load_table("db.r"))
    after = catalog.load_table("db.r")
    assert state(catalog) == before
    assert after.scan().plan().deletes == {}
    assert len(after.scan().plan_files()) == 1


def race_compaction(catalog: Catalog, dml: Op, **options: object) -> object:
    """Compact db.r while ``dml`` commits from another handle after planning, before commit."""
    raced: list[bool] = []

    def progress(done: int, total: int) -> None:
        if not raced:
            raced.append(True)
            dml(catalog.load_table("db.r"))

    result = rewrite_data_files(catalog.load_table("db.r"), progress=progress, **options)  # type: ignore[arg-type]
    assert raced
    return result


def _without(*ids: int) -> Callable[[dict[int, int]], None]:
    def change(rows: dict[int, int]) -> None:
        for i in ids:
            rows.pop(i, None)

    return change


def _set(value: int, *ids: int) -> Callable[[dict[int, int]], None]:
    def change(rows: dict[int, int]) -> None:
        rows.update(dict.fromkeys(ids, value))

    return change


RACING_DML: dict[str, tuple[Op, Callable[[dict[int, int]], None]]] = {
    "delete": (lambda t: t.delete("id IN (5, 1500, 1999)"), _without(5, 1500, 1999)),
    "update": (lambda t: t.update({"v": 9}, "id IN (7, 1200)"), _set(9, 7, 1200)),
    "upsert": (lambda t: upsert(t, [8, 1300, 5000], 4), _set(4, 8, 1300, 5000)),
}


LATER_DML: dict[str, tuple[Op, Callable[[dict[int, int]], None]]] = {
    "delete": (lambda t: t.delete("id IN (5, 600, 999)"), _without(5, 600, 999)),
    "update": (lambda t: t.update({"v": 9}, "id IN (7, 1000)"), _set(9, 7, 1000)),
    "upsert": (lambda t: upsert(t, [8, 999, 5000], 4), _set(4, 8, 999, 5000)),
}


@pytest.mark.parametrize("name", sorted(LATER_DML))
def test_merge_on_read_dml_after_a_finished_compaction_of_its_files_commits(
    catalog: Catalog, version: str, name: str
) -> None:
    """v3 finds the rows by row id, v2 by the compaction's row-moves record; rows deleted
    before the compaction read (id 3) shift the positions the record maps."""
    make(catalog, version)
    t = catalog.load_table("db.r")
    t.append(pa.table({"id": pa.array([N], pa.int64()), "v": pa.array([0], pa.int64())}))
    t.delete("id = 3")
    later = catalog.load_table("db.r")
    result = rewrite_data_files(catalog.load_table("db.r"))  # removes the files the DML names
    assert result.groups_committed == 1
    expected = {i: 0 for i in range(N + 1) if i != 3}
    dml, model = LATER_DML[name]
    model(expected)
    dml(later)
    assert state(catalog) == expected
    after = catalog.load_table("db.r")
    [compacted] = after.scan().plan_files() if name == "delete" else [None]
    if compacted is not None:  # the deletes name the compaction's output, nothing else
        [deletes] = after.scan().plan().deletes.values()
        assert all(d.record_count == 3 for d in deletes)


def test_a_merge_on_read_update_of_a_row_deleted_before_the_compaction_is_a_lost_update(
    catalog: Catalog, version: str
) -> None:
    make(catalog, version)
    catalog.load_table("db.r").append(
        pa.table({"id": pa.array([N], pa.int64()), "v": pa.array([0], pa.int64())})
    )
    later = catalog.load_table("db.r")
    catalog.load_table("db.r").delete("id = 7")
    rewrite_data_files(catalog.load_table("db.r"))
    with pytest.raises(ConcurrentRowChange):
        later.update({"v": 9}, "id IN (7, 8)")
    got = state(catalog)
    assert 7 not in got and got[8] == 0


@pytest.mark.parametrize("change", ["update", "merge"])
def test_a_merge_on_read_change_of_a_row_deleted_after_the_compaction_is_a_lost_update(
    catalog: Catalog, version: str, change: str
) -> None:
    """The row moved to the compaction's output, then a DELETE removed it there: the change
    must not bring back a new version of it."""
    make(catalog, version)
    catalog.load_table("db.r").append(
        pa.table({"id": pa.array([N], pa.int64()), "v": pa.array([0], pa.int64())})
    )
    later = catalog.load_table("db.r")
    rewrite_data_files(catalog.load_table("db.r"))
    catalog.load_table("db.r").delete("id = 7")
    with pytest.raises(ConcurrentRowChange, match="deleted"):
        if change == "update":
            later.update({"v": 9}, "id IN (7, 8)")
        else:
            upsert(later, [7, 8], 9)
    got = state(catalog)
    assert 7 not in got and got[8] == 0 and len(got) == N


@pytest.mark.parametrize("change", ["delete", "update"])
def test_a_merge_on_read_change_leaves_alone_a_row_updated_before_the_compaction(
    catalog: Catalog, version: str, change: str
) -> None:
    """Row 7 updated (v3: the new version keeps its row id), then compacted: the stale change
    read the old version, which is gone. A DELETE leaves the new version; an UPDATE fails."""
    make(catalog, version)
    later = catalog.load_table("db.r")
    catalog.load_table("db.r").update({"v": 5}, "id = 7")
    rewrite_data_files(catalog.load_table("db.r"), min_input_files=1)
    if change == "delete":  # (its condition does not match the new version: no conflict)
        later.delete("v = 0 AND id IN (7, 8)")
        got = state(catalog)
        assert got[7] == 5 and 8 not in got and len(got) == N - 1
        return
    with pytest.raises(ConcurrentRowChange):
        later.update({"v": 9}, "v = 0 AND id IN (7, 8)")
    got = state(catalog)
    assert got[7] == 5 and got[8] == 0


def test_merge_on_read_dml_after_a_sorted_compaction_fails_typed(
    catalog: Catalog, version: str
) -> None:
    """A sorted compaction records no row moves; v3 still finds the rows by row id."""
    make(catalog, version)
    catalog.load_table("db.r").append(
        pa.table({"id": pa.array([N], pa.int64()), "v": pa.array([0], pa.int64())})
    )
    later = catalog.load_table("db.r")
    rewrite_data_files(catalog.load_table("db.r"), sort_by=["id"])
    if version == "3":
        later.delete("id = 5")
        assert 5 not in state(catalog)
        return
    with pytest.raises(ConcurrentDeleteRead, match="no row moves"):
        later.delete("id = 5")
    assert len(state(catalog)) == N + 1


@pytest.mark.parametrize("name", sorted(RACING_DML))
def test_a_compaction_that_loses_to_merge_on_read_dml_carries_its_deletes_over(
    catalog: Catalog, version: str, name: str
) -> None:
    make(catalog, version)
    second = {"id": pa.array(range(N, 2 * N), pa.int64()), "v": pa.array([0] * N, pa.int64())}
    catalog.load_table("db.r").append(pa.table(second))
    catalog.load_table("db.r").delete("id IN (3, 1003)")  # applied when compaction reads
    dml, model = RACING_DML[name]
    expected = {i: 0 for i in range(2 * N) if i not in (3, 1003)}
    model(expected)

    result = race_compaction(catalog, dml)

    assert result.groups_failed == () and result.groups_committed == 1  # type: ignore[attr-defined]
    assert state(catalog) == expected
    after = catalog.load_table("db.r")
    plan = after.scan().plan()
    [compacted] = [f for f in plan.files if f.record_count > N]  # the two files became one
    [carried] = plan.deletes[compacted.file_path]
    replace = next(s for s in reversed(after.snapshots()) if s.operation == "replace")
    if version == "3":  # a deletion vector of the output file
        assert carried.referenced_data_file == compacted.file_path
        assert replace.summary["added-dvs"] == "1"
    else:
        assert "carried" in carried.file_path
        assert replace.summary["added-position-delete-files"] == "1"
    # the compaction's own inputs' deletes and the raced DML's now apply to nothing: dropped
    # (v3: the raced DML's vectors had replaced the inputs' own, one per input file)
    assert int(replace.summary["removed-delete-files"]) >= (2 if version == "3" else 3)


def test_a_sorted_compaction_still_fails_on_concurrent_deletes(
    catalog: Catalog, version: str
) -> None:
    make(catalog, version)
    catalog.load_table("db.r").append(
        pa.table({"id": pa.array([N], pa.int64()), "v": pa.array([0], pa.int64())})
    )
    result = race_compaction(catalog, lambda t: t.delete("id = 5"), sort_by=["id"])
    assert result.groups_committed == 0  # type: ignore[attr-defined]
    [(_, error)] = result.groups_failed  # type: ignore[attr-defined]
    assert isinstance(error, ConcurrentDeleteRead)
    assert 5 not in state(catalog) and len(state(catalog)) == N
