"""One Iceberg Java session a test module talks to: the ``java_delete_tables.py`` process (the
peers' Iceberg Java 1.10.2 on Spark 3.5), its JdbcCatalog ``peers`` on ``ROOT/catalog.db``, and
lakecat's catalog on the same database."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from peers import PEER_PYTHON, PEERS_HOME, PEERS_SCRIPTS, require_peers

from lakecat.catalog import Catalog

SCRIPT = Path(__file__).resolve().parent / "java_delete_tables.py"
START_TIMEOUT_S = 300
COMMAND_TIMEOUT_S = 300


class JavaTables:
    """The ``java_delete_tables.py`` process: one command at a time, one answer each.
    ``create``: make the script's tables first (its ``create`` command)."""

    catalog = "peers"  # the session's Iceberg catalog

    def __init__(self, root: Path, *, create: bool = True) -> None:
        self.root = root
        self.log = root / "java.log"
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._log = self.log.open("wb")
        self._proc = subprocess.Popen(
            [str(PEER_PYTHON["spark"]), str(SCRIPT), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env={**os.environ, "PEERS_HOME": str(PEERS_HOME), "PEERS_SCRIPTS": str(PEERS_SCRIPTS)},
            cwd=root,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self._next(START_TIMEOUT_S)  # {"ready": true}
        self.tables: dict[str, dict[str, Any]] = (
            self.call({"op": "create"})["tables"] if create else {}
        )

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith("@@ "):
                self._answers.put(json.loads(line[3:]))
        self._answers.put(None)  # the process ended

    def _next(self, timeout_s: float) -> dict[str, Any]:
        try:
            answer = self._answers.get(timeout=timeout_s)
        except queue.Empty:
            answer = None
        if answer is None:
            tail = self.log.read_text(errors="replace")[-3000:]
            pytest.fail(f"java_delete_tables.py gave no answer; {self.log}:\n{tail}")
        return answer

    def call(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()
        answer = self._next(COMMAND_TIMEOUT_S)
        if "error" in answer:
            pytest.fail(f"Iceberg Java: {answer['error']} (command {command})")
        return answer

    def make(self, table: str, recipe: str) -> None:
        """A new table ``table`` made as the ``recipe`` table (``pos_guarded``/``eq_guarded``)."""
        self.tables.update(self.call({"op": "make", "table": table, "recipe": recipe})["tables"])

    def rows(self, table: str, **options: Any) -> list[list[Any]]:
        rows: list[list[Any]] = self.call({"op": "rows", "table": table, "options": options})[
            "rows"
        ]
        return rows

    def sql(self, statement: str) -> None:
        self.call({"op": "sql", "statement": statement})

    def query(self, statement: str) -> list[list[Any]]:
        """The rows of a Spark SQL query on Iceberg Java, in the query's order."""
        rows: list[list[Any]] = self.call({"op": "query", "statement": statement})["rows"]
        return rows

    def schema(self, statement: str) -> list[list[str]]:
        """The columns of a query on Iceberg Java: ``[name, Spark type]`` pairs."""
        columns: list[list[str]] = self.call({"op": "schema", "statement": statement})["columns"]
        return columns

    def attempt(self, statement: str) -> str | None:
        """Runs a statement that may fail on Iceberg Java: its error's first line, or None."""
        failed: str | None = self.call({"op": "attempt", "statement": statement})["failed"]
        return failed

    def snapshots(self, table: str) -> list[int]:
        ids: list[int] = self.tables[table]["snapshots"]
        return ids

    def close(self) -> None:
        try:
            if self._proc.poll() is None and self._proc.stdin is not None:
                self._proc.stdin.write('{"op": "quit"}\n')
                self._proc.stdin.flush()
                self._proc.wait(timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        finally:
            self._log.close()


def java_session(root: Path, *, create: bool = True) -> Iterator[JavaTables]:
    """A module fixture's body: the session in ``root``, closed when the module is done."""
    require_peers(("spark",))
    tables = JavaTables(root, create=create)
    try:
        yield tables
    finally:
        tables.close()


def java_session_with_db(root: Path) -> Iterator[JavaTables]:
    """``java_session`` without the script's tables, with an empty namespace ``peers.db``."""
    session = java_session(root, create=False)
    tables = next(session)
    tables.sql("CREATE NAMESPACE IF NOT EXISTS peers.db")
    yield tables
    for _ in session:  # closes it
        pass


def lakecat_on(java: JavaTables) -> Iterator[Catalog]:
    """A module fixture's body: lakecat's catalog on the session's JDBC catalog."""
    catalog = Catalog(
        f"sqlite:///{java.root / 'catalog.db'}",
        warehouse=str(java.root / "warehouse"),
        name="peers",
    )
    yield catalog
    catalog.close()
