"""Maintenance jobs racing each other: a job whose files a concurrent commit deleted plans again.

A FileIO double runs a concurrent maintenance job on another handle of the same table at an
exact point of the job under test: just before it reads (or writes) a chosen file. No sleeps:
the interleaving is the one the hook forces. Each test checks that the job completes (or fails
with the typed error it should), that nothing still referenced was deleted, and that the table
loads and reads every row it should. The last test lets expiry, orphan removal and appends run
freely in threads for a bounded number of rounds, and checks the outcome whatever the
interleaving was.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.maintenance import (
    ExpireResult,
    TableKeptChanging,
    cherry_pick,
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
    rewrite_manifests,
)
from lakecat.catalog.maintenance.orphans import normalize_location
from lakecat.catalog.maintenance.reachable import reachable_files
from lakecat.catalog.write.writer import conform, write_files
from lakecat.metadata.errors import CommitFailed, NoSuchSnapshot, StorageError
from lakecat.metadata.io.fileio import FileNotFoundStorageError, LocalFileIO, local_path
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.table.snapshots import REPLACE, Snapshot

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])
FOUR_DAYS_S = 4 * 24 * 3600

Hook = tuple[Callable[[str], bool], Callable[[str], None]]


@dataclass
class HookIO(LocalFileIO):
    """A local FileIO that runs an action just before the first read (or write) of a file a
    predicate picks; the hook is removed before its action runs (the action reads files too)."""

    read_hooks: list[Hook] = field(default_factory=list)
    write_hooks: list[Hook] = field(default_factory=list)
    failing_deletes: Callable[[str], BaseException | None] | None = None

    def before_read(self, when: Callable[[str], bool], action: Callable[[str], None]) -> None:
        self.read_hooks.append((when, action))

    def before_write(self, when: Callable[[str], bool], action: Callable[[str], None]) -> None:
        self.write_hooks.append((when, action))

    @staticmethod
    def _fire(hooks: list[Hook], location: str) -> None:
        for i, (when, action) in enumerate(hooks):
            if when(location):
                del hooks[i]
                action(location)
                return

    def read(self, location: str) -> bytes:
        self._fire(self.read_hooks, location)
        return super().read(location)

    def open_input(self, location: str) -> Any:
        self._fire(self.read_hooks, location)
        return super().open_input(location)

    def write(self, location: str, data: bytes, *, exclusive: bool = False) -> None:
        self._fire(self.write_hooks, location)
        super().write(location, data, exclusive=exclusive)

    def open_output(self, location: str) -> IO[bytes]:
        self._fire(self.write_hooks, location)
        return super().open_output(location)

    def delete(self, location: str) -> None:
        error = self.failing_deletes(location) if self.failing_deletes is not None else None
        if error is not None:
            raise error
        super().delete(location)


@pytest.fixture
def io() -> HookIO:
    return HookIO()


@pytest.fixture
def catalog(catalog_url: str, warehouse: str, io: HookIO) -> Iterator[Catalog]:
    c = Catalog(catalog_url, warehouse=warehouse, io=io)
    c.create_namespace("db")
    yield c
    c.close()


def rows(ids: range | list[int], region: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "region": [region] * len(ids)}, schema=SCHEMA)


def make_table(catalog: Catalog, appends: int = 5) -> Table:
    """``appends`` appends of 10 rows each (ids 0..), alternating between two partitions.

    Without the advisory commit lock: the hooks commit from inside another commit (as a writer
    that does not take the lock would), where they would wait out the lock's timeout first."""
    t = catalog.create_table(
        "db.events", SCHEMA, partition_by=["region"], properties={"commit.lock.enabled": "false"}
    )
    for i in range(appends):
        t.append(rows(range(i * 10, i * 10 + 10), "eu" if i % 2 else "us"))
    return t


def soon() -> int:
    return int(time.time() * 1000) + 60_000


def path_of(location: str) -> str:
    path = local_path(location)
    assert path is not None
    return path


def exists(location: str) -> bool:
    return os.path.exists(path_of(location))


def all_files(t: Table) -> list[str]:
    return [info.location for info in t.io.list_prefix(t.location)]


