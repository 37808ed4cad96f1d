"""Retrying, in one place: the jittered exponential backoff every retry loop of lakecat waits with
(:func:`backoff`), and a commit's retry budget from the table's ``commit.retry.*`` properties
(:class:`RetryPolicy`, :class:`RetryClock`).

Two loops retry: the commit loop (:mod:`lakecat.catalog.commit.pipeline`) on a lost
compare-and-swap, and the store's transaction runner (:mod:`lakecat.catalog.store.transactions`)
on a statement the database rolled back (busy, serialization failure). Both wait
``backoff(attempt, ...)``, with their own base and cap.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from lakecat.metadata import properties as P
from lakecat.metadata.errors import CatalogUnavailable, RetriesExhausted

__all__ = ["RetryClock", "RetryPolicy", "backoff"]


def backoff(attempt: int, *, base: float, cap: float) -> float:
    """The wait after failed attempt ``attempt`` (1-based): exponential from ``base``, capped at
    ``cap``, jittered uniformly between ``base / 2`` and that ceiling, so writers that failed
    together do not retry together. In the unit of ``base`` and ``cap``."""
    ceiling = min(cap, base * (2 ** (attempt - 1)))
    return random.uniform(base / 2, max(base, ceiling))


@dataclass(frozen=True)
class RetryPolicy:
    """A table's ``commit.retry.*`` properties (Iceberg's names and defaults)."""

    num_retries: int = P.COMMIT_NUM_RETRIES_DEFAULT
    min_wait_ms: int = P.COMMIT_MIN_RETRY_WAIT_MS_DEFAULT
    max_wait_ms: int = P.COMMIT_MAX_RETRY_WAIT_MS_DEFAULT
    total_timeout_ms: int = P.COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> RetryPolicy:
        return RetryPolicy(
            num_retries=P.get_int(props, P.COMMIT_NUM_RETRIES, P.COMMIT_NUM_RETRIES_DEFAULT),
            min_wait_ms=P.get_int(
                props, P.COMMIT_MIN_RETRY_WAIT_MS, P.COMMIT_MIN_RETRY_WAIT_MS_DEFAULT
            ),
            max_wait_ms=P.get_int(
                props, P.COMMIT_MAX_RETRY_WAIT_MS, P.COMMIT_MAX_RETRY_WAIT_MS_DEFAULT
            ),
            total_timeout_ms=P.get_int(
                props, P.COMMIT_TOTAL_RETRY_TIME_MS, P.COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT
            ),
        )

    def backoff_ms(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt``, in milliseconds (:func:`backoff`)."""
        return backoff(attempt, base=self.min_wait_ms, cap=self.max_wait_ms)


@dataclass
class RetryClock:
    """One operation's retries: what it may still try, the waits, the error when it stops."""

    policy: RetryPolicy
    unbounded_retries: bool
    start: float = field(default_factory=time.monotonic)
    waited_ms: float = 0.0
    unavailable: int = 0  # attempts that found the catalog unreachable
    last_loss: BaseException | None = None  # why the last attempt did not land

    def lost(self, why: BaseException) -> None:
        self.last_loss = why
        if isinstance(why, CatalogUnavailable):
            self.unavailable += 1

    def may_retry(self, attempt: int) -> bool:
        elapsed_ms = (time.monotonic() - self.start) * 1000
        if elapsed_ms >= self.policy.total_timeout_ms:
            return False
        if self.unavailable > self.policy.num_retries:
            return False  # an unreachable catalog is not a lost race: bounded even for appends
        return self.unbounded_retries or attempt <= self.policy.num_retries

    def give_up(self, table: str, attempt: int) -> BaseException:
        """The error for an operation that may not retry any more."""
        if isinstance(self.last_loss, CatalogUnavailable):
            return self.last_loss  # the catalog stayed unreachable: say so, not "lost a race"
        elapsed = int((time.monotonic() - self.start) * 1000)
        error = RetriesExhausted(
            f"{table}: lost the commit race {attempt} time(s) in {elapsed} ms; raise "
            f"{P.COMMIT_NUM_RETRIES} or {P.COMMIT_TOTAL_RETRY_TIME_MS} for this table"
        )
        error.__cause__ = self.last_loss
        return error

    def wait(self, attempt: int) -> float:
        ms = self.policy.backoff_ms(attempt)
        time.sleep(ms / 1000)
        self.waited_ms += ms
        return ms
