"""Snapshot expiry: what is kept, what is deleted, and that nothing still needed goes.

The randomized test builds a history of appends, deletes, overwrites, compactions, manifest
rewrites, tags and branches, records the rows of every snapshot, then expires in random ways:
every snapshot that remains must read the same rows, and every file it references must exist.
"""

from __future__ import annotations

import hashlib
import os
import random
import time

import pyarrow as pa
import pytest

import lakecat.catalog.maintenance.expire as expire_module
from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import (
    ExpiryPolicy,
    expire_snapshots,
    plan_expiry,
    rewrite_data_files,
    rewrite_manifests,
)
from lakecat.catalog.maintenance.reachable import reachable_files
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError
from lakecat.metadata.io.fileio import local_path
from lakecat.metadata.table.snapshots import Snapshot

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def current(t: Table) -> Snapshot:
    """The table's current snapshot (the tests only ask once there is one)."""
    snap = t.current_snapshot()
    assert snap is not None
    return snap


def rows(ids: range | list[int], region: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "region": [region] * len(ids)}, schema=SCHEMA)


def digest(t: pa.Table) -> str:
    ordered = t.sort_by([("id", "ascending"), ("region", "ascending")]).to_pylist()
    return hashlib.sha256(str(ordered).encode()).hexdigest()


def far_future() -> int:
    return int(time.time() * 1000) + 3_600_000


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.events", SCHEMA, partition_by=["region"])
    for i in range(5):
        t.append(rows(range(i * 10, i * 10 + 10), "eu" if i % 2 else "us"))
    return t


def ids_of(t: Table) -> list[int]:
    return [s.snapshot_id for s in t.snapshots()]


def exists(location: str) -> bool:
    path = local_path(location)
    assert path is not None
    return os.path.exists(path)


def assert_remaining_snapshots_intact(t: Table, recorded: dict[int, str]) -> None:
    """Every remaining snapshot reads its recorded rows; every file it references exists."""
    t.refresh()
    for snap in t.snapshots():
        if snap.snapshot_id in recorded:
            assert digest(t.to_arrow(snapshot_id=snap.snapshot_id)) == recorded[snap.snapshot_id]
    missing = [p for p in reachable_files(t.io, t.metadata, t.metadata_location) if not exists(p)]
    assert missing == []


# ---- what is kept ----------------------------------------------------------------------------
def test_expire_keeps_the_newest_snapshots_and_deletes_what_only_old_ones_used(
    table: Table,
) -> None:
    first = table.snapshots()[0]
    table.delete("id < 10")  # the first file is now only in old snapshots
    rewrite_data_files(table)
    before = ids_of(table)
    recorded = {s: digest(table.to_arrow(snapshot_id=s)) for s in before}
    result = expire_snapshots(table, older_than=far_future(), retain_last=2)
    assert ids_of(table) == before[-2:]
    assert len(result.expired_snapshot_ids) == len(recorded) - 2
    assert first.snapshot_id in result.expired_snapshot_ids
    assert result.deleted_data_files and result.deleted_manifests and result.deleted_manifest_lists
    assert first.manifest_list in result.deleted_manifest_lists
    assert not any(exists(p) for p in result.deleted_data_files + result.deleted_manifest_lists)
    assert_remaining_snapshots_intact(table, recorded)
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(10, 50))


def test_defaults_keep_recent_snapshots(table: Table) -> None:
    before = ids_of(table)
    result = expire_snapshots(table)  # 5 days, at least 1: everything is recent
    assert result.expired_snapshot_ids == ()
    assert ids_of(table) == before


def test_table_properties_set_the_default_age_and_count(table: Table) -> None:
    table.set_properties(
        {"history.expire.max-snapshot-age-ms": "0", "history.expire.min-snapshots-to-keep": "2"}
    )
    time.sleep(0.002)
    expire_snapshots(table)
    assert len(table.snapshots()) == 2


def test_heads_of_branches_and_tags_are_never_expired(table: Table) -> None:
    snaps = ids_of(table)
    table.create_tag("v1", snaps[0])
    table.create_branch("audit", snaps[1])
    result = expire_snapshots(table, older_than=far_future())
    assert set(ids_of(table)) == {snaps[0], snaps[1], snaps[-1]}
    assert len(result.expired_snapshot_ids) == 2
    assert table.to_arrow(ref="v1").num_rows == 10
    assert table.to_arrow(ref="audit").num_rows == 20


