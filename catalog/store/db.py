"""The SQL catalog's database boundary: engine set-up and error classification.

Everything lakecat knows about SQLAlchemy and the database drivers' exceptions lives here, so
that :mod:`lakecat.catalog.store.store` speaks only in lakecat's own errors.

Engines
    * SQLite (the embedded default, ``sqlite:///path/catalog.db``): every new connection sets
      ``busy_timeout`` (so a writer waits for the lock instead of failing), ``journal_mode=WAL``
      (readers never block the writer) and ``synchronous=NORMAL`` (durable across process
      crashes; the last commits may be lost on power loss). Python's ``sqlite3`` module in its
      legacy transaction mode defers ``BEGIN`` to the first DML statement and never wraps
      SELECTs, so we switch that off and emit ``BEGIN`` ourselves, as SQLAlchemy's SQLite
      documentation recommends. Write transactions start with ``BEGIN IMMEDIATE``, taking the
      database's write lock before their first read: two writers can then never both read and
      then both write, and a writer never meets ``SQLITE_BUSY_SNAPSHOT`` halfway through.
    * PostgreSQL (``postgresql+psycopg://user@host:port/db``, psycopg 3): ``pool_pre_ping`` so
      that a connection the server closed while pooled is replaced before use.

Error classification (by exception type and driver error code, never by message text)
    * :func:`is_retryable`: the database refused the statement and rolled the transaction
      back, so running the transaction again is safe: SQLite ``SQLITE_BUSY``/``SQLITE_LOCKED``,
      PostgreSQL ``40001`` (serialization failure) and ``40P01`` (deadlock).
    * :func:`is_unique_violation`: an INSERT or UPDATE hit a primary key.
    * :func:`is_connection_lost`: the connection died under the statement, so the server may
      have acted on whatever had been sent.
    * :func:`unavailable_error`: the lakecat error for a database failure that is not
      retryable: :class:`CatalogUnavailable` when the database could not be reached (no
      connection, the server shutting down, out of connections: worth trying again later), a
      :class:`CatalogRefused` kind when it answered with a refusal that trying again would
      meet again (read-only, permission, a broken or missing catalog table).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError

from lakecat.metadata.errors import (
    CatalogPermissionDenied,
    CatalogReadOnly,
    CatalogRefused,
    CatalogUnavailable,
    ValidationError,
)

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_MS",
    "create_catalog_engine",
    "describe_error",
    "is_connection_lost",
    "is_lock_timeout",
    "is_retryable",
    "is_unique_violation",
    "parse_catalog_url",
    "unavailable_error",
    "write_engine",
]

logger = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_MS = 30_000

# Execution option read by the SQLite "begin" hook; set on the engine used for writes.
_BEGIN_IMMEDIATE_OPTION = "lakecat_sqlite_begin_immediate"

_SQLITE_RETRYABLE_PRIMARY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_SQLITE_UNIQUE_CODES = frozenset(
    {sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE}
)
_PG_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
_SQLITE_READ_ONLY_CODES = frozenset({sqlite3.SQLITE_READONLY})
_SQLITE_PERMISSION_CODES = frozenset({sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH})
# Primary codes for "the database file cannot be used now", not a refusal of the statement.
_SQLITE_UNREACHABLE_CODES = frozenset({sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL})
_PG_READ_ONLY_SQLSTATES = frozenset({"25006"})  # read_only_sql_transaction
_PG_PERMISSION_SQLSTATES = frozenset({"42501"})  # insufficient_privilege
# SQLSTATE classes of a server that cannot serve now: connection exception, insufficient
# resources (e.g. too many connections), operator intervention (shutting down).
_PG_UNREACHABLE_CLASSES = frozenset({"08", "53", "57"})
_PG_PERMISSION_CLASSES = frozenset({"28"})  # invalid authorization specification
_PG_UNIQUE_VIOLATION = "23505"
_PG_LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout ran out


def parse_catalog_url(url: str) -> URL:
    """A catalog database URL, parsed (no I/O); :class:`ValidationError` if it is malformed."""
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise ValidationError(f"invalid catalog database URL: {exc}") from exc


def create_catalog_engine(
    url: str,
    *,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    engine_kwargs: Mapping[str, Any] | None = None,
) -> Engine:
    """Create the SQLAlchemy engine for a catalog database URL (connects lazily, no I/O).

    ``engine_kwargs`` are passed to :func:`sqlalchemy.create_engine` (pool sizes, ``creator``,
    ``connect_args``...). Raises ValidationError for a malformed URL and CatalogUnavailable
    when the URL names a driver that is not installed.
    """
    if busy_timeout_ms < 0:
        raise ValidationError(f"busy_timeout_ms must not be negative, got {busy_timeout_ms}")
    kwargs = dict(engine_kwargs or {})
    parsed = parse_catalog_url(url)
    try:
        is_sqlite = parsed.get_backend_name() == "sqlite"
        if not is_sqlite:
            kwargs.setdefault("pool_pre_ping", True)
        engine = create_engine(parsed, **kwargs)
    except ArgumentError as exc:
        raise ValidationError(f"invalid catalog database URL: {exc}") from exc
    except (NoSuchModuleError, ImportError) as exc:
        raise CatalogUnavailable(
            f"no database driver for {url.split(':', 1)[0]!r}: {exc} "
            "(PostgreSQL needs `pip install lakecat[postgres]`)"
        ) from exc
    if is_sqlite:
        _install_sqlite_hooks(engine, busy_timeout_ms)
    return engine


def write_engine(engine: Engine) -> Engine:
    """The engine to use for transactions that write (``BEGIN IMMEDIATE`` on SQLite)."""
    return engine.execution_options(**{_BEGIN_IMMEDIATE_OPTION: True})


def _install_sqlite_hooks(engine: Engine, busy_timeout_ms: int) -> None:
    def on_connect(dbapi_connection: Any, _connection_record: Any) -> None:
        # Take transaction control away from sqlite3 (see the module docstring); it still
        # sends COMMIT and ROLLBACK for the transactions that on_begin opens.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            # busy_timeout first: switching a new database to WAL needs a lock.
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    def on_begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get(_BEGIN_IMMEDIATE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    event.listen(engine, "connect", on_connect)
    event.listen(engine, "begin", on_begin)


def _driver_error(exc: BaseException) -> BaseException | None:
    return exc.orig if isinstance(exc, DBAPIError) else None


def _sqlstate(error: BaseException) -> str | None:
    # psycopg 3 exposes the SQLSTATE as `sqlstate`, psycopg2 as `pgcode`.
    code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    return code if isinstance(code, str) else None


def is_connection_lost(exc: BaseException) -> bool:
    """True if SQLAlchemy found the connection dead when ``exc`` was raised."""
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def is_retryable(exc: BaseException) -> bool:
    """True if the database refused the statement and rolled back: safe to run again."""
    error = _driver_error(exc)
    if error is None or is_connection_lost(exc):
        return False
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        # Extended codes (e.g. SQLITE_BUSY_SNAPSHOT) keep the primary code in the low byte.
        return code is not None and (code & 0xFF) in _SQLITE_RETRYABLE_PRIMARY_CODES
    return _sqlstate(error) in _PG_RETRYABLE_SQLSTATES


def unavailable_error(exc: BaseException) -> type[CatalogUnavailable]:
    """The lakecat error class for ``exc``, a database failure that is not retryable.

    ``CatalogUnavailable`` when the database could not be reached or cannot serve now (the
    commit loop may try again later); a :class:`CatalogRefused` kind when the database was
    reached and refused the statement for a reason trying again would meet again."""
    error = _driver_error(exc)
    if error is None or is_connection_lost(exc):
        return CatalogUnavailable
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        if code is None:
            return CatalogUnavailable
        primary = code & 0xFF
        if primary in _SQLITE_READ_ONLY_CODES:
            return CatalogReadOnly
        if primary in _SQLITE_PERMISSION_CODES:
            return CatalogPermissionDenied
        if primary in _SQLITE_UNREACHABLE_CODES:
            return CatalogUnavailable
        return CatalogRefused
    sqlstate = _sqlstate(error)
    if sqlstate is None:  # e.g. psycopg's "connection refused": no server answered
        return CatalogUnavailable
    if sqlstate in _PG_READ_ONLY_SQLSTATES:
        return CatalogReadOnly
    if sqlstate in _PG_PERMISSION_SQLSTATES or sqlstate[:2] in _PG_PERMISSION_CLASSES:
        return CatalogPermissionDenied
    if sqlstate[:2] in _PG_UNREACHABLE_CLASSES:
        return CatalogUnavailable
    return CatalogRefused


def is_lock_timeout(exc: BaseException) -> bool:
    """True if PostgreSQL gave up waiting for a lock (``lock_timeout``)."""
    error = _driver_error(exc)
    return error is not None and _sqlstate(error) == _PG_LOCK_NOT_AVAILABLE


def describe_error(exc: BaseException | None) -> str:
    """The driver's own words for a database error (its class and message), for messages."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        return f"{type(exc.orig).__name__}: {exc.orig}".strip()
    return f"{type(exc).__name__}: {exc}"


def is_unique_violation(exc: BaseException) -> bool:
    """True if ``exc`` is a primary-key (or unique) violation."""
    if not isinstance(exc, IntegrityError):
        return False
    error = exc.orig
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        return code is None or code in _SQLITE_UNIQUE_CODES
    sqlstate = _sqlstate(error) if error is not None else None
    # A driver that reports no code: the catalog tables have no constraint but their keys
    # (NOT NULL columns are always given values), so an IntegrityError is a key violation.
    return sqlstate is None or sqlstate == _PG_UNIQUE_VIOLATION
