"""The ``lakecat`` maintenance, history-editing, ref and change-feed commands.

They call :mod:`lakecat.catalog.maintenance`, :mod:`lakecat.catalog.read.incremental` and the
table's ref API; this module only turns arguments into calls and results into records. Long jobs
show a progress bar on stderr (see :meth:`~lakecat.catalog.cli.context.Context.progress`).

``compact --dry-run`` prints the groups of files compaction would rewrite, planned by the same
function compaction uses (:func:`~lakecat.catalog.maintenance.plan_file_groups`),
without reading, writing or committing anything.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from rich.console import Group

from lakecat.catalog import maintenance
from lakecat.catalog.cli.args import split_list
from lakecat.catalog.cli.context import Command, Context, Output
from lakecat.catalog.cli.render import (
    Column,
    human_bytes,
    key_values,
    message,
    records,
    rows_view,
    some_of,
)
from lakecat.catalog.cli.schema import parse_sort_by
from lakecat.catalog.commit.pipeline import CommitResult
from lakecat.catalog.maintenance.compaction import compaction_sort
from lakecat.catalog.read import incremental as change_feed
from lakecat.catalog.table import Table
from lakecat.metadata import properties as P
from lakecat.metadata.errors import ValidationError

__all__ = ["MAINTENANCE_COMMANDS"]

_SORT_BY_TABLE = "table"


def _fields(result: Any) -> dict[str, Any]:
    """A maintenance result's fields as a record (tuples become lists when printed)."""
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}


def _commit_output(table: Table, result: CommitResult, done: str) -> Output:
    data = {
        "table": table.name,
        "snapshot_id": result.snapshot_id,
        "current_snapshot_id": table.metadata.current_snapshot_id,
        "metadata_location": result.metadata_location,
        "attempts": result.attempts,
    }
    return Output(data, message(f"{table.name}: {done}"))


# ---- compaction ------------------------------------------------------------------------------


def _sort_by(text: str | None) -> str | list[str] | None:
    """``"id,ts:desc"`` -> ``["id", "ts desc"]`` (compaction's form); ``"table"`` as is."""
    if text is None:
        return None
    if text.strip().lower() == _SORT_BY_TABLE:
        return _SORT_BY_TABLE
    out = []
    for item in parse_sort_by(text):
        column, direction = (item, "asc") if isinstance(item, str) else item
        if direction not in ("asc", "desc"):
            raise ValidationError(f"--sort-by {column}:{direction}: use asc or desc")
        out.append(f"{column} {direction}")
    return out


def _selection(args: argparse.Namespace) -> maintenance.FileSelection:
    """The files and groups ``lakecat compact`` rewrites, by its options."""
    return maintenance.FileSelection(
        min_input_files=args.min_input_files,
        min_file_size_bytes=args.min_file_size,
        max_file_size_bytes=args.max_file_size,
        rewrite_all=args.rewrite_all,
        delete_file_threshold=args.delete_file_threshold,
        delete_ratio_threshold=args.delete_ratio_threshold,
        max_group_input_files=args.max_group_input_files,
        max_files_to_rewrite=args.max_files_to_rewrite,
        output_spec_id=args.output_spec_id,
        repartition=not args.keep_other_specs,
    )


