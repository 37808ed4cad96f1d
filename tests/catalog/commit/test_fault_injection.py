"""Faults at every step of the commit path: the table always loads, the outcome is one of the
three (committed / definitely not committed / unknown), and nothing acknowledged is lost.

A fault-injecting FileIO fails the n-th write of one kind of file; a fault-injecting table
operations object fails the compare-and-swap before it is sent, after it committed (the
connection dropped while the answer was on its way), or with an unknown outcome that did not
land.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import IO, Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance.reachable import reachable_files
from lakecat.metadata.errors import (
    CatalogReadOnly,
    CatalogUnavailable,
    CommitFailed,
    CommitStateUnknown,
    LakecatError,
    RetriesExhausted,
    StorageError,
)
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.table.table_metadata import TableMetadata


def batch(start: int, n: int = 5) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "p": ["a"] * n})


KINDS = {
    "data": lambda loc: loc.endswith(".parquet"),
    "manifest": lambda loc: "-m" in loc.rsplit("/", 1)[-1] and loc.endswith(".avro"),
    "manifest_list": lambda loc: loc.rsplit("/", 1)[-1].startswith("snap-"),
    "metadata": lambda loc: loc.endswith(".metadata.json"),
}


@dataclass
class FaultyIO(LocalFileIO):
    kind: str = ""
    armed: bool = False

    def _maybe_fail(self, location: str) -> None:
        if self.armed and KINDS[self.kind](location):
            self.armed = False
            raise StorageError(f"injected failure writing {location}")

    def write(self, location: str, data: bytes, *, exclusive: bool = False) -> None:
        self._maybe_fail(location)
        super().write(location, data, exclusive=exclusive)

    def open_output(self, location: str) -> IO[bytes]:
        self._maybe_fail(location)
        return super().open_output(location)


@dataclass
class FaultyOps:
    """Wraps a table's operations; ``mode`` says how the next swap fails."""

    inner: object
    mode: str = ""
    refresh_fails: bool = False
    calls: list[str] = field(default_factory=list)

    @property
    def io(self):  # type: ignore[no-untyped-def]
        return self.inner.io  # type: ignore[attr-defined]

    @property
    def name(self) -> str:
        return self.inner.name  # type: ignore[attr-defined]

    @property
    def manifest_cache(self):  # type: ignore[no-untyped-def]
        return self.inner.manifest_cache  # type: ignore[attr-defined]

    def refresh(self) -> tuple[TableMetadata, str]:
        if self.refresh_fails and self.calls:
            raise CatalogUnavailable("injected: catalog unreachable")
        return self.inner.refresh()  # type: ignore[attr-defined]

    def current_location(self) -> str:
        return self.inner.current_location()  # type: ignore[attr-defined,no-any-return]

    def load(self, location: str) -> TableMetadata:
        return self.inner.load(location)  # type: ignore[attr-defined,no-any-return]

    def committed(self, location: str, metadata: TableMetadata) -> None:
        self.inner.committed(location, metadata)  # type: ignore[attr-defined]

    def commit_lock(
        self, properties: Mapping[str, str], **kwargs: Any
    ) -> AbstractContextManager[bool]:
        return self.inner.commit_lock(properties, **kwargs)  # type: ignore[attr-defined,no-any-return]

    def commit_queue(self, properties: Mapping[str, str]) -> Any:
        return self.inner.commit_queue(properties)  # type: ignore[attr-defined]

    def swap(self, *, expected: str, new: str) -> None:
        mode, self.mode = self.mode, ""
        self.calls.append(mode or "ok")
        if mode == "before":
            raise CatalogUnavailable("injected: connection refused before the UPDATE")
        if mode == "after":
            self.inner.swap(expected=expected, new=new)  # type: ignore[attr-defined]
            raise CommitStateUnknown("injected: connection dropped after the UPDATE")
        if mode == "unknown_not_landed":
            raise CommitStateUnknown("injected: connection dropped, UPDATE never ran")
        self.inner.swap(expected=expected, new=new)  # type: ignore[attr-defined]


@pytest.fixture
def setup(catalog_url: str, warehouse: str):
    io = FaultyIO()
    catalog = Catalog(catalog_url, warehouse=warehouse, io=io)
    catalog.create_namespace("db")
    table = catalog.create_table("db.f", batch(0).schema, partition_by=["p"])
    table.append(batch(0))
    yield catalog, io, table
    catalog.close()


