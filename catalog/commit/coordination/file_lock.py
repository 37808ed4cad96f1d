"""The file commit lock of a SQLite catalog: ``flock`` on a file in a folder beside the
database, a hint of the current metadata location in the lock file itself, and waiting on a
doorbell (:mod:`lakecat.catalog.commit.coordination.doorbell`) instead of blocking. POSIX only:
:func:`lakecat.catalog.commit.coordination.lock.commit_lock_for` imports it where it can."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import random
import time
from collections.abc import Iterator

from lakecat.catalog.commit.coordination import switches
from lakecat.catalog.commit.coordination.doorbell import SAFETY_POLL_S, hang
from lakecat.catalog.commit.coordination.lock import Hold, WaitHooks, fault, lock_id
from lakecat.catalog.commit.coordination.protocol import RELEASED, new_stem
from lakecat.catalog.commit.coordination.queue import FileCommitQueue

log = logging.getLogger("lakecat.commit")


class _FileHold(Hold):
    """The hint lives in the lock file itself, read and written only by its holder:
    ``<HINT_TAG> <table uuid> <location>``. Anything else (an older lakecat's bare location,
    a cleared file) is no hint."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def hint(self, table_uuid: str) -> str | None:
        try:
            data = os.pread(self._fd, _MAX_HINT_BYTES + 1, 0)
        except OSError:
            return None
        return _parse_hint(data, table_uuid)

    def publish(self, location: str, table_uuid: str) -> None:
        data = f"{_HINT_TAG} {table_uuid} {location}".encode()
        if len(data) > _MAX_HINT_BYTES:
            return
        try:
            os.pwrite(self._fd, data, 0)
            os.ftruncate(self._fd, len(data))
        except OSError as exc:  # only a hint: the next holder asks the catalog instead
            log.debug("could not record the commit hint: %s", exc)

    def clear(self) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)


_MAX_HINT_BYTES = 8192
_HINT_TAG = "lakecat-hint-v2"


def _parse_hint(data: bytes, table_uuid: str) -> str | None:
    if not data or len(data) > _MAX_HINT_BYTES:
        return None
    try:
        tag, uuid, location = data.decode().split(" ", 2)
    except (UnicodeDecodeError, ValueError):
        return None
    if tag != _HINT_TAG or uuid != table_uuid or not location:
        return None
    return location


class FileLock:
    """``flock`` on ``<folder>/<hash of key>.lock``: exclusive between processes and between
    threads (each hold opens the file anew, and flock locks belong to the open file).

    A waiter tries the lock without blocking and, between tries, sleeps on its doorbell in the
    table's queue folder (:mod:`lakecat.catalog.commit.coordination.doorbell`); a holder that lets
    go rings the oldest waiter. So the lock passes on within a wake-up, no CPU is spent waiting, and
    a wait can be given up at any moment (a queued append its holder committed stops waiting at
    once) without leaving anything behind that could take the lock later. Without doorbells
    (switched off, :mod:`lakecat.catalog.commit.coordination.switches`, or no FIFOs on the file
    system) a waiter tries the lock after a growing pause instead.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def _stem(self, key: str) -> str:
        return os.path.join(self.folder, f"{lock_id(key) & (2**64 - 1):016x}")

    def queue(self, key: str) -> FileCommitQueue:
        return FileCommitQueue(self._stem(key) + ".queue")

    @contextlib.contextmanager
    def hold(
        self,
        key: str,
        timeout_s: float,
        *,
        hooks: WaitHooks | None = None,
        faults: list[str] | None = None,
    ) -> Iterator[Hold | None]:
        path = self._stem(key) + ".lock"
        queue = self.queue(key)
        try:
            os.makedirs(self.folder, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            fault(faults, f"cannot open {path} ({exc})")
            yield None
            return
        # One try owns the descriptor from here on: whatever happens (an interrupt included,
        # at any point of the wait), closing it releases the flock, so no lock is left held by
        # a process that goes on living.
        held = False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
            except BlockingIOError:
                held = self._wait(key, queue, fd, timeout_s, hooks, faults)
            except OSError as exc:
                fault(faults, f"cannot lock {path} ({exc})")
            yield _FileHold(fd) if held else None
        finally:
            os.close(fd)  # releases the flock
            if held and switches.doorbells():
                try:
                    queue.wake_next()
                except OSError as exc:  # the next waiter wakes on its own safety poll
                    fault(faults, f"cannot wake the next waiter ({exc})")

    def forget(self, key: str) -> None:
        path = self._stem(key) + ".lock"
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return  # no lock file: nothing remembered
        try:
            deadline = time.monotonic() + _FORGET_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        # a holder is committing: the table UUID in the hint still guards it
                        log.debug("commit lock %s busy; its hint is left to the UUID check", key)
                        return
                    time.sleep(_POLL_WITHOUT_BELL_S)
                except OSError:
                    return
            _FileHold(fd).clear()
        finally:
            os.close(fd)

    def _wait(
        self,
        key: str,
        queue: FileCommitQueue,
        fd: int,
        timeout_s: float,
        hooks: WaitHooks | None,
        faults: list[str] | None,
    ) -> bool:
        """True once ``fd`` is locked; False after ``timeout_s`` or when ``hooks`` stop (the
        caller closes ``fd`` either way)."""
        stem = new_stem()
        bell = hang(queue.folder, stem) if switches.doorbells() else None
        deadline = time.monotonic() + timeout_s
        pause = _POLL_MIN_S
        rings: list[bytes] = []
        unused: list[bytes] = []  # rings heard and not acted on
        held = False
        try:
            if hooks is not None:
                hooks.waiting(stem)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held = True
                    return held
                except BlockingIOError:
                    pass
                except OSError as exc:
                    fault(faults, f"cannot lock {key} ({exc})")
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    log.debug("commit lock %s not held (timeout %.1f s)", key, timeout_s)
                    break
                if bell is not None:
                    rings = bell.wait(min(left, SAFETY_POLL_S))
                else:  # no doorbell: try again after a growing, jittered pause
                    time.sleep(min(left, random.uniform(pause / 2, pause)))
                    pause = min(pause * 2, _POLL_MAX_S)
                if hooks is not None and hooks.stop_waiting(rings):
                    unused = rings
                    break
            return False
        finally:
            if bell is not None:
                unused += bell.take_down()
            if not held and RELEASED in unused:  # we were the one rung: pass it on
                try:
                    queue.wake_next()
                except OSError as exc:
                    fault(faults, f"cannot wake the next waiter ({exc})")


_POLL_WITHOUT_BELL_S = 0.002  # forget(): a short wait for a busy lock
_POLL_MIN_S = 0.001  # a waiter without a doorbell: first pause between tries
_POLL_MAX_S = 0.016  # ... doubling up to this
_FORGET_WAIT_S = 1.0
