"""Remove orphan files: files under the table location that the table does not reference.

Orphans are left by writers that died or lost a conflict before cleaning up, by expiry run with
``delete_files=False`` and by metadata files that fell off the metadata log. A file counts as
referenced when the current metadata file, a metadata file in its metadata log, a statistics
file, or any snapshot's manifest list, manifests or live data files name it.

A writer in flight has written files that nothing references yet. They are protected by the
age guard: only files last modified before ``older_than`` (default: three days ago) are
considered, so any commit that takes less than that is safe. The listing is taken before the
metadata is read, so a commit that lands while the listing runs is seen as referencing its
files. Paths are compared normalized (``file:///x`` and ``/x`` are the same file).

Racing other maintenance jobs. Reading every snapshot's manifest list and manifests takes a
while, and a concurrent :func:`~lakecat.catalog.maintenance.expire_snapshots` may commit and
delete the files of the snapshots it expired meanwhile (after a manifest rewrite or a
compaction replaced them). The read of such a file fails; the job then refreshes and, when the
pointer moved, computes the referenced set again from scratch on the newer metadata
(:mod:`lakecat.catalog.maintenance.replan`; a bounded number of times, then
:class:`~lakecat.metadata.errors.TableKeptChanging`). If the pointer did not move,
the table itself names a missing file and the error propagates. Why that is safe:

* nothing is deleted until one read of one metadata version completed: a failed read aborts
  the plan, and what it had collected is dropped, never merged into the next attempt;
* the version that completed was read after the listing (every refresh follows it), so a
  commit that landed before the listing ended is in it, exactly as without a re-plan;
* every file that version references is kept. A file only an older version referenced was
  dereferenced by a commit (typically the expiry that caused the re-plan, which deletes it
  itself or leaves it on purpose): the table no longer needs it, as if orphan removal had
  started after that commit. Files are never referenced again once dereferenced (new snapshots
  name new files or files of a snapshot still in the metadata), and a writer in flight is
  protected by the age guard, not by the metadata, so reading a newer version takes nothing
  from it;
* deleting a file a concurrent expiry also deletes is harmless (deleting a missing file is not
  an error).

Files that cannot be deleted are logged and reported in :attr:`OrphanResult.not_deleted`.
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lakecat.catalog.maintenance.reachable import reachable_files, require_gc_enabled
from lakecat.catalog.maintenance.replan import plan_with_replans
from lakecat.metadata.errors import LakecatError
from lakecat.metadata.io.fileio import local_path
from lakecat.metadata.table.timetravel import Timestamp, to_timestamp_ms

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

log = logging.getLogger("lakecat.maintenance")

DEFAULT_GUARD_MS = 3 * 24 * 60 * 60 * 1000
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


@dataclass(frozen=True)
class OrphanResult:
    """The orphan files found (sorted); ``deleted`` is False for a dry run.

    ``not_deleted``: orphans whose deletion failed (logged; the next run tries again).
    """

    orphans: tuple[str, ...]
    deleted: bool
    not_deleted: tuple[str, ...] = ()


def remove_orphan_files(
    table: Table,
    *,
    older_than: Timestamp | None = None,
    location: str | None = None,
    dry_run: bool = False,
) -> OrphanResult:
    """Delete files under ``location`` (default: the table location) that the table does not
    reference and that were last modified before ``older_than`` (default: now - 3 days).

    ``dry_run`` only lists them. The table object is refreshed. When a concurrent commit
    deletes a file while the references are read, they are read again on the newer metadata
    (module docstring); :class:`~lakecat.metadata.errors.TableKeptChanging` if that
    keeps happening.
    """
    require_gc_enabled(table.refresh().metadata, "remove orphan files")
    cutoff = (
        int(time.time() * 1000) - DEFAULT_GUARD_MS
        if older_than is None
        else to_timestamp_ms(older_than)
    )
    root = location or table.location
    candidates = [info.location for info in table.io.list_prefix(root) if info.mtime_ms < cutoff]
    table.refresh()  # after listing: a commit that landed meanwhile is seen as a reference
    # One complete read of one metadata version (re-read from scratch on a newer one when a
    # concurrent commit deletes a file under it); nothing is deleted before it completes.
    referenced = plan_with_replans(
        table,
        lambda: {normalize_location(p) for p in referenced_files(table)},
        job="remove_orphan_files",
    )
    orphans = tuple(sorted(p for p in candidates if normalize_location(p) not in referenced))
    not_deleted: list[str] = []
    if not dry_run:
        for path in orphans:
            try:
                table.io.delete(path)
            except (LakecatError, OSError) as exc:
                log.warning("could not delete orphan %s: %s", path, exc)
                not_deleted.append(path)
    return OrphanResult(orphans, deleted=not dry_run, not_deleted=tuple(not_deleted))


def referenced_files(table: Table) -> set[str]:
    """Every file the table's metadata (``table.metadata``, as it is now) references, as
    written in the metadata. A file it must read that is missing raises
    :class:`~lakecat.metadata.io.fileio.FileNotFoundStorageError`."""
    return reachable_files(table.io, table.metadata, table.metadata_location)


def normalize_location(location: str) -> str:
    """One spelling per file: local paths absolute and normalized, remote schemes unified."""
    path: str | None = local_path(location)
    if path is not None:
        # unescaped too: files written by lakecat before file: paths were taken literally
        # sit under unescaped names, and a file must never look unreferenced by its spelling
        return os.path.normpath(os.path.abspath(unquote(path)))
    scheme, _, rest = location.partition("://")
    scheme = _SCHEME_ALIASES.get(scheme.lower(), scheme.lower())
    return f"{scheme}://{re.sub('/+', '/', rest)}"
