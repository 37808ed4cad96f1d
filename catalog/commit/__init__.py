"""The commit core: every change to a table is one compare-and-swap of its metadata pointer.

* :mod:`~lakecat.catalog.commit.pipeline`: the commit loop (validate, produce, swap, the steps
  after it) and its phases; start reading here.
* :mod:`~lakecat.catalog.commit.intent`: what an operation wants to commit, as data.
* :mod:`~lakecat.catalog.commit.producer`: builds a snapshot's manifests and manifest list.
* :mod:`~lakecat.catalog.commit.conflicts`: the conflict checks, small and named.
* :mod:`~lakecat.catalog.interrupts`: Ctrl-C held back across the point of no return.
* :mod:`~lakecat.catalog.commit.coordination`: the advisory commit lock and group commit (a
  speed-up for writers on one machine; it decides nothing).
"""

from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.commit.pipeline import (
    CommitResult,
    Phase,
    TableOperations,
    commit_intent,
    commit_updates,
)
from lakecat.catalog.retry import RetryPolicy

__all__ = [
    "CommitResult",
    "Intent",
    "OpKind",
    "Phase",
    "RetryPolicy",
    "TableOperations",
    "commit_intent",
    "commit_updates",
]
