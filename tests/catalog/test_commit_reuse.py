"""What a commit reuses instead of reading, building or writing again, and that the reuse
never changes what is committed or read."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

import lakecat.catalog.producer as producer_module
from lakecat.catalog import Catalog
from lakecat.catalog.catalog import _TableOps
from lakecat.metadata.fileio import LocalFileIO
from lakecat.metadata.manifest import read_manifest_list
from lakecat.metadata.metadata_files import read_metadata

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
    def commit_lock(self: _TableOps, properties: Any) -> Iterator[bool]:
        with original_lock(self, properties) as held:
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
