"""The switches of the commit coordination's optional pieces, read here and nowhere else.

Each piece only makes waiting for the commit lock cheaper; switched off, the code falls back
to a simpler mechanism that is exactly as correct (the catalog's compare-and-swap decides
every commit either way). Every piece is on by default:

* **the commit lock**: table property ``commit.lock.enabled``; off: no lock, optimistic
  commits and their retries only;
* **group commit**: table property ``commit.group-commit.enabled`` and the environment
  variable ``LAKECAT_GROUP_COMMIT``; off: every writer commits its own append;
* **doorbells**: the environment variable ``LAKECAT_COMMIT_DOORBELLS``; off: a waiter tries
  the lock after a growing, jittered pause (1 ms doubling up to 16 ms);

An environment variable switches a piece off for the whole process when set to ``0``,
``false``, ``no`` or ``off``; it is read at each use, so a test can set it for a while. They
exist to measure what each piece is worth (``benchmarks/bench_concurrency.py --ablation``),
not as tuning knobs. Processes of one table may still differ: a waiter that a holder without
doorbells does not ring wakes on its own safety poll, and an append queued where no holder
groups is withdrawn by its owner, who commits it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from lakecat.metadata import properties as P

GROUP_COMMIT_ENV = "LAKECAT_GROUP_COMMIT"
DOORBELLS_ENV = "LAKECAT_COMMIT_DOORBELLS"
_OFF = ("0", "false", "no", "off")


def _on(variable: str) -> bool:
    return os.environ.get(variable, "").strip().lower() not in _OFF


def group_commit(properties: Mapping[str, str]) -> bool:
    """Whether a lock holder commits the blind appends queued behind it."""
    if not _on(GROUP_COMMIT_ENV):
        return False
    return P.get_bool(properties, P.GROUP_COMMIT_ENABLED, P.GROUP_COMMIT_ENABLED_DEFAULT)


def doorbells() -> bool:
    """Whether lock waiters sleep on a FIFO that the releasing holder rings."""
    return _on(DOORBELLS_ENV)
