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
  (:class:`Hold`), with the table's UUID. The file lock keeps it in the lock file, so the next
  holder finds the current pointer without a catalog query. A hint is only ever a guess: a
  writer that committed without the lock leaves it stale, the swap built on it then fails, and
  the writer retries from the catalog's pointer (``lakecat.catalog.commit.pipeline`` trusts a hint
  on an attempt's first try only). The lock is keyed by the table's name, which a dropped table
  hands on to the next table of that name: a hint is only given to a writer of the table (the
  UUID) that published it, and dropping or renaming a table clears it (:meth:`CommitLock.forget`).
* A lock that fails (a lock file that cannot be made, a PostgreSQL session that errs) never
  fails the commit, which goes on without it; but it is not silent either: each fault is logged
  as a warning and appended to the caller's ``faults`` list, which the commit result reports.

Implementations: a ``flock`` on a file in a folder beside a SQLite catalog's database file
(:func:`sqlite_database_file` finds that file the way SQLite does, so a path and a ``file:``
URI of one database share one lock; the writers of an embedded catalog share its machine),
``pg_advisory_lock`` on PostgreSQL (shared by every machine using the catalog), a
process-local lock for an in-memory SQLite catalog.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from sqlalchemy import text
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from lakecat.catalog.interrupts import deferred_interrupts
from lakecat.catalog.store.db import describe_error, is_lock_timeout

if TYPE_CHECKING:
    from lakecat.catalog.commit.coordination.queue import FileCommitQueue

log = logging.getLogger("lakecat.commit")


class Hold:
    """A held commit lock. This one carries no hint (PostgreSQL's advisory lock, the
    process-local lock)."""

    def hint(self, table_uuid: str) -> str | None:
        """The metadata location the previous holder committed for the table ``table_uuid``,
        if known (a guess: see the module docstring)."""
        return None

    def publish(self, location: str, table_uuid: str) -> None:
        """Record ``location``, just committed by this holder to the table ``table_uuid``, as
        the next holder's hint."""


def fault(faults: list[str] | None, message: str) -> None:
    """A lock that stopped working: said as a warning, and counted by the caller."""
    log.warning("commit lock: %s; committing without it", message)
    if faults is not None:
        faults.append(f"commit lock: {message}")


class WaitHooks(Protocol):
    """What a waiter does while the lock is busy (a queued append:
    :class:`lakecat.catalog.commit.coordination.group.Waiter`)."""

    def waiting(self, stem: str) -> None:
        """Runs once, before waiting, with this waiter's name (a request queued for the holder
        takes it: :mod:`lakecat.catalog.commit.coordination.queue`)."""

    def stop_waiting(self, rings: Sequence[bytes]) -> bool:
        """Runs each time the waiter wakes without the lock, with the rings it heard
        (:mod:`lakecat.catalog.commit.coordination.doorbell`); True to stop waiting, unlocked."""
        ...


class CommitLock(Protocol):
    def hold(
        self,
        key: str,
        timeout_s: float,
        *,
        hooks: WaitHooks | None = None,
        faults: list[str] | None = None,
    ) -> contextlib.AbstractContextManager[Hold | None]:
        """Hold the lock for ``key`` while the block runs; the value is the :class:`Hold`, or
        ``None`` when not held (after ``timeout_s``, when ``hooks`` stopped the wait, or when
        the lock failed: the block runs anyway, unlocked). Neither entering nor leaving the
        block raises for the lock's own failures: each is logged as a warning and appended to
        ``faults``.

        ``hooks`` are called if the lock is busy, by the locks that have a queue."""
        ...

    def forget(self, key: str) -> None:
        """Clear what the lock of ``key`` remembers (its hint): the table of that name was
        dropped or renamed. Best effort, bounded wait, never raises."""
        ...

    def queue(self, key: str) -> FileCommitQueue | None:
        """The group-commit queue of ``key`` (:mod:`lakecat.catalog.commit.coordination.queue`), if
        this kind of lock has one."""
        ...


def commit_lock_for(engine: Engine) -> CommitLock:
    """The commit lock that fits a catalog database."""
    backend = engine.url.get_backend_name()
    if backend == "postgresql":
        return PostgresAdvisoryLock(engine)
    if backend == "sqlite":
        database = sqlite_database_file(engine.url)
        if database is not None:
            try:  # POSIX only (flock, FIFOs): imported where it can be
                from lakecat.catalog.commit.coordination.file_lock import FileLock
            except ImportError as exc:
                log.info("no local commit lock on this platform (%s): commits go without it", exc)
                return ProcessLock()
            return FileLock(f"{database}.locks")
    return ProcessLock()