def age(locations: list[str], seconds: int = FOUR_DAYS_S) -> None:
    """Make files look as if they were last written ``seconds`` ago."""
    then = time.time() - seconds
    for location in locations:
        os.utime(path_of(location), (then, then))


def uncommitted(t: Table, ids: list[int]) -> list[DataFile]:
    """Data files a writer wrote and has not committed (yet, or ever)."""
    written: list[DataFile] = write_files(t.io, t.metadata, conform(t.metadata, rows(ids, "eu")))
    return written


def ids_in(catalog: Catalog) -> list[int]:
    return sorted(catalog.load_table("db.events").to_arrow().column("id").to_pylist())


def assert_intact(catalog: Catalog, expected_ids: list[int]) -> Table:
    """The table loads, reads ``expected_ids`` and every file it references exists."""
    t = catalog.load_table("db.events")
    assert sorted(t.to_arrow().column("id").to_pylist()) == expected_ids
    missing = [p for p in reachable_files(t.io, t.metadata, t.metadata_location) if not exists(p)]
    assert missing == []
    for snap in t.snapshots():  # every remaining snapshot still reads
        t.to_arrow(snapshot_id=snap.snapshot_id)
    return t


def snapshot_with_list(t: Table, manifest_list: str) -> Snapshot:
    t.refresh()
    return next(s for s in t.snapshots() if s.manifest_list == manifest_list)


def current(t: Table) -> Snapshot:
    snap = t.current_snapshot()
    assert snap is not None
    return snap


# ---- orphan removal --------------------------------------------------------------------------
def test_orphan_removal_racing_an_expiry_plans_again_and_deletes_only_true_orphans(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog)
    stray = uncommitted(t, [900])  # a dead writer's leftover: a true orphan
    slow = uncommitted(t, [100, 101])  # an old writer that commits while the job reads
    age(all_files(t))  # every file looks older than the guard
    other = catalog.load_table("db.events")
    oldest = t.snapshots()[0]

    expired: list[ExpireResult] = []

    def commit_and_expire(_: str) -> None:
        other.commit_intent(
            Intent(kind=OpKind.APPEND, added_files=tuple(slow), starting_snapshot_id=None)
        )
        # deletes `oldest`'s manifest list, which the job is about to read
        expired.append(expire_snapshots(other, older_than=soon(), retain_last=1))

    io.before_read(lambda loc: loc == oldest.manifest_list, commit_and_expire)
    result = remove_orphan_files(t)

    assert io.read_hooks == []  # the expiry ran between the job's refresh and its reads
    assert not exists(oldest.manifest_list)
    # The orphans: the dead writer's file, and the files of the listing that the newest
    # metadata no longer references (the expired snapshots' lists, which the expiry deleted).
    freed = expired[0].deleted_manifest_lists
    assert oldest.manifest_list in freed
    assert sorted(normalize_location(p) for p in result.orphans) == sorted(
        normalize_location(p) for p in [*(f.file_path for f in stray), *freed]
    )
    assert result.deleted and result.not_deleted == ()
    assert not any(exists(f.file_path) for f in stray)
    # referenced by the newest metadata only (committed after the listing): kept
    assert all(exists(f.file_path) for f in slow)
    assert_intact(catalog, [*range(50), 100, 101])


def test_orphan_removal_on_a_table_that_names_a_missing_manifest_list_raises_and_deletes_nothing(
    catalog: Catalog,
) -> None:
    t = make_table(catalog)
    stray = uncommitted(t, [900])
    age(all_files(t))
    os.remove(path_of(t.snapshots()[0].manifest_list))  # damaged: the pointer does not move
    with pytest.raises(FileNotFoundStorageError):
        remove_orphan_files(t)
    assert all(exists(f.file_path) for f in stray)


def test_orphan_removal_raises_when_the_table_moved_on_but_still_names_the_missing_file(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog)
    stray = uncommitted(t, [900])
    age(all_files(t))
    missing = t.snapshots()[0].manifest_list
    os.remove(path_of(missing))
    other = catalog.load_table("db.events")
    io.before_read(lambda loc: loc == missing, lambda _: other.append(rows([77], "eu")))
    with pytest.raises(FileNotFoundStorageError, match="file not found"):
        remove_orphan_files(t)
    assert io.read_hooks == []  # the table moved, and the re-plan met the same missing file
    assert all(exists(f.file_path) for f in stray)


