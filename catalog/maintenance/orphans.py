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
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lakecat.catalog.reachable import reachable_files
from lakecat.catalog.table import Timestamp, to_timestamp_ms
from lakecat.metadata.errors import StorageError
from lakecat.metadata.fileio import local_path

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

log = logging.getLogger("lakecat.maintenance")

DEFAULT_GUARD_MS = 3 * 24 * 60 * 60 * 1000
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


@dataclass(frozen=True)
class OrphanResult:
    """The orphan files found (sorted); ``deleted`` is False for a dry run."""

    orphans: tuple[str, ...]
    deleted: bool


def remove_orphan_files(
    table: Table,
    *,
    older_than: Timestamp | None = None,
    location: str | None = None,
    dry_run: bool = False,
) -> OrphanResult:
    """Delete files under ``location`` (default: the table location) that the table does not
    reference and that were last modified before ``older_than`` (default: now - 3 days).

    ``dry_run`` only lists them. The table object is refreshed.
    """
    cutoff = (
        int(time.time() * 1000) - DEFAULT_GUARD_MS
        if older_than is None
        else to_timestamp_ms(older_than)
    )
    root = location or table.location
    candidates = [info.location for info in table.io.list_prefix(root) if info.mtime_ms < cutoff]
    table.refresh()  # after listing: a commit that landed meanwhile is seen as a reference
    referenced = {normalize_location(p) for p in referenced_files(table)}
    orphans = tuple(sorted(p for p in candidates if normalize_location(p) not in referenced))
    if not dry_run:
        for path in orphans:
            try:
                table.io.delete(path)
            except StorageError as exc:
                log.warning("could not delete orphan %s: %s", path, exc)
    return OrphanResult(orphans, deleted=not dry_run)


def referenced_files(table: Table) -> set[str]:
    """Every file the table's metadata references, as written in the metadata."""
    metadata = table.metadata
    out: set[str] = reachable_files(table.io, metadata, table.metadata_location)
    for stats in (*metadata.statistics, *metadata.partition_statistics):
        path = stats.get("statistics-path")
        if isinstance(path, str):
            out.add(path)
    return out


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
