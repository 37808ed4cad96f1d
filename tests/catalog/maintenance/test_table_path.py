"""``rewrite_table_path``: a table's metadata staged with another path prefix and the plan of
the files to copy; copying them and registering the last metadata file gives the same table at
the new place, with nothing pointing back at the old one."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from table_copies import copy_files

from lakecat.catalog import Catalog, Table
from lakecat.catalog.commit.moves import ROW_MOVES_KEY
from lakecat.catalog.maintenance import (
    compute_partition_stats,
    rewrite_data_files,
    rewrite_manifests,
    rewrite_table_path,
)
from lakecat.catalog.maintenance.reachable import reachable_files
from lakecat.catalog.maintenance.table_path import NOT_APPLICABLE, new_path
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io import local_path
from lakecat.metadata.io.fileio import FileExistsStorageError, FileNotFoundStorageError
from lakecat.metadata.manifests import read_manifest, read_manifest_list
from lakecat.metadata.table.metadata_files import read_metadata

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def rows(ids: range, region: str) -> pa.Table:
    return pa.table({"id": list(ids), "region": [region] * len(ids)}, schema=SCHEMA)


def busy_table(catalog: Catalog, version: int) -> Table:
    """Appends, merge-on-read deletes (position delete files or deletion vectors), an
    overwrite, a compaction (v2: with its row-moves record), a manifest rewrite and partition
    statistics: every kind of file and entry a table's metadata names."""
    t = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["region"],
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    t.append(rows(range(0, 10), "eu"))
    t.append(rows(range(10, 20), "us"))
    t.append(rows(range(20, 25), "eu"))
    t.delete("id IN (1, 12, 21)")
    t.delete("id = 2")
    t.overwrite(rows(range(100, 103), "us"), "region = 'us' AND id >= 18")
    rewrite_data_files(t, min_input_files=2)
    rewrite_manifests(t)
    t.append(rows(range(30, 33), "ap"))
    compute_partition_stats(t)
    return t.refresh()


def snapshot_rows(t: Table) -> dict[int, list[tuple[Any, ...]]]:
    return {
        s.snapshot_id: sorted(
            (r["id"], r["region"]) for r in t.to_arrow(snapshot_id=s.snapshot_id).to_pylist()
        )
        for s in t.snapshots()
    }


def lineage(t: Table) -> list[tuple[Any, ...]]:
    table = t.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow()
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.fixture
def target_catalog(tmp_path: Path) -> Any:
    with Catalog.embedded(tmp_path / "target-catalog") as catalog:
        catalog.create_namespace("db")
        yield catalog


@pytest.mark.parametrize("version", [2, 3])
def test_the_copied_table_reads_as_the_source_and_names_only_the_new_place(
    catalog: Catalog, target_catalog: Catalog, tmp_path: Path, version: int
) -> None:
    t = busy_table(catalog, version)
    before = snapshot_rows(t)
    before_lineage = lineage(t) if version == 3 else None
    source = t.location
    target = (tmp_path / "elsewhere" / "t").as_uri()

    result = rewrite_table_path(t, source, target)

    assert t.refresh().metadata_location == t.metadata_location  # the table is not changed
    assert result.latest_version == t.metadata_location.rsplit("/", 1)[-1]
    listed = Path(local_path(result.file_list_location) or "").read_text().splitlines()
    assert sorted(tuple(line.split(",")) for line in listed) == list(result.copy_plan)
    assert all(dst.startswith(target + "/") for _, dst in result.copy_plan)
    assert result.rewritten_manifest_file_paths_count == len(
        {m.manifest_path for s in t.snapshots() for m in read_manifest_list(t.io, s.manifest_list)}
    )
    assert result.rewritten_delete_file_paths_count > 0
    copy_files(result.copy_plan)
    copied = target_catalog.register_table("db.t", f"{target}/metadata/{result.latest_version}")

    # nothing the copy's metadata names lies in the old place, and every file it names is there
    named = reachable_files(copied.io, copied.metadata, copied.metadata_location)
    assert named and all(p.startswith(target + "/") for p in named)
    assert all(copied.io.exists(p) for p in named)
    assert copied.location == target
    shutil.rmtree(local_path(source) or "")  # the source is gone: the copy stands alone
    assert snapshot_rows(copied) == before
    if version == 3:
        assert lineage(copied) == before_lineage
    else:
        moved = [s for s in copied.snapshots() if ROW_MOVES_KEY in s.summary]
        assert moved and all(s.summary[ROW_MOVES_KEY].startswith(target) for s in moved)
    # the copy is a table of its own: it takes writes
    copied.append(rows(range(40, 42), "eu"))
    assert len(copied.refresh().to_arrow()) == len(before[t.metadata.current_snapshot_id]) + 2