def test_orphan_removal_gives_up_with_a_typed_error_when_every_plan_loses_a_file(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog, appends=8)
    stray = uncommitted(t, [900])
    age(all_files(t))
    head_list = current(t).manifest_list
    other = catalog.load_table("db.events")
    expired: list[int] = []

    def expire_what_is_read(location: str) -> None:
        snap = snapshot_with_list(other, location)
        expire_snapshots(other, snapshot_ids=[snap.snapshot_id])
        expired.append(snap.snapshot_id)
        arm()  # again, for the next plan's first read

    def arm() -> None:
        io.before_read(
            lambda loc: os.path.basename(loc).startswith("snap-") and loc != head_list,
            expire_what_is_read,
        )

    arm()
    with pytest.raises(TableKeptChanging, match="remove_orphan_files"):
        remove_orphan_files(t)
    assert len(expired) == 5  # the first plan and four re-plans
    io.read_hooks.clear()
    assert all(exists(f.file_path) for f in stray)  # nothing deleted
    assert_intact(catalog, list(range(80)))


# ---- expiry ------------------------------------------------------------------------------------
def test_expiry_whose_kept_snapshots_are_expired_concurrently_still_deletes_what_it_freed(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog)
    first, second = t.snapshots()[0], t.snapshots()[1]
    other = catalog.load_table("db.events")
    # After our expiry committed, while it reads the trees of the snapshots it keeps, another
    # expiry removes one of them and deletes its manifest list.
    io.before_read(
        lambda loc: loc == second.manifest_list,
        lambda _: expire_snapshots(other, snapshot_ids=[second.snapshot_id]),
    )
    result = expire_snapshots(t, snapshot_ids=[first.snapshot_id])

    assert io.read_hooks == []
    assert result.expired_snapshot_ids == (first.snapshot_id,)
    assert result.cleanup_error is None and result.not_deleted == ()
    assert first.manifest_list in result.deleted_manifest_lists
    assert not exists(first.manifest_list) and not exists(second.manifest_list)
    fresh = assert_intact(catalog, list(range(50)))
    assert first.snapshot_id not in {s.snapshot_id for s in fresh.snapshots()}
    assert second.snapshot_id not in {s.snapshot_id for s in fresh.snapshots()}


def test_dry_run_expiry_racing_an_expiry_plans_again_on_the_newer_table(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog)
    s1, s2, s3, s4, _ = t.snapshots()
    other = catalog.load_table("db.events")
    io.before_read(
        lambda loc: loc == s4.manifest_list,  # kept by the dry run's first plan
        lambda _: expire_snapshots(other, snapshot_ids=[s4.snapshot_id]),
    )
    dry = expire_snapshots(t, older_than=soon(), retain_last=2, dry_run=True)

    assert io.read_hooks == []
    # Planned on the table without s4: main's history now ends at s5 (its parent is gone), so
    # s1, s2 and s3 are all older than the expiry time and not protected.
    older = [s1, s2, s3]
    assert dry.expired_snapshot_ids == tuple(sorted(s.snapshot_id for s in older))
    assert set(dry.deleted_manifest_lists) == {s.manifest_list for s in older}
    assert all(exists(s.manifest_list) for s in older)  # a dry run deletes nothing
    fresh = assert_intact(catalog, list(range(50)))
    assert {s.snapshot_id for s in older} <= {s.snapshot_id for s in fresh.snapshots()}


@pytest.mark.parametrize(
    "error",
    [StorageError("injected: delete refused"), PermissionError("injected: permission denied")],
    ids=["storage-error", "os-error"],
)
def test_expiry_reports_files_it_could_not_delete_instead_of_raising(
    catalog: Catalog, io: HookIO, error: BaseException
) -> None:
    t = make_table(catalog)
    t.delete("id < 10")  # the first data file is now only in old snapshots
    io.failing_deletes = lambda loc: error if loc.endswith(".parquet") else None
    result = expire_snapshots(t, older_than=soon(), retain_last=1)

    assert len(result.expired_snapshot_ids) == 5  # the commit stands
    assert result.deleted_data_files == ()
    assert len(result.not_deleted) == 1 and result.not_deleted[0].endswith(".parquet")
    assert exists(result.not_deleted[0])  # left for orphan removal
    assert result.deleted_manifest_lists and not any(
        exists(p) for p in result.deleted_manifest_lists
    )
    assert result.cleanup_error is None
    io.failing_deletes = None
    assert_intact(catalog, list(range(10, 50)))


