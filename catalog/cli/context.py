"""What every ``lakecat`` command gets: the catalog (opened on first use), consoles, progress.

A command is a function ``(Context, argparse.Namespace) -> Output``. It returns its result as
plain data plus a rich view of it; :meth:`Context.emit` prints one or the other, so commands
never print their result themselves (progress bars and notes go to stderr).
"""

from __future__ import annotations

import argparse
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
from lakecat.catalog.cli.render import dump_json
from lakecat.catalog.table import Table

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
        out: Console | None = None,
        err: Console | None = None,
    ) -> None:
        self.args = args
        self.env = env
        self.json = bool(getattr(args, "json", False))
        self.out = out or Console(file=sys.stdout, highlight=False)
        self.err = err or Console(file=sys.stderr, highlight=False)
        self._catalog: Catalog | None = None

    # ---- the catalog --------------------------------------------------------------------------
    def settings(self) -> CatalogSettings:
        a = self.args
        return resolve_settings(
            url=getattr(a, "catalog", None),
            warehouse=getattr(a, "warehouse", None),
            name=getattr(a, "name", None),
            config=getattr(a, "config", None),
            profile=getattr(a, "profile", None),
            env=self.env,
            cwd=Path.cwd(),
            home=Path.home(),
        )

    def catalog(self) -> Catalog:
        """The catalog, opened on first use (a bad URL is reported as a LakecatError)."""
        if self._catalog is None:
            s = self.settings()
            self._catalog = Catalog(s.url, warehouse=s.warehouse, name=s.name)
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


def _ignore_progress(done: int, total: int) -> None:
    del done, total


Command = Callable[[Context, argparse.Namespace], Output]
