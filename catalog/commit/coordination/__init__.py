"""Local commit coordination: the advisory per-table commit lock and the group commit built on
it. None of it decides whether a commit lands (the catalog's compare-and-swap does); it makes
writers queue for milliseconds instead of losing races and redoing work.

* :mod:`~lakecat.catalog.commit.coordination.lock`: the lock (``flock`` beside a SQLite
  catalog, ``pg_advisory_lock`` on PostgreSQL, a process lock for in-memory catalogs) and its
  UUID-bound hint of the current metadata location;
* :mod:`~lakecat.catalog.commit.coordination.group`: a lock holder commits the blind appends
  queued behind it, each as its own snapshot;
* :mod:`~lakecat.catalog.commit.coordination.queue`, :mod:`.doorbell`: the file queue and the
  FIFO wake-ups of the writers waiting for the lock (POSIX only);
* :mod:`~lakecat.catalog.commit.coordination.switches`: where each optional piece (the lock,
  group commit, doorbells) is switched on or off.
"""

from lakecat.catalog.commit.coordination.lock import CommitLock, Hold, WaitHooks, commit_lock_for

__all__ = ["CommitLock", "Hold", "WaitHooks", "commit_lock_for"]
