"""Peer engines for interop tests: tables written by Iceberg Java, and three independent readers.

The peers live outside this repository: ``../shared/peers`` beside the clone (scripts;
``PEERS_SCRIPTS`` overrides) and ``~/.cache/lakecat-peers`` (venvs and jars built by its
``setup.sh``; ``PEERS_HOME`` overrides). Without them the interop tests skip, except under
``CI=true``, where they fail.

Fixtures written by Iceberg Java
    :func:`ensure_java_fixtures` runs ``java_fixtures.py`` (Iceberg Java 1.10.2 on PySpark
    3.5.9) once and caches its output in ``~/.cache/lakecat-interop/java-fixtures-<hash>``
    (``LAKECAT_INTEROP_CACHE`` overrides the parent folder), keyed by a hash of
    ``java_fixtures.py`` and the peers' ``peer_spark.py``: editing the generator makes a new
    folder; other test sessions and xdist workers reuse it (a file lock serializes the first
    generation, about 70-80 s). What each table holds and what ``expected.json`` records is
    documented at the top of ``java_fixtures.py``; :class:`JavaFixtures` gives access to it.

    The tables sit in an Iceberg JdbcCatalog on SQLite, catalog name ``peers``, namespace
    ``db``, the same JDBC tables lakecat's SQL catalog uses. A later test reads one with
    lakecat like this::

        from lakecat.catalog import Catalog

        def test_lakecat_reads_position_deletes(java_fixtures):   # the session fixture
            fx = java_fixtures
            lake = Catalog(fx.catalog_url, warehouse=str(fx.warehouse), name="peers")
            # = Catalog("sqlite:///<dir>/catalog.db", warehouse="<dir>/warehouse", name="peers")
            try:
                table = lake.load_table("db.pos_unpartitioned")
                for snap in fx.table("pos_unpartitioned")["snapshots"]:
                    got = table.scan(snapshot_id=snap["snapshot_id"]).to_arrow()
                    assert canonical_rows(got, ["id", "cat", "note"]) == snap["rows"]
            finally:
                lake.close()

    ``canonical_rows`` sorts rows the way ``expected.json`` does (nulls last). The snapshots
    also list their live data and delete files with data sequence numbers, partitions and, per
    data file, the positions Iceberg Java does not return (``deleted_positions``). Today
    lakecat returns the deleted rows too (no delete support yet) and refuses the v3 tables
    (``dv_*``: "lakecat reads format version 2 tables"). The folder is shared by every test
    of the session and by later sessions: read only. (A copy does not isolate writes: the
    tables' metadata holds absolute locations in the original folder.) Locations inside the
    tables are ``file:/abs/path`` URIs: Java writes one slash.

Reading with the peers
    :func:`read_all` runs the peers' ``read_all.sh`` (pyiceberg, Iceberg Java through Spark,
    DuckDB, in parallel, 15-20 s) on one metadata.json and parses its one line per peer
    (row count and sum of one integer column). :func:`read_rows` reads many (table, snapshot)
    jobs with one pyiceberg or DuckDB process and returns every row, for exact comparisons;
    :func:`read_batch` counts and sums many jobs with the peers' ``batch_peer.py`` (one JVM for
    Iceberg Java).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
JAVA_FIXTURES_SCRIPT = HERE / "java_fixtures.py"
PEER_ROWS_SCRIPT = HERE / "peer_rows.py"
PEERS_HOME = Path(
    os.environ.get("PEERS_HOME") or Path.home() / ".cache" / "lakecat-peers"
).resolve()
# the repository's clone has shared/ beside it (as CI runs it)
PEERS_SCRIPTS = Path(
    os.environ.get("PEERS_SCRIPTS") or Path(__file__).resolve().parents[3] / "shared" / "peers"
).resolve()
CACHE_ROOT = Path(
    os.environ.get("LAKECAT_INTEROP_CACHE") or Path.home() / ".cache" / "lakecat-interop"
).resolve()
PEER_PYTHON = {
    "pyiceberg": PEERS_HOME / "pyice" / "bin" / "python",
    "spark": PEERS_HOME / "spark35" / "bin" / "python",
    "duckdb": PEERS_HOME / "duck" / "bin" / "python",
}
PEER_ORDER = ("pyiceberg", "spark", "duckdb")
GENERATION_TIMEOUT_S = 1800


# -- availability -----------------------------------------------------------------------------


def missing_peers(peers: Sequence[str] = PEER_ORDER) -> str | None:
    """Why the peers cannot run (a sentence), or None when they can."""
    if not PEERS_SCRIPTS.is_dir():
        return f"the peer scripts folder {PEERS_SCRIPTS} is missing (set PEERS_SCRIPTS)"
    if not PEERS_HOME.is_dir():
        return (
            f"the peers are not installed: {PEERS_HOME} is missing "
            f"(run bash {PEERS_SCRIPTS}/setup.sh, or set PEERS_HOME)"
        )
    for peer in peers:
        if not PEER_PYTHON[peer].exists():
            return f"peer {peer}: no interpreter {PEER_PYTHON[peer]} (run setup.sh again)"
    return None


def require_peers(peers: Sequence[str] = PEER_ORDER) -> None:
    """Skip the calling test when the peers are missing; under CI=true, fail instead."""
    reason = missing_peers(peers)
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the interop tests must run in CI)")
    pytest.skip(reason)


# -- fixtures written by Iceberg Java ---------------------------------------------------------


@dataclass(frozen=True)
class JavaFixtures:
    """The output folder of ``java_fixtures.py`` and its ``expected.json``."""

    root: Path

    @cached_property
    def expected(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.root / "expected.json").read_text())
        return data

    @property
    def catalog_db(self) -> Path:
        return self.root / "catalog.db"

    @property
    def catalog_url(self) -> str:
        """SQLAlchemy URL of the JDBC catalog's SQLite file (lakecat, pyiceberg)."""
        return f"sqlite:///{self.catalog_db}"

    @property
    def catalog_name(self) -> str:
        name: str = self.expected["catalog"]["name"]
        return name

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def tables(self) -> dict[str, dict[str, Any]]:
        tables: dict[str, dict[str, Any]] = self.expected["tables"]
        return tables

    def table(self, name: str) -> dict[str, Any]:
        return self.tables[name]

    def metadata_path(self, name: str) -> Path:
        """The table's final metadata.json as a local path."""
        return Path(local_path(self.table(name)["metadata_location"]))


