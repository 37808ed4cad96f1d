"""Group commit: the holder of the commit lock commits the appends queued behind it, each as
its own snapshot, in one metadata version; every hand-over that does not land falls back to
the writer committing on its own, and nothing is committed twice or for a writer that died."""

from __future__ import annotations

import fcntl
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

from lakecat.catalog import Catalog
from lakecat.catalog.commit.conflicts import ATTEMPTS_KEY
from lakecat.catalog.commit.coordination import file_lock as commit_lock
from lakecat.catalog.commit.coordination import switches
from lakecat.catalog.commit.coordination.group import Batch, Waiter, decode, drain, encode
from lakecat.catalog.commit.coordination.protocol import new_stem
from lakecat.catalog.commit.coordination.queue import FileCommitQueue, TicketState
from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.commit.pipeline import CommitResult
from lakecat.catalog.commit.producer import PreparedAppend, SnapshotProducer
from lakecat.metadata.errors import StorageError
from lakecat.metadata.manifests.datafile import ManifestContent, ManifestFile, PartitionFieldSummary
from lakecat.metadata.table.metadata_files import (
    new_metadata_location,
    parse_version,
    write_metadata,
)
from lakecat.metadata.table.table_metadata import TableMetadata

WAITERS = 3


def _rows(writer: int, n: int = 10) -> pa.Table:
    return pa.table(
        {"writer": pa.array([writer] * n, pa.int64()), "n": pa.array(range(n), pa.int64())}
    )


