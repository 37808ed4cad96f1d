"""Waking writers that wait for the file commit lock: doorbells, who is rung when, and the
files of a wait (made for it, removed after it, tidied after a writer that died)."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from lakecat.catalog.commit.coordination import file_lock as commit_lock
from lakecat.catalog.commit.coordination import queue as commit_queue
from lakecat.catalog.commit.coordination import switches
from lakecat.catalog.commit.coordination.doorbell import DONE, RELEASED, hang, ring
from lakecat.catalog.commit.coordination.file_lock import FileLock
from lakecat.catalog.commit.coordination.protocol import new_stem
from lakecat.catalog.commit.coordination.queue import FileCommitQueue, TicketState


@pytest.fixture(autouse=True)
def _pieces_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are tests of the doorbells: on, whatever the environment says
    (``lakecat.catalog.commit.coordination.switches``)."""
    monkeypatch.delenv(switches.DOORBELLS_ENV, raising=False)


def _public(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if not n.startswith("."))


def test_a_ring_wakes_the_waiter_with_its_message(tmp_path: Path) -> None:
    stem = new_stem()
    bell = hang(str(tmp_path), stem)
    assert bell is not None
    assert _public(tmp_path) == [f"{stem}.bell"]
    assert bell.wait(0) == []
    heard: list[list[bytes]] = []
    waiter = threading.Thread(target=lambda: heard.append(bell.wait(60)))
    waiter.start()
    assert ring(str(tmp_path), stem, DONE + b"file:///w/db/t/metadata/00002-x.metadata.json")
    waiter.join(timeout=30)  # woken by the ring, not by its 60 s timeout
    assert not waiter.is_alive()
    assert heard == [[b"Dfile:///w/db/t/metadata/00002-x.metadata.json"]]
    assert bell.take_down() == []
    assert _public(tmp_path) == []


def test_nobody_answers_a_bell_that_is_not_hung(tmp_path: Path) -> None:
    assert ring(str(tmp_path), "nobody", RELEASED) is False
    os.mkfifo(tmp_path / "gone.bell")  # a FIFO nobody reads: its waiter is gone
    assert ring(str(tmp_path), "gone", RELEASED) is False
    (tmp_path / "file.bell").write_bytes(b"")  # not a FIFO at all
    assert ring(str(tmp_path), "file", RELEASED) is False
    assert (tmp_path / "file.bell").read_bytes() == b""


def test_a_bell_is_made_for_one_wait_and_removed_after_it(tmp_path: Path) -> None:
    first = hang(str(tmp_path), "a")
    assert first is not None
    assert stat.S_ISFIFO(os.stat(tmp_path / "a.bell").st_mode)
    assert ring(str(tmp_path), "a", RELEASED)
    assert first.take_down() == [RELEASED]  # heard after its last wait: the caller passes it on
    assert os.listdir(tmp_path) == []
    assert ring(str(tmp_path), "a", RELEASED) is False  # nobody waits there any more
    assert first.take_down() == []  # taking it down twice is harmless

    second = hang(str(tmp_path), "b")
    assert second is not None and second is not first
    assert second.wait(0) == []  # nothing of the first wait's rings
    second.take_down()
    assert os.listdir(tmp_path) == []


def test_a_messages_too_long_for_one_atomic_write_is_cut_to_its_kind(tmp_path: Path) -> None:
    bell = hang(str(tmp_path), "a")
    assert bell is not None
    assert ring(str(tmp_path), "a", DONE + b"x" * 10_000)
    assert ring(str(tmp_path), "a", DONE + b"with\nnewline")
    assert bell.wait(0) == [DONE, DONE]
    bell.take_down()


def test_the_releasing_holder_rings_the_oldest_waiter_still_needing_the_lock(
    tmp_path: Path,
) -> None:
    queue = FileCommitQueue(str(tmp_path))
    stems = [new_stem() for _ in range(3)]
    bells = [hang(queue.folder, stem) for stem in stems]
    assert all(bells)
    (tmp_path / f"{stems[0]}.done").write_bytes(b"")  # committed for: needs no lock
    os.mkfifo(tmp_path / f"{'0' * 20}-1-1.bell")  # older still, and its waiter is gone
    queue.wake_next()
    heard = [b.wait(0) for b in bells if b is not None]
    assert heard == [[], [RELEASED], []]
    assert f"{'0' * 20}-1-1.bell" not in os.listdir(tmp_path)  # removed on the way
    for b in bells:
        assert b is not None
        b.take_down()


