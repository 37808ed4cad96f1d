"""Manifest maintenance: merging on append, and rewrite_manifests regrouping by partition."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

import lakecat.catalog.maintenance.manifests as manifests_module
from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import remove_orphan_files, rewrite_data_files, rewrite_manifests
from lakecat.catalog.read.incremental import data_version
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.manifests.datafile import ManifestFile, Status
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.table.snapshots import REPLACE, Snapshot

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def current(t: Table) -> Snapshot:
    """The table's current snapshot (the tests only ask once there is one)."""
    snap = t.current_snapshot()
    assert snap is not None
    return snap


REGIONS = ("ap", "eu", "us")
NO_MERGE = {"commit.manifest-merge.enabled": "false"}


def rows(ids: list[int], region: str) -> pa.Table:
    return pa.table({"id": ids, "region": [region] * len(ids)}, schema=SCHEMA)


def soon() -> int:
    return int(time.time() * 1000) + 60_000


def manifests(t: Table) -> list[ManifestFile]:
    return read_manifest_list(t.io, current(t).manifest_list)


Entry = tuple[Status, int | None, int | None, int | None]


def entries(t: Table) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for m in manifests(t):
        for e in read_manifest(t.io, m, specs=t.metadata.specs_by_id(), schema=t.schema()):
            if e.status is not Status.DELETED:
                out[e.data_file.file_path] = (
                    e.status,
                    e.snapshot_id,
                    e.sequence_number,
                    e.file_sequence_number,
                )
    return out


def append_all_regions(t: Table, times: int) -> None:
    for i in range(times):
        t.append(pa.concat_tables([rows([i * 10 + k], r) for k, r in enumerate(REGIONS)]))


# ---- merging on append (commit.manifest-merge.*) ----------------------------------------
def test_appends_keep_one_manifest_each_below_the_merge_count(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(5):
        t.append(rows([i], "eu"))
    assert len(manifests(t)) == 5  # default min-count-to-merge is 100


def test_appends_merge_manifests_once_the_merge_count_is_reached(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, properties={"commit.manifest.min-count-to-merge": "3"})
    counts = []
    for i in range(10):
        t.append(rows([i], "eu"))
        counts.append(len(manifests(t)))
    assert max(counts) <= 3 and counts[2] == 1
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(10))
    # merged entries keep the snapshot and sequence number of the commit that added them
    seqs = sorted(seq or 0 for _, _, seq, _ in entries(t).values())
    assert seqs == list(range(1, 11))


def test_merge_disabled_keeps_every_manifest(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.t", SCHEMA, properties={**NO_MERGE, "commit.manifest.min-count-to-merge": "2"}
    )
    for i in range(6):
        t.append(rows([i], "eu"))
    assert len(manifests(t)) == 6


def test_manifests_larger_than_the_target_size_are_not_merged(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.t",
        SCHEMA,
        properties={
            "commit.manifest.min-count-to-merge": "2",
            "commit.manifest.target-size-bytes": "1",
        },
    )
    for i in range(4):
        t.append(rows([i], "eu"))
    assert len(manifests(t)) == 4


# ---- rewrite_manifests ---------------------------------------------------------------------
@pytest.fixture
def table(catalog: Catalog) -> Table:
    """Nine appends, each touching all three partitions: nine manifests, each spanning all."""
    t = catalog.create_table("db.events", SCHEMA, partition_by=["region"], properties=NO_MERGE)
    append_all_regions(t, 9)
    return t


def test_rewrite_regroups_manifests_by_partition(table: Table) -> None:
    before_rows = sorted(table.to_arrow().column("id").to_pylist())
    before_entries = entries(table)
    old = manifests(table)
    assert len(old) == 9
    pruned_before = table.scan("region = 'eu'").plan().manifests_scanned
    per_manifest = old[0].manifest_length  # about three entries' worth
    result = rewrite_manifests(table, target_size_bytes=per_manifest)
    new = manifests(table)
    assert (result.manifests_before, result.manifests_after) == (9, len(new))
    for m in new:  # each new manifest covers a single partition
        assert m.partitions is not None
        assert m.partitions[0].lower_bound == m.partitions[0].upper_bound
    assert table.scan("region = 'eu'").plan().manifests_scanned < pruned_before
    # entries are EXISTING with their original snapshot ids and sequence numbers
    after_entries = entries(table)
    assert after_entries.keys() == before_entries.keys()
    for path, (status, snapshot_id, seq, file_seq) in after_entries.items():
        assert status is Status.EXISTING
        assert (snapshot_id, seq, file_seq) == before_entries[path][1:]
    assert sorted(table.to_arrow().column("id").to_pylist()) == before_rows


def test_rewrite_commits_a_replace_snapshot_that_keeps_the_data_version(table: Table) -> None:
    version = data_version(table)
    parent = current(table)
    result = rewrite_manifests(table)
    snap = current(table)
    assert snap.snapshot_id == result.snapshot_id and snap.operation == REPLACE
    assert snap.parent_snapshot_id == parent.snapshot_id
    assert snap.summary["manifests-created"] == "1"
    assert snap.summary["manifests-replaced"] == "9"
    assert snap.summary["manifests-kept"] == "0"
    assert snap.summary["total-records"] == parent.summary["total-records"]
    assert data_version(table) == version


def test_rewrite_of_a_single_manifest_commits_nothing(catalog: Catalog, table: Table) -> None:
    rewrite_manifests(table)
    head = current(table)
    result = rewrite_manifests(table)
    assert result.snapshot_id is None and result.manifests_before == result.manifests_after == 1
    assert table.current_snapshot() == head
    empty = catalog.create_table("db.empty", SCHEMA)
    assert rewrite_manifests(empty).snapshot_id is None
    with pytest.raises(ValidationError):
        rewrite_manifests(table, target_size_bytes=0)


def test_rewrite_that_loses_the_race_redoes_it_and_leaves_no_files_behind(
    catalog: Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the other writer commits from inside this commit: without the advisory lock (as a writer
    # that does not take it), else it would first wait out the lock's timeout
    table.set_properties({"commit.lock.enabled": "false"})
    other = catalog.load_table("db.events")
    real_plan = manifests_module._plan
    calls: list[int] = []

    def plan_then_append(*args, **kwargs):  # type: ignore[no-untyped-def]
        plan = real_plan(*args, **kwargs)
        if not calls:  # after the first attempt's plan: another writer commits first
            other.append(rows([999], "eu"))
        calls.append(1)
        return plan

    monkeypatch.setattr(manifests_module, "_plan", plan_then_append)
    result = rewrite_manifests(table)
    assert len(calls) == 2 and result.snapshot_id == current(table).snapshot_id
    assert 999 in table.to_arrow().column("id").to_pylist()
    assert table.to_arrow().num_rows == 28
    assert remove_orphan_files(table, older_than=soon(), dry_run=True).orphans == ()


def test_pyiceberg_reads_the_table_after_compaction_and_manifest_rewrite(
    catalog_url: str, warehouse: str, table: Table
) -> None:
    table.delete("id = 10")
    rewrite_data_files(table)
    rewrite_manifests(table, target_size_bytes=1)
    expected = sorted(table.to_arrow().column("id").to_pylist())
    py = SqlCatalog("lakecat", uri=catalog_url, warehouse=f"file://{warehouse}")
    try:
        got = py.load_table("db.events").scan().to_arrow()
        assert sorted(got.column("id").to_pylist()) == expected
        eu = py.load_table("db.events").scan(row_filter="region == 'eu'").to_arrow()
        assert eu.num_rows == table.to_arrow("region = 'eu'").num_rows
    finally:
        py.engine.dispose()