def test_naming_the_head_of_a_ref_is_refused(table: Table) -> None:
    table.create_tag("v1", ids_of(table)[0])
    with pytest.raises(ValidationError, match="v1"):
        expire_snapshots(table, snapshot_ids=[ids_of(table)[0]])
    with pytest.raises(ValidationError, match="main"):
        expire_snapshots(table, snapshot_ids=[ids_of(table)[-1]])
    with pytest.raises(NoSuchSnapshot):
        expire_snapshots(table, snapshot_ids=[12345])
    with pytest.raises(ValidationError):
        expire_snapshots(table, retain_last=0)


def test_explicit_snapshot_ids_are_expired(table: Table) -> None:
    snaps = ids_of(table)
    result = expire_snapshots(table, snapshot_ids=[snaps[1], snaps[2]])
    assert result.expired_snapshot_ids == tuple(sorted([snaps[1], snaps[2]]))
    assert ids_of(table) == [snaps[0], snaps[3], snaps[4]]
    assert table.to_arrow().num_rows == 50


def test_branch_retention_overrides_the_defaults(table: Table) -> None:
    snaps = ids_of(table)
    table.create_branch("audit", snaps[3], min_snapshots_to_keep=3)
    audit_head = table.append(rows([77], "eu"), branch="audit").snapshot_id
    assert table.refs()["audit"].min_snapshots_to_keep == 3  # a commit keeps the retention
    expire_snapshots(table, older_than=far_future())
    assert set(ids_of(table)) == {snaps[2], snaps[3], audit_head, snaps[4]}


def test_a_ref_older_than_its_max_age_is_removed_but_main_never(table: Table) -> None:
    snaps = ids_of(table)
    table.create_tag("stale", snaps[0], max_ref_age_ms=1)
    table.create_tag("kept", snaps[1])
    time.sleep(0.005)
    result = expire_snapshots(table, older_than=far_future())
    assert result.removed_refs == ("stale",)
    assert set(table.refs()) == {"main", "kept"}
    assert snaps[0] in result.expired_snapshot_ids


def test_dry_run_reports_and_changes_nothing(table: Table) -> None:
    table.delete("id < 10")
    location = table.metadata_location
    dry = expire_snapshots(table, older_than=far_future(), dry_run=True)
    assert table.refresh().metadata_location == location
    assert dry.deleted_data_files and all(exists(p) for p in dry.deleted_data_files)
    real = expire_snapshots(table, older_than=far_future())
    assert real == dry


def test_without_delete_files_the_files_stay(table: Table) -> None:
    table.delete("id < 10")
    result = expire_snapshots(table, older_than=far_future(), delete_files=False)
    assert result.expired_snapshot_ids and result.deleted_data_files == ()
    dry = expire_snapshots(table, older_than=far_future(), dry_run=True)
    assert dry.expired_snapshot_ids == ()


def test_plan_is_pure_and_counts_per_branch(table: Table) -> None:
    meta = table.metadata
    now = int(time.time() * 1000) + 1000
    plan = plan_expiry(meta, ExpiryPolicy(now_ms=now, older_than_ms=now, retain_last=3))
    assert len(plan.expired) == 2 and plan.removed_refs == ()
    assert table.metadata is meta


