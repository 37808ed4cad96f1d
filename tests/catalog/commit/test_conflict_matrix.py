"""Every cell of the conflict matrix (docs/concurrency.md section 3), scripted.

Two writers load the table at v0. The *earlier* writer commits first; then the *later* writer,
which planned on v0, commits: the commit path refreshes, checks the commits in between and
either re-applies or raises the typed conflict. Each cell runs for the same partition and for
disjoint partitions, under both isolation levels, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.maintenance.reachable import reachable_files
from lakecat.catalog.write.writer import write_files
from lakecat.metadata.errors import (
    CommitConflict,
    ConcurrentAppend,
    ConcurrentDeleteDelete,
    ConcurrentTransaction,
    MetadataChanged,
    ValidationError,
)
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.schema.types import StringType


def rows(region: str, ids: range, v_start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "region": [region] * len(ids),
            "v": pa.array([v_start + 10 * i for i in range(len(ids))], pa.int64()),
        }
    )


# ---- the operations, each on the partition it is given ---------------------------------------
def op_append(t: Table, p: str) -> None:
    t.append(rows(p, range(0, 10)))


def op_delete(t: Table, p: str) -> None:
    assert t.delete(f"region = '{p}' AND v < 50") is not None  # partial: rewrites the file


def op_overwrite(t: Table, p: str) -> None:
    t.overwrite(rows(p, range(100, 103)), f"region = '{p}'")


def op_dynamic_overwrite(t: Table, p: str) -> None:
    t.dynamic_partition_overwrite(rows(p, range(200, 203)))


def op_update(t: Table, p: str) -> None:
    assert t.update({"v": -1}, f"region = '{p}' AND v < 50") is not None


def op_merge(t: Table, p: str) -> None:
    source = pa.table(
        {"id": pa.array([1, 1000], pa.int64()), "region": [p, p], "v": pa.array([7, 8], pa.int64())}
    )
    t.merge(
        source,
        on=["region", "id"],
        when_matched_update=True,
        when_not_matched_insert=True,
        target_filter=f"region = '{p}'",
    )


def op_compact(t: Table, p: str) -> None:
    """A compaction's commit: the partition's files rewritten as one, same rows (REPLACE)."""
    start = t.metadata
    files = t.scan(f"region = '{p}'").plan_files()
    data = pa.concat_tables([read_data_file(t.io, f, projected=start.schema()) for f in files])
    new = write_files(t.io, start, [data])
    head = start.current_snapshot
    t.commit_intent(
        Intent(
            OpKind.REPLACE,
            starting_snapshot_id=head.snapshot_id if head else None,
            added_files=tuple(new),
            removed_files=tuple(files),
        )
    )


def op_schema_change(t: Table, p: str) -> None:
    with t.update_schema() as u:
        u.add_column(f"note_{p}", StringType())


READERS = {
    "delete": op_delete,
    "overwrite": op_overwrite,
    "dynamic_overwrite": op_dynamic_overwrite,
    "update": op_update,
    "merge": op_merge,
}
EARLIER = {"append": op_append, **READERS, "compact": op_compact, "schema": op_schema_change}
LATER = {"append": op_append, **READERS, "compact": op_compact}


def expected(
    later: str, earlier: str, same_partition: bool, isolation: str
) -> type[CommitConflict] | None:
    """The matrix: which error the later committer gets, or None when both land."""
    if later == "append":
        return None  # blind appends never conflict
    if earlier == "schema":
        return MetadataChanged  # metadata changes conflict with every write but a blind append
    if not same_partition:
        return None  # disjoint partitions never conflict
    if earlier == "append":
        if later == "compact":
            return None  # compaction never fails because of an append
        return ConcurrentAppend if isolation == "serializable" else None
    # the earlier operation removed (rewrote) the file the later one removes
    return ConcurrentDeleteDelete


def make_table(catalog: Catalog, isolation: str) -> None:
    t = catalog.create_table(
        "db.m",
        rows("eu", range(1)).schema,
        partition_by=["region"],
        properties={
            "write.delete.isolation-level": isolation,
            "write.update.isolation-level": isolation,
            "write.merge.isolation-level": isolation,
        },
    )
    t.append(pa.concat_tables([rows("eu", range(10)), rows("us", range(10))]))


def data_files_on_disk(t: Table) -> set[str]:
    root = t.location.removeprefix("file://") + "/data"
    return {"file://" + os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def referenced(t: Table) -> set[str]:
    return {p for p in reachable_files(t.io, t.metadata, t.metadata_location) if "/data/" in p}


def run_cell(
    catalog: Catalog,
    later: Callable[[Table, str], None],
    earlier: Callable[[Table, str], None],
    same: bool,
) -> Exception | None:
    late = catalog.load_table("db.m")  # planned on v0
    early = catalog.load_table("db.m")
    earlier(early, "eu")
    try:
        later(late, "eu" if same else "us")
    except CommitConflict as exc:
        return exc
    return None


@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
@pytest.mark.parametrize("same_partition", [True, False], ids=["same", "disjoint"])
@pytest.mark.parametrize("earlier", list(EARLIER))
@pytest.mark.parametrize("later", list(LATER))
def test_conflict_matrix_cell(
    catalog: Catalog, later: str, earlier: str, same_partition: bool, isolation: str
) -> None:
    make_table(catalog, isolation)
    before = catalog.load_table("db.m")
    v1_snapshots = {s.snapshot_id for s in before.snapshots()}
    error = run_cell(catalog, LATER[later], EARLIER[earlier], same_partition)
    want = expected(later, earlier, same_partition, isolation)

    t = catalog.load_table("db.m")
    if want is None:
        assert error is None, f"{later} after {earlier}: unexpected {error!r}"
    else:
        assert isinstance(error, want), (
            f"{later} after {earlier}: got {error!r}, want {want.__name__}"
        )
        assert str(error)  # the message names the concurrent snapshot and what overlapped
        if earlier != "schema":
            assert str(error.snapshot_id) in str(error) or error.snapshot_id is None
    # the history is linear and holds the earlier commit; the later one only when it landed
    chain = [s.snapshot_id for s in t.metadata.ancestors(t.metadata.current_snapshot_id)]
    assert len(chain) == len(set(chain)) == len(t.metadata.snapshots)
    new = len([s for s in chain if s not in v1_snapshots])
    earlier_commits = 0 if earlier == "schema" else 1
    assert new == earlier_commits + (1 if error is None else 0)
    # a failed attempt leaves no data file behind; every referenced file exists
    assert data_files_on_disk(t) == referenced(t)


def test_spec_example_delete_after_insert_serializable_fails(catalog: Catalog) -> None:
    """Section 2: DELETE starts on v0, INSERT commits v1, DELETE commits -> ConcurrentAppend."""
    make_table(catalog, "serializable")
    deleter = catalog.load_table("db.m")  # v0
    catalog.load_table("db.m").append(rows("eu", range(50, 55)))  # v1: the INSERT
    with pytest.raises(ConcurrentAppend) as info:
        deleter.delete("region = 'eu' AND v < 50")
    assert "region=eu" in str(info.value)
    assert "partition" in str(info.value)
    assert catalog.load_table("db.m").scan().count() == 25


def test_spec_example_delete_after_insert_snapshot_isolation_keeps_inserted_rows(
    catalog: Catalog,
) -> None:
    """Section 2, write-serializable: both land, and the inserted rows survive the DELETE."""
    make_table(catalog, "snapshot")
    deleter = catalog.load_table("db.m")
    catalog.load_table("db.m").append(rows("eu", range(50, 55)))  # v values 0..40: all < 50
    deleter.delete("region = 'eu' AND v < 50")
    t = catalog.load_table("db.m")
    eu = t.to_arrow("region = 'eu'")
    assert sorted(eu.column("id").to_pylist()) == [5, 6, 7, 8, 9, 50, 51, 52, 53, 54]
    ops = [s.summary.get("lakecat.operation", s.operation) for s in t.snapshots()]
    assert ops == ["append", "append", "delete"]  # history shows the insert first


@pytest.mark.parametrize("level", ["SERIALIZABLE", "Snapshot"])
def test_an_isolation_level_reads_in_any_case_as_iceberg_reads_it(
    catalog: Catalog, level: str
) -> None:
    """Iceberg's IsolationLevel.fromName ignores case: a table another engine configured so
    behaves as its level says, and Table.set_properties takes the same values (and refuses
    what fromName refuses: blanks around a level)."""
    make_table(catalog, level)
    deleter = catalog.load_table("db.m")
    catalog.load_table("db.m").append(rows("eu", range(50, 55)))
    if level == "SERIALIZABLE":
        with pytest.raises(ConcurrentAppend):
            deleter.delete("region = 'eu' AND v < 50")
    else:
        deleter.delete("region = 'eu' AND v < 50")
        assert catalog.load_table("db.m").to_arrow("region = 'eu'").num_rows == 10
    catalog.load_table("db.m").set_properties({"write.update.isolation-level": "Serializable"})
    with pytest.raises(ValidationError, match="isolation-level=' snapshot'"):
        catalog.load_table("db.m").set_properties({"write.update.isolation-level": " snapshot"})


def test_two_concurrent_upserts_of_the_same_new_key_cannot_both_commit(catalog: Catalog) -> None:
    make_table(catalog, "snapshot")
    first = catalog.load_table("db.m")
    second = catalog.load_table("db.m")
    new_key = pa.table(
        {"id": pa.array([777], pa.int64()), "region": ["eu"], "v": pa.array([1], pa.int64())}
    )
    first.upsert(new_key, on=["region", "id"])
    with pytest.raises(ConcurrentAppend):
        second.upsert(new_key.set_column(2, "v", pa.array([2], pa.int64())), on=["region", "id"])
    got = catalog.load_table("db.m").to_arrow("id = 777")
    assert got.num_rows == 1


def test_same_application_version_twice_raises_or_skips(catalog: Catalog) -> None:
    make_table(catalog, "snapshot")
    t = catalog.load_table("db.m")
    t.append(rows("eu", range(3)), app_id="job-1", app_version=7)
    with pytest.raises(ConcurrentTransaction):
        catalog.load_table("db.m").append(rows("eu", range(3)), app_id="job-1", app_version=7)
    skipped = catalog.load_table("db.m").append(
        rows("eu", range(3)), app_id="job-1", app_version=7, skip_if_committed=True
    )
    assert skipped.skipped
    assert catalog.load_table("db.m").scan().count() == 23
    t2 = catalog.load_table("db.m")
    t2.append(rows("eu", range(1)), app_id="job-1", app_version=8)
    assert t2.current_snapshot().summary["lakecat.app-version"] == "8"
    assert data_files_on_disk(t2) == referenced(t2)
