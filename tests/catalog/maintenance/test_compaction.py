"""Compaction (rewrite_data_files): planning, sorting, and its concurrency semantics.

Interleavings are scripted with the job's progress callback, which runs after planning and
before the first group is rewritten: whatever the callback commits is concurrent with the
compaction. The multi-process test runs real appenders in other processes.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.engine import commit_batches, compaction_sort
from lakecat.catalog.maintenance import (
    CompactionResult,
    FileSelection,
    plan_file_groups,
    remove_orphan_files,
    rewrite_data_files,
)
from lakecat.metadata.errors import (
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    LakecatError,
    TooManyFailedCommits,
    UnknownColumn,
    ValidationError,
)
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.partitioning.transforms import BucketTransform
from lakecat.metadata.schema.types import LongType
from lakecat.metadata.table.snapshots import REPLACE
from lakecat.metadata.table.sorting import SortField

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("v", pa.float64())])
FAST_RETRIES = {
    "commit.retry.num-retries": "50",
    "commit.retry.min-wait-ms": "5",
    "commit.retry.max-wait-ms": "100",
}


def rows(ids: range | list[int], region: str) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": ids, "region": [region] * len(ids), "v": [i * 0.5 for i in ids]}, schema=SCHEMA
    )


def checksum(t: pa.Table) -> tuple[int, str]:
    """Row count and an order-independent digest of the rows."""
    ordered = t.sort_by([("id", "ascending"), ("region", "ascending")])
    digest = hashlib.sha256(str(ordered.to_pylist()).encode()).hexdigest()
    return t.num_rows, digest


@pytest.fixture
def table(catalog: Catalog) -> Table:
    """Two partitions with four small files each."""
    t = catalog.create_table(
        "db.events", SCHEMA, partition_by=["region"], sort_by=["id"], properties=FAST_RETRIES
    )
    for i in range(4):
        t.append(pa.concat_tables([rows(range(i * 10, i * 10 + 10), "eu"), rows([100 + i], "us")]))
    return t


def live_files(t: Table) -> list[str]:
    return [f.file_path for f in t.scan().plan_files()]


def in_callback(action: Callable[[], object]) -> Callable[[int, int], None]:
    """A progress callback that runs ``action`` once, between planning and rewriting."""
    done: list[bool] = []

    def progress(finished: int, total: int) -> None:
        if not done:
            done.append(True)
            action()

    return progress


def soon() -> int:
    """A guard time a minute ahead: every unreferenced file counts as an orphan."""
    return int(time.time() * 1000) + 60_000


def snapshot_rows(t: Table) -> dict[int, tuple[int, str]]:
    return {s.snapshot_id: checksum(t.to_arrow(snapshot_id=s.snapshot_id)) for s in t.snapshots()}


# ---- planning and rewriting ----------------------------------------------------------------
def test_compaction_bin_packs_small_files_per_partition_and_keeps_every_row(table: Table) -> None:
    before = checksum(table.to_arrow())
    history = snapshot_rows(table)
    assert len(live_files(table)) == 8
    result = rewrite_data_files(table)
    assert result.groups_total == result.groups_committed == 2
    assert result.files_removed == 8 and result.files_added == 2
    assert result.groups_failed == ()
    assert checksum(table.to_arrow()) == before
    assert len(live_files(table)) == 2
    assert [table.snapshot(s).operation for s in result.snapshot_ids] == [REPLACE, REPLACE]
    assert table.snapshot(result.snapshot_ids[-1]).summary["total-records"] == str(before[0])
    # time travel to every older snapshot still gives its rows
    assert {s: v for s, v in snapshot_rows(table).items() if s in history} == history


def test_compaction_of_compacted_table_does_nothing(table: Table) -> None:
    rewrite_data_files(table)
    head = table.current_snapshot()
    result = rewrite_data_files(table)
    assert result == CompactionResult(0, 0, (), 0, 0, 0, 0, (), 0)
    assert table.current_snapshot() == head


def test_compaction_filter_selects_the_files_to_compact(table: Table) -> None:
    us_files = [f for f in live_files(table) if "region=us" in f]
    result = rewrite_data_files(table, row_filter="region = 'eu'")
    assert result.groups_committed == 1
    assert [f for f in live_files(table) if "region=us" in f] == us_files


def test_min_input_files_and_group_size_bound_the_groups(table: Table) -> None:
    assert rewrite_data_files(table, min_input_files=5).groups_total == 0
    sizes = [f.file_size_in_bytes for f in table.scan().plan_files()]
    result = rewrite_data_files(table, max_group_size_bytes=2 * max(sizes))
    assert result.groups_total == 4  # two groups of two files per partition
    assert result.files_removed == 8


def test_compaction_splits_files_larger_than_the_target(catalog: Catalog) -> None:
    t = catalog.create_table("db.big", SCHEMA)
    t.append(rows(range(20_000), "eu"))
    target = t.scan().plan_files()[0].file_size_in_bytes // 4
    result = rewrite_data_files(t, target_file_size_bytes=target)
    assert result.files_removed == 1 and result.files_added > 1
    assert t.to_arrow().num_rows == 20_000


def test_compaction_sorts_by_the_table_sort_order_and_records_it(table: Table) -> None:
    table.append(rows([5, 3, 1], "eu"))  # out of order
    result = rewrite_data_files(table, sort_by="table")
    assert result.groups_failed == ()
    for f in table.scan().plan_files():
        ids = read_data_file(table.io, f, projected=table.schema()).column("id").to_pylist()
        assert ids == sorted(ids)
        assert f.sort_order_id == table.sort_order().order_id
    # a second run finds every file sorted and large enough relative to its partition
    assert rewrite_data_files(table, sort_by="table").groups_total == 0


def test_compaction_sorts_by_given_columns_descending(table: Table) -> None:
    rewrite_data_files(table, sort_by=["id desc"])
    for f in table.scan().plan_files():
        ids = read_data_file(table.io, f, projected=table.schema()).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
        assert f.sort_order_id is None  # not the table's order


def test_compaction_sorts_by_sort_fields_with_transforms(table: Table) -> None:
    table.append(rows([9, 4, 7, 2, 5], "eu"))
    by_bucket = (SortField(1, "bucket[4]", "asc", "nulls-first"), SortField(1, "identity"))
    rewrite_data_files(table, sort_by=by_bucket)
    bucket = BucketTransform(4)
    for f in table.scan().plan_files():
        ids = read_data_file(table.io, f, projected=table.schema()).column("id").to_pylist()
        keys = [(bucket.apply(LongType(), i), i) for i in ids]
        assert keys == sorted(keys)


def test_columns_that_are_one_of_the_table_s_orders_record_its_id(table: Table) -> None:
    # the table is sorted by id: sorting by "id" is that order, "id desc" none of them
    assert compaction_sort(table.metadata, ["id"]) == (
        table.sort_order().fields,
        table.sort_order().order_id,
    )
    assert compaction_sort(table.metadata, ["id desc"])[1] is None
    assert compaction_sort(table.metadata, None) == (None, None)


def test_sort_fields_are_checked_against_the_schema(table: Table) -> None:
    with pytest.raises(ValidationError, match="cannot sort by day"):
        compaction_sort(table.metadata, [SortField(1, "day")])  # id is a long
    with pytest.raises(LakecatError):
        compaction_sort(table.metadata, [SortField(99, "identity")])


def test_sort_options_are_validated(catalog: Catalog, table: Table) -> None:
    unsorted = catalog.create_table("db.unsorted", SCHEMA)
    with pytest.raises(ValidationError):
        rewrite_data_files(unsorted, sort_by="table")
    with pytest.raises(UnknownColumn):
        rewrite_data_files(table, sort_by=["nope"])
    with pytest.raises(ValidationError):
        rewrite_data_files(table, sort_by=["id sideways"])
    with pytest.raises(ValidationError):
        rewrite_data_files(table, min_input_files=0)


def test_files_of_an_older_spec_are_rewritten_into_the_current_spec(catalog: Catalog) -> None:
    t = catalog.create_table("db.evolving", SCHEMA)
    t.append(pa.concat_tables([rows(range(5), "eu"), rows(range(5, 8), "us")]))
    with t.update_spec() as spec:
        spec.add_field("region")
    before = checksum(t.to_arrow())
    result = rewrite_data_files(t)  # one file: rewritten although min_input_files is 2
    assert result.groups_committed == 1
    assert {f.spec_id for f in t.scan().plan_files()} == {t.spec().spec_id}
    assert len(t.scan().plan_files()) == 2  # one per region now
    assert checksum(t.to_arrow()) == before


def evolved(catalog: Catalog) -> Table:
    """Spec 0 by region: eu and us, one file each; spec 1 adds bucket(2, id): eu again."""
    t = catalog.create_table("db.evolved", SCHEMA, partition_by=["region"])
    t.append(pa.concat_tables([rows(range(5), "eu"), rows(range(5, 8), "us")]))
    with t.update_spec() as spec:
        spec.add_field("id", "bucket[2]")
    t.append(rows(range(10, 14), "eu"))
    return t


def specs_of_files(t: Table) -> list[int]:
    return sorted(f.spec_id for f in t.refresh().scan().plan_files())


def test_output_spec_id_writes_the_new_files_for_another_spec(catalog: Catalog) -> None:
    t = evolved(catalog)
    assert specs_of_files(t) == [0, 0, 1, 1]
    before = checksum(t.to_arrow())

    result = rewrite_data_files(t, output_spec_id=0, rewrite_all=True)

    # grouped by the table's partitions (eu's two buckets, and spec 0's files), each group's
    # rows written by region again
    assert result.files_removed == 4 and result.groups_committed == 3
    assert specs_of_files(t) == [0, 0, 0, 0]
    assert checksum(t.to_arrow()) == before
    with pytest.raises(ValidationError, match="partition spec 7"):
        rewrite_data_files(t, output_spec_id=7)
    assert specs_of_files(t) == [0, 0, 0, 0]


def test_without_repartition_files_of_another_spec_are_chosen_as_iceberg_chooses(
    catalog: Catalog,
) -> None:
    t = evolved(catalog)
    sizes = sorted(f.file_size_in_bytes for f in t.scan().plan_files())
    # every file sized right (none small, none too large): only repartition rewrites any
    sized = {
        "target_file_size_bytes": sizes[-1],
        "min_file_size_bytes": sizes[0] - 1,
        "max_file_size_bytes": 2 * sizes[-1],
    }
    assert rewrite_data_files(t, repartition=False, **sized).groups_total == 0  # type: ignore[arg-type]
    # small, the two files of spec 0 (two partitions then) are one group, as Iceberg's
    groups = plan_file_groups(
        t.io, t.metadata, FileSelection(repartition=False), target_file_size_bytes=1 << 30
    )
    assert [(g.spec_id, len(g.files)) for g in groups] == [(None, 2)]
    assert "files of other partition specs" in groups[0].describe()
    result = rewrite_data_files(t, **sized)  # type: ignore[arg-type]
    assert result.files_removed == 2 and set(specs_of_files(t)) == {1}


def test_progress_reports_every_group(table: Table) -> None:
    calls: list[tuple[int, int]] = []
    rewrite_data_files(table, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 2), (1, 2), (2, 2)]


def planned_files(table: Table, *, target_file_size_bytes: int, **options: Any) -> int:
    groups = plan_file_groups(
        table.io,
        table.metadata,
        FileSelection(**options),
        target_file_size_bytes=target_file_size_bytes,
    )
    return sum(len(g.files) for g in groups)


def test_file_size_thresholds_and_rewrite_all_choose_the_files(table: Table) -> None:
    sizes = sorted(f.file_size_in_bytes for f in table.scan().plan_files())
    big = 10 * sizes[-1]  # every file is small against it
    assert planned_files(table, target_file_size_bytes=big) == 8
    # nothing is small below a minimum of 0; min_input_files keeps single-file groups
    assert planned_files(table, target_file_size_bytes=big, min_file_size_bytes=0) == 0
    # a file over the maximum must be rewritten, alone if need be
    over = planned_files(
        table,
        target_file_size_bytes=sizes[0] - 2,
        min_file_size_bytes=0,
        max_file_size_bytes=sizes[0] - 1,
    )
    assert over == 8
    # rewrite_all: every file, whatever its size and the group's file count
    assert (
        planned_files(
            table,
            target_file_size_bytes=big,
            min_file_size_bytes=0,
            min_input_files=100,
            rewrite_all=True,
        )
        == 8
    )


def partition_sizes(table: Table) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for f in table.scan().plan_files():
        region = str(f.partition[0])
        sizes[region] = sizes.get(region, 0) + f.file_size_in_bytes
    return sizes


def planned_regions(table: Table, *, target_file_size_bytes: int, **options: Any) -> list[str]:
    groups = plan_file_groups(
        table.io,
        table.metadata,
        FileSelection(**options),
        target_file_size_bytes=target_file_size_bytes,
    )
    return sorted(str(g.partition[0]) for g in groups)


def test_a_group_of_small_files_holding_more_than_the_target_is_rewritten(table: Table) -> None:
    # Iceberg's "enough content": four small files (under min_input_files) that hold more
    # than the target are rewritten; the other partition's four, holding less, are not
    sizes = partition_sizes(table)
    assert sizes["us"] < sizes["eu"]
    target = sizes["eu"] - 1  # every file is small against it (under 75%)
    assert planned_regions(table, target_file_size_bytes=target, min_input_files=5) == ["eu"]
    assert planned_regions(table, target_file_size_bytes=2 * target, min_input_files=5) == []


def test_a_lone_small_file_is_left_whatever_min_input_files_says(catalog: Catalog) -> None:
    t = catalog.create_table("db.lone", SCHEMA, partition_by=["region"])
    t.append(pa.concat_tables([rows(range(10), "eu"), rows([100, 101], "us")]))
    t.append(rows([102], "us"))
    # a small file rewritten alone comes out the same; two small files do not
    assert planned_regions(t, target_file_size_bytes=1 << 20, min_input_files=1) == ["us"]
    assert rewrite_data_files(t, min_input_files=1).files_removed == 2


def test_max_group_input_files_and_max_files_to_rewrite_bound_the_plan(table: Table) -> None:
    big = 1 << 30
    groups = plan_file_groups(
        table.io, table.metadata, FileSelection(max_group_input_files=3), target_file_size_bytes=big
    )
    # four files per partition: a group of three, then one left alone (not worth rewriting)
    assert sorted(len(g.files) for g in groups) == [3, 3]
    capped = plan_file_groups(
        table.io, table.metadata, FileSelection(max_files_to_rewrite=6), target_file_size_bytes=big
    )
    assert [len(g.files) for g in capped] == [4, 2]  # the last group cut to the cap
    result = rewrite_data_files(table, max_files_to_rewrite=3)
    assert result.files_removed == 3 and result.groups_committed == 1
    assert len(live_files(table)) == 8 - 3 + 1


@pytest.mark.parametrize("version", ["2", "3"])
def test_files_whose_deletes_remove_a_third_of_their_rows_are_rewritten(
    catalog: Catalog, version: str
) -> None:
    # Iceberg's delete-ratio-threshold (0.3 by default): a file whose position deletes or
    # deletion vector remove that share of its rows is rewritten alone, its deletes with it
    t = catalog.create_table(
        "db.ratio",
        SCHEMA,
        partition_by=["region"],
        properties={"write.delete.mode": "merge-on-read", "format-version": version},
    )
    t.append(pa.concat_tables([rows(range(10), "eu"), rows(range(100, 110), "us")]))
    t.delete("id IN (0, 1, 2, 100, 101)")  # 30% of eu's file, 20% of us's
    assert planned_regions(t, target_file_size_bytes=1 << 30) == ["eu"]
    assert planned_regions(t, target_file_size_bytes=1 << 30, delete_ratio_threshold=0.2) == [
        "eu",
        "us",
    ]
    assert planned_regions(t, target_file_size_bytes=1 << 30, delete_ratio_threshold=0.5) == []
    before = checksum(t.to_arrow())
    result = rewrite_data_files(t)
    assert result.files_removed == 1 and result.files_added == 1
    t.refresh()
    assert checksum(t.to_arrow()) == before
    removed = t.snapshot(result.snapshot_ids[0]).summary_count("removed-delete-files")
    assert removed == 1  # eu's deletes went with its file; us's stay
    assert len(t.scan().plan().deletes) == 1


def test_more_failed_commits_than_allowed_raise_after_the_others_landed(
    catalog: Catalog, table: Table
) -> None:
    other = catalog.load_table("db.events")
    with pytest.raises(TooManyFailedCommits, match="1 of the compaction's 2 commits failed") as e:
        rewrite_data_files(
            table,
            partial_progress_max_failed_commits=0,
            progress=in_callback(lambda: other.delete("id = 101")),  # fails us's commit
        )
    result = e.value.result
    assert isinstance(result, CompactionResult)
    assert result.groups_committed == 1 and len(result.groups_failed) == 1
    table.refresh()  # eu's compaction stays
    assert table.snapshot(result.snapshot_ids[0]).operation == REPLACE
    assert table.current_snapshot().snapshot_id == result.snapshot_ids[0]
    # one failure allowed: the same race reports it
    again = catalog.load_table("db.events")
    race = catalog.load_table("db.events")
    allowed = rewrite_data_files(
        again,
        partial_progress_max_failed_commits=1,
        progress=in_callback(lambda: race.delete("id = 102")),
    )
    assert allowed.groups_committed == 0 and len(allowed.groups_failed) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"min_file_size_bytes": -1}, "at least 0"),
        ({"min_file_size_bytes": 1000}, "above the minimum"),
        ({"max_file_size_bytes": 1000}, "below the maximum"),
        ({"delete_file_threshold": 0}, "at least 1"),
        ({"delete_ratio_threshold": 0}, "above 0 and at most 1"),
        ({"delete_ratio_threshold": 1.5}, "above 0 and at most 1"),
        ({"delete_ratio_threshold": float("nan")}, "above 0 and at most 1"),
        ({"max_group_input_files": 0}, "at least 1"),
        ({"max_files_to_rewrite": 0}, "at least 1"),
        ({"partial_progress_max_failed_commits": -1}, "at least 0"),
        ({"min_input_files": 0}, "at least 1"),
    ],
)
def test_bad_thresholds_are_refused_even_on_an_empty_table(
    catalog: Catalog, options: dict[str, int], message: str
) -> None:
    empty = catalog.create_table("db.empty", SCHEMA)
    with pytest.raises(ValidationError, match=message):
        rewrite_data_files(empty, target_file_size_bytes=1000, **options)  # type: ignore[arg-type]


def test_plan_matches_what_compaction_rewrites(table: Table) -> None:
    planned = plan_file_groups(table.io, table.metadata, target_file_size_bytes=512 * 1024**2)
    result = rewrite_data_files(table)
    assert len(planned) == result.groups_total
    assert sum(len(g.files) for g in planned) == result.files_removed


# ---- concurrency -----------------------------------------------------------------------------
def test_compaction_that_loses_the_race_to_an_append_reapplies_and_succeeds(
    catalog: Catalog, table: Table
) -> None:
    other = catalog.load_table("db.events")
    expected = checksum(pa.concat_tables([table.to_arrow(), rows([999], "eu")]))
    result = rewrite_data_files(
        table, progress=in_callback(lambda: other.append(rows([999], "eu")))
    )
    assert result.groups_committed == 2 and result.groups_failed == ()
    assert checksum(table.to_arrow()) == expected
    assert [s.operation for s in table.snapshots()[-3:]] == ["append", REPLACE, REPLACE]


def test_two_compactions_of_the_same_files_one_fails_with_delete_delete(
    catalog: Catalog, table: Table
) -> None:
    before = checksum(table.to_arrow())
    other = catalog.load_table("db.events")
    result = rewrite_data_files(table, progress=in_callback(lambda: rewrite_data_files(other)))
    assert result.groups_committed == 0
    assert [type(err) for _, err in result.groups_failed] == [ConcurrentDeleteDelete] * 2
    assert "partition region=" in result.groups_failed[0][0]
    table.refresh()
    assert checksum(table.to_arrow()) == before
    # the loser's new files and manifests are gone: nothing unreferenced is left
    assert remove_orphan_files(table, older_than=soon(), dry_run=True).orphans == ()


def test_without_partial_progress_a_conflict_fails_the_whole_job(
    catalog: Catalog, table: Table
) -> None:
    before = checksum(table.to_arrow())
    other = catalog.load_table("db.events")
    with pytest.raises(ConcurrentDeleteDelete):
        rewrite_data_files(
            table,
            partial_progress=False,
            progress=in_callback(lambda: rewrite_data_files(other, row_filter="region = 'us'")),
        )
    assert checksum(catalog.load_table("db.events").to_arrow()) == before
    table.refresh()
    assert remove_orphan_files(table, older_than=soon(), dry_run=True).orphans == ()


def test_without_partial_progress_all_groups_commit_as_one_snapshot(table: Table) -> None:
    result = rewrite_data_files(table, partial_progress=False)
    assert result.groups_committed == 2 and len(result.snapshot_ids) == 1


def test_partial_progress_commits_the_groups_in_at_most_max_commits_snapshots(
    catalog: Catalog,
) -> None:
    t = catalog.create_table("db.many", SCHEMA, partition_by=["region"])
    for _ in range(2):  # two small files in each of 12 partitions: 12 groups
        t.append(pa.concat_tables([rows([i], f"r{i}") for i in range(12)]))
    before = checksum(t.to_arrow())

    result = rewrite_data_files(t)  # Iceberg's default: 10 commits at most

    assert result.groups_committed == 12 and len(result.snapshot_ids) == 6  # 2 groups each
    assert checksum(t.to_arrow()) == before
    t.append(pa.concat_tables([rows([i], f"r{i}") for i in range(12)]))
    again = rewrite_data_files(t, partial_progress_max_commits=1)
    assert again.groups_committed == 12 and len(again.snapshot_ids) == 1
    with pytest.raises(ValidationError, match="at least 1"):
        rewrite_data_files(t, partial_progress_max_commits=0)


def test_a_conflict_loses_the_groups_of_its_commit_batch(catalog: Catalog, table: Table) -> None:
    other = catalog.load_table("db.events")
    result = rewrite_data_files(
        table,
        partial_progress_max_commits=1,  # both groups in one commit
        progress=in_callback(lambda: other.delete("id = 101")),
    )
    assert result.groups_committed == 0 and len(result.groups_failed) == 2
    assert {type(e) for _, e in result.groups_failed} == {ConcurrentDeleteDelete}
    assert result.files_failed == 8
    table.refresh()
    assert remove_orphan_files(table, older_than=soon(), dry_run=True).orphans == ()


@pytest.mark.parametrize("version", ["2", "3"])
def test_a_batch_of_groups_carries_deletes_raced_into_any_of_them(
    catalog: Catalog, version: str
) -> None:
    # both groups in one commit: their row moves joined, the second group's runs after the
    # first's; merge-on-read deletes in each group commit first and stay deleted
    t = catalog.create_table(
        "db.mor",
        SCHEMA,
        partition_by=["region"],
        properties={"write.delete.mode": "merge-on-read", "format-version": version},
    )
    for i in range(3):
        t.append(pa.concat_tables([rows(range(i * 10, i * 10 + 10), r) for r in ("eu", "us")]))
    ids = sorted(t.to_arrow().column("id").to_pylist())
    other = catalog.load_table("db.mor")

    result = rewrite_data_files(
        t,
        partial_progress_max_commits=1,
        progress=in_callback(lambda: other.delete("id IN (4, 17, 23)")),
    )

    assert result.groups_failed == () and result.groups_committed == 2
    assert len(result.snapshot_ids) == 1
    t.refresh()
    remaining = sorted(t.to_arrow().column("id").to_pylist())
    assert remaining == sorted(i for i in ids if i not in (4, 17, 23))
    assert len(remaining) == len(ids) - 6  # each id in both regions


def test_commit_batches_split_groups_into_runs_of_near_equal_size() -> None:
    assert commit_batches(list(range(25)), 10) == [
        list(range(i, min(i + 3, 25))) for i in range(0, 25, 3)
    ]
    assert commit_batches([1, 2], 10) == [[1], [2]]
    assert commit_batches([], 10) == []


def test_delete_committed_first_fails_only_the_group_of_its_partition(
    catalog: Catalog, table: Table
) -> None:
    other = catalog.load_table("db.events")
    result = rewrite_data_files(table, progress=in_callback(lambda: other.delete("id = 101")))
    assert result.groups_committed == 1
    [(description, error)] = result.groups_failed
    assert isinstance(error, ConcurrentDeleteDelete) and "region=us" in description
    table.refresh()
    assert sorted(table.to_arrow(row_filter="region = 'us'").column("id").to_pylist()) == [
        100,
        102,
        103,
    ]
    assert len([f for f in live_files(table) if "region=eu" in f]) == 1


def test_delete_planned_before_compaction_of_its_files_fails_with_delete_delete(
    catalog: Catalog, table: Table
) -> None:
    stale = catalog.load_table("db.events")  # plans on the pre-compaction snapshot
    rewrite_data_files(table)
    with pytest.raises(ConcurrentDeleteDelete):
        stale.delete("id = 5")
    assert catalog.load_table("db.events").to_arrow(row_filter="id = 5").num_rows == 1


def test_delete_that_read_compacted_files_fails_with_delete_read(catalog: Catalog) -> None:
    t = catalog.create_table("db.reads", SCHEMA, partition_by=["region"])
    t.append(rows([0, 2, 4, 6, 8], "eu"))
    t.append(rows([100, 101], "eu"))
    t.append(rows([200, 201], "us"))
    stale = catalog.load_table("db.reads")
    rewrite_data_files(t, row_filter="region = 'eu'")
    # reads the first eu file (3 is within its bounds, no row matches) and rewrites the us file
    with pytest.raises(ConcurrentDeleteRead):
        stale.delete("id = 3 OR id = 200")
    assert catalog.load_table("db.reads").to_arrow(row_filter="id = 200").num_rows == 1


def test_delete_in_another_partition_never_conflicts_with_compaction(
    catalog: Catalog, table: Table
) -> None:
    stale = catalog.load_table("db.events")
    result = rewrite_data_files(table, row_filter="region = 'eu'")
    assert result.groups_committed == 1
    assert stale.delete("region = 'us' AND id = 101") is not None
    other = catalog.load_table("db.events")
    result = rewrite_data_files(
        other, row_filter="region = 'us'", progress=in_callback(lambda: table.delete("id = 7"))
    )
    assert result.groups_committed == 1 and result.groups_failed == ()
    final = catalog.load_table("db.events").to_arrow()
    assert 7 not in final.column("id").to_pylist() and 101 not in final.column("id").to_pylist()
    assert final.num_rows == 44 - 2


# ---- many processes --------------------------------------------------------------------------
APPENDERS = 4
APPENDS_EACH = 10


def _appender(url: str, warehouse: str, writer: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    catalog = Catalog(url, warehouse=warehouse)
    acknowledged = []
    for n in range(APPENDS_EACH):
        ids = [writer * 1_000 + n * 10 + k for k in range(5)]
        table = catalog.load_table("db.events")
        table.append(rows(ids, "eu" if n % 2 else "us"))  # any exception fails the test
        acknowledged.extend(ids)
    catalog.close()
    out.put((writer, acknowledged))


def test_compaction_concurrent_with_appending_processes_loses_and_duplicates_nothing(
    catalog_url: str, catalog: Catalog, table: Table, warehouse: str
) -> None:
    initial = table.to_arrow()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_appender, args=(catalog_url, warehouse, w + 1, queue))
        for w in range(APPENDERS)
    ]
    for p in procs:
        p.start()
    compactions: list[CompactionResult] = []
    deadline = time.monotonic() + 60
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        compactions.append(rewrite_data_files(table))
        time.sleep(0.05)
    compactions.append(rewrite_data_files(table))
    acknowledged = dict(queue.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0, "an appender failed"

    assert all(c.groups_failed == () for c in compactions)
    operations = [s.operation for s in catalog.load_table("db.events").snapshots()]
    first_compaction = operations.index(REPLACE)
    assert "append" in operations[first_compaction:], "compactions and appends interleaved"
    assert sum(c.groups_committed for c in compactions) >= 2
    final = catalog.load_table("db.events").to_arrow()
    appended_ids = [i for ids in acknowledged.values() for i in ids]
    assert len(appended_ids) == APPENDERS * APPENDS_EACH * 5
    ids = final.column("id").to_pylist()
    assert len(ids) == len(set(ids)), "a row was duplicated"
    assert sorted(ids) == sorted(initial.column("id").to_pylist() + appended_ids)
    expected_sum = pc.sum(initial.column("v")).as_py() + sum(i * 0.5 for i in appended_ids)
    assert pc.sum(final.column("v")).as_py() == pytest.approx(expected_sum)