@pytest.fixture(autouse=True)
def _group_commit_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are tests of group commit: on, whatever the environment says
    (``lakecat.catalog.commit.coordination.switches``)."""
    monkeypatch.delenv(switches.GROUP_COMMIT_ENV, raising=False)


@pytest.fixture
def lake(sqlite_url: str, warehouse: str) -> Iterator[Catalog]:
    """A SQLite-file catalog (its commit lock is a file lock, which has a queue)."""
    catalog = Catalog(sqlite_url, warehouse=warehouse)
    catalog.create_namespace("db")
    catalog.create_table("db.t", _rows(0, 0).schema)
    yield catalog
    catalog.close()


def _ops(catalog: Catalog) -> Any:
    return catalog._ops(("db",), "t")


def _queue(catalog: Catalog) -> FileCommitQueue:
    queue = _ops(catalog).commit_queue({})
    assert queue is not None
    return queue


def _queued(queue: FileCommitQueue) -> list[str]:
    if not os.path.isdir(queue.folder):
        return []
    return sorted(n for n in os.listdir(queue.folder) if not n.startswith("."))


def _requests(queue: FileCommitQueue) -> list[str]:
    return [n for n in _queued(queue) if n.endswith(".req")]


def _hold_lock(catalog: Catalog) -> AbstractContextManager[Any]:
    return _ops(catalog).commit_lock({})  # type: ignore[no-any-return]


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class _Appenders:
    """Writers appending from threads, each with its own catalog (as separate jobs would)."""

    def __init__(self, url: str, warehouse: str, writers: range) -> None:
        self.results: dict[int, CommitResult] = {}
        self.errors: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self._append, args=(url, warehouse, w)) for w in writers
        ]

    def _append(self, url: str, warehouse: str, writer: int) -> None:
        catalog = Catalog(url, warehouse=warehouse)
        try:
            self.results[writer] = catalog.load_table("db.t").append(_rows(writer))
        except BaseException as exc:  # reported by join()
            self.errors.append(exc)
        finally:
            catalog.close()

    def start(self) -> _Appenders:
        for t in self.threads:
            t.start()
        return self

    def join(self) -> dict[int, CommitResult]:
        for t in self.threads:
            t.join(timeout=60)
            assert not t.is_alive(), "a writer did not finish"
        assert not self.errors, self.errors
        return self.results


def _queue_behind_the_lock(lake: Catalog, writers: range) -> _Appenders:
    """Start writers while the test holds the lock; return once all have queued."""
    queue = _queue(lake)
    appenders = _Appenders(lake.uri, lake.warehouse, writers).start()
    _wait_for(lambda: len(_requests(queue)) == len(writers), "the writers to queue")
    return appenders


def _swap_in(ops: Any, base: TableMetadata, base_location: str, batch: Batch) -> str:
    """Commit what a holder drained, as the holder would (without telling the writers)."""
    new_location = new_metadata_location(base.location, base_location, base.properties)
    write_metadata(ops.io, new_location, batch.metadata)
    ops.swap(expected=base_location, new=new_location)
    return str(new_location)


def _writers_in(table: Any) -> list[int]:
    return sorted(set(table.to_arrow().column("writer").to_pylist()))


def test_appends_queued_behind_the_lock_land_in_one_version_each_as_its_own_snapshot(
    lake: Catalog,
) -> None:
    before = lake.load_table("db.t")
    version_before = parse_version(before.metadata_location)
    with _hold_lock(lake) as hold:
        assert hold is not None
        appenders = _queue_behind_the_lock(lake, range(1, WAITERS + 1))
    results = appenders.join()

    table = lake.load_table("db.t")
    # the first waiter to get the lock committed the two others with its own: one version
    assert parse_version(table.metadata_location) == version_before + 1
    snapshots = table.snapshots()
    assert {s.snapshot_id for s in snapshots} == {r.snapshot_id for r in results.values()}
    # a linear chain, each snapshot with its own sequence number, list and running totals
    chain = sorted(snapshots, key=lambda s: s.sequence_number)
    assert [s.sequence_number for s in chain] == [1, 2, 3]
    assert chain[0].parent_snapshot_id is None
    for parent, child in itertools.pairwise(chain):
        assert child.parent_snapshot_id == parent.snapshot_id
    assert len({s.manifest_list for s in chain}) == WAITERS
    assert [s.summary["total-records"] for s in chain] == ["10", "20", "30"]
    assert {s.summary[ATTEMPTS_KEY] for s in chain} == {"1"}
    # time travel to each snapshot, by lakecat and by pyiceberg, sees the appends up to it
    static = StaticTable.from_metadata(table.metadata_location)
    for i, snap in enumerate(chain, start=1):
        assert table.to_arrow(snapshot_id=snap.snapshot_id).num_rows == 10 * i
        assert static.scan(snapshot_id=snap.snapshot_id).to_arrow().num_rows == 10 * i
    assert _writers_in(table) == [1, 2, 3]
    # every writer was told where its commit is, and the queue is empty
    for result in results.values():
        assert result.metadata.has_snapshot(result.snapshot_id)
    assert _queued(_queue(lake)) == []


def test_with_group_commit_off_queued_writers_commit_one_by_one(lake: Catalog) -> None:
    lake.load_table("db.t").set_properties({"commit.group-commit.enabled": "false"})
    before = parse_version(lake.load_table("db.t").metadata_location)
    with _hold_lock(lake):
        appenders = _Appenders(lake.uri, lake.warehouse, range(1, WAITERS + 1)).start()
        time.sleep(0.5)  # they wait for the lock without queueing
        assert _requests(_queue(lake)) == []
    appenders.join()
    table = lake.load_table("db.t")
    assert parse_version(table.metadata_location) == before + WAITERS
    assert _writers_in(table) == [1, 2, 3]


def test_writers_whose_holder_did_not_land_them_commit_on_their_own(lake: Catalog) -> None:
    """A holder that claimed requests and then lost its swap, failed or died leaves them
    claimed: their writers find their snapshots missing and commit them themselves."""
    before = parse_version(lake.load_table("db.t").metadata_location)
    with _hold_lock(lake):
        appenders = _queue_behind_the_lock(lake, range(1, 3))
        claims = _queue(lake).claim(10)
        assert len(claims) == 2  # taken, never committed
    results = appenders.join()
    table = lake.load_table("db.t")
    assert _writers_in(table) == [1, 2]
    assert len(table.snapshots()) == 2
    # nothing was handed over any more: each committed alone (the first drains nothing)
    assert parse_version(table.metadata_location) == before + 2
    assert {r.snapshot_id for r in results.values()} == {s.snapshot_id for s in table.snapshots()}
    assert _queued(_queue(lake)) == []


def test_writers_whose_holder_landed_them_without_saying_so_do_not_commit_twice(
    lake: Catalog,
) -> None:
    """The holder crashed between its swap and marking the requests done."""
    with _hold_lock(lake):
        appenders = _queue_behind_the_lock(lake, range(1, 3))
        ops = _ops(lake)
        base, base_location = ops.refresh()
        batch = drain(ops, _queue(lake), base=base, head=base)
        assert len(batch.claims) == 2
        new_location = _swap_in(ops, base, base_location, batch)  # no claim marked done
    results = appenders.join()
    table = lake.load_table("db.t")
    assert table.metadata_location == new_location  # nobody committed again
    assert len(table.snapshots()) == 2
    assert {r.snapshot_id for r in results.values()} == {s.snapshot_id for s in table.snapshots()}
    assert _writers_in(table) == [1, 2]


def _counting_claims(
    queue: FileCommitQueue, after_first: Callable[[], None] = lambda: None
) -> list[int]:
    """Record how many requests each ``queue.claim`` call takes; run ``after_first`` once
    the first call has taken its requests."""
    counts: list[int] = []
    claim = queue.claim

    def counting(limit: int) -> Any:
        found = claim(limit)
        counts.append(len(found))
        if len(counts) == 1:
            after_first()
        return found

    queue.claim = counting  # type: ignore[method-assign]
    return counts


def test_a_holder_also_commits_appends_queued_while_it_applied_the_first_ones(
    lake: Catalog,
) -> None:
    queue = _queue(lake)
    with _hold_lock(lake):
        appenders = _queue_behind_the_lock(lake, range(1, 3))
        late = _Appenders(lake.uri, lake.warehouse, range(3, 4))

        def late_arrival() -> None:
            late.start()
            _wait_for(lambda: len(_requests(queue)) == 1, "the late writer to queue")

        claims = _counting_claims(queue, after_first=late_arrival)
        ops = _ops(lake)
        base, base_location = ops.refresh()
        batch = drain(ops, queue, base=base, head=base)
        assert claims == [2, 1, 0]  # looked again until the queue was empty
        assert len(batch.claims) == 3
        new_location = _swap_in(ops, base, base_location, batch)
        batch.landed(new_location)
    results = {**appenders.join(), **late.join()}
    table = lake.load_table("db.t")
    assert table.metadata_location == new_location  # all three in the one version
    assert {r.snapshot_id for r in results.values()} == {s.snapshot_id for s in table.snapshots()}
    assert _writers_in(table) == [1, 2, 3]


def test_queued_writers_return_as_soon_as_their_holder_landed_them(
    lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """They do not wait for the lock: the holder rings each with its new location."""
    monkeypatch.setattr(commit_lock, "SAFETY_POLL_S", 3600.0)  # woken by rings alone
    lake.load_table("db.t").set_properties({"commit.lock.acquire-timeout-ms": "600000"})
    with _hold_lock(lake):
        appenders = _queue_behind_the_lock(lake, range(1, 3))
        ops = _ops(lake)
        base, base_location = ops.refresh()
        batch = drain(ops, _queue(lake), base=base, head=base)
        new_location = _swap_in(ops, base, base_location, batch)
        batch.landed(new_location)
        results = appenders.join()  # the lock is still held
        assert sorted(results) == [1, 2]
    assert all(r.metadata_location == new_location for r in results.values())
    assert {r.snapshot_id for r in results.values()} == {
        s.snapshot_id for s in lake.load_table("db.t").snapshots()
    }
    assert _queued(_queue(lake)) == []


def test_a_claimed_writer_waits_past_the_lock_timeout_for_its_holder(lake: Catalog) -> None:
    """Without the lock after its timeout, a writer whose request a holder has taken must not
    commit it too: it waits for that holder to finish, then takes its word."""
    lake.load_table("db.t").set_properties({"commit.lock.acquire-timeout-ms": "200"})
    with _hold_lock(lake):
        appenders = _queue_behind_the_lock(lake, range(1, 3))
        ops = _ops(lake)
        base, base_location = ops.refresh()
        batch = drain(ops, _queue(lake), base=base, head=base)
        time.sleep(1.0)  # both writers' lock waits time out while their requests are claimed
        new_location = _swap_in(ops, base, base_location, batch)
        batch.landed(new_location)
    results = appenders.join()
    table = lake.load_table("db.t")
    assert table.metadata_location == new_location
    assert {r.snapshot_id for r in results.values()} == {s.snapshot_id for s in table.snapshots()}
    assert all(r.metadata_location == new_location for r in results.values())


def test_a_queued_append_the_holder_cannot_commit_is_committed_by_its_writer(
    lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E.g. the holder fails to write the queued append's manifest list: its own commit goes
    ahead, and the queued writer commits on its own."""
    original = SnapshotProducer.produce

    def produce(self: SnapshotProducer, *args: Any, **kwargs: Any) -> Any:
        if self.prepared is not None:
            raise StorageError("injected: cannot write the manifest list")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SnapshotProducer, "produce", produce)
    with _hold_lock(lake):
        appenders = _queue_behind_the_lock(lake, range(1, 3))
    appenders.join()
    table = lake.load_table("db.t")
    assert _writers_in(table) == [1, 2]
    assert len(table.snapshots()) == 2
    assert _queued(_queue(lake)) == []


