"""Running the catalog's transactions, and what each failure means for the caller.

Every store operation is a unit of work run in one transaction by :class:`TransactionRunner`.
A failure is classified by the phase it happened in, which is what tells the caller whether the
change can have landed:

============================  ===================================================================
phase                         failure ->
============================  ===================================================================
check-out, connect, BEGIN     nothing was sent: CatalogUnavailable, or the CatalogRefused kind
                              the database answered with (a bad password, a read-only server)
a statement                   the database refused it with the connection up: the transaction
                              is rolled back and never committed: a CatalogRefused kind
                              (CatalogReadOnly, CatalogPermissionDenied, ...), or
                              CatalogUnavailable where the server said it cannot serve now.
                              The connection was lost: CommitStateUnknown for an ambiguous
                              unit of work (one whose COMMIT publishes a change a caller cleans
                              up after, e.g. the compare-and-swap), else CatalogUnavailable
COMMIT                        CommitStateUnknown for an ambiguous unit, else CatalogUnavailable
any phase, retryable error    the database rolled back (SQLite busy/locked, PostgreSQL 40001 /
                              40P01): the whole unit runs again, at most ``max_attempts``
                              times with jittered backoff, then CatalogUnavailable
============================  ===================================================================

Which database errors are refusals, and of which kind, is
:func:`lakecat.catalog.store.db.unavailable_error`.

Errors the unit of work raises itself (NoSuchTable, ...) roll the transaction back and pass
through unchanged; a unit may raise :class:`RetryTransaction` to be run again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from lakecat.catalog.interrupts import DeferredInterrupts
from lakecat.catalog.retry import backoff
from lakecat.catalog.store.db import (
    describe_error,
    is_connection_lost,
    is_retryable,
    unavailable_error,
    write_engine,
)
from lakecat.metadata.errors import CatalogUnavailable, CommitStateUnknown

__all__ = ["RetryTransaction", "TransactionRunner"]

logger = logging.getLogger(__name__)

_BACKOFF_BASE_S = 0.01  # a busy database frees up in milliseconds
_BACKOFF_CAP_S = 0.5

T = TypeVar("T")


class RetryTransaction(Exception):
    """Raised (from a retryable database error, or by a unit of work) to run the unit again."""


class TransactionRunner:
    """Runs units of work in transactions on ``engine``, classifying failures by phase."""

    def __init__(self, engine: Engine, *, max_attempts: int) -> None:
        self._read_engine = engine
        self._write_engine = write_engine(engine)
        self._max_attempts = max_attempts

    def run(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool,
        action: str,
        ambiguous_commit: bool = False,
    ) -> T:
        """Run ``work`` in one transaction and commit; see the module docstring for failures.

        ``write`` selects a write transaction (``BEGIN IMMEDIATE`` on SQLite); ``action``
        names the operation in error messages and logs.
        """
        engine = self._write_engine if write else self._read_engine
        attempt = 1
        while True:
            # Ctrl-C never cuts a transaction in half (a pooled connection left inside BEGIN
            # IMMEDIATE would hold SQLite's write lock): it is delivered once the attempt ends.
            interrupts = DeferredInterrupts()
            interrupts.start()
            try:
                return _attempt(engine, work, action=action, ambiguous_commit=ambiguous_commit)
            except RetryTransaction as retry:
                if attempt >= self._max_attempts:
                    raise CatalogUnavailable(
                        f"{action}: the database stayed busy through {attempt} attempts "
                        f"({describe_error(retry.__cause__)}); nothing was committed"
                    ) from retry.__cause__
                wait = backoff(attempt, base=_BACKOFF_BASE_S, cap=_BACKOFF_CAP_S)
                logger.info(
                    "catalog transaction rolled back by the database; retrying",
                    extra={"action": action, "attempt": attempt, "wait_s": round(wait, 4)},
                )
                time.sleep(wait)
                attempt += 1
            finally:
                interrupts.stop()


def _attempt(
    engine: Engine, work: Callable[[Connection], T], *, action: str, ambiguous_commit: bool
) -> T:
    try:
        connection = engine.connect()
    except SQLAlchemyError as exc:
        raise _not_sent(exc, action) from exc
    with connection:
        try:
            connection.begin()  # on SQLite this runs BEGIN [IMMEDIATE]
        except SQLAlchemyError as exc:
            raise _not_sent(exc, action) from exc
        try:
            result = work(connection)
        except SQLAlchemyError as exc:
            _rollback_after_failure(connection)
            if is_retryable(exc):
                raise RetryTransaction() from exc
            if ambiguous_commit and is_connection_lost(exc):
                raise CommitStateUnknown(
                    f"{action}: the connection was lost during the statement; the change may "
                    f"or may not have been committed ({describe_error(exc)})"
                ) from exc
            raise unavailable_error(exc)(
                f"{action}: the database refused the statement; nothing was committed "
                f"({describe_error(exc)})"
            ) from exc
        except BaseException:
            _rollback_after_failure(connection)
            raise
        try:
            connection.commit()
        except SQLAlchemyError as exc:
            _discard_after_failed_commit(connection)
            if is_retryable(exc):
                raise RetryTransaction() from exc
            if ambiguous_commit:
                raise CommitStateUnknown(
                    f"{action}: COMMIT failed; the change may or may not have been committed "
                    f"({describe_error(exc)})"
                ) from exc
            raise CatalogUnavailable(f"{action}: COMMIT failed ({describe_error(exc)})") from exc
        return result


def _not_sent(exc: SQLAlchemyError, action: str) -> Exception:
    """Classify a failure before any statement of the transaction reached the database."""
    if is_retryable(exc):
        return RetryTransaction()
    kind, why = unavailable_error(exc), describe_error(exc)
    if kind is CatalogUnavailable:
        return CatalogUnavailable(f"{action}: cannot reach the catalog database ({why})")
    return kind(f"{action}: the catalog database refused the connection ({why})")


def _rollback_after_failure(connection: Connection) -> None:
    try:
        connection.rollback()
    except SQLAlchemyError:
        # Nothing was committed, so a failed rollback changes no outcome: the pool discards the
        # connection and the database drops the open transaction with it.
        logger.debug("rollback after a failed catalog statement failed too", exc_info=True)


def _discard_after_failed_commit(connection: Connection) -> None:
    # SQLAlchemy considers the transaction over once COMMIT was attempted, so the pool would
    # skip its reset; but the driver may still hold the transaction open (SQLite keeps it, and
    # its write lock, after SQLITE_BUSY at COMMIT). Closing the connection ends it for sure.
    try:
        connection.invalidate()
    except SQLAlchemyError:
        logger.debug("closing a connection after a failed COMMIT failed", exc_info=True)