def sqlite_database_file(url: URL) -> str | None:
    """The database file a SQLite URL opens, as one canonical absolute path (symbolic links
    resolved), or None for an in-memory database.

    Read as SQLite reads it: with ``uri=true`` the database is a ``file:`` URI (``file:/p``,
    ``file:///p``, ``file://localhost/p``, percent-escapes, a ``mode`` parameter); without it,
    a plain path, even one that starts with ``file:``. A relative path is relative to the
    working directory, as for SQLite itself."""
    database = url.database
    if not database or database == ":memory:":
        return None
    query = {k: v if isinstance(v, str) else v[-1] for k, v in url.query.items()}
    if _truthy(query.get("uri")) and database.startswith("file:"):
        parts = urlsplit(database)
        if parts.netloc not in ("", "localhost"):
            return None  # SQLite refuses other hosts: no file to lock
        modes = parse_qs(parts.query).get("mode", [])
        if query.get("mode") == "memory" or "memory" in modes:
            return None
        database = unquote(parts.path)
        if not database or database == ":memory:":
            return None
    return os.path.realpath(database)


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes", "on")


def lock_id(key: str) -> int:
    """A signed 64-bit number for ``key`` (PostgreSQL advisory lock ids are bigint)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)


class PostgresAdvisoryLock:
    """A session-level ``pg_advisory_lock`` on a connection of the catalog's pool, held for
    the block and released after it (or by PostgreSQL when the connection dies). Waiting is
    PostgreSQL's own queue, bounded by ``lock_timeout`` for that one statement.

    A wait that times out is the lock doing its job (the block runs unlocked); anything else
    that goes wrong (no connection, an error from the server, a failed unlock) is a fault:
    a warning, and an entry in the caller's ``faults``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def queue(self, key: str) -> None:
        return None  # machines share this lock but not a folder: no group commit

    def forget(self, key: str) -> None:
        return None  # no hint is kept

    @contextlib.contextmanager
    def hold(
        self,
        key: str,
        timeout_s: float,
        *,
        hooks: WaitHooks | None = None,
        faults: list[str] | None = None,
    ) -> Iterator[Hold | None]:
        ident = lock_id(f"lakecat-commit:{key}")
        # Taking and releasing the lock are not cut by Ctrl-C (delivered right after them): an
        # interrupt inside the driver's COMMIT would leave the connection's transaction state
        # broken, and a connection returned to the pool with the lock still held.
        connection: Connection | None = None
        held = False
        try:
            with deferred_interrupts():
                connection, held = self._take(ident, key, timeout_s, faults)
        except BaseException:  # an interrupt delivered once the lock was taken
            if connection is not None:
                with deferred_interrupts():
                    self._release(connection, ident, key, held, faults)
            raise
        if connection is None:
            yield None
            return
        try:
            yield Hold() if held else None
        finally:
            with deferred_interrupts():
                self._release(connection, ident, key, held, faults)

    def _take(
        self, ident: int, key: str, timeout_s: float, faults: list[str] | None
    ) -> tuple[Connection | None, bool]:
        """A connection of the pool (None: none to be had) and whether it took the lock."""
        try:
            connection = self.engine.connect()
        except SQLAlchemyError as exc:  # the swap will report an unreachable catalog itself
            fault(faults, f"no connection for {key} ({describe_error(exc)})")
            return None, False
        try:
            # SET LOCAL ends with the transaction; the session-level lock outlives it.
            timeout_ms = max(1, int(timeout_s * 1000))
            connection.execute(text(f"SET LOCAL lock_timeout = {timeout_ms}"))
            connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": ident})
            connection.commit()
            return connection, True
        except SQLAlchemyError as exc:
            with contextlib.suppress(SQLAlchemyError):
                connection.rollback()
            if is_lock_timeout(exc):
                log.debug("commit lock %s not held (timeout %.1f s)", key, timeout_s)
            else:
                fault(faults, f"cannot take {key} ({describe_error(exc)})")
            return connection, False

    @staticmethod
    def _release(
        connection: Connection, ident: int, key: str, held: bool, faults: list[str] | None
    ) -> None:
        if held:
            try:
                connection.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": ident})
                connection.commit()
            except SQLAlchemyError as exc:
                # never return a connection that may still hold the lock to the pool:
                # closing the session releases it
                fault(faults, f"cannot release {key}, closing its session ({describe_error(exc)})")
                with contextlib.suppress(SQLAlchemyError):
                    connection.invalidate()
        with contextlib.suppress(SQLAlchemyError):
            connection.close()


class ProcessLock:
    """Locks shared by the threads of this process (an in-memory catalog has no others)."""

    _guard = threading.Lock()
    _locks: dict[str, threading.Lock] = {}

    def queue(self, key: str) -> None:
        return None

    def forget(self, key: str) -> None:
        return None  # no hint is kept

    @contextlib.contextmanager
    def hold(
        self,
        key: str,
        timeout_s: float,
        *,
        hooks: WaitHooks | None = None,
        faults: list[str] | None = None,
    ) -> Iterator[Hold | None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        held = lock.acquire(timeout=timeout_s)
        try:
            yield Hold() if held else None
        finally:
            if held:
                lock.release()