def test_the_queued_append_of_a_writer_that_died_is_dropped(lake: Catalog, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys, pyarrow as pa\n"
        "from lakecat.catalog import Catalog\n"
        "t = Catalog(sys.argv[1], warehouse=sys.argv[2]).load_table('db.t')\n"
        "t.append(pa.table({'writer': pa.array([9] * 10, pa.int64()),"
        " 'n': pa.array(range(10), pa.int64())}))\n"
    )
    queue = _queue(lake)
    with _hold_lock(lake):
        proc = subprocess.Popen([sys.executable, str(script), lake.uri, lake.warehouse])
        try:
            _wait_for(lambda: len(_requests(queue)) == 1, "the writer to queue", timeout_s=120)
        finally:
            proc.kill()
            proc.wait()
        assert _queued(queue) != []  # its request outlives it
    lake.load_table("db.t").append(_rows(1))  # a holder: drops the dead writer's request
    table = lake.load_table("db.t")
    assert _writers_in(table) == [1]
    assert len(table.snapshots()) == 1
    assert _queued(queue) == []


def test_a_writer_keeps_its_files_while_a_holder_has_its_request(lake: Catalog) -> None:
    table = lake.load_table("db.t")
    queue = _queue(lake)
    intent = Intent(OpKind.APPEND)
    producer = SnapshotProducer(table.io, intent)

    waiter = Waiter(queue, producer, table.metadata)
    waiter.waiting(new_stem())
    assert waiter.may_delete_files() is True  # withdrawn: nobody has it
    assert _queued(queue) == []

    waiter.waiting(new_stem())
    assert [c.payload for c in queue.claim(10)] != []
    assert waiter.may_delete_files() is False  # a holder may be committing its files
    assert waiter.settle() is TicketState.CLAIMED
    waiter.close()
    assert _queued(queue) == []