def test_v3_row_lineage_survives_the_copy(
    catalog: Catalog, target_catalog: Catalog, tmp_path: Path
) -> None:
    t = catalog.create_table("db.t", SCHEMA, properties={"format-version": "3"})
    # rows appended out of partition order within one manifest: their ids follow file order
    t.append(pa.concat_tables([rows(range(0, 3), "us"), rows(range(3, 6), "eu")]))
    t.append(rows(range(6, 9), "ap"))
    t.update({"region": "zz"}, "id = 4")
    expected = lineage(t.refresh())
    target = (tmp_path / "v3copy").as_uri()

    result = rewrite_table_path(t, t.location, target)
    copy_files(result.copy_plan)
    copied = target_catalog.register_table("db.t", f"{target}/metadata/{result.latest_version}")

    assert lineage(copied) == expected


def test_an_incremental_run_plans_only_what_changed_since_its_start_version(
    catalog: Catalog, target_catalog: Catalog, tmp_path: Path
) -> None:
    t = catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"], properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(rows(range(0, 10), "eu"))
    t.append(rows(range(10, 20), "us"))
    target = (tmp_path / "dr").as_uri()
    first = rewrite_table_path(t, t.location, target)
    first_snapshots = {s.snapshot_id for s in t.snapshots()}
    copy_files(first.copy_plan)
    t.append(rows(range(20, 25), "eu"))
    t.delete("id = 3")
    old_data = {f for f, _ in first.copy_plan if f.endswith(".parquet")}

    second = rewrite_table_path(t, t.location, target, start_version=first.latest_version)

    planned = {f for f, _ in second.copy_plan}
    assert not planned & old_data  # files copied by the first run are not planned again
    new = [s for s in t.snapshots() if s.snapshot_id not in first_snapshots]
    assert len(new) == 2
    added = {
        m.manifest_path
        for s in new
        for m in read_manifest_list(t.io, s.manifest_list)
        if m.added_snapshot_id in {n.snapshot_id for n in new}
    }
    assert second.rewritten_manifest_file_paths_count == len(added)
    copy_files(second.copy_plan)
    copied = target_catalog.register_table("db.t", f"{target}/metadata/{second.latest_version}")
    assert snapshot_rows(copied) == snapshot_rows(t)


def test_an_end_version_stages_the_table_as_it_was_then(
    catalog: Catalog, target_catalog: Catalog, tmp_path: Path
) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(0, 4), "eu"))
    then = t.metadata_location.rsplit("/", 1)[-1]
    was = snapshot_rows(t)
    t.append(rows(range(4, 8), "eu"))
    target = (tmp_path / "then").as_uri()

    result = rewrite_table_path(t, t.location, target, end_version=then)

    assert result.latest_version == then
    copy_files(result.copy_plan)
    copied = target_catalog.register_table("db.t", f"{target}/metadata/{then}")
    assert snapshot_rows(copied) == was


def test_without_a_file_list_the_plan_is_only_returned(catalog: Catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(0, 4), "eu"))
    staging = (tmp_path / "staging").as_uri()

    result = rewrite_table_path(
        t, t.location, "s3://bucket/t", staging_location=staging, create_file_list=False
    )

    assert result.file_list_location == NOT_APPLICABLE
    assert result.staging_location == staging + "/"
    assert not (tmp_path / "staging" / "file-list").exists()
    assert {dst for _, dst in result.copy_plan} >= {
        "s3://bucket/t/metadata/" + result.latest_version
    }
    staged = read_metadata(t.io, f"{staging}/metadata/{result.latest_version}")
    assert staged.location == "s3://bucket/t"
    manifests = read_manifest_list(t.io, f"{staging}/metadata/" + _name(staged.snapshots[0]))
    assert all(m.manifest_path.startswith("s3://bucket/t/metadata/") for m in manifests)


def _name(snapshot: Any) -> str:
    return str(snapshot.manifest_list).rsplit("/", 1)[-1]


