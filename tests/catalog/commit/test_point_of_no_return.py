"""A landed commit is never undone: faults at every step after the swap, on both backends,
with the commit lock on and off, leave the table loadable and the commit reported as landed.

The steps after the swap, by the names the commit pipeline gives them in
``CommitResult.warnings`` (``lakecat.catalog.commit.pipeline.Landing``):

* ``swap returned``: the swap committed but the call raised on its way back (an interrupt in
  the driver after its COMMIT). The outcome is unknown to the writer: it deletes nothing.
* ``recording the lock hint``, ``releasing the commit lock``: under the lock.
* ``telling the grouped appends' writers``: a group commit's holder (tested apart: it needs
  queued writers).
* ``caching the new metadata``, ``deleting superseded files`` / ``deleting superseded metadata
  files``: after the lock is released.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, CommitResult, Table
from lakecat.catalog.commit.coordination import switches
from lakecat.catalog.commit.coordination.group import Batch
from lakecat.catalog.commit.coordination.lock import Hold
from lakecat.catalog.maintenance.reachable import reachable_files
from lakecat.metadata.errors import StorageError
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.table.table_metadata import TableMetadata

LOCK_MODES = ["lock-on", "lock-off"]
ERRORS = {
    "interrupt": KeyboardInterrupt,
    "storage": lambda: StorageError("injected: too many open files"),
    "bug": lambda: RuntimeError("injected: an unexpected error"),
}


def rows(start: int, n: int = 3) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


@dataclass
class DeleteFaultIO(LocalFileIO):
    """Fails every delete with ``error`` while armed."""

    error: Any = None

    def delete(self, location: str) -> None:
        if self.error is not None:
            raise self.error()
        super().delete(location)


class _FaultyHold(Hold):
    def __init__(self, inner: Hold, error: Any) -> None:
        self.inner, self.error = inner, error

    def hint(self, table_uuid: str) -> str | None:
        return self.inner.hint(table_uuid)

    def publish(self, location: str, table_uuid: str) -> None:
        raise self.error()


class StepFaults:
    """A table's operations that raise ``error`` at the step ``step`` after the swap."""

    def __init__(self, inner: Any, step: str, error: Any) -> None:
        self.inner, self.step, self.error = inner, step, error

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def swap(self, *, expected: str, new: str) -> None:
        self.inner.swap(expected=expected, new=new)
        if self.step == "swap returned":
            raise self.error()

    def committed(self, location: str, metadata: TableMetadata) -> None:
        if self.step == "caching the new metadata":
            raise self.error()
        self.inner.committed(location, metadata)

    @contextlib.contextmanager
    def commit_lock(self, properties: Mapping[str, str], **kwargs: Any) -> Iterator[Any]:
        with self.inner.commit_lock(properties, **kwargs) as hold:
            held = hold is not None
            if held and self.step == "recording the lock hint":
                hold = _FaultyHold(hold, self.error)
            yield hold
        if held and self.step == "releasing the commit lock":  # after the real release
            raise self.error()


@pytest.fixture(params=LOCK_MODES)
def lake(request: pytest.FixtureRequest, catalog_url: str, warehouse: str) -> Iterator[Catalog]:
    io = DeleteFaultIO()
    catalog = Catalog(catalog_url, warehouse=warehouse, io=io)
    catalog.create_namespace("db")
    properties = {
        "commit.lock.enabled": "true" if request.param == "lock-on" else "false",
        # every commit prunes a metadata file: the cleanup step has work to do
        "write.metadata.previous-versions-max": "1",
    }
    table = catalog.create_table("db.t", rows(0).schema, properties=properties)
    table.append(rows(0))
    table.append(rows(100))
    yield catalog
    catalog.close()


def faulty(catalog: Catalog, step: str, error: Any) -> Table:
    plain = catalog.load_table("db.t")
    ops = StepFaults(plain._ops, step, error)
    return Table(ops, plain.metadata, plain.metadata_location)  # type: ignore[arg-type]


def assert_loads_with(catalog: Catalog, ids: list[int]) -> Table:
    """A fresh catalog loads the table, reads exactly ``ids``, and finds every file."""
    fresh = Catalog(catalog.uri, warehouse=catalog.warehouse)
    try:
        table = fresh.load_table("db.t")
        assert sorted(table.to_arrow().column("id").to_pylist()) == sorted(ids)
        for path in reachable_files(table.io, table.metadata, table.metadata_location):
            assert os.path.exists(path.removeprefix("file://")), f"referenced file missing: {path}"
        return table
    finally:
        fresh.close()


BEFORE = [0, 1, 2, 100, 101, 102]
STEPS_UNDER_LOCK = ["recording the lock hint", "releasing the commit lock"]
STEPS = [*STEPS_UNDER_LOCK, "caching the new metadata", "deleting superseded files"]


