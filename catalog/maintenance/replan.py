"""Re-planning a maintenance job when a concurrent commit deleted a file it was about to read.

A maintenance job plans from one metadata version: it reads the manifest lists, manifests and
data files that version names. Concurrent maintenance commits delete such files once they are
no longer referenced: :func:`~lakecat.catalog.maintenance.expire_snapshots` deletes the manifest
lists, manifests and data files only the expired snapshots used, after a
:func:`~lakecat.catalog.maintenance.rewrite_manifests` or a compaction has replaced them. If
that happens between the job's refresh and its read, the read raises
:class:`~lakecat.metadata.io.fileio.FileNotFoundStorageError`. The table is not broken: the
newer metadata no longer names the file.

:func:`plan_with_replans` tells the two cases apart and re-plans:

* the plan runs on ``table.metadata``; a missing file aborts it, and nothing it read is kept;
* the table is refreshed. If the pointer did not move, the metadata the plan read is still the
  table's and it names a file that does not exist: the table is damaged, and the original
  error propagates. The same happens when the same file is missing again after a re-plan (the
  newer metadata still names it: the table is damaged, whatever else moved the pointer);
* otherwise the plan runs again, from scratch, on the newer metadata;
* after :data:`MAX_REPLANS` re-plans :class:`TableKeptChanging` is raised.

A plan must therefore read ``table.metadata`` when it runs (not a version captured before) and
must have no effect until it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from lakecat.metadata.errors import TableKeptChanging
from lakecat.metadata.io.fileio import FileNotFoundStorageError

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

log = logging.getLogger("lakecat.maintenance")

MAX_REPLANS = 4

T = TypeVar("T")


def plan_with_replans(
    table: Table, plan: Callable[[], T], *, job: str, max_replans: int = MAX_REPLANS
) -> T:
    """``plan()``, run again on refreshed metadata while concurrent commits delete files it
    reads (module docstring). The caller refreshes ``table`` before, if it wants to."""
    missing_before: str | None = None
    replans = 0
    while True:
        location = table.metadata_location
        try:
            return plan()
        except FileNotFoundStorageError as exc:
            missing = _missing(exc)
            table.refresh()
            if table.metadata_location == location or missing == missing_before:
                raise  # the metadata still names a file that does not exist
            if replans >= max_replans:
                raise TableKeptChanging(
                    f"{job} on {table.name}: concurrent commits deleted files it was reading "
                    f"{replans + 1} times in a row (last: {exc}); nothing was changed, run it "
                    "again when the table is quieter"
                ) from exc
            replans += 1
            missing_before = missing
            log.info(
                "%s on %s: %s (a concurrent commit moved the table on); planning again on %s",
                job,
                table.name,
                exc,
                table.metadata_location,
            )


def _missing(exc: FileNotFoundStorageError) -> str:
    """Which file was missing, as far as the error tells."""
    return str(exc.filename) if exc.filename is not None else str(exc)
