"""The ``lakecat views`` commands: list, describe, create, replace, roll back, rename and drop
Iceberg views (the catalog's ``VIEW`` rows; :mod:`lakecat.catalog.views`). lakecat stores a
view's queries; engines run them."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Group
from rich.text import Text

from lakecat.catalog.cli.config import require_warehouse
from lakecat.catalog.cli.context import Command, Context, Output
from lakecat.catalog.cli.render import (
    Column,
    human_time,
    iso_time,
    key_values,
    message,
    records,
    schema_record,
)
from lakecat.catalog.cli.schema import read_schema_argument
from lakecat.catalog.identifiers import namespace_to_string, parse_namespace
from lakecat.catalog.views import View
from lakecat.metadata.errors import ValidationError

__all__ = ["READ_ONLY_VIEW_COMMANDS", "VIEW_COMMANDS", "view_description"]


def views_list(ctx: Context, args: argparse.Namespace) -> Output:
    namespace = parse_namespace(args.namespace)
    names = sorted(
        f"{namespace_to_string(ns)}.{name}" for ns, name in ctx.catalog().list_views(namespace)
    )
    return Output(
        {"namespace": namespace_to_string(namespace), "views": names},
        records(None, [{"view": n} for n in names], [Column("view", "view")]),
    )


def view_description(view: View) -> dict[str, Any]:
    """The ``views describe`` record of a view."""
    md = view.metadata
    current = md.current_version
    return {
        "view": view.name,
        "location": md.location,
        "metadata_location": view.metadata_location,
        "view_uuid": md.view_uuid,
        "format_version": md.format_version,
        "current_version_id": md.current_version_id,
        "default_catalog": current.default_catalog,
        "default_namespace": namespace_to_string(current.default_namespace)
        if current.default_namespace
        else None,
        "queries": {r.dialect: r.sql for r in current.representations},
        "schema": schema_record(md.schema()),
        "properties": dict(sorted(md.properties.items())),
        "versions": [
            {
                "version_id": v.version_id,
                "timestamp_ms": v.timestamp_ms,
                "created": iso_time(v.timestamp_ms),
                "schema_id": v.schema_id,
                "dialects": sorted(r.dialect for r in v.representations),
                "engine": v.summary.get("engine-name"),
                "current": v.version_id == md.current_version_id,
            }
            for v in md.versions
        ],
        "history": [
            {"version_id": e.version_id, "timestamp_ms": e.timestamp_ms} for e in md.version_log
        ],
    }


def _view_view(data: dict[str, Any]) -> Group:
    overview = key_values(
        data["view"],
        {
            "location": data["location"],
            "metadata": data["metadata_location"],
            "uuid": data["view_uuid"],
            "current version": data["current_version_id"],
            "default catalog": data["default_catalog"] or "(the view's own)",
            "default namespace": data["default_namespace"],
            **{f"query ({dialect})": sql for dialect, sql in data["queries"].items()},
        },
    )
    schema = records(
        f"schema {data['schema']['schema_id']}",
        data["schema"]["fields"],
        [
            Column("id", "id", justify="right"),
            Column("name", "name"),
            Column("type", "type"),
            Column("doc", "doc", lambda v: v or ""),
        ],
    )
    versions = records(
        "versions",
        data["versions"],
        [
            Column("version_id", "version", justify="right"),
            Column("timestamp_ms", "created", human_time),
            Column("schema_id", "schema", justify="right"),
            Column("dialects", "dialects", lambda v: ", ".join(v)),
            Column("engine", "engine", lambda v: v or ""),
            Column("current", "current", lambda v: "*" if v else ""),
        ],
    )
    return Group(overview, Text(""), schema, versions, key_values("properties", data["properties"]))


def views_describe(ctx: Context, args: argparse.Namespace) -> Output:
    data = view_description(ctx.catalog().load_view(args.view))
    return Output(data, _view_view(data))


def _queries(args: argparse.Namespace) -> dict[str, str]:
    """``--sql QUERY`` (Spark's dialect) and ``--dialect-sql DIALECT QUERY`` (repeatable)."""
    queries: dict[str, str] = {} if args.sql is None else {"spark": args.sql}
    for dialect, query in args.dialect_sql:
        if dialect.lower() in {d.lower() for d in queries}:
            raise ValidationError(f"two queries of dialect {dialect!r}")
        queries[dialect] = query
    if not queries:
        raise ValidationError("give the view's query: --sql QUERY or --dialect-sql DIALECT QUERY")
    return queries


def _definition(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments of ``views create`` and ``views replace`` that define a version."""
    return {
        "sql": _queries(args),
        "schema": read_schema_argument(args.schema),
        "default_namespace": parse_namespace(args.default_namespace)
        if args.default_namespace
        else None,
        "default_catalog": args.default_catalog,
        "properties": dict(args.property),
    }


def views_create(ctx: Context, args: argparse.Namespace) -> Output:
    if args.location is None:
        require_warehouse(ctx.settings(), or_else="give the view a --location")
    view = ctx.catalog().create_view(args.view, location=args.location, **_definition(args))
    data = view_description(view)
    return Output(data, _view_view(data))


def views_replace(ctx: Context, args: argparse.Namespace) -> Output:
    view = ctx.catalog().load_view(args.view).replace(**_definition(args))
    data = view_description(view)
    return Output(data, _view_view(data))


def views_rollback(ctx: Context, args: argparse.Namespace) -> Output:
    view = ctx.catalog().load_view(args.view).set_current_version(args.version_id)
    return Output(
        {"view": view.name, "current_version_id": view.metadata.current_version_id},
        message(f"view {view.name} is at version {view.metadata.current_version_id}"),
    )


def views_drop(ctx: Context, args: argparse.Namespace) -> Output:
    ctx.catalog().drop_view(args.view)
    return Output({"view": args.view, "dropped": True}, message(f"dropped view {args.view}"))


def views_rename(ctx: Context, args: argparse.Namespace) -> Output:
    ctx.catalog().rename_view(args.source, args.destination)
    return Output(
        {"view": args.source, "renamed_to": args.destination},
        message(f"renamed view {args.source} to {args.destination}"),
    )


VIEW_COMMANDS: dict[str, Command] = {
    "views list": views_list,
    "views describe": views_describe,
    "views create": views_create,
    "views replace": views_replace,
    "views rollback": views_rollback,
    "views drop": views_drop,
    "views rename": views_rename,
}

READ_ONLY_VIEW_COMMANDS = frozenset({"views list", "views describe"})