def test_expiry_that_finds_the_table_damaged_after_committing_reports_it_and_deletes_nothing(
    catalog: Catalog,
) -> None:
    t = make_table(catalog)
    first, third = t.snapshots()[0], t.snapshots()[2]
    os.remove(path_of(third.manifest_list))  # a kept snapshot's list is missing
    result = expire_snapshots(t, snapshot_ids=[first.snapshot_id])

    assert result.expired_snapshot_ids == (first.snapshot_id,)  # committed
    assert first.snapshot_id not in {
        s.snapshot_id for s in catalog.load_table("db.events").snapshots()
    }
    assert result.cleanup_error is not None and "file not found" in result.cleanup_error
    assert (result.deleted_data_files, result.deleted_manifests) == ((), ())
    assert result.deleted_manifest_lists == ()
    assert exists(first.manifest_list)  # nothing deleted on a partial read


# ---- manifest rewrite ------------------------------------------------------------------------
def test_manifest_rewrite_racing_a_rewrite_and_an_expiry_plans_again_on_the_newer_table(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog)
    head = current(t)
    other = catalog.load_table("db.events")

    def rewrite_expire_append(_: str) -> None:
        rewrite_manifests(other)
        expire_snapshots(other, older_than=soon(), retain_last=1)  # deletes head's list
        other.append(rows([100], "eu"))

    io.before_read(lambda loc: loc == head.manifest_list, rewrite_expire_append)
    result = rewrite_manifests(t)

    assert io.read_hooks == []
    assert not exists(head.manifest_list)
    fresh = assert_intact(catalog, [*range(50), 100])
    assert result.snapshot_id is not None and current(fresh).snapshot_id == result.snapshot_id
    assert current(fresh).operation == REPLACE
    # the failed plan left no files behind: every manifest under the table is referenced
    referenced = {
        normalize_location(p)
        for p in reachable_files(fresh.io, fresh.metadata, fresh.metadata_location)
    }
    avro = {normalize_location(p) for p in all_files(fresh) if p.endswith(".avro")}
    assert avro <= referenced


def test_manifest_rewrite_of_a_table_missing_its_current_manifest_list_raises(
    catalog: Catalog,
) -> None:
    t = make_table(catalog)
    os.remove(path_of(current(t).manifest_list))
    with pytest.raises(FileNotFoundStorageError):
        rewrite_manifests(t)


# ---- compaction --------------------------------------------------------------------------------
def test_compaction_racing_a_manifest_rewrite_and_an_expiry_plans_again_and_compacts(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog)
    head = current(t)
    other = catalog.load_table("db.events")

    def rewrite_and_expire(_: str) -> None:
        rewrite_manifests(other)
        expire_snapshots(other, older_than=soon(), retain_last=1)  # deletes head's list

    io.before_read(lambda loc: loc == head.manifest_list, rewrite_and_expire)
    result = rewrite_data_files(t)

    assert io.read_hooks == []
    assert not exists(head.manifest_list)
    assert result.groups_failed == () and result.groups_committed == 2
    assert result.files_removed == 5 and result.files_added == 2
    fresh = assert_intact(catalog, list(range(50)))
    assert len(fresh.scan().plan_files()) == 2


def test_compaction_of_a_table_missing_its_current_manifest_list_raises(catalog: Catalog) -> None:
    t = make_table(catalog)
    os.remove(path_of(current(t).manifest_list))
    with pytest.raises(FileNotFoundStorageError):
        rewrite_data_files(t)


# ---- cherry-pick -------------------------------------------------------------------------------
def staged_snapshot(t: Table) -> Snapshot:
    """An append no ref points at any more (staged on a branch that was removed), whose parent
    is no longer main's head (so that picking it re-commits its files). Main: ids 0..59."""
    t.create_branch("staging", current(t).snapshot_id)
    t.append(rows([500, 501], "eu"), branch="staging")
    t.append(rows(range(50, 60), "us"))
    staged = t.snapshot(t.refs()["staging"].snapshot_id)
    t.remove_ref("staging")
    return staged


