"""Partition statistics files: per partition of a snapshot, its live files' counts and sizes
and the snapshot that last changed it, in the spec's Parquet schema, registered in the
metadata, replaced for the same snapshot and deleted with it by an expiry."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.maintenance import compute_partition_stats, expire_snapshots
from lakecat.metadata.errors import (
    CommitStateUnknown,
    InvalidUpdate,
    NoSuchSnapshot,
    ValidationError,
)
from lakecat.metadata.io.fileio import local_path

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def rows(ids: range, region: str) -> pa.Table:
    return pa.table({"id": list(ids), "region": [region] * len(ids)}, schema=SCHEMA)


def read_stats(path: str) -> pa.Table:
    local = local_path(path)
    assert local is not None
    return pq.read_table(local)


@pytest.mark.parametrize("version", [2, 3])
def test_stats_count_each_partition_s_live_files_and_its_last_change(
    catalog: Catalog, version: int
) -> None:
    t = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["region"],
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    t.append(rows(range(0, 10), "eu"))
    t.append(rows(range(10, 30), "us"))
    t.append(rows(range(30, 35), "eu"))
    t.delete("id = 3 or id = 12")  # a position delete file (v3: a deletion vector) per file
    t.append(rows(range(40, 44), "ap"))
    t.delete("region = 'ap'")  # the partition's only file removed: a row of zeros stays

    result = compute_partition_stats(t)

    assert result is not None
    snapshot = t.refresh().current_snapshot()
    assert result.snapshot_id == snapshot.snapshot_id
    stats = read_stats(result.path)
    assert stats.schema.field("partition").metadata[b"PARQUET:field_id"] == b"1"
    names = ["spec_id", "data_record_count", "data_file_count"]
    by_region = {r["partition"]["region"]: r for r in stats.to_pylist()}
    assert [r["partition"]["region"] for r in stats.to_pylist()] == ["ap", "eu", "us"]
    assert [by_region[k][n] for k in ("ap", "eu", "us") for n in names] == [
        0, 0, 0, 0, 15, 2, 0, 20, 1,
    ]  # fmt: skip
    eu, us, ap = by_region["eu"], by_region["us"], by_region["ap"]
    deletes = "dv_count" if version == 3 else "position_delete_file_count"
    assert (eu[deletes], us[deletes], eu["position_delete_record_count"]) == (1, 1, 1)
    sizes = sum(f.file_size_in_bytes for f in t.scan(row_filter="region = 'eu'").plan_files())
    assert eu["total_data_file_size_in_bytes"] == sizes
    # the last snapshot that added or removed a file of the partition
    history = [s.snapshot_id for s in t.snapshots()]
    assert eu["last_updated_snapshot_id"] == history[3]  # the delete
    assert ap["last_updated_snapshot_id"] == history[5] == snapshot.snapshot_id
    assert eu["last_updated_at"] == t.snapshot(history[3]).timestamp_ms
    assert eu["total_record_count"] is None
    assert ("dv_count" in stats.schema.names) == (version == 3)
    assert t.metadata.partition_statistics == (
        {
            "snapshot-id": snapshot.snapshot_id,
            "statistics-path": result.path,
            "file-size-in-bytes": result.file_size_in_bytes,
        },
    )


def test_stats_of_an_older_snapshot_and_again_replace_its_entry(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    t.append(rows(range(0, 10), "eu"))
    first = t.current_snapshot().snapshot_id
    t.append(rows(range(10, 20), "us"))

    old = compute_partition_stats(t, first)
    again = compute_partition_stats(t, first)
    latest = compute_partition_stats(t)

    assert old is not None and again is not None and latest is not None
    assert [r["partition"]["region"] for r in read_stats(old.path).to_pylist()] == ["eu"]
    entries = {s["snapshot-id"]: s["statistics-path"] for s in t.metadata.partition_statistics}
    assert entries == {first: again.path, latest.snapshot_id: latest.path}


def test_expiring_a_snapshot_deletes_its_stats_file(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    t.append(rows(range(0, 10), "eu"))
    first = t.current_snapshot().snapshot_id
    t.append(rows(range(10, 20), "us"))
    old = compute_partition_stats(t, first)
    kept = compute_partition_stats(t)
    assert old is not None and kept is not None

    expire_snapshots(t, snapshot_ids=[first])

    assert not t.io.exists(old.path) and t.io.exists(kept.path)
    assert [s["snapshot-id"] for s in t.refresh().metadata.partition_statistics] == [
        kept.snapshot_id
    ]


def test_bad_input_changes_nothing(catalog: Catalog) -> None:
    flat = catalog.create_table("db.flat", SCHEMA)
    flat.append(rows(range(3), "eu"))
    with pytest.raises(ValidationError, match="not partitioned"):
        compute_partition_stats(flat)
    t = catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    assert compute_partition_stats(t) is None  # no snapshot: nothing to describe
    t.append(rows(range(3), "eu"))
    before = t.metadata_location
    with pytest.raises(NoSuchSnapshot):
        compute_partition_stats(t, 42)
    assert t.refresh().metadata_location == before
    assert not [f for f in t.io.list_prefix(t.location) if "partition-stats" in f.location]


def test_stats_span_partition_evolution(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    t.append(rows(range(0, 4), "eu"))
    with t.update_spec() as u:
        u.add_field("id", "bucket[2]")
    t.append(rows(range(4, 8), "eu"))

    result = compute_partition_stats(t)

    assert result is not None
    stats = read_stats(result.path).to_pylist()
    fields = [f.name for f in read_stats(result.path).schema.field("partition").type]
    assert fields == ["region", "id_bucket_2"]
    # the old spec's partition has no bucket: sorted first (nulls first)
    first = stats[0]
    assert (first["spec_id"], first["partition"]["id_bucket_2"], first["data_record_count"]) == (
        0,
        None,
        4,
    )
    assert {r["spec_id"] for r in stats[1:]} == {1}
    assert sum(r["data_record_count"] for r in stats) == 8


def test_stats_name_a_dropped_field_by_its_id_when_a_newer_field_took_its_name(
    catalog: Catalog,
) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_by=[("id", "bucket[4]")])
    t.append(rows(range(0, 4), "eu"))
    with t.update_spec() as u:
        u.remove_field("id_bucket")
        u.add_field("id", "bucket[8]", name="id_bucket")
    t.append(rows(range(4, 8), "eu"))

    result = compute_partition_stats(t)

    assert result is not None
    partition = read_stats(result.path).schema.field("partition").type
    names = [(f.name, f.metadata[b"PARQUET:field_id"]) for f in partition]
    assert names == [("id_bucket_1000", b"1000"), ("id_bucket", b"1001")]
    stats = read_stats(result.path).to_pylist()
    assert sum(r["data_record_count"] for r in stats if r["partition"]["id_bucket"] is None) == 4
    assert (
        sum(r["data_record_count"] for r in stats if r["partition"]["id_bucket_1000"] is None) == 4
    )


def test_stats_of_a_snapshot_expired_meanwhile_are_refused_and_leave_no_file(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lakecat.catalog.maintenance.partition_stats as module

    t = catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    t.append(rows(range(0, 10), "eu"))
    first = t.current_snapshot().snapshot_id
    t.append(rows(range(10, 20), "us"))
    other = catalog.load_table("db.t")
    write = module._parquet

    def expiring(*args: object, **kwargs: object) -> bytes:
        expire_snapshots(other, snapshot_ids=[first])  # another job, while the stats are made
        return write(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "_parquet", expiring)

    with pytest.raises(InvalidUpdate, match=f"unknown snapshot {first}"):
        compute_partition_stats(t, first)

    assert t.refresh().metadata.partition_statistics == ()
    assert not [f for f in t.io.list_prefix(t.location) if "partition-stats" in f.location]


def test_a_commit_of_unknown_outcome_keeps_the_stats_file(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    t.append(rows(range(0, 10), "eu"))

    def unknown(*args: object, **kwargs: object) -> None:
        raise CommitStateUnknown("the catalog did not answer")

    monkeypatch.setattr(t, "commit_updates", unknown)

    with pytest.raises(CommitStateUnknown):
        compute_partition_stats(t)

    # it may have been registered: kept (remove_orphan_files takes it if it was not)
    assert [f for f in t.io.list_prefix(t.location) if "partition-stats" in f.location]
