"""The ``lakecat`` row-level change commands: ``delete``, ``update``, ``upsert``, ``overwrite``.

Each is one call of the Python table API (:meth:`Table.delete`, :meth:`Table.update`,
:meth:`Table.upsert`, :meth:`Table.overwrite`), so each is one commit with the API's conflict
checks, copy-on-write or merge-on-read as the table's ``write.delete.mode`` /
``write.update.mode`` / ``write.merge.mode`` says. Arguments are checked before that call
(filters, ``--set`` literals and ``--from`` rows by the table's schema: :mod:`.values`); a
refused input, a conflict or an unsupported feature is a
:class:`~lakecat.metadata.errors.LakecatError`, which the entry point reports with exit code 1,
and the table is unchanged.

What a command reports comes from the snapshot it committed (its summary's file and record
counts) and from the mode the table chose. Row counts: a ``delete`` or ``overwrite`` removed as
many live rows as the summary's records and position deletes say the table lost (exact for the
delete files lakecat writes; a table with equality deletes or position delete files naming
several data files, written by another engine, can make it differ); ``update`` counts the rows
its filter matches on the snapshot it changes, read before the change (the update reads those
files anyway); an ``upsert`` inserted as many rows as the table gained and updated the other
rows of its source.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from rich.console import Group

from lakecat.catalog.cli.args import split_list
from lakecat.catalog.cli.context import Command, Context, Output
from lakecat.catalog.cli.render import key_values, message
from lakecat.catalog.cli.values import read_rows, set_values
from lakecat.catalog.commit.intent import OpKind
from lakecat.catalog.commit.pipeline import CommitResult
from lakecat.catalog.table import Table
from lakecat.catalog.write.merge_on_read import merge_on_read
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.table.snapshots import MAIN_BRANCH

__all__ = ["ROW_CHANGE_COMMANDS"]

COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"


def _mode(table: Table, kind: OpKind) -> str:
    """The mode the table's ``write.*.mode`` property picks for ``kind`` (a bad value is a
    ValidationError, before anything is written)."""
    return MERGE_ON_READ if merge_on_read(table.metadata, kind) else COPY_ON_WRITE


def _row_filter(args: argparse.Namespace) -> str | None:
    """``--where``'s filter, or None (every row) with ``--all``; argparse requires one."""
    return None if args.all else str(args.where)


def _summary(result: CommitResult | None) -> Mapping[str, str]:
    if result is None or result.snapshot_id is None:
        return {}
    if not result.metadata.has_snapshot(result.snapshot_id):
        return {}
    return result.metadata.snapshot_by_id(result.snapshot_id).summary


def _count(summary: Mapping[str, str], key: str) -> int:
    value = summary.get(key, "0")
    return int(value) if value.isdecimal() else 0


def _live_rows_gained(summary: Mapping[str, str]) -> int:
    """How many live rows the table gained by a commit (negative: lost), from its summary:
    records added minus removed, less the position deletes it added net."""
    records = _count(summary, "added-records") - _count(summary, "deleted-records")
    deletes = _count(summary, "added-position-deletes") - _count(
        summary, "removed-position-deletes"
    )
    return records - deletes


def _report(
    table: Table,
    args: argparse.Namespace,
    *,
    operation: str,
    mode: str,
    result: CommitResult | None,
    rows: Mapping[str, int],
) -> Output:
    summary = _summary(result)
    data: dict[str, Any] = {
        "table": table.name,
        "operation": operation,
        "mode": mode,
        "branch": args.branch,
        "committed": result is not None,
        "snapshot_id": None if result is None else result.snapshot_id,
        **rows,
        "data_files_added": _count(summary, "added-data-files"),
        "data_files_removed": _count(summary, "deleted-data-files"),
        "delete_files_added": _count(summary, "added-delete-files"),
        "delete_files_removed": _count(summary, "removed-delete-files"),
        "records_added": _count(summary, "added-records"),
        "records_removed": _count(summary, "deleted-records"),
        "position_deletes_added": _count(summary, "added-position-deletes"),
        "attempts": 0 if result is None else result.attempts,
        "metadata_location": table.metadata_location,
        "warnings": [] if result is None else list(result.warnings),
    }
    done = ", ".join(f"{n} {k.removeprefix('rows_')}" for k, n in rows.items())
    if result is None:
        title = f"{table.name}: no row matched; nothing committed ({done})"
        return Output(
            data, Group(message(title), key_values(None, {"mode": mode, "branch": args.branch}))
        )
    title = f"{table.name}: {operation} committed snapshot {result.snapshot_id} ({done})"
    details = key_values(
        None,
        {
            "mode": mode,
            "branch": args.branch,
            "data files": f"+{data['data_files_added']} -{data['data_files_removed']}",
            "delete files": f"+{data['delete_files_added']} -{data['delete_files_removed']}",
            "records": f"+{data['records_added']} -{data['records_removed']}",
            "attempts": data["attempts"],
            **{f"warning {i + 1}": w for i, w in enumerate(data["warnings"])},
        },
    )
    return Output(data, Group(message(title), details))


def _target(args: argparse.Namespace) -> dict[str, Any]:
    """The branch a change commits to, and whether its commit may create it."""
    return {"branch": args.branch, "create_branch": args.create_branch}


def _reads_main(table: Table, args: argparse.Namespace) -> bool:
    """Whether the change reads main: it commits there, or creates its branch from it."""
    return args.branch == MAIN_BRANCH or (args.create_branch and args.branch not in table.refs())


def delete(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    mode = _mode(table, OpKind.DELETE)
    result = table.delete(_row_filter(args), **_target(args))
    rows = {"rows_deleted": -_live_rows_gained(_summary(result))}
    return _report(table, args, operation="delete", mode=mode, result=result, rows=rows)


def update(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    mode = _mode(table, OpKind.UPDATE)
    values = set_values(table.schema(), args.set)
    where = _row_filter(args)
    # The rows the update will change: those its filter matches on the snapshot it starts from
    # (the table's state now, which the update plans on too).
    ref = None if _reads_main(table, args) else args.branch
    matched = table.scan(where, columns=[next(iter(values))], ref=ref).count()
    result = table.update(values, where, **_target(args))
    rows = {"rows_updated": 0 if result is None else matched}
    return _report(table, args, operation="update", mode=mode, result=result, rows=rows)


def upsert(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    mode = _mode(table, OpKind.MERGE)
    source = read_rows(args.source, table.schema(), given_format=args.format)
    keys = split_list(args.on) or None
    if args.on is not None and keys is None:
        raise ValidationError("--on names no column")
    result = table.upsert(source, keys, **_target(args))
    inserted = _live_rows_gained(_summary(result))
    rows = {"rows_updated": source.num_rows - inserted, "rows_inserted": inserted}
    return _report(table, args, operation="upsert", mode=mode, result=result, rows=rows)


def overwrite(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    mode = _mode(table, OpKind.OVERWRITE)
    source = read_rows(args.source, table.schema(), given_format=args.format)
    result = table.overwrite(source, _row_filter(args), **_target(args))
    inserted = source.num_rows if result is not None else 0
    rows = {
        "rows_deleted": inserted - _live_rows_gained(_summary(result)),
        "rows_inserted": inserted,
    }
    return _report(table, args, operation="overwrite", mode=mode, result=result, rows=rows)


ROW_CHANGE_COMMANDS: dict[str, Command] = {
    "delete": delete,
    "update": update,
    "upsert": upsert,
    "overwrite": overwrite,
}
