"""SQL ``DELETE``, ``UPDATE`` and ``MERGE INTO`` through the catalog: copy-on-write commits.

Spark plans these statements itself (its group-based ``ReplaceData`` rewrite) against the
plugin's row-level operation (``lakecat.spark.LakecatCopyOnWrite``): it reads the data files
that may hold affected rows at the snapshot the statement loaded, keeps those with affected
rows (a runtime filter on ``_file``), computes every row those files must hold afterwards and
writes them staged: as a DataFrame through Spark's own Parquet writer in a session with
lakecat's SQL extension (``lakecat.spark.NativeRowLevelWrites`` and the bridge's ``insert``),
else through the data source in staging mode. :func:`commit_copy_on_write` then makes
the one lakecat commit: the staged files replace the files read, validated from the
statement's snapshot with the table's isolation level for the command
(``write.delete/update/merge.isolation-level``) and the filter Spark pushed as the read
filter, so statements on disjoint partitions both commit and overlapping ones fail with a
typed conflict. The rewrite reads through delete files, so rows another engine deleted by
merge-on-read stay deleted. On format v3 tables the rows keep their lineage: Spark reads
``_row_id`` and ``_last_updated_sequence_number`` with them and hands both to the writer,
keeping the id of an updated row and clearing its sequence number (the commit's applies), as
Iceberg's Spark runtime does; inserted rows get new ids.

A table whose ``write.delete/update/merge.mode`` is ``merge-on-read`` gets Spark's delta
rewrite instead (the plugin's ``LakecatMergeOnRead``, ``SupportsDelta``): Spark hands the
writers each deleted or updated row's ``_file`` and ``_pos`` and the new rows;
:func:`commit_merge_on_read` writes one position delete file per data file with deleted rows
(format v3: one deletion vector each, replacing the file's previous DV) and commits them with
the new rows; the files the statement read stay, as read files for the conflict checks.

On ``t.branch_<name>`` both read the branch's head and commit to the branch, validated against
the commits that landed on it since; the main branch does not move. A statement in a
session's write-audit-publish branch (``spark.wap.branch``) that does not exist yet read main
and commits to ``new_branch``, creating it at main's head (``Intent.creates_branch``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import pyarrow as pa

from lakecat.catalog import Table
from lakecat.catalog.engine import (
    FileDeletes,
    Intent,
    OpKind,
    delete_quietly,
    isolation_level,
    replaced_deletes,
    write_position_deletes,
)
from lakecat.metadata import properties as P
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions import Expression
from lakecat.metadata.io import FileIO
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.table import MAIN_BRANCH
from lakecat.spark_ext.source.planning import ReadView, plan_files
from lakecat.spark_ext.source.staging import handed_over
from lakecat.spark_ext.source.write_jobs import check_unchanged

# A ``DELETE FROM`` whose condition lakecat evaluates runs on the driver (``Table.delete``)
# while the files it must read (holding matching rows and others) are at most this many bytes;
# a larger one runs as Spark's row-level operation, in tasks (session setting
# ``spark.lakecat.driverDeleteMaxBytes``). One that drops whole files only runs on the driver.
# On one machine the driver's delete is the faster (docs/benchmarks.md, "DELETE on the
# driver"), but a copy-on-write delete holds every row it keeps in the driver's memory, and a
# cluster's executors share the work of a large one.
DRIVER_DELETE_MAX_BYTES = 128 * 1024 * 1024
DRIVER_DELETE_SETTING = "spark.lakecat.driverDeleteMaxBytes"


def driver_delete_max_bytes(text: str | None) -> int:
    """The session's ``spark.lakecat.driverDeleteMaxBytes`` (``None``: unset): a whole
    number of bytes, 0 or more; :class:`ValidationError` otherwise."""
    if text is None:
        return DRIVER_DELETE_MAX_BYTES
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise ValidationError(
            f"{DRIVER_DELETE_SETTING} is {text!r}: it takes a whole number of bytes, 0 or more "
            f"(default {DRIVER_DELETE_MAX_BYTES})"
        )
    return value


# each row-level statement of the plugin: its operation kind and isolation-level property
COMMANDS = {
    "delete": (OpKind.DELETE, P.DELETE_ISOLATION_LEVEL),
    "update": (OpKind.UPDATE, P.UPDATE_ISOLATION_LEVEL),
    "merge": (OpKind.MERGE, P.MERGE_ISOLATION_LEVEL),
}


def _command(command: str) -> tuple[OpKind, str]:
    """The operation kind of a Spark row-level command and its isolation-level property."""
    if command not in COMMANDS:
        raise ValidationError(f"not a row-level command: {command!r}")
    return COMMANDS[command]


@contextmanager
def staged_owned(io: FileIO, stage_to: str) -> Iterator[None]:
    """Own the files a statement's staged write handed over at ``stage_to`` while the block
    runs: when it raises before a commit took them over (read the hand-over, which deletes it),
    they are deleted, so that a failure in preparing the commit (loading the table, reading
    the deleted positions) leaves no file behind."""
    try:
        yield
    except BaseException:
        with suppress(Exception):  # the error being raised is the one to report
            delete_quietly(io, [f.file_path for f in handed_over(io, stage_to)])
        raise


def _statement_intent(
    view: ReadView,
    command: str,
    new_branch: str | None,
    snapshot_properties: Mapping[str, str] | None,
    **files: Any,
) -> Intent:
    """The intent of a row-level statement that read ``view``, with its ``files`` (added,
    removed, read): the command's kind and isolation level, the snapshot it read, the summary
    entries, and its branch: ``t.branch_<name>``'s, main, or ``new_branch`` (a branch it
    writes that did not exist, so it read main: its commit creates it)."""
    kind, isolation_key = _command(command)
    branch, creates_branch = view.options.branch or MAIN_BRANCH, False
    if new_branch is not None:
        branch, creates_branch = new_branch, new_branch not in view.metadata.refs
        if creates_branch and view.options.branch is not None:
            raise ValidationError(
                f"the statement read branch {view.options.branch!r}: it cannot create "
                f"branch {new_branch!r}"
            )
    head = view.snapshot
    return Intent(
        kind=kind,
        branch=branch,
        creates_branch=creates_branch,
        starting_snapshot_id=head.snapshot_id if head else None,
        isolation=isolation_level(view.metadata, isolation_key),
        # format v3: copy-on-write rewrites get each copied row's _row_id and
        # _last_updated_sequence_number from Spark (the plugin's metadata columns);
        # merge-on-read moves no row
        keeps_row_lineage=True,
        extra_summary=tuple(sorted((snapshot_properties or {}).items())),
        **files,
    )


def commit_copy_on_write(
    table: Table,
    view: ReadView,
    *,
    command: str,
    filter: Expression,
    read: Sequence[str],
    stage_to: str,
    snapshot_properties: Mapping[str, str] | None = None,
    new_branch: str | None = None,
) -> int | None:
    """Commit the staged files of a copy-on-write statement in place of the files it read
    (``read``, data files of ``view``'s snapshot); the new snapshot id, None when the
    statement changed nothing. A failure before the commit deletes the staged files; the
    commit itself deletes them when it fails for sure."""
    io = table.io
    added = handed_over(io, stage_to)
    try:
        _command(command)  # a bad command fails before anything else
        planned = {f.file_path: f for f in plan_files(io, view, [filter]).files}
        missing = [path for path in read if path not in planned]
        if missing:
            raise ValidationError(
                f"the statement read files its snapshot does not plan: {', '.join(missing[:3])}"
            )
        removed = [planned[path] for path in dict.fromkeys(read)]
        if not removed and not added:
            return None
        intent = _statement_intent(
            view,
            command,
            new_branch,
            snapshot_properties,
            added_files=tuple(added),
            removed_files=tuple(removed),
            read_filter=filter,
        )
        check_unchanged(view.metadata, table.metadata, intent)
    except BaseException:
        delete_quietly(io, [f.file_path for f in added])
        raise
    return table.commit_intent(intent).snapshot_id


def commit_merge_on_read(
    table: Table,
    view: ReadView,
    *,
    command: str,
    filter: Expression,
    read: Sequence[str],
    stage_to: str,
    deletes: Mapping[str, Sequence[int] | pa.Array],
    written: Sequence[DataFile] = (),
    snapshot_properties: Mapping[str, str] | None = None,
    new_branch: str | None = None,
) -> int | None:
    """Commit a merge-on-read DELETE/UPDATE/MERGE: position deletes (v3: deletion vectors) for
    ``deletes`` (data file path -> positions, counted over every row of the file) and the new
    rows (the updated and inserted ones): the staged files, and the data files ``written``
    by the tasks; the new snapshot id, None when nothing changed. A failure before the commit
    deletes every file written."""
    io = table.io
    added: list[DataFile] = list(written)
    delete_files: list[DataFile] = []
    try:
        added += handed_over(io, stage_to)
        _command(command)  # a bad command fails before anything else
        plan = plan_files(io, view, [filter])
        planned = {f.file_path: f for f in plan.files}
        missing = [path for path in (*read, *deletes) if path not in planned]
        if missing:
            raise ValidationError(
                f"the statement read files its snapshot does not plan: {', '.join(missing[:3])}"
            )
        targets = [
            # (unsorted, maybe repeated: the writers sort and deduplicate in Arrow)
            FileDeletes(planned[path], pa.array(positions, pa.int64()), plan.deletes.get(path, ()))
            for path, positions in deletes.items()
            if positions
        ]
        if not targets and not added:
            return None
        delete_files = write_position_deletes(io, view.metadata, targets) if targets else []
        intent = _statement_intent(
            view,
            command,
            new_branch,
            snapshot_properties,
            added_files=(*added, *delete_files),
            removed_files=tuple(replaced_deletes(view.metadata, targets)),
            read_files=tuple(dict.fromkeys(read)),
            read_filter=filter,
        )
        check_unchanged(view.metadata, table.metadata, intent)
    except BaseException:
        delete_quietly(io, [f.file_path for f in (*added, *delete_files)])
        raise
    return table.commit_intent(intent).snapshot_id