def compact(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    sort_by = _sort_by(args.sort_by)
    if args.dry_run:
        return _compaction_plan(ctx, table, args, sort_by)
    with ctx.progress(f"compacting {table.name}") as progress:
        selection = _selection(args)
        result = maintenance.rewrite_data_files(
            table,
            row_filter=args.filter,
            target_file_size_bytes=args.target_file_size,
            sort_by=sort_by,
            progress=progress,
            partial_progress_max_commits=args.max_commits,
            use_starting_sequence_number=not args.commit_sequence_number,
            **_fields(selection),
        )
    failed = [
        {"group": group, "error": type(error).__name__, "message": str(error)}
        for group, error in result.groups_failed
    ]
    data = {"table": table.name, "dry_run": False, **_fields(result), "groups_failed": failed}
    shown_failures = failed if ctx.list_limit is None else failed[: ctx.list_limit]
    more_failures = len(failed) - len(shown_failures)
    view = key_values(
        f"compacted {table.name}",
        {
            "groups committed": f"{result.groups_committed} of {result.groups_total}",
            "groups failed": len(failed),
            **{f"failed: {f['group']}": f"{f['error']}: {f['message']}" for f in shown_failures},
            **({"failed: ...": f"{more_failures} more; -v shows all"} if more_failures else {}),
            "files": f"{result.files_removed} -> {result.files_added}",
            "bytes": f"{human_bytes(result.bytes_removed)} -> {human_bytes(result.bytes_added)}",
            "snapshots": some_of(result.snapshot_ids, every=ctx.full_lists),
        },
    )
    return Output(data, view)


def _compaction_plan(ctx: Context, table: Table, args: argparse.Namespace, sort_by: Any) -> Output:
    """The groups ``rewrite_data_files`` would rewrite with these options (nothing is done)."""
    # The options are resolved as rewrite_data_files resolves them, so the plan is its plan.
    metadata = table.metadata
    if sort_by == _SORT_BY_TABLE and metadata.sort_order().is_unsorted:
        raise ValidationError(f"--sort-by table: {table.name} has no sort order; name columns")
    sort_keys, sort_order_id = compaction_sort(metadata, sort_by)  # UnknownColumn, as the run
    target = args.target_file_size or P.get_int(
        metadata.properties, P.WRITE_TARGET_FILE_SIZE_BYTES, P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
    )
    plan = maintenance.plan_file_groups(
        table.io,
        metadata,
        _selection(args),
        target_file_size_bytes=target,
        row_filter=args.filter,
        sort=sort_keys is not None,
        sort_order_id=sort_order_id,
    )
    groups = [
        {
            "partition": g.partition_name,
            "spec_id": g.spec_id,
            "file_count": len(g.files),
            "record_count": sum(f.record_count for f in g.files),
            "size_bytes": g.size_bytes,
            "files": [f.file_path for f in g.files],
        }
        for g in plan
    ]
    files_total = sum(len(g.files) for g in plan)
    bytes_total = sum(g.size_bytes for g in plan)
    data = {
        "table": table.name,
        "dry_run": True,
        "target_file_size_bytes": target,
        "groups_total": len(groups),
        "files_to_rewrite": files_total,
        "bytes_to_rewrite": bytes_total,
        "groups": groups,
    }
    view = records(
        f"compaction plan for {table.name} (dry run: nothing written)",
        groups,
        [
            Column("partition", "partition", lambda v: v or "(unpartitioned)"),
            Column("file_count", "files", justify="right"),
            Column("record_count", "rows", justify="right"),
            Column("size_bytes", "size", human_bytes, justify="right"),
        ],
        limit=ctx.list_limit,
    )
    footer = message(
        f"{len(groups)} groups, {files_total} files, {human_bytes(bytes_total)} would be rewritten"
    )
    return Output(data, Group(view, footer))


# ---- expiry and cleanup ----------------------------------------------------------------------


def expire_snapshots(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    with ctx.progress(f"expiring snapshots of {table.name}"):
        result = maintenance.expire_snapshots(
            table,
            older_than=args.older_than,
            retain_last=args.retain_last,
            snapshot_ids=tuple(args.snapshot_ids),
            dry_run=args.dry_run,
            delete_files=not args.keep_files,
        )
    data = {"table": table.name, "dry_run": args.dry_run, **_fields(result)}
    verb = "would expire" if args.dry_run else "expired"
    delete_verb = "would delete" if args.dry_run else "deleted"
    view = key_values(
        f"{table.name}: {verb} {len(result.expired_snapshot_ids)} snapshots",
        {
            "snapshots": some_of(result.expired_snapshot_ids, every=ctx.full_lists),
            "refs removed (too old)": some_of(result.removed_refs, every=ctx.full_lists),
            f"data files {delete_verb}": len(result.deleted_data_files),
            f"manifests {delete_verb}": len(result.deleted_manifests),
            f"manifest lists {delete_verb}": len(result.deleted_manifest_lists),
        },
    )
    return Output(data, view)


def remove_orphans(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    with ctx.progress(f"looking for orphan files of {table.name}"):
        result = maintenance.remove_orphan_files(
            table, older_than=args.older_than, location=args.location, dry_run=args.dry_run
        )
    data = {"table": table.name, "dry_run": args.dry_run, **_fields(result)}
    title = (
        f"{table.name}: {len(result.orphans)} orphan files (dry run: nothing deleted)"
        if args.dry_run
        else f"{table.name}: deleted {len(result.orphans)} orphan files"
    )
    view = records(
        title,
        [{"path": p} for p in result.orphans],
        [Column("path", "path", fold=True)],
        limit=ctx.list_limit,
    )
    return Output(data, view)


def remove_dangling_deletes(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    with ctx.progress(f"looking for dangling delete files of {table.name}"):
        result = maintenance.remove_dangling_deletes(table, dry_run=args.dry_run)
    removed = [
        {"path": f.file_path, "content": f.content.name.lower(), "record_count": f.record_count}
        for f in result.removed
    ]
    data = {
        "table": table.name,
        "dry_run": args.dry_run,
        "removed": removed,
        "snapshot_id": result.snapshot_id,
    }
    verb = "would remove" if args.dry_run else "removed"
    view = records(
        f"{table.name}: {verb} {len(removed)} dangling delete files",
        removed,
        [Column("path", "path", fold=True), Column("content", "content")],
        limit=ctx.list_limit,
    )
    return Output(data, view)


def rewrite_manifests(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    result = maintenance.rewrite_manifests(table, target_size_bytes=args.target_size)
    data = {"table": table.name, **_fields(result)}
    return Output(
        data,
        message(
            f"{table.name}: {result.manifests_before} manifests -> {result.manifests_after}"
            + (
                " (nothing to rewrite)"
                if result.snapshot_id is None
                else f" (snapshot {result.snapshot_id})"
            )
        ),
    )


def partition_stats(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    result = maintenance.compute_partition_stats(table, args.snapshot_id)
    if result is None:
        return Output({"table": table.name}, message(f"{table.name}: no snapshot to describe"))
    data = {"table": table.name, **_fields(result)}
    return Output(
        data,
        message(
            f"{table.name}: snapshot {result.snapshot_id}'s partition statistics in {result.path}"
        ),
    )


def rewrite_path(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    result = maintenance.rewrite_table_path(
        table,
        args.source_prefix,
        args.target_prefix,
        start_version=args.start_version,
        end_version=args.end_version,
        staging_location=args.staging_location,
        create_file_list=not args.no_file_list,
    )
    data = {"table": table.name, **_fields(result)}
    data["copy_plan"] = [list(pair) for pair in result.copy_plan]
    listed = "" if args.no_file_list else f"; the copy plan is {result.file_list_location}"
    return Output(
        data,
        message(
            f"{table.name}: {len(result.copy_plan)} files to copy, metadata staged in "
            f"{result.staging_location}{listed}; register {result.latest_version} at the target"
        ),
    )


def rewrite_position_deletes(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    result = maintenance.rewrite_position_delete_files(table, min_input_files=args.min_input_files)
    data = {"table": table.name, **_fields(result)}
    if result.snapshot_id is None:
        text = (
            f"{table.name}: no data file has {args.min_input_files} or more position delete files"
        )
    else:
        text = (
            f"{table.name}: {result.delete_files_removed} position delete files of "
            f"{result.data_files} data files -> {result.delete_files_added} "
            f"(snapshot {result.snapshot_id})"
        )
    return Output(data, message(text))


# ---- history editing ---------------------------------------------------------------------------


def rollback(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    if args.to_snapshot is not None:
        result = maintenance.rollback_to_snapshot(table, args.to_snapshot)
    else:
        result = maintenance.rollback_to_timestamp(table, args.to_timestamp)
    current = table.metadata.current_snapshot_id
    return _commit_output(table, result, f"rolled back; current snapshot is {current}")


def cherry_pick(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    result = maintenance.cherry_pick(table, args.snapshot_id)
    return _commit_output(
        table, result, f"cherry-picked {args.snapshot_id} as snapshot {result.snapshot_id}"
    )


def publish(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    staged, result = maintenance.publish_changes(table, args.wap_id)
    return _commit_output(
        table, result, f"published {args.wap_id!r} (snapshot {staged}) as {result.snapshot_id}"
    )


def set_current(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    result = maintenance.set_current_snapshot(table, args.snapshot_id)
    return _commit_output(table, result, f"current snapshot is {args.snapshot_id}")


def fast_forward(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    result = maintenance.fast_forward(table, args.branch, args.to_ref)
    head = table.metadata.refs[args.branch].snapshot_id
    return _commit_output(table, result, f"branch {args.branch} now at snapshot {head}")


# ---- refs -------------------------------------------------------------------------------------


def _ref_command(kind: str) -> Command:
    def command(ctx: Context, args: argparse.Namespace) -> Output:
        table = ctx.table(args.table)
        name = args.ref_name
        target = args.snapshot_id
        if args.action == "remove":
            result = table.remove_ref(name)
            return _commit_output(table, result, f"removed {kind} {name}")
        if target is None:
            target = table.metadata.current_snapshot_id
        if args.action == "create":
            create = table.create_tag if kind == "tag" else table.create_branch
            result = create(name, target)
        else:
            replace = table.replace_tag if kind == "tag" else table.replace_branch
            result = replace(name, _require_snapshot(table, target, name))
        head = table.metadata.refs[name].snapshot_id
        output = _commit_output(table, result, f"{args.action}d {kind} {name} at snapshot {head}")
        return Output(
            {**output.data, "ref": name, "type": kind, "ref_snapshot_id": head}, output.view
        )

    return command


def _require_snapshot(table: Table, snapshot_id: int | None, name: str) -> int:
    if snapshot_id is None:
        raise ValidationError(f"{table.name} has no snapshot to point {name!r} at")
    return snapshot_id


# ---- change feed ------------------------------------------------------------------------------


def changes(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    change_set = change_feed.changes(
        table,
        from_snapshot_id=args.from_id,
        to_snapshot_id=args.to_id,
        since=args.since,
        columns=split_list(args.columns) or None,
    )
    sides = {}
    views = []
    for side in ("added", "removed"):
        rows_table = getattr(change_set, side)
        rows = rows_table.slice(0, args.limit).to_pylist()
        sides[side] = {
            "row_count": rows_table.num_rows,
            "rows": rows,
            "truncated": rows_table.num_rows > len(rows),
        }
        shown = f" (first {len(rows)})" if rows_table.num_rows > len(rows) else ""
        views.append(
            rows_view(rows_table.column_names, rows, f"{rows_table.num_rows} rows {side}{shown}")
        )
    data = {
        "table": table.name,
        "snapshot_ids": list(change_set.snapshot_ids),
        **sides,
    }
    title = message(
        f"changes of {table.name} over snapshots "
        + some_of(change_set.snapshot_ids, every=ctx.full_lists)
    )
    return Output(data, Group(title, *views))


MAINTENANCE_COMMANDS: dict[str, Command] = {
    "compact": compact,
    "expire-snapshots": expire_snapshots,
    "remove-orphans": remove_orphans,
    "remove-dangling-deletes": remove_dangling_deletes,
    "rewrite-manifests": rewrite_manifests,
    "partition-stats": partition_stats,
    "rewrite-path": rewrite_path,
    "rewrite-position-deletes": rewrite_position_deletes,
    "rollback": rollback,
    "cherry-pick": cherry_pick,
    "publish": publish,
    "set-current": set_current,
    "fast-forward": fast_forward,
    "tag": _ref_command("tag"),
    "branch": _ref_command("branch"),
    "changes": changes,
}
