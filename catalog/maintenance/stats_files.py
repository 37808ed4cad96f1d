"""Registering a statistics file the job just wrote: the one commit, and who cleans up.

Shared by table statistics (:mod:`.table_stats`) and partition statistics
(:mod:`.partition_stats`): the file is written first (a new name, never overwritten), then one
commit registers it. A failed commit deletes the file, except when its outcome is unknown: the
file may be registered by then, so it stays (``remove_orphan_files`` takes it if it is not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakecat.catalog.commit.pipeline import delete_quietly
from lakecat.metadata.errors import CommitStateUnknown
from lakecat.metadata.table.updates import TableUpdate

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

__all__ = ["write_and_register"]


def write_and_register(table: Table, location: str, data: bytes, update: TableUpdate) -> None:
    """Write ``data`` at ``location`` (a new file) and commit ``update``, which registers it."""
    table.io.write(location, data, exclusive=True)
    try:
        table.commit_updates(lambda base: ([update], ()))
    except CommitStateUnknown:
        raise  # the file may be registered now: keep it
    except BaseException:
        delete_quietly(table.io, [location])
        raise
