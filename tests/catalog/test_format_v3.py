"""Format version 3 tables: created as v3 or upgraded from v2, with row lineage assigned at
commit and kept through every rewrite, and merge-on-read changes as deletion vectors (one per
data file, replacing the previous one in the same commit). Peers read them in
tests/interop/test_peers_read_v3_writes.py; v3 types lakecat cannot read are refused by name."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.maintenance import (
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
    rewrite_position_delete_files,
)
from lakecat.catalog.write.writer import write_files
from lakecat.metadata.errors import (
    ConcurrentRowChange,
    InvalidUpdate,
    UnsupportedFeature,
)
from lakecat.metadata.io.fileio import local_path
from lakecat.metadata.manifests.datafile import Content, DataFile, ManifestContent, Status
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.schema.types import primitive_from_string

LINEAGE = ["id", "v", "_row_id", "_last_updated_sequence_number"]
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


def make(catalog: Catalog, name: str = "db.t", **properties: str) -> Table:
    t = catalog.create_table(
        name,
        pa.schema([("id", pa.int64()), ("v", pa.string())]),
        properties={"format-version": "3", **properties},
    )
    t.append(pa.table({"id": list(range(1, 11)), "v": [f"a{i}" for i in range(1, 11)]}))
    t.append(pa.table({"id": [11, 12], "v": ["b11", "b12"]}))
    return t


def lineage(t: Table) -> dict[int, tuple[Any, ...]]:
    """id -> (v, _row_id, _last_updated_sequence_number) of every row."""
    rows = t.refresh().scan(columns=LINEAGE).to_arrow().to_pylist()
    return {r["id"]: (r["v"], r["_row_id"], r["_last_updated_sequence_number"]) for r in rows}


def live_deletes(t: Table) -> list[DataFile]:
    head = t.refresh().metadata.current_snapshot
    assert head is not None
    out = []
    specs = t.metadata.specs_by_id()
    for m in read_manifest_list(t.io, head.manifest_list):
        if m.content is ManifestContent.DELETES:
            for e in read_manifest(t.io, m, specs=specs, schema=t.metadata.schema()):
                if e.status is not Status.DELETED:
                    out.append(e.data_file)
    return out


def files_under(t: Table) -> set[Path]:
    return {p for p in Path(local_path(t.location)).rglob("*") if p.is_file()}


def test_a_v3_table_assigns_row_ids_when_each_snapshot_commits(catalog: Catalog) -> None:
    t = make(catalog)
    m = t.refresh().metadata
    assert (m.format_version, m.next_row_id) == (3, 12)
    assert [(s.first_row_id, s.added_rows) for s in t.snapshots()] == [(0, 10), (10, 2)]
    assert lineage(t) == {
        **{i: (f"a{i}", i - 1, 1) for i in range(1, 11)},
        11: ("b11", 10, 2),
        12: ("b12", 11, 2),
    }
    head = m.current_snapshot
    assert head is not None
    listed = read_manifest_list(t.io, head.manifest_list)
    assert sorted(x.first_row_id for x in listed if x.first_row_id is not None) == [0, 10]
    with open(local_path(head.manifest_list), "rb") as f:
        reader = fastavro.reader(f)
        assert reader.metadata["format-version"] == "3"
        assert reader.metadata["first-row-id"] == "10"
    with open(local_path(listed[0].manifest_path), "rb") as f:
        reader = fastavro.reader(f)
        assert reader.metadata["format-version"] == "3"
        # a new data file is written without first_row_id: it inherits the manifest's
        assert [r["data_file"]["first_row_id"] for r in reader] == [None]


def test_copy_on_write_changes_keep_row_ids_and_restamp_only_the_changed_rows(
    catalog: Catalog,
) -> None:
    t = make(catalog)
    before = lineage(t)
    t.delete("id = 2")
    after_delete = lineage(t)
    assert after_delete == {i: row for i, row in before.items() if i != 2}
    t.update({"v": "X"}, "id = 4")
    updated = lineage(t)
    seq = t.metadata.current_snapshot.sequence_number  # type: ignore[union-attr]
    assert updated[4] == ("X", before[4][1], seq)  # same row, changed by this commit
    assert {i: r for i, r in updated.items() if i != 4} == {
        i: r for i, r in after_delete.items() if i != 4
    }
    t.upsert(pa.table({"id": [5, 20], "v": ["Y", "new"]}), on=["id"])
    upserted = lineage(t)
    seq = t.metadata.current_snapshot.sequence_number  # type: ignore[union-attr]
    assert upserted[5] == ("Y", before[5][1], seq)
    assert upserted[20][0] == "new" and upserted[20][2] == seq
    assert upserted[20][1] not in {r[1] for i, r in upserted.items() if i != 20}
    t.overwrite(pa.table({"id": [30], "v": ["o"]}), "id >= 11")
    overwritten = lineage(t)
    assert (
        11 not in overwritten and overwritten[30][2] == t.metadata.current_snapshot.sequence_number
    )  # type: ignore[union-attr]
    for i in (1, 3, 6, 7, 8, 9, 10):  # rows no operation touched, moved by every rewrite
        assert overwritten[i] == before[i]
    ids = [r[1] for r in overwritten.values()]
    assert len(set(ids)) == len(ids) and max(ids) < t.metadata.next_row_id  # type: ignore[operator]


def test_compaction_keeps_every_rows_lineage(catalog: Catalog) -> None:
    t = make(catalog)
    t.update({"v": "X"}, "id = 3")
    before = lineage(t)
    result = rewrite_data_files(t)
    assert result.files_removed >= 2 and result.files_added == 1
    assert lineage(t) == before


def test_a_compaction_that_lost_the_race_to_a_delete_carries_it_over_as_a_vector(
    catalog: Catalog,
) -> None:
    make(catalog, **MOR)
    before = lineage(catalog.load_table("db.t"))
    raced: list[bool] = []

    def progress(done: int, total: int) -> None:  # after the rewrite, before its commit
        if not raced:
            raced.append(True)
            catalog.load_table("db.t").delete("id in (2, 11)")

    result = rewrite_data_files(catalog.load_table("db.t"), progress=progress)
    assert raced and result.groups_committed == 1 and result.files_added == 1
    t = catalog.load_table("db.t")
    assert lineage(t) == {i: r for i, r in before.items() if i not in (2, 11)}
    dvs = live_deletes(t)
    assert [(d.file_format, d.record_count) for d in dvs] == [("puffin", 2)]
    assert dvs[0].referenced_data_file == t.scan().plan_files()[0].file_path


def test_a_merge_on_read_change_that_a_compaction_beat_lands_on_its_output_by_row_id(
    catalog: Catalog,
) -> None:
    make(catalog, **MOR)
    catalog.load_table("db.t").delete("id = 9")  # applied by the compaction
    before = lineage(catalog.load_table("db.t"))
    deleting, updating = catalog.load_table("db.t"), catalog.load_table("db.t")
    assert rewrite_data_files(catalog.load_table("db.t")).files_added == 1
    deleting.delete("id in (2, 12)")  # planned on the files the compaction removed
    updating.update({"v": "X"}, "id = 4")
    t = catalog.load_table("db.t")
    rows = lineage(t)
    assert sorted(rows) == [1, 3, 4, 5, 6, 7, 8, 10, 11]
    assert rows[4] == ("X", before[4][1], t.metadata.current_snapshot.sequence_number)  # type: ignore[union-attr]
    assert all(rows[i] == before[i] for i in rows if i != 4)
    [output] = [f for f in t.scan().plan_files() if f.record_count > 1]
    dvs = live_deletes(t)
    assert [(d.referenced_data_file, d.record_count) for d in dvs] == [(output.file_path, 3)]


def test_an_update_of_a_row_deleted_and_compacted_away_meanwhile_conflicts(
    catalog: Catalog,
) -> None:
    make(catalog, **MOR)
    stale = catalog.load_table("db.t")
    catalog.load_table("db.t").delete("id = 4")
    rewrite_data_files(catalog.load_table("db.t"))
    with pytest.raises(ConcurrentRowChange):
        stale.update({"v": "X"}, "id = 4")
    assert 4 not in lineage(catalog.load_table("db.t"))


def test_on_v2_a_merge_on_read_change_after_a_compaction_uses_its_row_moves_record(
    catalog: Catalog,
) -> None:
    t = catalog.create_table(
        "db.v2", pa.schema([("id", pa.int64())]), properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(pa.table({"id": [1, 2, 3]}))
    t.append(pa.table({"id": [4, 5]}))
    stale = catalog.load_table("db.v2")
    rewrite_data_files(catalog.load_table("db.v2"))
    stale.delete("id = 2")  # no row ids: found through the compaction's row-moves record
    assert sorted(t.refresh().to_arrow().column("id").to_pylist()) == [1, 3, 4, 5]
    # a compaction without a record (sorted): tests/catalog/commit/test_row_level_conflicts.py


def test_merge_on_read_writes_one_deletion_vector_per_data_file_and_replaces_the_old_one(
    catalog: Catalog,
) -> None:
    t = make(catalog, **MOR)
    before = lineage(t)
    t.delete("id = 2")
    first = live_deletes(t)
    assert [(d.file_format, d.record_count) for d in first] == [("puffin", 1)]
    t.delete("id in (3, 11)")  # rows of both data files: one Puffin file, two DVs
    second = live_deletes(t)
    assert sorted(d.record_count for d in second) == [1, 2]  # {1, 2} and {0} (11 is row 0)
    assert len({d.file_path for d in second}) == 1
    assert len({d.referenced_data_file for d in second}) == 2
    assert all(d.content is Content.POSITION_DELETES for d in second)
    summary = t.metadata.current_snapshot.summary  # type: ignore[union-attr]
    assert (summary["added-dvs"], summary["removed-dvs"], summary["total-delete-files"]) == (
        "2",
        "1",
        "2",
    )
    t.update({"v": "X"}, "id = 4")
    seq = t.metadata.current_snapshot.sequence_number  # type: ignore[union-attr]
    assert len(live_deletes(t)) == 2
    rows = lineage(t)
    assert sorted(rows) == [1, 4, 5, 6, 7, 8, 9, 10, 12]
    assert rows[4] == ("X", before[4][1], seq)  # the new version keeps the row id
    assert all(rows[i] == before[i] for i in rows if i != 4)


def test_removing_a_data_file_removes_only_its_own_deletion_vector(catalog: Catalog) -> None:
    t = make(catalog, **MOR)
    t.delete("id in (3, 11)")  # two DVs in one Puffin file
    assert len(live_deletes(t)) == 2
    t.set_properties({"write.delete.mode": "copy-on-write"})
    t.delete("id >= 11")  # drops the second data file whole, and its DV with it
    left = live_deletes(t)
    assert len(left) == 1 and left[0].record_count == 1
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 4, 5, 6, 7, 8, 9, 10]


def test_expiry_and_orphan_removal_keep_the_live_vectors_and_drop_the_replaced_ones(
    catalog: Catalog,
) -> None:
    t = make(catalog, **MOR)
    t.delete("id = 1")
    t.delete("id = 2")  # replaces the first DV (its own Puffin file)
    t.delete("id in (3, 11)")  # replaces it again, and adds one for the second file
    before = lineage(t)
    live = {d.file_path for d in live_deletes(t)}
    result = expire_snapshots(t, older_than=int(time.time() * 1000) + 1000, retain_last=1)
    gone = {Path(local_path(p)).name for p in result.deleted_data_files}
    assert len({n for n in gone if n.endswith(".puffin")}) == 2  # the two replaced DVs
    orphans = remove_orphan_files(t, older_than=int(time.time() * 1000) + 60_000)
    assert not orphans.orphans
    assert {d.file_path for d in live_deletes(t)} == live
    assert all(Path(local_path(p)).exists() for p in live)
    assert lineage(t) == before


def test_upgrading_with_set_properties_assigns_row_ids_from_the_next_snapshot(
    catalog: Catalog,
) -> None:
    t = catalog.create_table(
        "db.old", pa.schema([("id", pa.int64())]), properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(pa.table({"id": list(range(1, 11))}))
    t.delete("id = 2")  # a v2 position delete file
    t.set_properties({"format-version": "3", "owner": "me"})
    m = t.refresh().metadata
    assert (m.format_version, m.next_row_id) == (3, 0)
    assert "format-version" not in m.properties and m.properties["owner"] == "me"
    assert t.scan(columns=["id", "_row_id"]).to_arrow().column("_row_id").null_count == 9
    t.delete("id = 5")
    deletes = live_deletes(t)
    # the DV holds the old position delete's row too, and replaced that file
    assert [(d.file_format, d.record_count) for d in deletes] == [("puffin", 2)]
    got = t.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()
    assert sorted((r["id"], r["_row_id"]) for r in got) == [
        (i, i - 1) for i in (1, 3, 4, 6, 7, 8, 9, 10)
    ]
    with pytest.raises(InvalidUpdate, match="downgrade"):
        t.set_properties({"format-version": "2"})
    with pytest.raises(InvalidUpdate, match="format-version='4'"):
        t.set_properties({"format-version": "4"})
    assert t.refresh().metadata.format_version == 3


def test_rewriting_position_deletes_of_an_upgraded_table_makes_one_vector_per_file(
    catalog: Catalog,
) -> None:
    t = catalog.create_table(
        "db.old", pa.schema([("id", pa.int64())]), properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(pa.table({"id": list(range(1, 11))}))
    for i in (2, 4, 6):
        t.delete(f"id = {i}")  # three v2 position delete files for one data file
    t.set_properties({"format-version": "3"})
    result = rewrite_position_delete_files(t)
    assert (result.data_files, result.delete_files_removed, result.delete_files_added) == (1, 3, 1)
    assert [(d.file_format, d.record_count) for d in live_deletes(t)] == [("puffin", 3)]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 3, 5, 7, 8, 9, 10]


def test_a_rewrite_that_would_drop_row_lineage_is_refused_before_it_lands(
    catalog: Catalog,
) -> None:
    t = make(catalog)
    head = t.metadata.current_snapshot
    assert head is not None
    old = t.scan().plan_files()
    # the rows copied to a new file by a writer that does not keep their lineage (as a Spark
    # rewrite does): the intent does not claim keeps_row_lineage
    new = write_files(t.io, t.metadata, [t.to_arrow()])
    before = files_under(t)
    intent = Intent(
        OpKind.REPLACE,
        starting_snapshot_id=head.snapshot_id,
        added_files=tuple(new),
        removed_files=tuple(old),
    )
    with pytest.raises(UnsupportedFeature, match="row lineage") as info:
        t.commit_intent(intent)
    assert info.value.feature == "row lineage in this rewrite"
    assert t.refresh().metadata.current_snapshot == head
    assert files_under(t) == before - {Path(local_path(f.file_path)) for f in new}


def test_changes_of_different_rows_of_one_file_both_commit_with_one_merged_vector(
    catalog: Catalog,
) -> None:
    make(catalog, **MOR)
    first = catalog.load_table("db.t")
    first.delete("id = 10")  # a DV that both racing writers must keep
    a, b, c = (catalog.load_table("db.t") for _ in range(3))
    a.delete("id = 1")
    b.delete("id = 2")  # the same data file: its DV is merged with a's on the retry
    c.update({"v": "X"}, "id = 3")  # and again with both
    t = catalog.load_table("db.t")
    rows = lineage(t)
    assert sorted(rows) == [3, 4, 5, 6, 7, 8, 9, 11, 12]
    assert rows[3][0] == "X"
    dvs = [d for d in live_deletes(t) if d.referenced_data_file is not None]
    per_file = [d.referenced_data_file for d in dvs]
    assert len(per_file) == len(set(per_file)) == 1  # one DV for the first data file
    assert dvs[0].record_count == 4  # rows 10, 1, 2 and 3's old version
    assert t.metadata.current_snapshot.summary["removed-dvs"] == "1"  # type: ignore[union-attr]


def test_updates_of_one_row_by_two_writers_conflict(catalog: Catalog) -> None:
    make(catalog, **MOR)
    catalog.load_table("db.t").delete("id = 9")  # an earlier delete: not a common change
    a, b = catalog.load_table("db.t"), catalog.load_table("db.t")
    a.update({"v": "A"}, "id = 4")
    with pytest.raises(ConcurrentRowChange):
        b.update({"v": "B"}, "id = 4")
    c, d = catalog.load_table("db.t"), catalog.load_table("db.t")
    c.update({"v": "C"}, "id = 5")
    d.update({"v": "D"}, "id = 6")  # other rows of the same file: both commit
    rows = lineage(catalog.load_table("db.t"))
    assert (rows[4][0], rows[5][0], rows[6][0]) == ("A", "C", "D")
    assert 9 not in rows


def test_bad_format_versions_are_refused_when_a_table_is_created(catalog: Catalog) -> None:
    for bad in ("4", "1", "v3"):
        with pytest.raises(InvalidUpdate, match="format-version"):
            catalog.create_table(
                "db.bad", pa.schema([("id", pa.int64())]), properties={"format-version": bad}
            )
    assert not catalog.table_exists("db.bad")


@pytest.mark.parametrize(
    "text", ["timestamp_ns", "timestamptz_ns", "variant", "unknown", "geometry(srid:4326)"]
)
def test_v3_types_lakecat_cannot_read_are_refused_by_name(text: str) -> None:
    with pytest.raises(UnsupportedFeature, match=text.split("(")[0]) as info:
        primitive_from_string(text)
    assert info.value.feature == f"type {text}"