def fixtures_hash() -> str:
    """The cache key: java_fixtures.py and the peers' peer_spark.py, which it imports."""
    digest = hashlib.sha256()
    for path in (JAVA_FIXTURES_SCRIPT, PEERS_SCRIPTS / "peer_spark.py"):
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
    return digest.hexdigest()[:16]


def ensure_java_fixtures(*, timeout_s: float = GENERATION_TIMEOUT_S) -> JavaFixtures:
    """The cached fixtures; generates them first when this version of the script has none.

    Skips (fails under CI=true) without the peers. Generation writes straight into the final
    folder, because the tables' metadata holds absolute paths; ``expected.json`` is written
    last, so a folder without it is an interrupted run and is regenerated.
    """
    require_peers(("spark",))
    target = CACHE_ROOT / f"java-fixtures-{fixtures_hash()}"
    done = target / "expected.json"
    if done.exists():
        return JavaFixtures(target)
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    with _locked(CACHE_ROOT / f"{target.name}.lock"):
        if done.exists():  # another process generated them while we waited
            return JavaFixtures(target)
        shutil.rmtree(target, ignore_errors=True)
        log = CACHE_ROOT / f"{target.name}.log"
        with log.open("wb") as out:
            try:
                proc = subprocess.run(
                    [str(PEER_PYTHON["spark"]), str(JAVA_FIXTURES_SCRIPT), str(target)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=timeout_s,
                    env={**os.environ, "PEERS_HOME": str(PEERS_HOME)},
                    cwd=CACHE_ROOT,
                    check=False,
                )
                returncode: int | str = proc.returncode
            except subprocess.TimeoutExpired:
                returncode = f"timeout after {timeout_s:.0f} s"
        if returncode != 0 or not done.exists():
            tail = _tail(log)
            shutil.rmtree(target, ignore_errors=True)
            pytest.fail(
                f"java_fixtures.py failed ({returncode}); log {log}:\n{tail}", pytrace=False
            )
    return JavaFixtures(target)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(errors="replace").splitlines()
    interesting = [ln for ln in text if not ln.lstrip().startswith("at ") and "WARN" not in ln]
    return "\n".join(interesting[-lines:])


def local_path(location: str) -> str:
    """A local path from a ``file:/...`` or ``file:///...`` location (or a plain path)."""
    if location.startswith("file://"):
        return location[len("file://") :]
    if location.startswith("file:"):
        return location[len("file:") :]
    return location


def snapshot_jobs(tables: Mapping[str, Any], **extra: Any) -> list[dict[str, Any]]:
    """A read job for every snapshot of each lakecat table, keyed ``[name, snapshot id]``
    (``extra``: the job's ``columns`` or ``column``)."""
    return [
        {"key": [key, s.snapshot_id], "metadata": t.metadata_location, "snapshot": s.snapshot_id}
        | extra
        for key, t in tables.items()
        for s in t.snapshots()
    ]


def lakecat_snapshot_rows(
    tables: Mapping[str, Any], key: Sequence[Any], columns: Sequence[str]
) -> list[list[Any]]:
    """What lakecat reads at the snapshot a :func:`snapshot_jobs` key names, canonical."""
    return canonical_rows(tables[key[0]].to_arrow(snapshot_id=key[1]), columns)


def rows_misread(
    peer: str, tables: Mapping[str, Any], columns: Sequence[str]
) -> list[tuple[Any, str]]:
    """The snapshots whose rows ``peer`` reads otherwise than lakecat: (key, error or "rows
    differ")."""
    return [
        (a["key"], a.get("error") or "rows differ")
        for a in read_rows(peer, snapshot_jobs(tables, columns=list(columns)))
        if a.get("rows") != lakecat_snapshot_rows(tables, a["key"], columns)
    ]


def counts_misread(tables: Mapping[str, Any], column: str) -> list[tuple[Any, ...]]:
    """The snapshots where Iceberg Java's count and sum of ``column`` differ from lakecat's:
    (key, Java's answer, lakecat's count, lakecat's sum)."""
    wrong = []
    for a in read_batch("spark", snapshot_jobs(tables, column=column)):
        values = [r[0] for r in lakecat_snapshot_rows(tables, a["key"], [column])]
        if (a.get("rows"), a.get("sum")) != (len(values), sum(values)):
            wrong.append((a["key"], a, len(values), sum(values)))
    return wrong


def canonical_rows(table: Any, columns: Sequence[str]) -> list[list[Any]]:
    """Rows of a pyarrow table as ``expected.json`` holds them: lists, sorted, nulls last."""
    cols = [table.column(c).to_pylist() for c in columns]
    rows = [list(r) for r in zip(*cols, strict=True)]
    return sorted(rows, key=lambda r: tuple((v is None, v) for v in r))


# -- reading with the peers -------------------------------------------------------------------


@dataclass(frozen=True)
class PeerAnswer:
    """One peer's line of ``read_all.sh``: a count and a sum, or an error."""

    peer: str
    rows: int | None = None
    sum: int | None = None
    snapshots: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class ReadAll:
    """The parsed output of one ``read_all.sh`` run."""

    answers: dict[str, PeerAnswer]
    status: int  # 0 agree, 1 disagree, 2 a peer errored, 64 usage
    stderr: str


_ANSWER = re.compile(r"^(\S+) rows=(-?\d+) sum_id=(-?\d+) snapshots=(\d+)$")
_ERROR = re.compile(r"^(\S+) ERROR (.*)$")


def parse_read_all(stdout: str) -> dict[str, PeerAnswer]:
    answers: dict[str, PeerAnswer] = {}
    for line in stdout.splitlines():
        if m := _ANSWER.match(line.strip()):
            peer, rows, total, snaps = m.groups()
            answers[peer] = PeerAnswer(peer, int(rows), int(total), int(snaps))
        elif m := _ERROR.match(line.strip()):
            answers[m.group(1)] = PeerAnswer(m.group(1), error=m.group(2))
    return answers


def read_all(
    metadata: str | Path,
    snapshot_id: int | None = None,
    column: str = "id",
    *,
    peers: Sequence[str] = PEER_ORDER,
    timeout_s: float = 900,
) -> ReadAll:
    """Read one table with the peers' ``read_all.sh`` (all three by default, in parallel)."""
    require_peers(peers)
    env = {
        **os.environ,
        "PEERS_HOME": str(PEERS_HOME),
        "PEERS": " ".join(peers),
        "PEER_TIMEOUT": str(int(timeout_s)),
    }
    proc = subprocess.run(
        [
            "bash",
            str(PEERS_SCRIPTS / "read_all.sh"),
            str(metadata),
            "-" if snapshot_id is None else str(snapshot_id),
            column,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout_s + 60,
        check=False,
    )
    return ReadAll(parse_read_all(proc.stdout), proc.returncode, proc.stderr.strip())


def read_rows(
    peer: str, jobs: Sequence[dict[str, Any]], *, timeout_s: float = 900
) -> list[dict[str, Any]]:
    """Every row that ``peer`` (``pyiceberg``, ``duckdb`` or ``spark``) reads, for each job.

    A job: ``{"key": any, "metadata": path, "snapshot": id or None, "columns": [...]}``; the
    answer, in job order: ``{"key": ..., "rows": [[...], ...]}`` (sorted like
    :func:`canonical_rows`) or ``{"key": ..., "error": "<one line>"}``.
    """
    require_peers((peer,))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for job in jobs:
            f.write(json.dumps(job) + "\n")
        jobs_file = f.name
    try:
        proc = subprocess.run(
            [str(PEER_PYTHON[peer]), str(PEER_ROWS_SCRIPT), peer, jobs_file],
            capture_output=True,
            text=True,
            env={**os.environ, "PEERS_HOME": str(PEERS_HOME), "PEERS_SCRIPTS": str(PEERS_SCRIPTS)},
            cwd=tempfile.gettempdir(),  # Spark leaves its scratch folders where it runs
            timeout=timeout_s,
            check=False,
        )
    finally:
        os.unlink(jobs_file)
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or len(answers) != len(jobs):
        pytest.fail(
            f"{peer} row reader exited {proc.returncode} after {len(answers)} of {len(jobs)} "
            f"jobs:\n{proc.stderr[-3000:]}",
            pytrace=False,
        )
    return answers


def read_batch(
    peer: str, jobs: Sequence[dict[str, Any]], *, timeout_s: float = 900
) -> list[dict[str, Any]]:
    """Count and sum with the peers' ``batch_peer.py``: one process (one JVM) for all jobs.

    A job: ``{"key": any, "metadata": path, "snapshot": id or None, "column": "id"}``; the
    answer, in job order: ``{"key": ..., "rows": n, "sum": s}`` or ``{"key": ..., "error": ...}``.
    ``peer``: ``pyiceberg``, ``spark`` (Iceberg Java, loading the metadata.json path) or
    ``duckdb`` (one connection for all jobs: an internal error spoils the jobs after it).
    """
    require_peers((peer,))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for job in jobs:
            f.write(json.dumps(job) + "\n")
        jobs_file = f.name
    try:
        proc = subprocess.run(
            [str(PEER_PYTHON[peer]), str(PEERS_SCRIPTS / "batch_peer.py"), peer, jobs_file],
            capture_output=True,
            text=True,
            env={**os.environ, "PEERS_HOME": str(PEERS_HOME)},
            cwd=tempfile.gettempdir(),
            timeout=timeout_s,
            check=False,
        )
    finally:
        os.unlink(jobs_file)
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if len(answers) != len(jobs):
        pytest.fail(
            f"batch_peer.py {peer} exited {proc.returncode} after {len(answers)} of {len(jobs)} "
            f"jobs:\n{proc.stderr[-3000:]}",
            pytrace=False,
        )
    return answers
