"""Iceberg Java for a test module: the ``java_delete_tables.py`` process (the peers' Iceberg Java
1.10.2 on Spark 3.5), one for the whole run (``JavaProcess``, the session fixture
``java_process``), and in it a Spark session of the module's own (``JavaTables``) with its
JdbcCatalog ``peers`` on ``ROOT/catalog.db``; lakecat's catalog opens the same database
(``lakecat_on``).

One JVM for the run, not one per module: starting one and compiling Spark's and Iceberg's code
again cost every module seconds, most on its first statements (the interop folder took 631 s
instead of 749 s, serially on 2 cores)."""

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
from jvm_options import LONG_LIVED_JVM_OPTIONS
from peers import PEER_PYTHON, PEERS_HOME, PEERS_SCRIPTS, require_peers

from lakecat.catalog import Catalog

SCRIPT = Path(__file__).resolve().parent / "java_delete_tables.py"
START_TIMEOUT_S = 300
COMMAND_TIMEOUT_S = 300


class JavaProcess:
    """The ``java_delete_tables.py`` process: one command at a time, one answer each. Its
    output and Spark's log go to ``log``. Started again by ``open`` if it died."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> None:
        require_peers(("spark",))
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        submit_opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                [str(PEER_PYTHON["spark"]), str(SCRIPT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={
                    **os.environ,
                    "PEERS_HOME": str(PEERS_HOME),
                    "PEERS_SCRIPTS": str(PEERS_SCRIPTS),
                    # it lives for the whole run: it keeps C2 (jvm_options.py)
                    "SPARK_SUBMIT_OPTS": f"{submit_opts} {LONG_LIVED_JVM_OPTIONS}".strip(),
                },
                cwd=self.log.parent,
            )
        threading.Thread(target=self._read, args=(self._proc, self._answers), daemon=True).start()
        self._next(START_TIMEOUT_S)  # {"ready": true}

    @staticmethod
    def _read(proc: subprocess.Popen[str], answers: queue.Queue[dict[str, Any] | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("@@ "):
                answers.put(json.loads(line[3:]))
        answers.put(None)  # the process ended

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
        if not self.running:
            if command.get("op") != "open":
                pytest.fail(f"java_delete_tables.py is not running; {self.log}")
            self._start()
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()
        answer = self._next(COMMAND_TIMEOUT_S)
        if "error" in answer:
            pytest.fail(f"Iceberg Java: {answer['error']} (command {command})")
        return answer

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running and self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.write('{"op": "quit"}\n')
                proc.stdin.flush()
                proc.wait(timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


class JavaTables:
    """A module's Spark session in the ``JavaProcess``, on the catalog in the new folder
    ``root``. ``create``: make the script's tables first (its ``create`` command)."""

    catalog = "peers"  # the session's Iceberg catalog

    def __init__(self, process: JavaProcess, root: Path, *, create: bool = True) -> None:
        self.process = process
        self.root = root
        process.call({"op": "open", "root": str(root)})
        self.tables: dict[str, dict[str, Any]] = (
            self.call({"op": "create"})["tables"] if create else {}
        )

    def call(self, command: dict[str, Any]) -> dict[str, Any]:
        return self.process.call({**command, "root": str(self.root)})

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
        if self.process.running:
            self.call({"op": "close"})


def java_session(process: JavaProcess, root: Path, *, create: bool = True) -> Iterator[JavaTables]:
    """A module fixture's body: the module's session in ``root``, closed when it is done."""
    tables = JavaTables(process, root, create=create)
    try:
        yield tables
    finally:
        tables.close()


def lakecat_on(java: JavaTables) -> Iterator[Catalog]:
    """A module fixture's body: lakecat's catalog on the session's JDBC catalog."""
    catalog = Catalog(
        f"sqlite:///{java.root / 'catalog.db'}",
        warehouse=str(java.root / "warehouse"),
        name="peers",
    )
    yield catalog
    catalog.close()
