"""remove_dangling_deletes removes delete files that apply to no data file; rows stay.

lakecat's own commits leave none, so the dangling files here are left by pyiceberg (0.12): its
delete of a whole partition drops the data file and keeps the position delete file lakecat
wrote for it. The interop suite removes those Iceberg Java's compaction leaves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import dangling_deletes, remove_dangling_deletes
from lakecat.metadata.errors import ConcurrentDeleteDelete
from lakecat.metadata.manifests import (
    ManifestContent,
    Status,
    read_manifest,
    read_manifest_list,
)
from lakecat.metadata.table.snapshots import REPLACE

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])
# pyiceberg deletes copy-on-write on a merge-on-read table, and says so
pytestmark = pytest.mark.filterwarnings("ignore:Merge on read is not yet supported")


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    with Catalog.embedded(tmp_path / "lake") as c:
        c.create_namespace("db")
        yield c


def rows(ids: range, region: str) -> pa.Table:
    return pa.table({"id": list(ids), "region": [region] * len(ids)}, schema=SCHEMA)


def pyiceberg_table(catalog: Catalog, name: str) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    py = SqlCatalog(catalog.name, uri=catalog.uri, warehouse=catalog.warehouse)
    return py.load_table(name)


@pytest.fixture
def table(catalog: Catalog) -> Table:
    """eu and us, one file each, a merge-on-read delete in each (position delete files on
    v2); then pyiceberg deletes the eu partition: eu's delete file dangles."""
    t = catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"], properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(pa.concat_tables([rows(range(10), "eu"), rows(range(10, 20), "us")]))
    t.delete("id IN (1, 11)")
    pyiceberg_table(catalog, "db.t").delete("region == 'eu'")
    return t.refresh()


def live_delete_files(t: Table) -> list[str]:
    """The delete files of the current snapshot, whether they apply or not."""
    snapshot = t.current_snapshot()
    assert snapshot is not None
    specs, schema = t.metadata.specs_by_id(), t.schema()
    return sorted(
        e.data_file.file_path
        for m in read_manifest_list(t.io, snapshot.manifest_list)
        if m.content is ManifestContent.DELETES
        for e in read_manifest(t.io, m, specs=specs, schema=schema)
        if e.status is not Status.DELETED
    )


def ids(t: Table) -> list[int]:
    return sorted(t.to_arrow(columns=["id"]).column("id").to_pylist())


def test_a_delete_file_whose_data_file_is_gone_is_removed_and_no_row_changes(
    catalog: Catalog, table: Table
) -> None:
    live = live_delete_files(table)
    assert len(live) == 2  # eu's dangles, us's applies
    before = ids(table)

    found = remove_dangling_deletes(table, dry_run=True)
    assert [f.partition for f in found.removed] == [("eu",)] and found.snapshot_id is None
    assert live_delete_files(table.refresh()) == live  # a dry run changes nothing

    result = remove_dangling_deletes(table)

    assert result.removed == found.removed and result.snapshot_id is not None
    snapshot = table.current_snapshot()
    assert snapshot.snapshot_id == result.snapshot_id and snapshot.operation == REPLACE
    assert snapshot.summary_count("removed-position-delete-files") == 1
    assert live_delete_files(table) == [f for f in live if "region=us" in f]
    assert ids(table) == before == [i for i in range(10, 20) if i != 11]
    read_by_pyiceberg = pyiceberg_table(catalog, "db.t").scan().to_arrow()
    assert sorted(read_by_pyiceberg.column("id").to_pylist()) == before
    # nothing left: no commit
    assert remove_dangling_deletes(table).snapshot_id is None
    assert table.refresh().current_snapshot().snapshot_id == result.snapshot_id


def test_a_concurrent_append_does_not_stop_the_removal(
    catalog: Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = catalog.load_table("db.t")
    real = dangling_deletes.unused_deletes

    def append_first(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        other.append(rows(range(30, 32), "eu"))  # new rows: the old delete must not apply
        return found

    monkeypatch.setattr(dangling_deletes, "unused_deletes", append_first)
    result = remove_dangling_deletes(table)

    assert len(result.removed) == 1 and result.snapshot_id is not None
    assert ids(table.refresh()) == sorted([30, 31, *(i for i in range(10, 20) if i != 11)])
    assert len(live_delete_files(table)) == 1


def test_a_concurrent_removal_of_the_same_delete_file_fails_it_and_changes_nothing(
    catalog: Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = catalog.load_table("db.t")
    real = dangling_deletes.unused_deletes
    raced: list[int | None] = []

    def remove_first(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        if not raced:
            monkeypatch.setattr(dangling_deletes, "unused_deletes", real)
            raced.append(remove_dangling_deletes(other).snapshot_id)
        return found

    monkeypatch.setattr(dangling_deletes, "unused_deletes", remove_first)
    with pytest.raises(ConcurrentDeleteDelete, match="no longer in the table"):
        remove_dangling_deletes(table)

    assert table.refresh().current_snapshot().snapshot_id == raced[0]
    assert len(live_delete_files(table)) == 1