def _arm(catalog: Catalog, step: str, error: Any) -> Table:
    table = faulty(catalog, step, error)
    if step == "deleting superseded files":
        catalog.io.error = error  # type: ignore[attr-defined]
    return table


@pytest.mark.parametrize("error", list(ERRORS))
@pytest.mark.parametrize("step", STEPS)
def test_a_fault_after_the_swap_never_undoes_an_append(
    lake: Catalog, step: str, error: str
) -> None:
    table = _arm(lake, step, ERRORS[error])
    try:
        result = table.append(rows(200))
    finally:
        lake.io.error = None  # type: ignore[attr-defined]
    assert result.snapshot_id is not None
    assert result.metadata.current_snapshot_id == result.snapshot_id  # reported as landed
    lock_held = table.metadata.properties["commit.lock.enabled"] == "true"
    if step in STEPS_UNDER_LOCK and not lock_held:
        assert result.warnings == ()  # no lock, no such step
    elif (step, error) != ("deleting superseded files", "storage"):  # that one is only logged
        assert any(w.startswith(step) for w in result.warnings), result.warnings
    assert_loads_with(lake, [*BEFORE, 200, 201, 202])
    # and the table keeps working, through the same handle and a new one
    table.append(rows(300))
    lake.load_table("db.t").append(rows(400))
    assert_loads_with(lake, [*BEFORE, 200, 201, 202, 300, 301, 302, 400, 401, 402])


@pytest.mark.parametrize("step", STEPS)
def test_a_fault_after_the_swap_never_undoes_a_delete_or_a_metadata_change(
    lake: Catalog, step: str
) -> None:
    table = _arm(lake, step, KeyboardInterrupt)
    try:
        deleted = table.delete("id >= 100")  # a commit with superseded manifests
        changed = table.set_properties({"owner": "someone"})  # a metadata-only commit
    finally:
        lake.io.error = None  # type: ignore[attr-defined]
    assert deleted is not None
    assert changed.metadata.properties["owner"] == "someone"
    loaded = assert_loads_with(lake, [0, 1, 2])
    assert loaded.metadata.properties["owner"] == "someone"


@pytest.mark.parametrize("error", list(ERRORS))
def test_an_error_on_the_way_back_from_a_swap_that_landed_deletes_nothing(
    lake: Catalog, error: str
) -> None:
    """The swap's call raised after the database committed: to the writer the outcome is
    unknown, so it raises, but no file of the table is deleted and the commit stands."""
    table = faulty(lake, "swap returned", ERRORS[error])
    with pytest.raises((KeyboardInterrupt, StorageError, RuntimeError)):
        table.append(rows(200))
    assert_loads_with(lake, [*BEFORE, 200, 201, 202])
    with pytest.raises((KeyboardInterrupt, StorageError, RuntimeError)):
        table.set_properties({"owner": "someone"})
    loaded = assert_loads_with(lake, [*BEFORE, 200, 201, 202])
    assert loaded.metadata.properties["owner"] == "someone"


def test_a_holder_that_cannot_tell_its_grouped_writers_still_lands_them_all(
    sqlite_url: str, warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``telling the grouped appends' writers`` fails in the holder: its own commit and the
    appends it grouped stand, and each queued writer finds its append in the table."""
    monkeypatch.delenv(switches.GROUP_COMMIT_ENV, raising=False)  # a test of group commit
    catalog = Catalog(sqlite_url, warehouse=warehouse)
    catalog.create_namespace("db")
    catalog.create_table("db.t", rows(0).schema)

    def fail(self: Batch, location: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Batch, "landed", fail)
    results: dict[int, CommitResult] = {}
    errors: list[BaseException] = []

    def append(writer: int) -> None:
        own = Catalog(sqlite_url, warehouse=warehouse)
        try:
            results[writer] = own.load_table("db.t").append(rows(writer * 10))
        except BaseException as exc:
            errors.append(exc)
        finally:
            own.close()

    ops = catalog._ops(("db",), "t")
    queue = ops.commit_queue({})
    threads = [threading.Thread(target=append, args=(w,)) for w in (1, 2, 3)]
    with ops.commit_lock({}) as hold:  # the writers queue behind the test's hold
        assert hold is not None
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while not os.path.isdir(queue.folder) or (
            len([n for n in os.listdir(queue.folder) if n.endswith(".req")]) < 3
        ):
            assert time.monotonic() < deadline, "the writers did not queue"
            time.sleep(0.01)
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert len(results) == 3
    holders = [r for r in results.values() if r.warnings]
    assert len(holders) == 1  # the first to get the lock committed the others with its own
    assert holders[0].warnings[0].startswith("telling the grouped appends' writers")
    table = catalog.load_table("db.t")
    assert {s.snapshot_id for s in table.snapshots()} == {r.snapshot_id for r in results.values()}
    assert sorted(table.to_arrow().column("id").to_pylist()) == [10, 11, 12, 20, 21, 22, 30, 31, 32]
    catalog.close()