def test_a_request_the_holder_cannot_read_goes_back_to_its_writer(lake: Catalog) -> None:
    queue = _queue(lake)
    ticket = queue.enqueue(new_stem(), b'{"format": 99}')
    assert ticket is not None
    ops = _ops(lake)
    base, _ = ops.refresh()
    claims = _counting_claims(queue)
    batch = drain(ops, queue, base=base, head=base)
    assert batch.claims == [] and batch.metadata is base
    assert claims == [1]  # not claimed again by the same holder
    assert ticket.withdraw() is TicketState.WITHDRAWN  # it was given back, still queued
    ticket.close()


def test_a_request_prepared_for_a_dropped_table_of_the_same_name_goes_back_to_its_writer(
    lake: Catalog,
) -> None:
    """The queue is keyed by the table's name: a holder commits a request only to the table
    (UUID) it was prepared for."""
    queue = _queue(lake)
    ops = _ops(lake)
    base, _ = ops.refresh()
    stranger = PreparedAppend(
        snapshot_id=99,
        branch="main",
        manifests=(),
        change_summary=(),
        table_uuid="00000000-0000-0000-0000-000000000000",
    )
    ticket = queue.enqueue(new_stem(), encode(stranger))
    assert ticket is not None
    batch = drain(ops, queue, base=base, head=base)
    assert batch.claims == [] and batch.metadata is base
    assert ticket.withdraw() is TicketState.WITHDRAWN  # given back, not committed here
    ticket.close()