# ---- concurrency and readers -------------------------------------------------------------------
def test_a_snapshot_committed_during_expiry_survives(
    catalog: Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the other writer commits from inside this commit: without the advisory lock (as a writer
    # that does not take it), else it would first wait out the lock's timeout
    table.set_properties({"commit.lock.enabled": "false"})
    other = catalog.load_table("db.events")
    real_plan = expire_module.plan_expiry
    appended: list[int | None] = []

    def plan_then_append(*args, **kwargs):  # type: ignore[no-untyped-def]
        plan = real_plan(*args, **kwargs)
        if not appended:  # between planning and the swap: the expiry loses the race
            appended.append(other.append(rows([999], "eu")).snapshot_id)
        return plan

    monkeypatch.setattr(expire_module, "plan_expiry", plan_then_append)
    result = expire_snapshots(table, older_than=int(time.time() * 1000), retain_last=1)
    assert appended[0] not in result.expired_snapshot_ids
    assert current(table).snapshot_id == appended[0]
    assert 999 in table.refresh().to_arrow().column("id").to_pylist()
    assert_remaining_snapshots_intact(table, {})


def test_a_read_of_a_snapshot_within_the_guard_keeps_its_files(table: Table) -> None:
    old = current(table)
    expected = digest(table.to_arrow())
    scan = table.scan(snapshot_id=old.snapshot_id)
    files = scan.plan_files()  # a reader has planned on `old` and not read yet
    table.delete("id < 20")
    rewrite_data_files(table)
    table.append(rows([1000], "us"))
    expire_snapshots(table, older_than=old.timestamp_ms, retain_last=1)
    assert old.snapshot_id in ids_of(table)
    assert all(exists(f.file_path) for f in files)
    assert digest(scan.to_arrow()) == expected


# ---- metadata files ----------------------------------------------------------------------------
def metadata_json_files(t: Table) -> list[str]:
    folder = local_path(t.location + "/metadata")
    assert folder is not None
    return sorted(f for f in os.listdir(folder) if f.endswith(".metadata.json"))


def test_old_metadata_files_are_pruned_after_commit(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.pruned", SCHEMA, properties={"write.metadata.previous-versions-max": "2"}
    )
    for i in range(5):
        t.append(rows([i], "eu"))
    assert len(t.metadata.metadata_log) == 2
    kept = {e.metadata_file.rsplit("/", 1)[-1] for e in t.metadata.metadata_log}
    kept.add(t.metadata_location.rsplit("/", 1)[-1])
    assert set(metadata_json_files(t)) == kept


def test_metadata_files_stay_when_deletion_after_commit_is_disabled(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.unpruned",
        SCHEMA,
        properties={
            "write.metadata.previous-versions-max": "2",
            "write.metadata.delete-after-commit.enabled": "false",
        },
    )
    for i in range(5):
        t.append(rows([i], "eu"))
    assert len(t.metadata.metadata_log) == 2
    assert len(metadata_json_files(t)) == 6


# ---- randomized histories ----------------------------------------------------------------------
def random_history(t: Table, rng: random.Random, steps: int) -> dict[int, str]:
    """Apply random operations; return the rows digest of every snapshot created."""
    next_id = 0
    for step in range(steps):
        op = rng.choice(["append", "append", "delete", "overwrite", "compact", "manifests", "tag"])
        region = rng.choice(["eu", "us", "ap"])
        if op == "append" or t.current_snapshot() is None:
            t.append(rows(range(next_id, next_id + rng.randint(1, 8)), region))
            next_id += 10
        elif op == "delete":
            t.delete(f"id < {rng.randint(0, next_id)} AND region = '{region}'")
        elif op == "overwrite":
            t.overwrite(rows([next_id], region), f"region = '{region}'")
            next_id += 10
        elif op == "compact":
            rewrite_data_files(t)
        elif op == "manifests":
            rewrite_manifests(t, target_size_bytes=rng.choice([1, 10_000]))
        else:
            t.create_tag(f"t{step}", rng.choice(ids_of(t)))
    return {s: digest(t.to_arrow(snapshot_id=s)) for s in ids_of(t)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_expiry_never_deletes_a_file_a_remaining_snapshot_needs(table: Table, seed: int) -> None:
    rng = random.Random(seed)
    recorded = random_history(table, rng, steps=25)
    deleted_total = 0
    for _ in range(4):
        snaps = ids_of(table)
        heads = {r.snapshot_id for r in table.refs().values()}
        choice = rng.choice(["ids", "age", "count"])
        if choice == "ids":
            candidates = [s for s in snaps if s not in heads]
            picked = rng.sample(candidates, k=min(len(candidates), rng.randint(1, 4)))
            result = expire_snapshots(table, snapshot_ids=picked)
        elif choice == "age":
            cutoff = table.snapshot(rng.choice(snaps)).timestamp_ms
            result = expire_snapshots(table, older_than=cutoff, retain_last=1)
        else:
            result = expire_snapshots(table, older_than=far_future(), retain_last=rng.randint(1, 4))
        assert not set(result.expired_snapshot_ids) & set(ids_of(table))
        referenced = reachable_files(table.io, table.metadata, table.metadata_location)
        deleted = (
            result.deleted_data_files + result.deleted_manifests + result.deleted_manifest_lists
        )
        assert not set(deleted) & referenced
        deleted_total += len(deleted)
        assert_remaining_snapshots_intact(table, recorded)
        table.append(rows([10_000 + len(snaps)], "eu"))
        recorded[current(table).snapshot_id] = digest(table.to_arrow())
    assert deleted_total > 0


def test_time_travel_is_unchanged_by_compaction_manifest_rewrite_and_expiry(table: Table) -> None:
    table.delete("id >= 12 AND id <= 15")
    table.overwrite(rows([500, 501], "eu"), "region = 'eu' AND id < 20")
    recorded = {s: digest(table.to_arrow(snapshot_id=s)) for s in ids_of(table)}
    rewrite_data_files(table)
    assert_remaining_snapshots_intact(table, recorded)
    rewrite_manifests(table, target_size_bytes=1)
    assert_remaining_snapshots_intact(table, recorded)
    snaps = ids_of(table)
    expire_snapshots(table, snapshot_ids=snaps[1:4])
    assert_remaining_snapshots_intact(table, recorded)
    assert set(ids_of(table)) == set(snaps) - set(snaps[1:4])
