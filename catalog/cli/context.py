"""What every ``lakecat`` command gets: the catalog (opened on first use), consoles, progress.

A command is a function ``(Context, argparse.Namespace) -> Output``. It returns its result as
plain data plus a rich view of it; :meth:`Context.emit` prints one or the other, so commands
never print their result themselves (progress bars and notes go to stderr).

Opening a SQLite catalog, the context checks its file first: a command that only reads refuses
a file that does not exist (a mistyped path would otherwise open a new, empty catalog and
list nothing), unless ``--create`` is given; a command that changes the catalog creates the
file's folder when it is missing (SQLite creates the file, not its folder).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from lakecat.catalog.catalog import Catalog
from lakecat.catalog.cli.config import CatalogSettings, resolve_settings
from lakecat.catalog.cli.render import PREVIEW_ITEMS, dump_json
from lakecat.catalog.commit.coordination.lock import sqlite_database_file
from lakecat.catalog.store.db import parse_catalog_url
from lakecat.catalog.table import Table
from lakecat.metadata.errors import StorageError, ValidationError

__all__ = ["Command", "Context", "Output", "ProgressCallback"]

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class Output:
    """A command's result: ``data`` is the ``--json`` document, ``view`` what people see."""

    data: Any
    view: RenderableType


class Context:
    """Per-invocation state: parsed global options, consoles, and the lazily opened catalog."""

    def __init__(
        self,
        args: argparse.Namespace,
        *,
        env: Mapping[str, str],
        writes: bool = False,
        out: Console | None = None,
        err: Console | None = None,
    ) -> None:
        self.args = args
        self.env = env
        self.writes = writes  # whether the command may change the catalog
        self.json = bool(getattr(args, "json", False))
        # -v: long lists in full (else their first items and a count)
        self.full_lists = bool(getattr(args, "verbose", 0))
        self.out = out or Console(file=sys.stdout, highlight=False)
        self.err = err or Console(file=sys.stderr, highlight=False)
        self._settings: CatalogSettings | None = None
        self._catalog: Catalog | None = None

    # ---- the catalog --------------------------------------------------------------------------
    def settings(self) -> CatalogSettings:
        if self._settings is None:
            a = self.args
            self._settings = resolve_settings(
                url=getattr(a, "catalog", None),
                warehouse=getattr(a, "warehouse", None),
                name=getattr(a, "name", None),
                config=getattr(a, "config", None),
                profile=getattr(a, "profile", None),
                env=self.env,
                cwd=Path.cwd(),
                home=Path.home(),
                properties=dict(getattr(a, "catalog_properties", None) or ()),
            )
        return self._settings

    def catalog(self) -> Catalog:
        """The catalog, opened on first use (a bad URL is reported as a LakecatError)."""
        if self._catalog is None:
            s = self.settings()
            _check_sqlite_file(s, create=self.writes or bool(getattr(self.args, "create", False)))
            self._catalog = Catalog(
                s.url, warehouse=s.warehouse, name=s.name, properties=s.properties
            )
        return self._catalog

    def table(self, identifier: str) -> Table:
        return self.catalog().load_table(identifier)

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None

    # ---- output ---------------------------------------------------------------------------
    def emit(self, output: Output) -> None:
        if self.json:
            sys.stdout.write(dump_json(output.data) + "\n")
            sys.stdout.flush()
        else:
            self.out.print(output.view)

    @property
    def list_limit(self) -> int | None:
        """How many items of a long list a report shows: all of them with ``-v``."""
        return None if self.full_lists else PREVIEW_ITEMS

    def note(self, text: str) -> None:
        """A remark for people (stderr); never part of the ``--json`` document."""
        if not self.json:
            self.err.print(text, markup=False, highlight=False)

    @property
    def shows_progress(self) -> bool:
        return not self.json and self.err.is_terminal

    @contextmanager
    def progress(self, description: str) -> Iterator[ProgressCallback]:
        """A progress bar on stderr for a long job; yields ``callback(done, total)``.

        Before the first callback (or for jobs that report none) a spinner shows that the job
        is running. Disabled with ``--json`` or when stderr is not a terminal.
        """
        if not self.shows_progress:
            yield _ignore_progress
            return
        bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
        )
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        with bar:
            yield update


def _check_sqlite_file(settings: CatalogSettings, *, create: bool) -> None:
    """For a SQLite catalog: with ``create``, make the database file's folder if missing;
    without, refuse a database file that does not exist (see the module docstring)."""
    url = parse_catalog_url(settings.url)
    if url.get_backend_name() != "sqlite":
        return
    path = sqlite_database_file(url)
    if path is None or os.path.exists(path):
        return  # in memory, or there
    if not create:
        source = f" (from {settings.url_from})" if settings.url_from else ""
        raise ValidationError(
            f"catalog database {path} does not exist{source}: check the path, or pass "
            "--create to start an empty catalog there"
        )
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"cannot create the folder of catalog database {path}: {exc.strerror or exc}"
        ) from exc


def _ignore_progress(done: int, total: int) -> None:
    del done, total


Command = Callable[[Context, argparse.Namespace], Output]