def test_a_request_round_trips_through_its_wire_form() -> None:
    manifest = ManifestFile(
        manifest_path="file:///w/m1.avro",
        manifest_length=1234,
        partition_spec_id=1,
        content=ManifestContent.DATA,
        sequence_number=-1,
        min_sequence_number=-1,
        added_snapshot_id=7,
        added_files_count=2,
        existing_files_count=0,
        deleted_files_count=0,
        added_rows_count=20,
        existing_rows_count=0,
        deleted_rows_count=0,
        partitions=(
            PartitionFieldSummary(True, None, b"\x00\x01", b"\xff"),
            PartitionFieldSummary(False, False, None, None),
        ),
        key_metadata=b"k",
    )
    prepared = PreparedAppend(
        snapshot_id=7,
        branch="audit",
        manifests=(manifest,),
        change_summary=(("added-data-files", "2"), ("added-records", "20")),
        extra_summary=(("job", "nightly"),),
        table_uuid="5e4bd5b2-3a33-4d51-9f6a-0f6c1f2a3b4c",
    )
    assert decode(encode(prepared)) == prepared
    with pytest.raises(ValueError):
        decode(b"not json")
    with pytest.raises(ValueError):
        decode(encode(prepared).replace(b'"content": 0', b'"content": 9'))


def test_a_holder_tidies_settled_requests_of_writers_that_died(lake: Catalog) -> None:
    queue = _queue(lake)
    os.makedirs(queue.folder, exist_ok=True)
    old = time.time_ns() - 120 * 1_000_000_000
    dead = os.path.join(queue.folder, f"{old:020d}-1.done")
    alive = os.path.join(queue.folder, f"{old:020d}-2.claimed")
    recent = os.path.join(queue.folder, f"{time.time_ns():020d}-3.done")
    for path in (dead, alive, recent):
        Path(path).write_bytes(b"{}")
    fd = os.open(alive, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # its writer is still settling it
        assert queue.claim(10) == []
        assert _queued(queue) == sorted(os.path.basename(p) for p in (alive, recent))
    finally:
        os.close(fd)


def test_a_ticket_whose_closing_was_interrupted_keeps_its_writers_files(
    lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a ticket closes (after it let go of its file): asked again, the ticket
    must not fail on a broken invariant; it reads as claimed, so nothing is deleted."""
    from lakecat.catalog.commit.coordination import queue as commit_queue

    ticket = _queue(lake).enqueue(new_stem(), b"{}")
    assert ticket is not None

    def interrupted(folder: str, stem: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(commit_queue, "_remove_request", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ticket.close()
    assert ticket.withdraw() is TicketState.CLAIMED


def test_a_ctrl_c_as_a_request_is_queued_leaves_the_writer_holding_its_ticket(
    lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT right after the request became visible in the queue, before the writer held its
    ticket: the interrupt waits for the ticket to be held, so that once a holder claims the
    request the writer knows not to delete the files the holder is committing (the table
    lost a manifest that way under the Ctrl-C stress test)."""
    table = lake.load_table("db.t")
    queue = _queue(lake)
    waiter = Waiter(queue, SnapshotProducer(table.io, Intent(OpKind.APPEND)), table.metadata)
    enqueue = queue.enqueue

    def enqueue_then_ctrl_c(stem: str, payload: bytes) -> Any:
        ticket = enqueue(stem, payload)
        signal.raise_signal(signal.SIGINT)  # the request is in the queue now
        return ticket

    monkeypatch.setattr(queue, "enqueue", enqueue_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        waiter.waiting(new_stem())
    assert waiter.ticket is not None
    assert [c.payload for c in queue.claim(10)] != []
    assert waiter.may_delete_files() is False
    waiter.close()
