"""An advisory per-table commit lock: fewer lost races, never a say in correctness.

Under contention, optimistic commits waste work: every writer that loses the compare-and-swap
refreshes, rebuilds its manifest list and metadata file, sleeps and tries again, and on a
busy machine the losers' repeated work slows the winners too. Iceberg's Glue and DynamoDB
catalogs pair their commit with a lock (``LockManager``) for the same reason, and Hudi holds
one "only for the instant of the commit".

lakecat's writers take this lock around one commit *attempt*: refresh the base if the
pointer moved, validate, write the manifest list and metadata file, swap. Data files and
their manifests are written before, outside the lock, so it is held for milliseconds. The
contract:

* The lock is **advisory**. The catalog's compare-and-swap remains the only thing that decides
  whether a commit lands; a writer that does not take the lock (pyiceberg, Spark's Iceberg
  runtime, a lakecat writer whose wait timed out) is still safe, it may just win or lose a race.
* Waiting is bounded by ``commit.lock.acquire-timeout-ms`` (table property, default 5,000 ms).
  A writer that cannot get the lock in time commits without it; the lock can slow a commit
  down but never make it fail.
* A crashed holder releases it: a file lock dies with its process, a PostgreSQL session
  advisory lock with its connection.
* ``commit.lock.enabled=false`` turns it off for a table.
* A held lock may carry a **hint**: the metadata location its previous holder committed
  (:class:`Hold`). The file lock keeps it in the lock file, so the next holder finds the
  current pointer without a catalog query. A hint is only ever a guess: a writer that
  committed without the lock leaves it stale, the swap built on it then fails, and the writer
  retries from the catalog's pointer (``lakecat.catalog.commit`` trusts a hint on an
  attempt's first try only).

Implementations: a ``flock`` on a file beside a SQLite catalog (the writers of an embedded
catalog share its machine), ``pg_advisory_lock`` on PostgreSQL (shared by every machine using
the catalog), a process-local lock for an in-memory SQLite catalog.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.engine import Engine

from lakecat.catalog.commit_queue import FileCommitQueue
from lakecat.catalog.doorbell import RELEASED, SAFETY_POLL_S, hang
from lakecat.catalog.idle_files import new_stem

log = logging.getLogger("lakecat.commit")


class Hold:
    """A held commit lock. This one carries no hint (PostgreSQL's advisory lock, the
    process-local lock)."""

    def hint(self) -> str | None:
        """The metadata location the previous holder committed, if known (a guess: see the
        module docstring)."""
        return None

    def publish(self, location: str) -> None:
        """Record ``location``, just committed by this holder, as the next holder's hint."""


class _FileHold(Hold):
    """The hint lives in the lock file itself, read and written only by its holder."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def hint(self) -> str | None:
        try:
            data = os.pread(self._fd, _MAX_HINT_BYTES + 1, 0)
        except OSError:
            return None
        if not data or len(data) > _MAX_HINT_BYTES:
            return None
        try:
            return data.decode()
        except UnicodeDecodeError:
            return None

    def publish(self, location: str) -> None:
        data = location.encode()
        if len(data) > _MAX_HINT_BYTES:
            return
        try:
            os.pwrite(self._fd, data, 0)
            os.ftruncate(self._fd, len(data))
        except OSError as exc:  # only a hint: the next holder asks the catalog instead
            log.debug("could not record the commit hint: %s", exc)


_MAX_HINT_BYTES = 8192


class WaitHooks(Protocol):
    """What a waiter does while the lock is busy (a queued append:
    :class:`lakecat.catalog.group_commit.Waiter`)."""

    def waiting(self, stem: str) -> None:
        """Runs once, before waiting, with this waiter's name (a request queued for the holder
        takes it: :mod:`lakecat.catalog.commit_queue`)."""

    def stop_waiting(self, rings: Sequence[bytes]) -> bool:
        """Runs each time the waiter wakes without the lock, with the rings it heard
        (:mod:`lakecat.catalog.doorbell`); True to stop waiting, unlocked."""
        ...


class CommitLock(Protocol):
    def hold(
        self, key: str, timeout_s: float, *, hooks: WaitHooks | None = None
    ) -> contextlib.AbstractContextManager[Hold | None]:
        """Hold the lock for ``key`` while the block runs; the value is the :class:`Hold`, or
        ``None`` when not held (after ``timeout_s``, or when ``hooks`` stopped the wait: the
        block runs anyway, unlocked).

        ``hooks`` are called if the lock is busy, by the locks that have a queue."""
        ...

    def queue(self, key: str) -> FileCommitQueue | None:
        """The group-commit queue of ``key`` (:mod:`lakecat.catalog.commit_queue`), if this
        kind of lock has one."""
        ...


def commit_lock_for(engine: Engine) -> CommitLock:
    """The commit lock that fits a catalog database."""
    backend = engine.url.get_backend_name()
    if backend == "postgresql":
        return PostgresAdvisoryLock(engine)
    database = engine.url.database
    if (
        backend == "sqlite"
        and database
        and database != ":memory:"
        and "mode=memory" not in str(engine.url)
    ):
        return FileLock(f"{os.path.abspath(database)}.locks")
    return ProcessLock()


def lock_id(key: str) -> int:
    """A signed 64-bit number for ``key`` (PostgreSQL advisory lock ids are bigint)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)