def test_the_lock_passes_on_by_rings_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiters never poll on their own here: each one gets the lock because the one before it
    rang when it let go."""
    monkeypatch.setattr(commit_lock, "SAFETY_POLL_S", 3600.0)
    lock = FileLock(str(tmp_path / "locks"))
    order: list[int] = []

    def waiter(i: int) -> None:
        with lock.hold("k", 20) as held:
            assert held
            order.append(i)

    with lock.hold("k", 1) as held:
        assert held
        threads = [threading.Thread(target=waiter, args=(i,)) for i in range(3)]
        for i, t in enumerate(threads):
            t.start()
            _wait_for_bells(lock, i + 1)
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    assert sorted(order) == [0, 1, 2]


def test_a_waiter_that_stops_on_a_ring_passes_the_release_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_lock, "SAFETY_POLL_S", 3600.0)
    lock = FileLock(str(tmp_path / "locks"))

    class StopOnFirstRing:
        def waiting(self, stem: str) -> None:
            pass

        def stop_waiting(self, rings: object) -> bool:
            return bool(rings)

    outcomes: dict[str, bool] = {}

    def wait(name: str, hooks: StopOnFirstRing | None) -> None:
        with lock.hold("k", 20, hooks=hooks) as held:
            outcomes[name] = held is not None

    with lock.hold("k", 1):
        first = threading.Thread(target=wait, args=("stops", StopOnFirstRing()))
        first.start()
        _wait_for_bells(lock, 1)
        second = threading.Thread(target=wait, args=("waits", None))
        second.start()
        _wait_for_bells(lock, 2)
    for t in (first, second):
        t.join(timeout=60)
        assert not t.is_alive()
    assert outcomes == {"stops": False, "waits": True}


def test_without_doorbells_waiters_poll_for_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where FIFOs cannot be made, a waiter tries the lock every few milliseconds."""
    monkeypatch.setattr(commit_lock, "hang", lambda folder, stem: None)
    lock = FileLock(str(tmp_path / "locks"))
    got: list[bool] = []

    def waiter() -> None:
        with lock.hold("k", 30) as held:
            got.append(held is not None)

    with lock.hold("k", 1):
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.05)
        assert got == []
    thread.join(timeout=20)
    assert got == [True]
    assert not os.path.exists(lock.queue("k").folder) or _public(Path(lock.queue("k").folder)) == []


def _wait_for_bells(lock: FileLock, n: int) -> None:
    folder = lock.queue("k").folder
    deadline = time.monotonic() + 30
    while not (
        os.path.isdir(folder) and sum(name.endswith(".bell") for name in os.listdir(folder)) >= n
    ):
        assert time.monotonic() < deadline, "waiters did not hang their bells"
        time.sleep(0.005)


def test_a_request_file_is_removed_once_settled_in_every_state(tmp_path: Path) -> None:
    queue = FileCommitQueue(str(tmp_path))
    stem = new_stem()
    ticket = queue.enqueue(stem, b"one")
    assert ticket is not None
    assert _public(tmp_path) == [f"{stem}.req"]
    assert ticket.withdraw() is TicketState.WITHDRAWN
    assert queue.claim(10) == []  # withdrawn: nobody can claim it any more
    ticket.close()
    assert os.listdir(tmp_path) == []

    stem = new_stem()
    ticket = queue.enqueue(stem, b"two")
    assert ticket is not None
    [claim] = queue.claim(10)
    assert claim.payload == b"two"
    claim.done("file:///w/m.json")
    assert ticket.withdraw() is TicketState.DONE
    ticket.close()
    assert os.listdir(tmp_path) == []

    stem = new_stem()
    ticket = queue.enqueue(stem, b"three")
    assert ticket is not None
    [claim] = queue.claim(10)
    assert claim.payload == b"three"
    assert ticket.withdraw() is TicketState.CLAIMED  # its holder may still have it
    ticket.close()
    assert os.listdir(tmp_path) == []


def test_a_holder_removes_the_half_made_files_of_processes_that_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_queue, "_last_tmp_tidy", {})
    queue = FileCommitQueue(str(tmp_path))
    old = time.time_ns() - 120 * 1_000_000_000
    old_bell = tmp_path / f"{old:020d}-1-1.bell.tmp"
    old_request = tmp_path / f"{old:020d}-1-2.req.tmp"
    recent = tmp_path / f"{time.time_ns():020d}-1-3.req.tmp"
    os.mkfifo(old_bell)
    for path in (old_request, recent):
        path.write_bytes(b"")
    assert queue.claim(10) == []
    assert os.listdir(tmp_path) == [recent.name]  # a recent one may still be being made
    old_request.write_bytes(b"")
    assert queue.claim(10) == []  # at most once a minute
    assert sorted(os.listdir(tmp_path)) == sorted([old_request.name, recent.name])
