"""The ``lakecat`` command: namespaces, tables, inspection and maintenance from a shell.

::

    lakecat --catalog sqlite:///lake/catalog.db --warehouse lake/warehouse namespaces list
    lakecat tables describe db.events --json
    lakecat show db.events --limit 5 --as-of 2024-01-01T00:00:00
    lakecat expire-snapshots db.events --older-than 7d --dry-run

The catalog comes from flags, environment variables or a config file
(:mod:`lakecat.catalog.cli.config`); ``docs/cli.md`` documents every command.

This module owns the argument grammar and the process contract: exit code 0 on success, 1 for
any :class:`~lakecat.metadata.errors.LakecatError` (one line ``lakecat: error: ...`` on stderr,
the traceback only with ``-v``), 2 for a usage error, 130 when interrupted. With ``--json``
stdout carries exactly one JSON document. The commands themselves live in
:mod:`lakecat.catalog.cli.commands` and :mod:`lakecat.catalog.cli.maintenance`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from lakecat.catalog.cli.args import (
    byte_size,
    key_value,
    non_blank,
    non_negative_int,
    positive_int,
    ratio,
    timestamp_ms,
)
from lakecat.catalog.cli.commands import run
from lakecat.catalog.cli.values import FILE_FORMATS
from lakecat.catalog.engine import (
    DEFAULT_DELETE_RATIO_THRESHOLD,
    DEFAULT_MIN_INPUT_FILES,
    DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS,
    lakecat_version,
)
from lakecat.metadata.errors import LakecatError

__all__ = ["UsageError", "build_parser", "main"]

PROG = "lakecat"
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A command line that does not parse; reported in one line with exit code 2."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing usage and exiting, so that ``main``
    reports every error the same way (one line) and stays callable from tests."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.prog)


# ---- the grammar -------------------------------------------------------------------------


def _global_options(*, suppress: bool) -> _Parser:
    """The options every command accepts, before or after the command words.

    On the subcommands the defaults are SUPPRESS, so that an option given before the command
    is not overwritten by the subcommand's default.
    """
    default = argparse.SUPPRESS if suppress else None
    parent = _Parser(add_help=False)
    group = parent.add_argument_group("catalog and output")
    group.add_argument("--catalog", metavar="URL", default=default, help="catalog database URL")
    group.add_argument("--warehouse", metavar="PATH_OR_URI", default=default, help="warehouse")
    group.add_argument("--name", metavar="CATALOG_NAME", default=default, help="catalog name")
    group.add_argument("--config", metavar="FILE", default=default, help="TOML config file")
    group.add_argument("--profile", metavar="NAME", default=default, help="[catalogs.NAME]")
    group.add_argument(
        "--create",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="start an empty SQLite catalog if its file is missing (commands that change the "
        "catalog always do; the others refuse a missing file)",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="print one JSON document",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if suppress else 0,
        help="long lists in full; log progress; show tracebacks (-vv: debug logs)",
    )
    return parent


class _Commands:
    """Adds leaf commands, each tagged with the key of its handler."""

    def __init__(self, common: _Parser) -> None:
        self._common = common

    def group(
        self, parent: argparse.ArgumentParser, title: str
    ) -> argparse._SubParsersAction[_Parser]:
        return parent.add_subparsers(
            title=title,
            dest=f"_{title}_choice",
            metavar=title.upper(),
            required=True,
            parser_class=_Parser,
        )

    def leaf(
        self,
        subparsers: argparse._SubParsersAction[_Parser],
        name: str,
        key: str,
        help_text: str,
    ) -> _Parser:
        parser = subparsers.add_parser(
            name, help=help_text, description=help_text, parents=[self._common]
        )
        parser.set_defaults(command=key)
        return parser


def _add_snapshot_selector(parser: argparse.ArgumentParser) -> None:
    chooser = parser.add_mutually_exclusive_group()
    chooser.add_argument("--snapshot-id", type=int, metavar="ID", help="read this snapshot")
    chooser.add_argument(
        "--as-of", type=timestamp_ms, metavar="TIME", help="the snapshot current at TIME"
    )
    chooser.add_argument("--ref", metavar="NAME", help="the head of a branch or tag")


def build_parser() -> _Parser:
    """The whole ``lakecat`` grammar."""
    parser = _Parser(
        prog=PROG,
        description="Manage lakecat (Apache Iceberg v2) catalogs and tables.",
        epilog="Catalog: --catalog/--warehouse, LAKECAT_CATALOG_URL/LAKECAT_WAREHOUSE, or "
        "./lakecat.toml. See docs/cli.md.",
        parents=[_global_options(suppress=False)],
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {lakecat_version()}")
    parser.add_argument(
        "--property",
        dest="catalog_properties",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a catalog property, e.g. s3.endpoint=http://127.0.0.1:9000 (repeatable; before "
        "the command: after it, tables/namespaces create take table/namespace properties)",
    )
    commands = _Commands(_global_options(suppress=True))
    top = commands.group(parser, "command")
    _add_namespace_commands(commands, top)
    _add_table_commands(commands, top)
    _add_inspection_commands(commands, top)
    _add_row_change_commands(commands, top)
    _add_maintenance_commands(commands, top)
    _add_ref_commands(commands, top)
    _add_view_commands(commands, top)
    return parser


def _add_namespace_commands(commands: _Commands, top: argparse._SubParsersAction[_Parser]) -> None:
    group = commands.group(
        top.add_parser("namespaces", help="list, create, drop namespaces"), "action"
    )
    p = commands.leaf(group, "list", "namespaces list", "list namespaces (under PARENT)")
    p.add_argument("parent", nargs="?", help="list the namespaces nested in this one")
    p = commands.leaf(group, "create", "namespaces create", "create a namespace")
    p.add_argument("namespace")
    p.add_argument("--property", type=key_value, action="append", default=[], metavar="KEY=VALUE")
    p = commands.leaf(group, "drop", "namespaces drop", "drop an empty namespace")
    p.add_argument("namespace")
    p = commands.leaf(group, "describe", "namespaces describe", "properties and tables")
    p.add_argument("namespace")


def _add_table_commands(commands: _Commands, top: argparse._SubParsersAction[_Parser]) -> None:
    group = commands.group(
        top.add_parser("tables", help="list, describe, create, drop tables"), "action"
    )
    p = commands.leaf(group, "list", "tables list", "list the tables of a namespace")
    p.add_argument("namespace")
    p = commands.leaf(group, "describe", "tables describe", "schema, partitioning, state")
    p.add_argument("table")
    p = commands.leaf(group, "create", "tables create", "create a table from a schema")
    p.add_argument("table")
    p.add_argument(
        "--schema",
        required=True,
        metavar="FILE_OR_JSON",
        help='a JSON file, inline JSON or "-" (stdin): an Iceberg schema or '
        '{"id": "long", "name": "string?"} ("?" = optional)',
    )
    p.add_argument("--partition-by", metavar="SPEC", help='e.g. "ts:day,region,id:bucket[16]"')
    p.add_argument("--sort-by", metavar="ORDER", help='e.g. "id,ts:desc"')
    p.add_argument("--property", type=key_value, action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--location", metavar="URI", help="table location (default: in warehouse)")
    p = commands.leaf(
        group,
        "create-like",
        "tables create-like",
        "create an empty table shaped like another (schema, partitioning, sort order, "
        "format version, properties)",
    )
    p.add_argument("table")
    p.add_argument("source", metavar="SOURCE_TABLE")
    p.add_argument("--property", type=key_value, action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--location", metavar="URI", help="table location (default: in warehouse)")
    p = commands.leaf(group, "drop", "tables drop", "drop a table")
    p.add_argument("table")
    p.add_argument("--purge", action="store_true", help="also delete all of its files")
    p = commands.leaf(group, "rename", "tables rename", "rename (or move) a table")
    p.add_argument("source")
    p.add_argument("destination")
    p = commands.leaf(
        group, "register", "tables register", "add an existing table by its metadata file"
    )
    p.add_argument("table")
    p.add_argument("metadata_location", metavar="METADATA_FILE")
    p = commands.leaf(
        group,
        "add-files",
        "tables add-files",
        "add existing Parquet files to a table as they are (one append)",
    )
    p.add_argument("table")
    p.add_argument("paths", nargs="+", metavar="PATH", help="Parquet files (paths or URIs)")
    p.add_argument(
        "--allow-duplicates",
        action="store_true",
        help="do not refuse files the table already holds",
    )


def _add_inspection_commands(commands: _Commands, top: argparse._SubParsersAction[_Parser]) -> None:
    p = commands.leaf(top, "history", "history", "the snapshot log of a table")
    p.add_argument("table")
    p = commands.leaf(top, "snapshots", "snapshots", "every snapshot a table still holds")
    p.add_argument("table")
    p = commands.leaf(top, "files", "files", "the data files of a snapshot")
    p.add_argument("table")
    _add_snapshot_selector(p)
    p.add_argument("--filter", metavar="EXPR", help="only files that may hold matching rows")
    p = commands.leaf(top, "refs", "refs", "branches and tags")
    p.add_argument("table")
    p = commands.leaf(top, "show", "show", "the first rows of a table (at a snapshot)")
    p.add_argument("table")
    p.add_argument("--limit", type=non_negative_int, default=20, metavar="N")
    _add_snapshot_selector(p)
    p.add_argument("--filter", metavar="EXPR", help="e.g. \"region = 'eu' AND id > 10\"")
    p.add_argument("--columns", metavar="A,B", help="only these columns")
    p = commands.leaf(top, "changes", "changes", "rows added and removed between snapshots")
    p.add_argument("table")
    start = p.add_mutually_exclusive_group(required=True)
    start.add_argument("--from", dest="from_id", type=int, metavar="ID", help="start (exclusive)")
    start.add_argument("--since", type=timestamp_ms, metavar="TIME", help="start time")
    p.add_argument("--to", dest="to_id", type=int, metavar="ID", help="end (default: current)")
    p.add_argument("--columns", metavar="A,B", help="only these columns")
    p.add_argument("--limit", type=non_negative_int, default=20, metavar="N", help="rows shown")


def _add_rows_selector(parser: argparse.ArgumentParser) -> None:
    """``--where FILTER`` or ``--all``, one of them required: no filter never means "every row"
    by accident."""
    chooser = parser.add_mutually_exclusive_group(required=True)
    chooser.add_argument(
        "--where", type=non_blank, metavar="EXPR", help="the rows, e.g. \"region = 'eu'\""
    )
    chooser.add_argument("--all", action="store_true", help="every row of the table")


def _add_change_options(parser: argparse.ArgumentParser, *, source: bool = False) -> None:
    if source:
        parser.add_argument(
            "--from",
            dest="source",
            required=True,
            metavar="FILE",
            help="the rows: a Parquet, CSV or JSON-lines file (.parquet, .csv, .json, .jsonl)",
        )
        parser.add_argument(
            "--format", choices=FILE_FORMATS, help="the file's format (default: by its suffix)"
        )
    parser.add_argument("--branch", default="main", metavar="NAME", help="default: main")
    parser.add_argument(
        "--create-branch",
        action="store_true",
        help="a --branch that does not exist is created at main's head by this change's commit",
    )


def _add_row_change_commands(commands: _Commands, top: argparse._SubParsersAction[_Parser]) -> None:
    p = commands.leaf(top, "delete", "delete", "delete the rows matching a filter")
    p.add_argument("table")
    _add_rows_selector(p)
    _add_change_options(p)
    p = commands.leaf(top, "update", "update", "set columns of the rows matching a filter")
    p.add_argument("table")
    p.add_argument(
        "--set",
        type=key_value,
        action="append",
        required=True,
        metavar="COLUMN=VALUE",
        help="a literal of the column's type, or null (repeatable)",
    )
    _add_rows_selector(p)
    _add_change_options(p)
    p = commands.leaf(top, "upsert", "upsert", "update rows whose key exists, insert the others")
    p.add_argument("table")
    p.add_argument("--on", metavar="KEY[,KEY]", help="key columns (default: the identifier fields)")
    _add_change_options(p, source=True)
    p = commands.leaf(
        top, "overwrite", "overwrite", "replace the rows matching a filter with a file's rows"
    )
    p.add_argument("table")
    _add_rows_selector(p)
    _add_change_options(p, source=True)


def _add_maintenance_commands(
    commands: _Commands, top: argparse._SubParsersAction[_Parser]
) -> None:
    p = commands.leaf(top, "compact", "compact", "rewrite small data files into larger ones")
    p.add_argument("table")
    p.add_argument("--filter", metavar="EXPR", help="only files that may hold matching rows")
    p.add_argument("--target-file-size", type=byte_size, metavar="BYTES", help="e.g. 128MB")
    p.add_argument(
        "--min-input-files", type=positive_int, default=DEFAULT_MIN_INPUT_FILES, metavar="N"
    )
    p.add_argument(
        "--delete-file-threshold",
        type=positive_int,
        metavar="N",
        help="also rewrite files that N or more delete files apply to",
    )
    p.add_argument(
        "--min-file-size",
        type=byte_size,
        metavar="BYTES",
        help="files under this are small (default: 75%% of the target)",
    )
    p.add_argument(
        "--max-file-size",
        type=byte_size,
        metavar="BYTES",
        help="files over this are split (default: 180%% of the target)",
    )
    p.add_argument(
        "--rewrite-all", action="store_true", help="rewrite every file the filter selects"
    )
    p.add_argument(
        "--delete-ratio-threshold",
        type=ratio,
        default=DEFAULT_DELETE_RATIO_THRESHOLD,
        metavar="R",
        help="also rewrite files whose deletes remove this share of their rows "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--max-group-input-files", type=positive_int, metavar="N", help="at most N files a group"
    )
    p.add_argument(
        "--max-files-to-rewrite", type=positive_int, metavar="N", help="rewrite at most N files"
    )
    p.add_argument(
        "--output-spec-id",
        type=non_negative_int,
        metavar="ID",
        help="write the new files for this partition spec (default: the table's)",
    )
    p.add_argument(
        "--keep-other-specs",
        action="store_true",
        help="rewrite files of other partition specs only for their size or deletes "
        "(Iceberg's planner)",
    )
    p.add_argument(
        "--commit-sequence-number",
        action="store_true",
        help="the new files take the commit's data sequence number, not the starting "
        "snapshot's (a concurrent equality delete then fails the group)",
    )
    p.add_argument(
        "--max-commits",
        type=positive_int,
        default=DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS,
        metavar="N",
        help="commit the groups in at most N snapshots (default: %(default)s)",
    )
    p.add_argument(
        "--sort-by", metavar="COLS|table", help='sort rewritten files: "id,ts:desc" or "table"'
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan, commit nothing")
    p = commands.leaf(top, "expire-snapshots", "expire-snapshots", "drop old snapshots")
    p.add_argument("table")
    p.add_argument("--older-than", type=timestamp_ms, metavar="TIME", help="e.g. 7d or ISO")
    p.add_argument("--retain-last", type=positive_int, metavar="N")
    p.add_argument(
        "--snapshot-id", dest="snapshot_ids", type=int, action="append", default=[], metavar="ID"
    )
    p.add_argument("--keep-files", action="store_true", help="do not delete unreachable files")
    p.add_argument("--dry-run", action="store_true", help="print what would expire")
    p = commands.leaf(top, "remove-orphans", "remove-orphans", "delete files no snapshot uses")
    p.add_argument("table")
    p.add_argument("--older-than", type=timestamp_ms, metavar="TIME", help="default: 3 days ago")
    p.add_argument("--location", metavar="URI", help="only under this location")
    p.add_argument("--dry-run", action="store_true", help="list orphans, delete nothing")
    p = commands.leaf(
        top,
        "remove-dangling-deletes",
        "remove-dangling-deletes",
        "remove delete files that apply to no data file",
    )
    p.add_argument("table")
    p.add_argument("--dry-run", action="store_true", help="list them, remove nothing")
    p = commands.leaf(top, "rewrite-manifests", "rewrite-manifests", "regroup manifests")
    p.add_argument("table")
    p.add_argument("--target-size", type=byte_size, metavar="BYTES")
    p = commands.leaf(
        top,
        "partition-stats",
        "partition-stats",
        "write and register a snapshot's partition statistics file",
    )
    p.add_argument("table")
    p.add_argument("--snapshot-id", type=int, metavar="ID", help="default: the current one")
    p = commands.leaf(
        top,
        "rewrite-path",
        "rewrite-path",
        "stage the metadata with a new path prefix and plan the copy of a table",
    )
    p.add_argument("table")
    p.add_argument("--source-prefix", required=True, metavar="URI")
    p.add_argument("--target-prefix", required=True, metavar="URI")
    p.add_argument("--start-version", metavar="FILE", help="metadata file name; default: all")
    p.add_argument("--end-version", metavar="FILE", help="default: the current metadata file")
    p.add_argument("--staging-location", metavar="URI", help="default: in the metadata folder")
    p.add_argument("--no-file-list", action="store_true", help="do not write the copy plan file")
    p = commands.leaf(
        top,
        "rewrite-position-deletes",
        "rewrite-position-deletes",
        "merge each data file's position delete files into one",
    )
    p.add_argument("table")
    p.add_argument("--min-input-files", type=int, default=2, metavar="N")
    p = commands.leaf(top, "rollback", "rollback", "make an older snapshot current")
    p.add_argument("table")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-snapshot", type=int, metavar="ID")
    target.add_argument("--to-timestamp", type=timestamp_ms, metavar="TIME")
    p = commands.leaf(top, "cherry-pick", "cherry-pick", "apply a snapshot's changes to main")
    p.add_argument("table")
    p.add_argument("snapshot_id", type=int)
    p = commands.leaf(
        top, "publish", "publish", "publish the snapshot a write staged with a WAP id"
    )
    p.add_argument("table")
    p.add_argument("wap_id")
    p = commands.leaf(top, "set-current", "set-current", "make any snapshot current")
    p.add_argument("table")
    p.add_argument("snapshot_id", type=int)


def _add_ref_commands(commands: _Commands, top: argparse._SubParsersAction[_Parser]) -> None:
    for kind in ("tag", "branch"):
        p = commands.leaf(top, kind, kind, f"create, replace or remove a {kind}")
        p.add_argument("table")
        p.add_argument("action", choices=("create", "replace", "remove"))
        p.add_argument("ref_name", metavar="NAME")
        p.add_argument("--snapshot-id", type=int, metavar="ID", help="default: current")
    p = commands.leaf(top, "fast-forward", "fast-forward", "move a branch up to another ref")
    p.add_argument("table")
    p.add_argument("branch")
    p.add_argument("--to", dest="to_ref", required=True, metavar="REF")


# ---- the process contract ----------------------------------------------------------------


def _one_line(message: str) -> str:
    return " ".join(line.strip() for line in message.splitlines() if line.strip())


def _report(message: str) -> None:
    print(f"{PROG}: error: {_one_line(message)}", file=sys.stderr)


def _configure_logging(verbose: int) -> None:
    if verbose:
        logging.basicConfig(
            level=logging.DEBUG if verbose > 1 else logging.INFO,
            stream=sys.stderr,
            format="%(levelname)s %(name)s: %(message)s",
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``lakecat`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        _report(f"{exc} (see '{exc.prog} --help')")
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version print and exit through argparse
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    verbose = int(args.verbose)
    _configure_logging(verbose)
    try:
        code: int = run(args, env=os.environ)
        return code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of our stdout went away (`lakecat ... | head`): nothing to report. Point
        # stdout at devnull so that the interpreter's final flush does not fail too (the
        # recipe of the `signal` module's documentation).
        with contextlib.suppress(OSError, ValueError):  # stdout may have no file descriptor
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except (LakecatError, OSError) as exc:
        # OSError: files named on the command line (schemas) and the console itself.
        if verbose:
            traceback.print_exc(file=sys.stderr)
        _report(str(exc) or type(exc).__name__)
        return EXIT_ERROR


def _add_view_commands(commands: _Commands, top: argparse._SubParsersAction[_Parser]) -> None:
    group = commands.group(
        top.add_parser("views", help="list, describe, create, replace, drop views"), "action"
    )
    p = commands.leaf(group, "list", "views list", "list the views of a namespace")
    p.add_argument("namespace")
    p = commands.leaf(group, "describe", "views describe", "queries, schema, versions")
    p.add_argument("view")
    for action, help_text in (
        ("create", "create a view from its query and the schema it produces"),
        ("replace", "give a view a new version (query and schema)"),
    ):
        p = commands.leaf(group, action, f"views {action}", help_text)
        p.add_argument("view")
        p.add_argument("--sql", metavar="QUERY", help="the query, in Spark's dialect")
        p.add_argument(
            "--dialect-sql",
            nargs=2,
            action="append",
            default=[],
            metavar=("DIALECT", "QUERY"),
            help="the query in another dialect (repeatable)",
        )
        p.add_argument(
            "--schema",
            required=True,
            metavar="FILE_OR_JSON",
            help="the columns the query produces (as for tables create)",
        )
        p.add_argument(
            "--default-namespace",
            metavar="NAMESPACE",
            help="where unqualified names resolve (default: the view's namespace)",
        )
        p.add_argument(
            "--default-catalog",
            metavar="NAME",
            help="the catalog of unqualified names (default: the view's own)",
        )
        p.add_argument(
            "--property", type=key_value, action="append", default=[], metavar="KEY=VALUE"
        )
        if action == "create":
            p.add_argument(
                "--location", metavar="URI", help="view location (default: in warehouse)"
            )
    p = commands.leaf(group, "rollback", "views rollback", "make an earlier version current")
    p.add_argument("view")
    p.add_argument("version_id", type=int, metavar="VERSION_ID")
    p = commands.leaf(group, "drop", "views drop", "drop a view")
    p.add_argument("view")
    p = commands.leaf(group, "rename", "views rename", "rename (or move) a view")
    p.add_argument("source")
    p.add_argument("destination")
