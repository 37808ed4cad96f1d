"""rewrite_position_delete_files merges a data file's own position delete files; rows stay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import rewrite_data_files, rewrite_position_delete_files
from lakecat.metadata.errors import CommitConflict, ValidationError

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    with Catalog.embedded(tmp_path / "lake") as c:
        c.create_namespace("db")
        yield c


@pytest.fixture
def table(catalog: Catalog) -> Table:
    """Two partitions of one file each; three merge-on-read deletes in ``a``, one in ``b``."""
    t = catalog.create_table(
        "db.t", SCHEMA, partition_by=["part"], properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(pa.table({"id": pa.array(range(100), pa.int64()), "part": ["a"] * 100}))
    t.append(pa.table({"id": pa.array(range(100, 200), pa.int64()), "part": ["b"] * 100}))
    for cond in ("id = 1 OR id = 2", "id = 50", "id = 2 OR id = 99 OR id = 150"):
        t.delete(cond)
    return t


def ids(t: Table, **options: object) -> list[int]:
    return sorted(t.to_arrow(columns=["id"], **options).column("id").to_pylist())  # type: ignore[arg-type]


def deletes_by_data_file(t: Table) -> dict[str, list[str]]:
    plan = t.scan().plan()
    return {path: sorted(d.file_path for d in ds) for path, ds in plan.deletes.items()}


def test_the_delete_files_of_a_data_file_become_one_and_the_rows_stay(table: Table) -> None:
    before = ids(table)
    previous = table.current_snapshot().snapshot_id
    assert sorted(len(v) for v in deletes_by_data_file(table).values()) == [1, 3]

    result = rewrite_position_delete_files(table)

    assert (result.data_files, result.delete_files_removed, result.delete_files_added) == (1, 3, 1)
    assert ids(table) == before == sorted(set(range(200)) - {1, 2, 50, 99, 150})
    assert sorted(len(v) for v in deletes_by_data_file(table).values()) == [1, 1]
    snap = table.current_snapshot()
    assert snap.operation == "replace"
    assert snap.summary["removed-position-delete-files"] == "3"
    assert snap.summary["added-position-delete-files"] == "1"
    assert snap.summary["total-position-deletes"] == "5"  # id 2 was deleted once: live rows
    assert "deleted-data-files" not in snap.summary
    assert ids(table, snapshot_id=previous) == before  # time travel reads the old files


def test_nothing_to_merge_commits_nothing(table: Table) -> None:
    rewrite_position_delete_files(table)
    location = table.metadata_location
    assert rewrite_position_delete_files(table).snapshot_id is None
    assert table.refresh().metadata_location == location
    with pytest.raises(ValidationError):
        rewrite_position_delete_files(table, min_input_files=1)


def test_a_compaction_of_the_data_file_in_between_is_a_conflict(
    catalog: Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakecat.catalog.maintenance import position_deletes

    real = position_deletes.write_position_deletes

    def compact_first(*args: object, **kwargs: object) -> object:
        # its delete files make the file one to rewrite: the compaction removes it
        rewrite_data_files(catalog.load_table("db.t"), delete_file_threshold=1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(position_deletes, "write_position_deletes", compact_first)
    before = ids(table)
    with pytest.raises(CommitConflict):
        rewrite_position_delete_files(table)
    assert ids(table.refresh()) == before
    data = Path(table.location.removeprefix("file://")) / "data"
    named = {p.name for p in data.rglob("*-deletes.parquet")}
    live = {Path(p).name for v in deletes_by_data_file(table).values() for p in v}
    assert not live  # the compaction applied and dropped them all
    assert len(named) == 4  # the three DML delete files of `a` and the one of `b`: no new file
