"""What a commit reuses instead of reading, building or writing again, and that the reuse
never changes what is committed or read."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecat.catalog.commit.producer as producer_module
from lakecat.catalog import Catalog
from lakecat.catalog.catalog import _TableOps
from lakecat.catalog.commit.coordination.lock import ProcessLock
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.manifests.manifest import read_manifest_list
from lakecat.metadata.table.metadata_files import read_metadata

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int32())])


def _rows(i: int) -> pa.Table:
    return pa.table({"id": [i * 10 + k for k in range(10)], "part": [i % 3] * 10}, schema=SCHEMA)


@pytest.fixture
def catalogs(sqlite_url: str, warehouse: str) -> Iterator[tuple[Catalog, Catalog]]:
    """Two catalog instances on one database: two writers that share no cache."""
    first = Catalog(sqlite_url, warehouse=warehouse)
    first.create_namespace("db")
    first.create_table("db.t", SCHEMA, partition_by=["part"])
    second = Catalog(sqlite_url, warehouse=warehouse)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = LocalFileIO.read

    def read(self: LocalFileIO, location: str) -> bytes:
        seen.append(location)
        return original(self, location)

    monkeypatch.setattr(LocalFileIO, "read", read)
    return seen


def test_a_commit_on_the_writers_own_last_commit_reads_no_metadata_from_storage(
    catalogs: tuple[Catalog, Catalog], reads: list[str]
) -> None:
    first, _ = catalogs
    first.load_table("db.t").append(_rows(0))
    reads.clear()
    for i in range(1, 4):
        first.load_table("db.t").append(_rows(i))
    assert [r for r in reads if r.endswith((".avro", ".json"))] == []
    assert first.load_table("db.t").to_arrow().num_rows == 40


def test_writers_taking_turns_commit_exactly_what_a_fresh_reader_sees(
    catalogs: tuple[Catalog, Catalog],
) -> None:
    first, second = catalogs
    for i in range(12):  # each commit builds on the other writer's last one
        (first if i % 2 else second).load_table("db.t").append(_rows(i))
    table = second.load_table("db.t")
    cold = read_metadata(table.io, table.metadata_location)
    assert table.metadata == cold  # parsed reusing the previous version == parsed from scratch
    for snap in cold.snapshots:  # every list reads the same with and without reused rows
        assert read_manifest_list(table.io, snap.manifest_list) == list(
            first.manifest_cache.manifest_list(table.io, snap.manifest_list).manifests
        )
    assert sorted(table.to_arrow()["id"].to_pylist()) == list(range(120))


def test_the_new_files_manifest_is_written_before_the_commit_lock_is_taken(
    catalogs: tuple[Catalog, Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = catalogs
    events: list[str] = []
    original_lock = _TableOps.commit_lock
    original_write = producer_module.write_manifest

    @contextlib.contextmanager
    def commit_lock(self: _TableOps, properties: Any, **kwargs: Any) -> Iterator[bool]:
        with original_lock(self, properties, **kwargs) as held:
            events.append("locked")
            yield held
            events.append("released")

    def write_manifest(*args: Any, **kwargs: Any) -> Any:
        events.append("manifest")
        return original_write(*args, **kwargs)

    monkeypatch.setattr(_TableOps, "commit_lock", commit_lock)
    monkeypatch.setattr(producer_module, "write_manifest", write_manifest)
    first.load_table("db.t").append(_rows(1))
    assert events == ["manifest", "locked", "released"]


# ---- the commit lock's hint: the location its previous holder committed --------------------
@pytest.fixture
def pointer_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = _TableOps.current_location

    def current_location(self: _TableOps) -> str:
        location = original(self)
        seen.append(location)
        return location

    monkeypatch.setattr(_TableOps, "current_location", current_location)
    return seen


def test_a_lock_holder_builds_on_the_previous_holders_commit_without_asking_the_catalog(
    catalogs: tuple[Catalog, Catalog], pointer_reads: list[str]
) -> None:
    first, second = catalogs
    stale = first.load_table("db.t")  # its base goes stale when the other writer commits
    second.load_table("db.t").append(_rows(1))
    pointer_reads.clear()
    result = stale.append(_rows(2))
    assert pointer_reads == []  # the lock file named the other writer's commit
    assert result.attempts == 1
    assert sorted(first.load_table("db.t").to_arrow()["id"].to_pylist()) == list(range(10, 30))


def test_a_stale_hint_costs_one_lost_swap_and_nothing_else(
    catalogs: tuple[Catalog, Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = catalogs
    stale = first.load_table("db.t")  # version 0
    first.load_table("db.t").append(_rows(1))  # version 1, the hint names it
    monkeypatch.setattr(second, "commit_lock", ProcessLock())  # a writer outside the lock
    second.load_table("db.t").append(_rows(2))  # version 2, the hint still names version 1
    result = stale.append(_rows(3))
    assert result.attempts == 2  # built on the hinted version 1, lost the swap, retried
    final = first.load_table("db.t")
    assert sorted(final.to_arrow()["id"].to_pylist()) == list(range(10, 40))
    chain = [s.snapshot_id for s in final.metadata.ancestors(final.metadata.current_snapshot_id)]
    assert len(chain) == len(final.metadata.snapshots) == 3


def test_a_hint_older_than_the_writers_base_is_not_used(
    catalogs: tuple[Catalog, Catalog], monkeypatch: pytest.MonkeyPatch, pointer_reads: list[str]
) -> None:
    first, second = catalogs
    first.load_table("db.t").append(_rows(1))  # the hint names version 1
    monkeypatch.setattr(second, "commit_lock", ProcessLock())
    second.load_table("db.t").append(_rows(2))  # version 2, outside the lock
    pointer_reads.clear()
    result = first.load_table("db.t").append(_rows(3))  # its base is version 2 already
    assert result.attempts == 1
    assert len(pointer_reads) == 2  # load_table's, and the commit's own instead of the hint
    assert first.load_table("db.t").to_arrow().num_rows == 30


def test_an_unusable_hint_is_ignored(
    catalogs: tuple[Catalog, Catalog], sqlite_url: str, pointer_reads: list[str]
) -> None:
    first, _ = catalogs
    first.load_table("db.t").append(_rows(1))
    (lock_file,) = Path(f"{sqlite_url.removeprefix('sqlite:///')}.locks").glob("*.lock")
    for junk in (b"file:///nowhere/00009-x.metadata.json", b"\xff\xfe", b""):
        lock_file.write_bytes(junk)
        pointer_reads.clear()
        result = first.load_table("db.t").append(_rows(2 + len(junk)))
        assert result.attempts == 1
        assert len(pointer_reads) == 2  # load_table's, and the commit's own after the hint
    assert first.load_table("db.t").to_arrow().num_rows == 40