class FileLock:
    """``flock`` on ``<folder>/<hash of key>.lock``: exclusive between processes and between
    threads (each hold opens the file anew, and flock locks belong to the open file).

    A waiter tries the lock without blocking and, between tries, sleeps on its doorbell in the
    table's queue folder (:mod:`lakecat.catalog.doorbell`); a holder that lets go rings the
    oldest waiter. So the lock passes on within a wake-up, no CPU is spent waiting, and a wait
    can be given up at any moment (a queued append its holder committed stops waiting at
    once) without leaving anything behind that could take the lock later.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def _stem(self, key: str) -> str:
        return os.path.join(self.folder, f"{lock_id(key) & (2**64 - 1):016x}")

    def queue(self, key: str) -> FileCommitQueue:
        return FileCommitQueue(self._stem(key) + ".queue")

    @contextlib.contextmanager
    def hold(
        self, key: str, timeout_s: float, *, hooks: WaitHooks | None = None
    ) -> Iterator[Hold | None]:
        path = self._stem(key) + ".lock"
        queue = self.queue(key)
        try:
            os.makedirs(self.folder, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            log.debug("commit lock unavailable (%s); committing without it", exc)
            yield None
            return
        locked: int | None = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            locked = self._wait(key, queue, fd, timeout_s, hooks)
        except OSError as exc:
            os.close(fd)
            log.debug("commit lock unavailable (%s); committing without it", exc)
            locked = None
        try:
            yield None if locked is None else _FileHold(locked)
        finally:
            if locked is not None:
                os.close(locked)  # releases the flock
                queue.wake_next()

    def _wait(
        self,
        key: str,
        queue: FileCommitQueue,
        fd: int,
        timeout_s: float,
        hooks: WaitHooks | None,
    ) -> int | None:
        """``fd`` once locked, or None (closed) after ``timeout_s`` or when ``hooks`` stop."""
        stem = new_stem()
        bell = hang(queue.folder, stem)
        deadline = time.monotonic() + timeout_s
        rings: list[bytes] = []
        unused: list[bytes] = []  # rings heard and not acted on
        locked: int | None = None
        try:
            if hooks is not None:
                hooks.waiting(stem)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = fd
                    return locked
                except BlockingIOError:
                    pass
                except OSError as exc:
                    log.debug("commit lock unavailable (%s); committing without it", exc)
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    log.debug("commit lock %s not held (timeout %.1f s)", key, timeout_s)
                    break
                if bell is not None:
                    rings = bell.wait(min(left, SAFETY_POLL_S))
                else:
                    time.sleep(min(left, _POLL_WITHOUT_BELL_S))
                if hooks is not None and hooks.stop_waiting(rings):
                    unused = rings
                    break
            return None
        finally:
            if locked is None:
                os.close(fd)
            if bell is not None:
                unused += bell.take_down()
            if locked is None and RELEASED in unused:  # we were the one rung: pass it on
                queue.wake_next()


_POLL_WITHOUT_BELL_S = 0.002


class PostgresAdvisoryLock:
    """A session-level ``pg_advisory_lock`` on a connection of the catalog's pool, held for
    the block and released after it (or by PostgreSQL when the connection dies). Waiting is
    PostgreSQL's own queue, bounded by ``lock_timeout`` for that one statement."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def queue(self, key: str) -> None:
        return None  # machines share this lock but not a folder: no group commit

    @contextlib.contextmanager
    def hold(
        self, key: str, timeout_s: float, *, hooks: WaitHooks | None = None
    ) -> Iterator[Hold | None]:
        ident = lock_id(f"lakecat-commit:{key}")
        try:
            connection = self.engine.connect()
        except Exception as exc:  # the swap will report an unreachable catalog itself
            log.debug("commit lock unavailable (%s); committing without it", exc)
            yield None
            return
        held = False
        try:
            try:
                # SET LOCAL ends with the transaction; the session-level lock outlives it.
                timeout_ms = max(1, int(timeout_s * 1000))
                connection.execute(text(f"SET LOCAL lock_timeout = {timeout_ms}"))
                connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": ident})
                connection.commit()
                held = True
            except Exception as exc:
                with contextlib.suppress(Exception):
                    connection.rollback()
                log.debug("commit lock %s not held (%s); committing without it", key, exc)
            yield Hold() if held else None
        finally:
            if held:
                try:
                    connection.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": ident})
                    connection.commit()
                except Exception:
                    # never return a connection that may still hold the lock to the pool:
                    # closing the session releases it
                    with contextlib.suppress(Exception):
                        connection.invalidate()
            with contextlib.suppress(Exception):
                connection.close()


class ProcessLock:
    """Locks shared by the threads of this process (an in-memory catalog has no others)."""

    _guard = threading.Lock()
    _locks: dict[str, threading.Lock] = {}

    def queue(self, key: str) -> None:
        return None

    @contextlib.contextmanager
    def hold(
        self, key: str, timeout_s: float, *, hooks: WaitHooks | None = None
    ) -> Iterator[Hold | None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        held = lock.acquire(timeout=timeout_s)
        try:
            yield Hold() if held else None
        finally:
            if held:
                lock.release()
