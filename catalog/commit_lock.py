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
from collections.abc import Callable, Iterator
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.engine import Engine

from lakecat.catalog.commit_queue import FileCommitQueue

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


OnWait = Callable[[], None]


class CommitLock(Protocol):
    def hold(
        self, key: str, timeout_s: float, *, on_wait: OnWait | None = None
    ) -> contextlib.AbstractContextManager[Hold | None]:
        """Hold the lock for ``key`` while the block runs; the value is the :class:`Hold`, or
        ``None`` when not held (after ``timeout_s``: the block runs anyway, unlocked).

        ``on_wait`` runs once, before waiting, if the lock is busy (a waiter queues its commit
        for the holder there: :mod:`lakecat.catalog.group_commit`)."""
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

    A waiter blocks in ``flock`` itself, in a helper thread, so the kernel hands the lock on
    the moment it is released (no polling delay, no CPU spent waiting, no advantage to the
    newest waiter). The caller waits for that thread at most ``timeout_s``; a thread that
    gets the lock after its caller gave up releases it at once.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def _stem(self, key: str) -> str:
        return os.path.join(self.folder, f"{lock_id(key) & (2**64 - 1):016x}")

    def queue(self, key: str) -> FileCommitQueue:
        return FileCommitQueue(self._stem(key) + ".queue")

    @contextlib.contextmanager
    def hold(
        self, key: str, timeout_s: float, *, on_wait: OnWait | None = None
    ) -> Iterator[Hold | None]:
        path = self._stem(key) + ".lock"
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
            os.close(fd)
            if on_wait is not None:
                on_wait()
            locked = _FlockWaiter(path).wait(timeout_s)
        except OSError as exc:
            os.close(fd)
            log.debug("commit lock unavailable (%s); committing without it", exc)
            locked = None
        if locked is None:
            log.debug("commit lock %s not held (timeout %.1f s)", key, timeout_s)
        try:
            yield None if locked is None else _FileHold(locked)
        finally:
            if locked is not None:
                os.close(locked)  # releases the flock


class _FlockWaiter:
    """A daemon thread blocked in ``flock`` on its own open file, handed to the caller."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._guard = threading.Lock()
        self._done = threading.Event()
        self._fd: int | None = None
        self._abandoned = False

    def wait(self, timeout_s: float) -> int | None:
        """The locked file descriptor (the caller closes it), or None after ``timeout_s``."""
        threading.Thread(target=self._block, name="lakecat-commit-lock", daemon=True).start()
        self._done.wait(timeout_s)
        with self._guard:
            if self._fd is None:
                self._abandoned = True
            return self._fd

    def _block(self) -> None:
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            self._done.set()
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            self._done.set()
            return
        with self._guard:
            if self._abandoned:
                os.close(fd)  # the caller went on without it: release at once
            else:
                self._fd = fd
        self._done.set()


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
        self, key: str, timeout_s: float, *, on_wait: OnWait | None = None
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
        self, key: str, timeout_s: float, *, on_wait: OnWait | None = None
    ) -> Iterator[Hold | None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        held = lock.acquire(timeout=timeout_s)
        try:
            yield Hold() if held else None
        finally:
            if held:
                lock.release()