def test_paths_move_with_their_prefix_whatever_its_trailing_slash() -> None:
    assert new_path("s3://a/t/data/f.parquet", "s3://a/t", "gs://b/u") == "gs://b/u/data/f.parquet"
    assert new_path("s3://a/t/data/f.parquet", "s3://a/t/", "gs://b/u/") == (
        "gs://b/u/data/f.parquet"
    )
    assert new_path("s3://a/t", "s3://a/t/", "gs://b/u") == "gs://b/u"
    with pytest.raises(ValidationError, match="not under the source prefix"):
        new_path("s3://a/tt/f", "s3://a/t", "gs://b")


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"source_prefix": "", "target_prefix": "/x"}, ValidationError, "source and a target"),
        ({"source_prefix": "SAME", "target_prefix": "SAME/"}, ValidationError, "same as target"),
        ({"source_prefix": "/elsewhere", "target_prefix": "/x"}, ValidationError, "not under"),
        ({"end_version": "v9.metadata.json"}, ValidationError, "cannot find version file"),
        ({"start_version": "nope.metadata.json"}, ValidationError, "cannot find version file"),
    ],
)
def test_bad_input_is_refused_and_stages_nothing(
    catalog: Catalog, tmp_path: Path, arguments: dict[str, str], error: type, message: str
) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(0, 4), "eu"))
    staging = tmp_path / "staging"
    given = {"source_prefix": t.location, "target_prefix": "/x", **arguments}
    if given["source_prefix"] == "SAME":
        given["source_prefix"] = t.location
        given["target_prefix"] = t.location + "/"
    before = t.metadata_location

    with pytest.raises(error, match=message):
        rewrite_table_path(
            t,
            given.pop("source_prefix"),
            given.pop("target_prefix"),
            staging_location=staging.as_uri(),
            **given,
        )

    assert t.refresh().metadata_location == before
    assert not staging.exists() or not any(staging.rglob("*"))


def test_a_data_file_outside_the_source_prefix_is_refused_before_anything_is_staged(
    catalog: Catalog, tmp_path: Path
) -> None:
    t = catalog.create_table(
        "db.t", SCHEMA, properties={"write.data.path": (tmp_path / "d").as_uri()}
    )
    t.append(rows(range(0, 4), "eu"))
    staging = tmp_path / "staging"

    with pytest.raises(ValidationError, match="not under the source prefix"):
        rewrite_table_path(t, t.location, "/x", staging_location=staging.as_uri())

    assert not staging.exists() or not any(staging.rglob("*"))
    # naming the common prefix works, and moves the data path property with it
    result = rewrite_table_path(t, tmp_path.as_uri(), "s3://b/root")
    staged = read_metadata(
        t.io, next(s for s, d in result.copy_plan if d.endswith(result.latest_version))
    )
    assert staged.properties["write.data.path"] == "s3://b/root/d"


def test_deleted_entries_stay_in_the_manifests_but_are_not_copied(
    catalog: Catalog, tmp_path: Path
) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(0, 4), "eu"))
    t.overwrite(rows(range(10, 12), "eu"))  # the first file is DELETED in the new manifests
    gone = {f.file_path for f in t.scan(snapshot_id=t.snapshots()[0].snapshot_id).plan_files()}

    result = rewrite_table_path(t, t.location, "s3://b/t")

    planned = {source for source, _ in result.copy_plan}
    assert gone <= planned  # the first snapshot still lists it as live: copied for time travel
    current = t.metadata.current_snapshot
    assert current is not None
    entries = [
        e
        for m in read_manifest_list(t.io, current.manifest_list)
        for e in read_manifest(t.io, m, specs=t.metadata.specs_by_id(), schema=t.metadata.schema())
    ]
    assert any(e.data_file.file_path in gone for e in entries)


def test_staging_never_writes_over_a_file_so_a_reused_or_wrong_staging_folder_harms_nothing(
    catalog: Catalog, tmp_path: Path
) -> None:
    t = catalog.create_table("db.t", SCHEMA, properties={"write.delete.mode": "merge-on-read"})
    t.append(rows(range(0, 6), "eu"))
    t.delete("id = 2")
    expected = snapshot_rows(t)
    staging = (tmp_path / "staging").as_uri()
    first = rewrite_table_path(t, t.location, "s3://b/t", staging_location=staging)

    with pytest.raises(FileExistsStorageError):  # an earlier run's files are there
        rewrite_table_path(t, t.location, "s3://b/t", staging_location=staging)
    with pytest.raises(FileExistsStorageError):  # staged paths would be the table's own files
        rewrite_table_path(t, t.location, "s3://b/t", staging_location=t.location)

    assert Path(local_path(first.file_list_location) or "").exists()
    assert all(
        Path(local_path(staged) or "").exists()
        for staged, _ in first.copy_plan
        if staged.startswith(staging)
    )
    assert snapshot_rows(t.refresh()) == expected


def test_a_file_gone_midway_fails_the_run_which_deletes_what_it_staged(
    catalog: Catalog, tmp_path: Path
) -> None:
    t = busy_table(catalog, 2)
    records = [s.summary[ROW_MOVES_KEY] for s in t.snapshots() if ROW_MOVES_KEY in s.summary]
    assert records
    for record in records:
        t.io.delete(record)  # as an expiry of the compaction would, while the run stages
    staging = tmp_path / "staging"

    with pytest.raises(FileNotFoundStorageError):
        rewrite_table_path(t, t.location, "s3://b/t", staging_location=staging.as_uri())

    # records are the last files a run reads: manifests and lists were staged, then deleted
    assert not [p for p in staging.rglob("*") if p.is_file()]
    assert t.refresh().metadata_location == t.metadata_location