def files_under(table: Table) -> set[str]:
    root = table.location.removeprefix("file://")
    return {"file://" + os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def assert_consistent(catalog: Catalog, expected_ids: list[int]) -> Table:
    t = catalog.load_table("db.f")  # always loads
    assert sorted(t.to_arrow().column("id").to_pylist()) == expected_ids
    for path in reachable_files(t.io, t.metadata, t.metadata_location):
        assert os.path.exists(path.removeprefix("file://")), f"referenced file missing: {path}"
    return t


@pytest.mark.parametrize("kind", list(KINDS))
def test_storage_failure_at_any_write_changes_nothing_and_leaves_no_files(setup, kind: str) -> None:
    catalog, io, table = setup
    before = files_under(table)
    io.kind, io.armed = kind, True
    with pytest.raises(StorageError):
        table.append(batch(100))
    t = assert_consistent(catalog, list(range(5)))
    assert files_under(t) == before
    t.append(batch(200))  # and the table keeps working
    assert_consistent(catalog, [*range(5), *range(200, 205)])


@pytest.mark.parametrize("kind", ["manifest", "manifest_list", "metadata", "data"])
def test_storage_failure_in_a_delete_changes_nothing(setup, kind: str) -> None:
    catalog, io, table = setup
    before = files_under(table)
    io.kind, io.armed = kind, True
    with pytest.raises(StorageError):
        table.delete("id < 2")
    assert files_under(catalog.load_table("db.f")) == before
    assert_consistent(catalog, list(range(5)))


def faulty_table(
    catalog: Catalog, mode: str, *, refresh_fails: bool = False
) -> tuple[Table, FaultyOps]:
    plain = catalog.load_table("db.f")
    ops = FaultyOps(plain._ops, mode=mode, refresh_fails=refresh_fails)
    return Table(ops, plain.metadata, plain.metadata_location), ops  # type: ignore[arg-type]


def test_catalog_unreachable_before_the_swap_is_retried(setup) -> None:
    catalog, _, _ = setup
    t, ops = faulty_table(catalog, "before")
    t.append(batch(10))
    assert ops.calls == ["before", "ok"]
    assert_consistent(catalog, [*range(5), *range(10, 15)])


def test_connection_dropped_after_the_update_is_recognised_as_committed(setup) -> None:
    catalog, _, _ = setup
    t, ops = faulty_table(catalog, "after")
    result = t.append(batch(10))
    assert ops.calls == ["after"]  # not retried: our snapshot id was found in the table
    assert result.snapshot_id == catalog.load_table("db.f").current_snapshot().snapshot_id
    assert_consistent(catalog, [*range(5), *range(10, 15)])  # exactly once


def test_unknown_outcome_that_did_not_land_is_retried_without_deleting(setup) -> None:
    catalog, _, _ = setup
    t, ops = faulty_table(catalog, "unknown_not_landed")
    t.append(batch(10))
    assert ops.calls == ["unknown_not_landed", "ok"]
    assert_consistent(catalog, [*range(5), *range(10, 15)])


def test_unknown_outcome_with_unreadable_catalog_raises_and_deletes_nothing(setup) -> None:
    catalog, _, _ = setup
    t, _ = faulty_table(catalog, "after", refresh_fails=True)
    with pytest.raises(CommitStateUnknown) as info:
        t.append(batch(10))
    assert "may or may not" in str(info.value)
    # it did land: every file it references must still be there
    assert_consistent(catalog, [*range(5), *range(10, 15)])


def test_every_fault_leaves_one_of_three_outcomes(setup) -> None:
    """Sweep: each kind of fault, then a normal append; acknowledged rows are never lost."""
    catalog, io, _ = setup
    acknowledged = list(range(5))
    start = 1000
    for kind in KINDS:
        io.kind, io.armed = kind, True
        try:
            catalog.load_table("db.f").append(batch(start))
            acknowledged += list(range(start, start + 5))
        except LakecatError:
            pass
        start += 100
    for mode in ("before", "after", "unknown_not_landed"):
        t, _ = faulty_table(catalog, mode)
        t.append(batch(start))
        acknowledged += list(range(start, start + 5))
        start += 100
    assert_consistent(catalog, sorted(acknowledged))


class AlwaysFailingSwap(FaultyOps):
    """Every swap fails with ``error``."""

    error: BaseException = CatalogUnavailable("injected")

    def swap(self, *, expected: str, new: str) -> None:
        self.calls.append("failed")
        raise self.error


def _always_failing(catalog: Catalog, error: BaseException) -> tuple[Table, AlwaysFailingSwap]:
    plain = catalog.load_table("db.f")
    plain.set_properties({"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "2"})
    ops = AlwaysFailingSwap(plain._ops)
    ops.error = error
    return Table(ops, plain.metadata, plain.metadata_location), ops  # type: ignore[arg-type]


def test_an_unreachable_catalog_fails_even_a_blind_append_after_the_retry_budget(setup) -> None:
    catalog, _, _ = setup
    t, ops = _always_failing(catalog, CatalogUnavailable("injected: connection refused"))
    before = files_under(t)
    with pytest.raises(CatalogUnavailable, match="connection refused"):
        t.append(batch(10))  # blind appends retry lost races without bound, not this
    assert ops.calls == ["failed"] * 5  # the first attempt and commit.retry.num-retries (4)
    assert files_under(t) == before  # no file of the failed append is left
    assert_consistent(catalog, list(range(5)))


def test_a_catalog_that_refuses_the_swap_fails_at_once(setup) -> None:
    catalog, _, _ = setup
    t, ops = _always_failing(catalog, CatalogReadOnly("injected: attempt to write a readonly db"))
    before = files_under(t)
    with pytest.raises(CatalogReadOnly):
        t.append(batch(10))
    assert ops.calls == ["failed"]
    assert files_under(t) == before
    assert_consistent(catalog, list(range(5)))


def test_exhausted_retries_say_what_the_last_lost_swap_was(setup) -> None:
    catalog, _, _ = setup
    t, ops = _always_failing(catalog, CommitFailed("injected: the pointer moved"))
    with pytest.raises(RetriesExhausted) as info:
        t.delete("id = 1")
    assert isinstance(info.value.__cause__, CommitFailed)
    assert "the pointer moved" in str(info.value.__cause__)
    assert len(ops.calls) == 5
    assert_consistent(catalog, list(range(5)))