def test_cherry_pick_of_a_snapshot_expired_while_it_is_read_is_refused_as_no_such_snapshot(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog)
    staged = staged_snapshot(t)
    other = catalog.load_table("db.events")
    io.before_read(
        lambda loc: loc == staged.manifest_list,
        lambda _: expire_snapshots(other, snapshot_ids=[staged.snapshot_id]),
    )
    with pytest.raises(NoSuchSnapshot):
        cherry_pick(t, staged.snapshot_id)
    assert io.read_hooks == []
    assert_intact(catalog, list(range(60)))


def test_cherry_pick_refuses_a_snapshot_expired_before_it_committed_instead_of_re_adding_its_files(
    catalog: Catalog, io: HookIO
) -> None:
    t = make_table(catalog)
    staged = staged_snapshot(t)
    other = catalog.load_table("db.events")
    # Planned; then, as the pick writes its manifest, an expiry removes the snapshot and
    # deletes its data files.
    io.before_write(
        lambda loc: loc.endswith(".avro"),
        lambda _: expire_snapshots(other, snapshot_ids=[staged.snapshot_id]),
    )
    with pytest.raises(NoSuchSnapshot, match="expired"):
        cherry_pick(t, staged.snapshot_id)
    assert io.write_hooks == []
    assert_intact(catalog, list(range(60)))


# ---- all at once ---------------------------------------------------------------------------------
def test_expiry_orphan_removal_and_appends_together_keep_every_acknowledged_row(
    catalog_url: str, warehouse: str
) -> None:
    setup = Catalog(catalog_url, warehouse=warehouse)
    setup.create_namespace("db")
    t = make_table(setup, appends=2)
    stray = uncommitted(t, [900])
    age([f.file_path for f in stray])
    setup.close()

    appends = 40
    acknowledged: list[int] = list(range(20))
    done = threading.Event()
    errors: list[BaseException] = []
    gave_up: list[BaseException] = []

    def run(work: Callable[[Table], None], rounds: int) -> None:
        """``work`` on a handle of its own, up to ``rounds`` times while the appends go on."""
        catalog = Catalog(catalog_url, warehouse=warehouse)
        try:
            table = catalog.load_table("db.events")
            for _ in range(rounds):
                work(table)
                if done.is_set():
                    break
        except BaseException as exc:
            errors.append(exc)
        finally:
            catalog.close()

    def append_all(table: Table) -> None:
        try:
            for i in range(appends):
                ids = [1000 + i * 10, 1001 + i * 10]
                table.append(rows(ids, "eu" if i % 2 else "us"))
                acknowledged.extend(ids)
        finally:
            done.set()

    pick = random.Random(7)

    def expire(table: Table) -> None:
        # Mostly a random old snapshot, so that orphan removal, reading every list, may meet its
        # deleted list late in its read (not only right after its refresh); sometimes by age.
        table.refresh()
        heads = {ref.snapshot_id for ref in table.refs().values()}
        old = [s.snapshot_id for s in table.snapshots() if s.snapshot_id not in heads][:-3]
        try:
            if len(old) > 3 and pick.random() < 0.8:
                expire_snapshots(table, snapshot_ids=[pick.choice(old)])
            else:
                expire_snapshots(table, older_than=soon(), retain_last=6)
        except CommitFailed as exc:  # lost the swap on every retry: allowed, not an error
            gave_up.append(exc)

    def remove_orphans(table: Table) -> None:
        try:
            remove_orphan_files(table)
        except TableKeptChanging as exc:  # allowed: the table changed under every re-plan
            gave_up.append(exc)

    threads = [
        threading.Thread(target=run, args=(append_all, 1)),
        threading.Thread(target=run, args=(expire, 200)),
        threading.Thread(target=run, args=(remove_orphans, 200)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []

    final = Catalog(catalog_url, warehouse=warehouse)
    try:
        assert_intact(final, sorted(acknowledged))
        remove_orphan_files(final.load_table("db.events"))  # quiet now: takes the stray file
        assert not any(exists(f.file_path) for f in stray)
        assert_intact(final, sorted(acknowledged))
    finally:
        final.close()
