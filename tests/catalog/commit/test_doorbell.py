"""Waking writers that wait for the file commit lock: doorbells, who is rung when, and the
files a process reuses for its waits instead of creating new ones."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lakecat.catalog.commit.coordination import file_lock as commit_lock
from lakecat.catalog.commit.coordination import queue as commit_queue
from lakecat.catalog.commit.coordination.doorbell import DONE, RELEASED, hang, ring
from lakecat.catalog.commit.coordination.file_lock import FileLock
from lakecat.catalog.commit.coordination.idle_files import new_stem
from lakecat.catalog.commit.coordination.queue import FileCommitQueue, TicketState


def _public(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if not n.startswith("."))


def _idle(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.startswith(".idle-"))


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


def test_a_bell_is_reused_from_wait_to_wait_and_forgets_old_rings(tmp_path: Path) -> None:
    first = hang(str(tmp_path), "a")
    assert first is not None
    inode = os.stat(tmp_path / "a.bell").st_ino
    assert ring(str(tmp_path), "a", RELEASED)
    assert first.take_down() == [RELEASED]  # heard after its last wait: the caller passes it on
    assert _public(tmp_path) == []
    [idle] = _idle(tmp_path)
    assert stat.S_ISFIFO(os.stat(tmp_path / idle).st_mode)
    assert ring(str(tmp_path), "a", RELEASED) is False  # idle bells are not rung

    second = hang(str(tmp_path), "b")
    assert second is first
    assert os.stat(tmp_path / "b.bell").st_ino == inode  # no new file
    assert second.wait(0) == []
    second.take_down()


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


def test_a_request_file_is_reused_unless_a_holder_kept_it(tmp_path: Path) -> None:
    queue = FileCommitQueue(str(tmp_path))
    stem = new_stem()
    ticket = queue.enqueue(stem, b"one")
    assert ticket is not None
    inode = os.stat(tmp_path / f"{stem}.req").st_ino
    assert ticket.withdraw() is TicketState.WITHDRAWN
    ticket.close()
    assert _public(tmp_path) == []
    [idle] = _idle(tmp_path)  # kept, under its idle name

    stem = new_stem()
    ticket = queue.enqueue(stem, b"two")  # shorter payloads leave nothing of longer ones
    assert ticket is not None
    assert os.stat(tmp_path / f"{stem}.req").st_ino == inode
    [claim] = queue.claim(10)
    assert claim.payload == b"two"
    claim.done("file:///w/m.json")
    assert ticket.withdraw() is TicketState.DONE
    ticket.close()
    assert _public(tmp_path) == [] and _idle(tmp_path) == [idle]

    stem = new_stem()
    ticket = queue.enqueue(stem, b"three")
    assert ticket is not None
    assert os.stat(tmp_path / f"{stem}.req").st_ino == inode
    [claim] = queue.claim(10)
    assert claim.payload == b"three"
    assert ticket.withdraw() is TicketState.CLAIMED  # its holder may still have it
    ticket.close()
    assert _public(tmp_path) == [] and _idle(tmp_path) == []  # so it is not reused

    ticket = queue.enqueue(new_stem(), b"four")  # with a new file
    assert ticket is not None
    assert [c.payload for c in queue.claim(10)] == [b"four"]
    ticket.close()


def test_a_holder_removes_the_idle_files_of_processes_that_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_queue, "_last_idle_tidy", {})
    queue = FileCommitQueue(str(tmp_path))
    old = time.time_ns() - 120 * 1_000_000_000
    dead_bell = tmp_path / f".idle-{old:020d}-1-1.fifo"
    live_bell = tmp_path / f".idle-{old:020d}-1-2.fifo"
    dead_slot = tmp_path / f".idle-{old:020d}-1-3.slot"
    live_slot = tmp_path / f".idle-{old:020d}-1-4.slot"
    half_made = tmp_path / f".idle-{old:020d}-1-5.slot.tmp"
    recent = tmp_path / f".idle-{time.time_ns():020d}-1-6.slot"
    for fifo in (dead_bell, live_bell):
        os.mkfifo(fifo)
    for path in (dead_slot, live_slot, half_made, recent):
        path.write_bytes(b"")
    reader = os.open(live_bell, os.O_RDWR | os.O_NONBLOCK)
    holder = os.open(live_slot, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_SH)
        assert queue.claim(10) == []
        assert _idle(tmp_path) == sorted(p.name for p in (live_bell, live_slot, recent))
    finally:
        os.close(reader)
        os.close(holder)
    assert queue.claim(10) == []  # at most once a minute
    assert live_bell.name in _idle(tmp_path)


def test_a_forked_child_does_not_share_its_parents_bell(tmp_path: Path) -> None:
    bell = hang(str(tmp_path), "parent")
    assert bell is not None
    bell.take_down()  # idle in the parent's pool
    [idle] = _idle(tmp_path)
    script = (
        "import os, sys\n"
        "from lakecat.catalog.commit.coordination.doorbell import hang\n"
        f"folder = {str(tmp_path)!r}\n"
        "bell = hang(folder, 'parent-again')\n"
        "bell.take_down()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    child = hang(folder, 'child')\n"
        "    ok = child is not None and child is not bell\n"
        "    child.take_down()\n"
        "    sys.exit(0 if ok else 1)  # its exit removes its own bell, not its parent's\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    assert subprocess.run([sys.executable, "-c", script], timeout=60).returncode == 0
    assert _idle(tmp_path) == [idle]  # the other process removed its own at exit
