"""Merge-on-read DELETE, UPDATE, MERGE and overwrite by filter on v2 tables.

With ``write.delete.mode`` / ``write.update.mode`` / ``write.merge.mode`` = ``merge-on-read``,
no data file is rewritten: changed rows are deleted by position (one position delete file per
data file, its ``file_path`` bounds naming it) and new versions go to new data files. Every test
reads the result back and compares it with the rows the same operation gives copy-on-write.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from other_engines import set_properties_with_pyiceberg

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import StorageError, ValidationError
from lakecat.metadata.io import position_deletes
from lakecat.metadata.io.fileio import local_path
from lakecat.metadata.manifests.datafile import Content
from lakecat.metadata.manifests.delete_index import POS_FILE_PATH_ID, named_data_file

MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("v", pa.int64())])


def rows(ids: range, region: str = "eu") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "region": [region] * len(ids),
            "v": pa.array([i * 10 for i in ids], pa.int64()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    with Catalog.embedded(tmp_path / "lake") as c:
        c.create_namespace("db")
        yield c


def make(catalog: Catalog, name: str, mode: dict[str, str], **kwargs: object) -> Table:
    t = catalog.create_table(f"db.{name}", SCHEMA, properties=mode, **kwargs)  # type: ignore[arg-type]
    t.append(rows(range(0, 100)))
    t.append(rows(range(100, 200), "us"))
    return t


@pytest.fixture
def pair(catalog: Catalog) -> tuple[Table, Table]:
    """The same two-file table, merge-on-read and copy-on-write."""
    return make(catalog, "mor", MOR), make(catalog, "cow", {})


def sorted_rows(t: Table) -> list[dict[str, object]]:
    return sorted(t.to_arrow().to_pylist(), key=lambda r: (r["id"], str(r["v"])))


def data_paths(t: Table) -> set[str]:
    return {f.file_path for f in t.scan().plan_files()}


def delete_files(t: Table) -> list:
    plan = t.scan().plan()
    return sorted({d for ds in plan.deletes.values() for d in ds}, key=lambda d: d.file_path)


def test_delete_writes_a_position_delete_file_and_keeps_the_data_file(pair) -> None:
    m, c = pair
    before = data_paths(m)
    cond = f"id IN ({', '.join(str(i) for i in range(3, 200, 10))}) AND region = 'eu'"
    result = m.delete(cond)
    c.delete(cond)

    assert result is not None and m.current_snapshot().operation == "delete"
    assert data_paths(m) == before  # no data file rewritten or removed
    [d] = delete_files(m)
    assert d.content is Content.POSITION_DELETES and d.record_count == 10
    assert named_data_file(d) in before  # full file_path bounds: it names its one data file
    written = pq.read_table(local_path(d.file_path))
    assert written.column("pos").to_pylist() == list(range(3, 100, 10))
    assert set(written.column("file_path").to_pylist()) == {named_data_file(d)}
    assert (
        written.schema.field("file_path").metadata[b"PARQUET:field_id"]
        == str(POS_FILE_PATH_ID).encode()
    )
    summary = m.current_snapshot().summary
    assert summary["added-position-delete-files"] == "1"
    assert summary["added-position-deletes"] == "10"
    assert summary["total-position-deletes"] == "10"
    assert "added-data-files" not in summary
    assert sorted_rows(m) == sorted_rows(c)
    assert m.scan().count() == 190


def test_delete_drops_whole_files_without_a_delete_file(pair) -> None:
    m, _ = pair
    m.delete("region = 'us'")
    assert delete_files(m) == []
    assert len(data_paths(m)) == 1
    assert m.scan().count() == 100


def test_delete_matching_no_row_commits_nothing(pair) -> None:
    m, _ = pair
    before = m.current_snapshot().snapshot_id
    assert m.delete("id = 100000") is None
    assert m.refresh().current_snapshot().snapshot_id == before


def test_deletes_accumulate_and_time_travel_sees_each_state(pair) -> None:
    m, c = pair
    first = m.snapshots()[0].snapshot_id
    for cond in ("id < 10", "id >= 190", "id = 50 OR id = 150"):
        m.delete(cond)
        c.delete(cond)
    assert sorted_rows(m) == sorted_rows(c)
    assert m.scan().count() == 200 - 10 - 10 - 2
    assert m.scan(snapshot_id=first).count() == 100  # before the second append
    assert len(delete_files(m)) == 4  # one per (delete, data file) with a partial match


def test_update_deletes_old_versions_and_writes_new_ones(pair) -> None:
    m, c = pair
    before = data_paths(m)
    result = m.update({"v": pc.field("v") + 1}, "id >= 95 AND id < 105")
    c.update({"v": pc.field("v") + 1}, "id >= 95 AND id < 105")

    assert result is not None and m.current_snapshot().operation == "overwrite"
    assert before <= data_paths(m)  # nothing removed
    assert len(data_paths(m)) == 3  # the updated rows' new file
    assert sorted(d.record_count for d in delete_files(m)) == [5, 5]
    assert sorted_rows(m) == sorted_rows(c)
    assert m.current_snapshot().summary["lakecat.operation"] == "update"


def test_updating_a_row_twice_keeps_only_its_latest_version(pair) -> None:
    m, c = pair
    for t in (m, c):
        t.update({"v": -1}, "id = 7")
        t.update({"v": -2}, "id = 7")
    assert m.to_arrow("id = 7").to_pylist() == [{"id": 7, "region": "eu", "v": -2}]
    assert sorted_rows(m) == sorted_rows(c)


def test_upsert_updates_matches_and_inserts_new_keys(pair) -> None:
    m, c = pair
    m.delete("id = 5")  # a deleted key is inserted as new, not updated
    c.delete("id = 5")
    source = pa.table(
        {
            "id": pa.array([5, 42, 142, 1000], pa.int64()),
            "region": ["eu", "eu", "us", "eu"],
            "v": pa.array([-5, -42, -142, -1000], pa.int64()),
        },
        schema=SCHEMA,
    )
    result = m.upsert(source, on="id")
    c.upsert(source, on="id")
    assert result is not None and m.current_snapshot().operation == "overwrite"
    assert sorted_rows(m) == sorted_rows(c)
    assert m.scan().count() == 199 + 2
    assert m.current_snapshot().summary["added-position-deletes"] == "2"  # 42 and 142


def test_merge_delete_clause_deletes_by_position(pair) -> None:
    m, c = pair
    source = pa.table({"id": pa.array([1, 2, 3, 150], pa.int64())})
    for t in (m, c):
        t.merge(source, on="id", when_matched_delete=True)
    assert m.current_snapshot().operation == "delete"
    assert sorted_rows(m) == sorted_rows(c)
    assert m.scan().count() == 196


def test_merge_with_target_filter_keeps_rows_outside_it(pair) -> None:
    m, c = pair
    source = pa.table({"id": pa.array([1, 150], pa.int64()), "v": pa.array([0, 0], pa.int64())})
    for t in (m, c):
        t.merge(source, on="id", when_matched_update=True, target_filter="region = 'us'")
    assert sorted_rows(m) == sorted_rows(c)
    assert m.to_arrow("id = 1").column("v").to_pylist() == [10]
    assert m.to_arrow("id = 150").column("v").to_pylist() == [0]


def test_overwrite_by_filter_deletes_by_position_and_adds_rows(pair) -> None:
    m, c = pair
    new = rows(range(1000, 1003))
    for t in (m, c):
        t.overwrite(new, "id >= 90 AND id < 110")
    assert sorted_rows(m) == sorted_rows(c)
    assert len(delete_files(m)) == 2


def test_copy_on_write_after_merge_on_read_removes_the_applied_delete_files(pair) -> None:
    m, c = pair
    m.delete("id < 5")
    c.delete("id < 5")
    m.set_properties({"write.delete.mode": "copy-on-write"})
    m.delete("id = 50")
    c.delete("id = 50")
    assert delete_files(m) == []  # the eu file was rewritten; its delete file went with it
    assert m.current_snapshot().summary["removed-position-delete-files"] == "1"
    assert sorted_rows(m) == sorted_rows(c)


def test_partitioned_table_puts_delete_files_in_their_partition(catalog: Catalog) -> None:
    m = make(catalog, "parts", MOR, partition_by=["region"])
    m.delete(f"id IN ({', '.join(str(i) for i in range(0, 200, 2))})")
    files = delete_files(m)
    assert sorted(d.partition for d in files) == [("eu",), ("us",)]
    assert all("region=" in d.file_path for d in files)
    assert m.scan().count() == 100


def test_an_unknown_mode_is_refused_when_set_and_created(catalog: Catalog) -> None:
    t = make(catalog, "t", {})
    before = t.metadata_location
    with pytest.raises(ValidationError, match=r"write\.delete\.mode='merge-on-write'"):
        t.set_properties({"owner": "x", "write.delete.mode": "merge-on-write"})
    assert t.refresh().metadata_location == before
    with pytest.raises(ValidationError, match=r"write\.update\.mode='mor'"):
        catalog.create_table("db.bad", SCHEMA, properties={"write.update.mode": "mor"})
    assert not catalog.table_exists("db.bad")


def test_an_unknown_mode_another_engine_set_is_refused_before_any_file_is_written(
    catalog: Catalog,
) -> None:
    """Iceberg Java sets any value; lakecat refuses the statements that read it (as Iceberg
    Java does), and the table still reads and takes other changes, the fix included."""
    t = make(catalog, "bad", {})
    set_properties_with_pyiceberg(catalog, "db.bad", {"write.delete.mode": "merge-on-write"})
    data = Path(local_path(t.location)) / "data"
    before = sorted(data.rglob("*"))
    with pytest.raises(ValidationError, match=r"write\.delete\.mode='merge-on-write'"):
        t.refresh().delete("id = 1")
    assert sorted(data.rglob("*")) == before
    assert t.refresh().scan().count() == 200
    t.set_properties({"owner": "x"})
    t.set_properties({"write.delete.mode": "Merge-On-Read"})
    t.delete("id = 1")
    assert t.refresh().scan().count() == 199
    assert "added-delete-files" in t.current_snapshot().summary


def test_a_failed_delete_file_write_leaves_no_new_file(pair, monkeypatch) -> None:
    m, _ = pair
    data = Path(local_path(m.location)) / "data"
    before = sorted(data.rglob("*"))

    def fail(*args: object, **kwargs: object) -> None:
        raise StorageError("disk full")

    monkeypatch.setattr(position_deletes, "write_position_delete_file", fail)
    with pytest.raises(StorageError):
        m.update({"v": 0}, "id < 3")  # writes the new versions first, then fails
    assert sorted(data.rglob("*")) == before
    assert m.refresh().scan().count() == 200


@pytest.mark.parametrize("version", ["2", "3"])
def test_merge_on_read_changes_a_table_with_required_columns(
    catalog: Catalog, version: str
) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.required", schema, properties={**MOR, "format-version": version})
    t.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.update({"v": "X"}, "id = 2")
    t.upsert(pa.table({"id": [3, 4], "v": ["Y", "Z"]}, schema=schema), on=["id"])
    got = sorted((r["id"], r["v"]) for r in t.refresh().to_arrow().to_pylist())
    assert got == [(1, "a"), (2, "X"), (3, "Y"), (4, "Z")]
    assert t.scan().plan().deletes  # merge-on-read: the data file stayed


def test_a_delete_by_a_clustered_key_deletes_only_live_rows_of_a_many_row_group_file(
    catalog: Catalog,
) -> None:
    # row groups of 16 rows: the delete reads only the id column of the row groups whose
    # statistics may match, and positions already deleted are not deleted again
    small_groups = {**MOR, "write.parquet.row-group-limit": "16"}
    m = catalog.create_table("db.groups", SCHEMA, properties=small_groups)
    m.append(rows(range(0, 200)))
    (data_file,) = m.scan().plan_files()
    assert pq.read_metadata(local_path(data_file.file_path)).num_row_groups == 13
    m.delete("id >= 150 AND id < 170")
    m.delete("id >= 140 AND id < 180 OR id = 3")
    summary = m.refresh().current_snapshot().summary
    assert summary["added-position-deletes"] == "21"  # 140-149, 170-179 and 3
    assert m.scan().count() == 200 - 41
    ids = m.to_arrow().column("id").to_pylist()
    assert sorted(ids) == [i for i in range(200) if not (140 <= i < 180 or i == 3)]
