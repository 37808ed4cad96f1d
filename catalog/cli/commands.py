"""The ``lakecat`` commands for namespaces, tables and inspection, and the dispatcher.

Each command returns an :class:`~lakecat.catalog.cli.context.Output`: the ``--json`` record
and its rich view. Maintenance and ref commands live in :mod:`lakecat.catalog.cli.maintenance`,
row-level changes (delete, update, upsert, overwrite) in :mod:`lakecat.catalog.cli.row_changes`.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
from rich.console import Group, RenderableType

from lakecat.catalog.cli.args import split_list
from lakecat.catalog.cli.config import require_warehouse
from lakecat.catalog.cli.context import Command, Context, Output
from lakecat.catalog.cli.maintenance import MAINTENANCE_COMMANDS
from lakecat.catalog.cli.render import (
    Column,
    file_record,
    human_bytes,
    human_time,
    iso_time,
    key_values,
    message,
    records,
    ref_record,
    rows_view,
    schema_record,
    snapshot_record,
    some_of,
    sort_order_record,
    spec_record,
    table_view,
)
from lakecat.catalog.cli.row_changes import ROW_CHANGE_COMMANDS
from lakecat.catalog.cli.schema import parse_partition_by, parse_sort_by, read_schema_argument
from lakecat.catalog.cli.views import READ_ONLY_VIEW_COMMANDS, VIEW_COMMANDS
from lakecat.catalog.identifiers import namespace_to_string, parse_namespace
from lakecat.catalog.table import Table
from lakecat.metadata.table.snapshots import Snapshot

__all__ = ["COMMANDS", "READ_ONLY_COMMANDS", "run", "table_description", "writes"]

# Snapshot summary keys with the table totals (Iceberg's SnapshotSummary).
_TOTAL_FILES = "total-data-files"
_TOTAL_RECORDS = "total-records"
_TOTAL_SIZE = "total-files-size"


def run(args: argparse.Namespace, *, env: Mapping[str, str]) -> int:
    """Run the command ``args`` names and print its output; return the exit code (0)."""
    ctx = Context(args, env=env, writes=writes(args))
    try:
        ctx.emit(COMMANDS[args.command](ctx, args))
    finally:
        ctx.close()
    return 0


def writes(args: argparse.Namespace) -> bool:
    """Whether the command ``args`` names may change the catalog (a dry run does not)."""
    return args.command not in READ_ONLY_COMMANDS and not getattr(args, "dry_run", False)


def _properties(pairs: list[tuple[str, str]]) -> dict[str, str]:
    return dict(pairs)


def _table_names(namespace: tuple[str, ...], names: list[tuple[tuple[str, ...], str]]) -> list[str]:
    return sorted(f"{namespace_to_string(ns)}.{name}" for ns, name in names)


# ---- namespaces -------------------------------------------------------------------------------


def namespaces_list(ctx: Context, args: argparse.Namespace) -> Output:
    names = sorted(
        namespace_to_string(ns) for ns in ctx.catalog().list_namespaces(args.parent or ())
    )
    return Output(
        {"parent": args.parent, "namespaces": names},
        records(None, [{"namespace": n} for n in names], [Column("namespace", "namespace")]),
    )


def namespaces_create(ctx: Context, args: argparse.Namespace) -> Output:
    namespace = namespace_to_string(parse_namespace(args.namespace))
    properties = _properties(args.property)
    ctx.catalog().create_namespace(namespace, properties)
    return Output(
        {"namespace": namespace, "created": True, "properties": properties},
        message(f"created namespace {namespace}"),
    )


def namespaces_drop(ctx: Context, args: argparse.Namespace) -> Output:
    namespace = namespace_to_string(parse_namespace(args.namespace))
    ctx.catalog().drop_namespace(namespace)
    return Output(
        {"namespace": namespace, "dropped": True}, message(f"dropped namespace {namespace}")
    )


def namespaces_describe(ctx: Context, args: argparse.Namespace) -> Output:
    namespace = parse_namespace(args.namespace)
    catalog = ctx.catalog()
    properties = dict(sorted(catalog.namespace_properties(namespace).items()))
    tables = _table_names(namespace, catalog.list_tables(namespace))
    views = _table_names(namespace, catalog.list_views(namespace))
    children = sorted(namespace_to_string(ns) for ns in catalog.list_namespaces(namespace))
    name = namespace_to_string(namespace)
    data = {
        "namespace": name,
        "properties": properties,
        "namespaces": children,
        "tables": tables,
        "views": views,
    }
    view = key_values(
        name,
        {
            **{f"property {k}": v for k, v in properties.items()},
            "namespaces": some_of(children, every=ctx.full_lists),
            "tables": some_of(tables, every=ctx.full_lists),
            "views": some_of(views, every=ctx.full_lists),
        },
    )
    return Output(data, view)


# ---- tables ---------------------------------------------------------------------------------


def tables_list(ctx: Context, args: argparse.Namespace) -> Output:
    namespace = parse_namespace(args.namespace)
    names = _table_names(namespace, ctx.catalog().list_tables(namespace))
    return Output(
        {"namespace": namespace_to_string(namespace), "tables": names},
        records(None, [{"table": n} for n in names], [Column("table", "table")]),
    )


def table_description(table: Table) -> dict[str, Any]:
    """The ``tables describe`` record of a table."""
    md = table.metadata
    schema = md.schema()
    snapshot = md.current_snapshot
    return {
        "table": table.name,
        "location": md.location,
        "metadata_location": table.metadata_location,
        "table_uuid": md.table_uuid,
        "format_version": md.format_version,
        "last_updated_ms": md.last_updated_ms,
        "last_updated": iso_time(md.last_updated_ms),
        "schema": schema_record(schema),
        "partition_spec": spec_record(md.spec(), schema),
        "sort_order": sort_order_record(md.sort_order(), schema),
        "properties": dict(sorted(md.properties.items())),
        "current_snapshot": None if snapshot is None else snapshot_record(snapshot, md),
        "counts": _counts(table, snapshot),
    }


def _counts(table: Table, snapshot: Snapshot | None) -> dict[str, int]:
    md = table.metadata
    counts = {"snapshots": len(md.snapshots), "refs": len(md.refs), "schemas": len(md.schemas)}
    if snapshot is None:
        return {**counts, "data_files": 0, "records": 0, "total_size_bytes": 0}
    summary = snapshot.summary
    if all(k in summary for k in (_TOTAL_FILES, _TOTAL_RECORDS, _TOTAL_SIZE)):
        return {
            **counts,
            "data_files": int(summary[_TOTAL_FILES]),
            "records": int(summary[_TOTAL_RECORDS]),
            "total_size_bytes": int(summary[_TOTAL_SIZE]),
        }
    # A snapshot written without totals (some engines omit them): count from the manifests.
    files = table.scan(snapshot_id=snapshot.snapshot_id).plan_files()
    return {
        **counts,
        "data_files": len(files),
        "records": sum(f.record_count for f in files),
        "total_size_bytes": sum(f.file_size_in_bytes for f in files),
    }


def tables_describe(ctx: Context, args: argparse.Namespace) -> Output:
    data = table_description(ctx.table(args.table))
    return Output(data, table_view(data))


def tables_create(ctx: Context, args: argparse.Namespace) -> Output:
    if args.location is None:
        require_warehouse(ctx.settings(), or_else="give the table a --location")
    schema = read_schema_argument(args.schema)
    table = ctx.catalog().create_table(
        args.table,
        schema,
        partition_by=parse_partition_by(args.partition_by),
        sort_by=parse_sort_by(args.sort_by),
        properties=_properties(args.property),
        location=args.location,
    )
    data = table_description(table)
    return Output(data, table_view(data))


def tables_create_like(ctx: Context, args: argparse.Namespace) -> Output:
    if args.location is None:
        require_warehouse(ctx.settings(), or_else="give the table a --location")
    table = ctx.catalog().create_table_like(
        args.table,
        ctx.table(args.source),
        properties=_properties(args.property),
        location=args.location,
    )
    data = table_description(table)
    return Output(data, table_view(data))


def tables_drop(ctx: Context, args: argparse.Namespace) -> Output:
    ctx.catalog().drop_table(args.table, purge=args.purge)
    what = "dropped and purged" if args.purge else "dropped"
    return Output(
        {"table": args.table, "dropped": True, "purged": args.purge},
        message(f"{what} table {args.table}"),
    )


def tables_rename(ctx: Context, args: argparse.Namespace) -> Output:
    ctx.catalog().rename_table(args.source, args.destination)
    return Output(
        {"table": args.source, "renamed_to": args.destination},
        message(f"renamed table {args.source} to {args.destination}"),
    )


def tables_register(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.catalog().register_table(args.table, args.metadata_location)
    return Output(
        {
            "table": args.table,
            "metadata_location": table.metadata_location,
            "current_snapshot_id": table.metadata.current_snapshot_id,
        },
        message(f"registered table {args.table} at {table.metadata_location}"),
    )


def tables_add_files(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    result = table.add_files(args.paths, check_duplicates=not args.allow_duplicates)
    count = len(args.paths)
    return Output(
        {"table": args.table, "added_files": count, "snapshot_id": result.snapshot_id},
        message(f"added {count} file(s) to {args.table} (snapshot {result.snapshot_id})"),
    )


# ---- inspection -----------------------------------------------------------------------------


def history(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    entries = [
        {
            "timestamp_ms": ts,
            "timestamp": iso_time(ts),
            "snapshot_id": snapshot_id,
            "is_current_ancestor": ancestor,
        }
        for ts, snapshot_id, ancestor in table.history()
    ]
    view = records(
        f"history of {table.name}",
        entries,
        [
            Column("timestamp_ms", "made current at", human_time),
            Column("snapshot_id", "snapshot", justify="right", keep=True),
            Column("is_current_ancestor", "current ancestor"),
        ],
    )
    return Output({"table": table.name, "history": entries}, view)


def snapshots(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    md = table.metadata
    items = [snapshot_record(s, md) for s in table.snapshots()]
    view = records(
        f"snapshots of {table.name}",
        [
            {
                **s,
                "added_records": s["summary"].get("added-records"),
                "deleted_records": s["summary"].get("deleted-records"),
                "total_records": s["summary"].get(_TOTAL_RECORDS),
            }
            for s in items
        ],
        [
            Column("snapshot_id", "snapshot", justify="right", keep=True),
            Column("parent_snapshot_id", "parent", _blank_if_none, justify="right", keep=True),
            Column("timestamp_ms", "committed at", human_time),
            Column("operation", "operation"),
            Column("added_records", "+rows", _blank_if_none, justify="right"),
            Column("total_records", "rows", _blank_if_none, justify="right"),
            Column("refs", "refs", lambda v: ", ".join(v)),
        ],
    )
    return Output(
        {"table": table.name, "current_snapshot_id": md.current_snapshot_id, "snapshots": items},
        view,
    )


def _selected_scan_args(args: argparse.Namespace) -> dict[str, Any]:
    return {"snapshot_id": args.snapshot_id, "as_of": args.as_of, "ref": args.ref}


def files(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    scan = table.scan(args.filter, **_selected_scan_args(args))
    plan = scan.plan()
    items = [
        {
            **file_record(f, table.metadata),
            "delete_files": [d.file_path for d in plan.deletes.get(f.file_path, ())],
        }
        for f in plan.files
    ]
    applying: dict[str, Any] = {}
    for f in plan.files:
        for d in plan.deletes.get(f.file_path, ()):
            applying.setdefault(d.file_path, (d, []))[1].append(f.file_path)
    delete_items = [
        {**file_record(d, table.metadata), "applies_to": len(targets)}
        for d, targets in applying.values()
    ]
    data = {
        "table": table.name,
        "snapshot_id": None if scan.snapshot is None else scan.snapshot.snapshot_id,
        "file_count": len(items),
        "record_count": sum(f["record_count"] for f in items),
        "total_size_bytes": sum(f["file_size_in_bytes"] for f in items),
        "files": items,
        "delete_file_count": len(delete_items),
        "delete_files": delete_items,
    }
    columns = [
        Column("path", "path", fold=True),
        Column("partition_text", "partition"),
        Column("record_count", "rows", justify="right"),
        Column("file_size_in_bytes", "size", human_bytes, justify="right"),
    ]
    if delete_items:  # how many delete files apply to each
        columns.append(Column("delete_files", "deletes", len, justify="right"))
    view = records(
        f"data files of {table.name} {_at(data['snapshot_id'])}",
        [{**f, "partition_text": _partition_text(f["partition"])} for f in items],
        columns,
    )
    parts: list[RenderableType] = [view]
    summary = (
        f"{data['file_count']} files, {data['record_count']} rows, "
        f"{human_bytes(data['total_size_bytes'])}"
    )
    if delete_items:
        parts.append(
            records(
                "delete files that apply to them",
                [{**d, "partition_text": _partition_text(d["partition"])} for d in delete_items],
                [
                    Column("path", "path", fold=True),
                    Column("content", "kind"),
                    Column("format", "format"),
                    Column("partition_text", "partition"),
                    Column("record_count", "deletes", justify="right"),
                    Column("applies_to", "files", justify="right"),
                ],
            )
        )
        summary += (
            f" before deletes; {len(delete_items)} delete files "
            f"({sum(d['record_count'] for d in delete_items)} deletes)"
        )
    parts.append(message(summary))
    return Output(data, Group(*parts))


def _at(snapshot_id: int | None) -> str:
    return "(the table has no snapshot)" if snapshot_id is None else f"at snapshot {snapshot_id}"


def _partition_text(partition: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={'null' if v is None else v}" for k, v in partition.items())


def refs(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    items = [ref_record(name, ref) for name, ref in sorted(table.refs().items())]
    view = records(
        f"refs of {table.name}",
        [{**r, "retention": _retention_text(r)} for r in items],
        [
            Column("name", "name"),
            Column("type", "type"),
            Column("snapshot_id", "snapshot", justify="right", keep=True),
            Column("retention", "retention"),
        ],
    )
    return Output({"table": table.name, "refs": items}, view)


def _retention_text(ref: Mapping[str, Any]) -> str:
    keys = ("max_ref_age_ms", "max_snapshot_age_ms", "min_snapshots_to_keep")
    return ", ".join(f"{k}={ref[k]}" for k in keys if ref[k] is not None)


def _blank_if_none(value: Any) -> Any:
    return "" if value is None else value


def first_rows(batches: Iterable[pa.RecordBatch], limit: int) -> tuple[pa.Table | None, bool]:
    """The first ``limit`` rows of a stream of record batches, and whether there were more."""
    taken: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        taken.append(batch)
        count += batch.num_rows
        if count > limit:
            break
    if not taken:
        return None, False
    return pa.Table.from_batches(taken).slice(0, limit), count > limit


def show(ctx: Context, args: argparse.Namespace) -> Output:
    table = ctx.table(args.table)
    columns = split_list(args.columns) or None
    scan = table.scan(args.filter, columns=columns, **_selected_scan_args(args))
    names = [f.name for f in scan.projected.fields]
    rows_table, truncated = first_rows(scan.to_batches(), args.limit)
    rows = [] if rows_table is None else rows_table.to_pylist()
    snapshot_id = None if scan.snapshot is None else scan.snapshot.snapshot_id
    data = {
        "table": table.name,
        "snapshot_id": snapshot_id,
        "columns": names,
        "rows": rows,
        "row_count": len(rows),
        "truncated": truncated,
    }
    more = f" (first {args.limit}; more rows match)" if truncated else ""
    footer = f"{len(rows)} rows{more} {_at(snapshot_id)}"
    return Output(data, rows_view(names, rows, footer))


# The commands that only read. Like dry runs, they refuse to open a SQLite catalog file that
# does not exist, unless --create is given (lakecat.catalog.cli.context).
READ_ONLY_COMMANDS = frozenset(
    {
        "namespaces list",
        "namespaces describe",
        "tables list",
        "tables describe",
        "history",
        "snapshots",
        "files",
        "refs",
        "show",
        "changes",
        *READ_ONLY_VIEW_COMMANDS,
    }
)

COMMANDS: dict[str, Command] = {
    "namespaces list": namespaces_list,
    "namespaces create": namespaces_create,
    "namespaces drop": namespaces_drop,
    "namespaces describe": namespaces_describe,
    "tables list": tables_list,
    "tables describe": tables_describe,
    "tables create": tables_create,
    "tables drop": tables_drop,
    "tables rename": tables_rename,
    "tables register": tables_register,
    "tables create-like": tables_create_like,
    "tables add-files": tables_add_files,
    "history": history,
    "snapshots": snapshots,
    "files": files,
    "refs": refs,
    "show": show,
    **ROW_CHANGE_COMMANDS,
    **MAINTENANCE_COMMANDS,
    **VIEW_COMMANDS,
}
