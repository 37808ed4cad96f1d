"""Shared helpers for lakecat's benchmarks: timing, catalogs, a PostgreSQL server, reporting.

The benchmarks are scripts (``python benchmarks/bench_*.py [--quick]``), never collected by
pytest. Each compares lakecat with pyiceberg 0.12 in one run on the same machine, so the ratios
they report do not depend on how fast the machine is, only on how busy it is while they run
(they report CPU time next to wall time for that reason).

pyiceberg is imported here and in the benchmark scripts only: lakecat's own package never
imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "_out"
NAMESPACE = "bench"

# pyiceberg 0.12 warns about its own deprecations on ordinary calls; they are not ours to fix
# and would bury the tables the benchmarks print.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"pyiceberg(\..*)?")
warnings.filterwarnings("ignore", message=r".*Delete operation did not match any records.*")


# ---- timing ---------------------------------------------------------------------------------


@dataclass
class Timing:
    """Wall-clock and CPU seconds of one timed block (CPU: this process only)."""

    wall_s: float = 0.0
    cpu_s: float = 0.0


@contextlib.contextmanager
def timed() -> Iterator[Timing]:
    """``with timed() as t: ...`` fills ``t.wall_s`` and ``t.cpu_s`` when the block ends."""
    timing = Timing()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield timing
    finally:
        timing.wall_s = time.perf_counter() - wall
        timing.cpu_s = time.process_time() - cpu


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def repeat(fn: Any, times: int) -> list[Timing]:
    """Run ``fn()`` ``times`` times, one :class:`Timing` each."""
    out = []
    for _ in range(times):
        with timed() as t:
            fn()
        out.append(t)
    return out


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("inf")


@dataclass
class PairedRounds:
    """Seconds of named steps run in two modes, round by round (round 0 warms up and is not
    kept), and the per-round ratio of ``first`` to ``second``."""

    steps: Sequence[str]
    first: str
    second: str
    times: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    ratios: dict[str, list[float]] = field(default_factory=dict)

    def record(self, r: int, seconds: dict[tuple[str, str], float]) -> None:
        """Print round ``r``'s ``seconds`` (by step and mode); keep them unless it warms up."""
        print(
            f"  round {r}{' (warm-up)' if r == 0 else ''}: "
            + ", ".join(f"{s} {m} {v:.2f}s" for (s, m), v in seconds.items())
        )
        if r == 0:
            return
        for key, value in seconds.items():
            self.times.setdefault(key, []).append(value)
        for step in self.steps:
            value = ratio(seconds[(step, self.first)], seconds[(step, self.second)])
            self.ratios.setdefault(step, []).append(value)

    def rows(self) -> list[list[str]]:
        """Per step: each mode's median (min-max) seconds, and the ratio's median (spread)."""
        out = []
        for step in self.steps:
            a, b = self.times[(step, self.first)], self.times[(step, self.second)]
            values = self.ratios[step]
            out.append(
                [
                    step,
                    f"{median(a):.2f} ({min(a):.2f}-{max(a):.2f})",
                    f"{median(b):.2f} ({min(b):.2f}-{max(b):.2f})",
                    f"{median(values):.2f}x ({min(values):.2f}-{max(values):.2f}x)",
                ]
            )
        return out

    def data(self) -> dict[str, Any]:
        return {
            "times": {f"{s}/{m}": v for (s, m), v in self.times.items()},
            "ratios": self.ratios,
        }

    def run(
        self,
        repeats: int,
        step: Callable[[str, str, int], tuple[float, Any]],
        before: Callable[[str, int], None] | None = None,
    ) -> None:
        """Run and record ``repeats`` rounds after a warm-up round, the modes in alternating
        order: per mode, ``before(mode, round)`` (e.g. a fresh copy of a table), then every
        step, ``step(step, mode, round)`` returning its seconds and answer. The modes' answers
        to each step must agree (else the run stops)."""
        for round_ in range(repeats + 1):  # round 0 warms up
            seconds: dict[tuple[str, str], float] = {}
            answers: dict[str, set[str]] = {}
            modes = (self.first, self.second)
            for mode in modes if round_ % 2 else modes[::-1]:
                if before is not None:
                    before(mode, round_)
                for name in self.steps:
                    seconds[(name, mode)], answer = step(name, mode, round_)
                    answers.setdefault(name, set()).add(repr(answer))
            if any(len(a) != 1 for a in answers.values()):
                raise SystemExit(f"the modes disagree: {answers}")
            self.record(round_, seconds)

    def report_to(self, report: Report, title: str, label: str = "statement") -> None:
        """Put the rounds into ``report``: the table of :meth:`rows` (headed ``label``, the
        two modes and the ratio) and the raw series (:meth:`data`)."""
        report.table(title, [label, self.first, self.second, "ratio (min-max)"], self.rows())
        report.data = self.data()


# ---- data and catalogs ----------------------------------------------------------------------

ROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("batch", pa.int64(), nullable=False),
        pa.field("region", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)
_EPOCH_2024_US = 1_704_067_200_000_000


def rows(batch: int, count: int = 100) -> pa.Table:
    """``count`` rows of batch ``batch``: ids ``batch * count + i``, so every row is unique."""
    first = batch * count
    ids = list(range(first, first + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "batch": pa.array([batch] * count, pa.int64()),
            "region": pa.array([("eu", "us", "ap")[i % 3] for i in ids]),
            "amount": pa.array([i * 0.25 for i in ids], pa.float64()),
            "ts": pa.array(
                [_EPOCH_2024_US + i * 1_000_000 for i in ids], pa.timestamp("us", tz="UTC")
            ),
        },
        schema=ROW_SCHEMA,
    )


def sqlite_url(folder: str | os.PathLike[str]) -> str:
    """A SQLite catalog file inside ``folder`` (created if missing)."""
    os.makedirs(folder, exist_ok=True)
    return f"sqlite:///{os.path.join(os.fspath(folder), 'catalog.db')}"


def lakecat_catalog(uri: str, warehouse: str, *, name: str = "lakecat") -> Any:
    """A lakecat :class:`~lakecat.catalog.Catalog` (imported lazily: keeps ``--help`` fast)."""
    from lakecat.catalog import Catalog

    return Catalog(uri, warehouse=warehouse, name=name)


def pyiceberg_catalog(uri: str, warehouse: str, *, name: str = "lakecat") -> Any:
    """pyiceberg 0.12's ``SqlCatalog`` on the same kind of database and warehouse.

    With the same ``uri`` and ``name`` it sees lakecat's tables (both use the JDBC catalog's
    two tables), which is how the planning benchmark plans one table with both libraries.
    """
    from pyiceberg.catalog.sql import SqlCatalog

    location = warehouse if "://" in warehouse else Path(warehouse).resolve().as_uri()
    return SqlCatalog(name, uri=uri, warehouse=location)


def local_path(location: str) -> Path:
    """A ``file://`` URI (or a plain path) as a local path."""
    if location.startswith("file:"):
        return Path(unquote(urlparse(location).path))
    return Path(location)


def folder_size(path: str | os.PathLike[str]) -> int:
    """Bytes in the regular files directly inside ``path`` (0 if it does not exist)."""
    try:
        with os.scandir(path) as entries:
            return sum(e.stat().st_size for e in entries if e.is_file())
    except FileNotFoundError:
        return 0


def file_sizes(path: str | os.PathLike[str]) -> dict[str, int]:
    """Name -> size of the regular files directly inside ``path``."""
    try:
        with os.scandir(path) as entries:
            return {e.name: e.stat().st_size for e in entries if e.is_file()}
    except FileNotFoundError:
        return {}


# ---- PostgreSQL -----------------------------------------------------------------------------
# The test suite's throw-away server (tests/local_postgres.py), so both start it the same way.

sys.path.insert(0, str(BENCH_DIR.parent / "tests"))
from local_postgres import LocalPostgres as LocalPostgres  # noqa: E402  (re-exported)

# ---- reporting ------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    try:
        with open("/proc/meminfo") as f:
            mem_kib = int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kib = 0
    versions: dict[str, str] = {}
    for package in ("pyiceberg", "pyarrow", "fastavro", "orjson", "sqlalchemy", "psycopg"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            versions[package] = version(package)
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu_pressure": cpu_pressure(),
        "cpus": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in load],
        "versions": versions,
    }


def cpu_pressure() -> str:
    """Linux PSI: how often runnable tasks waited for a CPU (other work on a shared machine)."""
    try:
        with open("/proc/pressure/cpu") as f:
            return f.readline().strip()
    except OSError:
        return "unknown"


@dataclass
class Report:
    """Collects a benchmark's tables and target checks, prints them, writes them as JSON."""

    name: str
    args: dict[str, Any]
    info: dict[str, Any] = field(default_factory=machine)
    tables: list[dict[str, Any]] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def table(self, title: str, headers: Sequence[str], body: Sequence[Sequence[Any]]) -> None:
        cells = [[_cell(v) for v in row] for row in body]
        self.tables.append({"title": title, "headers": list(headers), "rows": cells})
        print_table(title, headers, cells)

    def target(self, text: str, met: bool, measured: str) -> None:
        self.targets.append({"target": text, "met": bool(met), "measured": measured})
        print(f"  [{'MET' if met else 'NOT MET'}] {text}: {measured}")

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"  note: {text}")

    def write(self, out_dir: Path = OUT_DIR) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        mode = "quick" if self.args.get("quick") else "full"
        payload = {
            "benchmark": self.name,
            "args": self.args,
            "machine": self.info,
            "tables": self.tables,
            "targets": self.targets,
            "notes": self.notes,
            "data": self.data,
        }
        text = json.dumps(payload, indent=2, default=str)
        path = out_dir / f"{self.name}-{mode}-{stamp}.json"
        path.write_text(text)
        (out_dir / f"{self.name}-{mode}-latest.json").write_text(text)
        (out_dir / f"{self.name}-{mode}-latest.md").write_text(self.markdown() + "\n")
        print(f"\nresults written to {path}")
        return path

    def markdown(self) -> str:
        """The tables as Markdown (what docs/benchmarks.md shows)."""
        info = self.info
        lines = [
            f"Measured {info['date']} on {info['cpus']} CPUs, {info['memory_gib']} GiB, "
            f"Python {info['python']}, pyiceberg {info['versions'].get('pyiceberg', '?')}, "
            f"load average at start {info['load_average_at_start']}, CPU pressure at start "
            f"`{info['cpu_pressure']}`.",
            "",
        ]
        for t in self.tables:
            lines += [f"**{t['title']}**", "", markdown_table(t["headers"], t["rows"]), ""]
        for t in self.targets:
            lines.append(
                f"- {'met' if t['met'] else '**not met**'}: {t['target']} ({t['measured']})"
            )
        return "\n".join(lines)


def report_from_json(path: str | os.PathLike[str]) -> Report:
    """A :class:`Report` read back from the JSON that :meth:`Report.write` wrote."""
    payload = json.loads(Path(path).read_text())
    return Report(
        payload["benchmark"],
        payload["args"],
        info=payload["machine"],
        tables=payload["tables"],
        targets=payload["targets"],
        notes=payload["notes"],
        data=payload["data"],
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def print_table(title: str, headers: Sequence[str], body: Sequence[Sequence[str]]) -> None:
    widths = [
        max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(headers)
    ]
    print(f"\n{title}")
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in body:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def markdown_table(headers: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---:|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def mib(n_bytes: float) -> float:
    return n_bytes / (1024 * 1024)


def ms(seconds: float) -> float:
    return seconds * 1000


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="a small run of a few seconds (smoke test)"
    )
    parser.add_argument(
        "--workdir",
        default=None,
        help="folder for catalogs and warehouses (default: a temp folder, deleted afterwards)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work folder (printed at the end)"
    )
    return parser


def catalog_session(catalog: Any, app: str, name: str = "lake") -> Any:
    """A ``local[2]`` SparkSession (on 127.0.0.1, no UI, two shuffle partitions, quiet logs)
    with the lakecat ``catalog`` attached as the Spark SQL catalog ``name``, which holds a
    namespace ``db``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import lakecat.spark_ext as lk

    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    spark = lk.session(name, catalog=catalog, builder=builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}.db")
    return spark


# the SQL benchmarks' rows: ``id``, ``part`` (8 values), ``name`` (1,000), ``value``
SQL_COLUMNS = "id bigint, part int, name string, value double"
SQL_ROWS = (
    "id",
    "CAST(id % 8 AS int) AS part",
    "concat('name-', id % 1000) AS name",
    "CAST(id AS double) * 0.5 AS value",
)


def source_view(spark: Any, rows: int, name: str = "src") -> None:
    """``rows`` rows of :data:`SQL_COLUMNS` (:data:`SQL_ROWS`), cached as the temp view
    ``name``."""
    spark.range(rows).selectExpr(*SQL_ROWS).cache().createOrReplaceTempView(name)


def join_and_merge_rounds(
    spark: Any,
    steps: Sequence[str],
    modes: tuple[str, str],
    repeats: int,
    *,
    join: str,
    spec: str,
    updated: int,
    conf: Callable[[str], dict[str, str]],
    check_plan: Callable[[str, str], str | None],
) -> PairedRounds:
    """Time ``steps`` (a join, then a merge-on-read ``MERGE`` from ``lake.db.upd``, ``updated``
    rows with negated values, on ``id``) in both ``modes`` (:meth:`PairedRounds.run`), each
    ``MERGE`` into a fresh copy of the ``src`` view partitioned by ``spec``. A mode runs under
    the session settings ``conf(mode)``; ``check_plan(mode, explain)`` says what is wrong with
    the plan (``EXPLAIN`` text) of a statement in that mode, or None; the ``MERGE``'s rows are
    checked (:func:`check_merged`)."""
    from lakecat.spark_ext.native.write import session_conf

    def target(mode: str, round_: int) -> str:
        return f"lake.db.t_{round_}_{modes.index(mode)}"

    def fresh_target(mode: str, round_: int) -> None:
        spark.sql(
            f"CREATE TABLE {target(mode, round_)} ({SQL_COLUMNS}) {spec} "
            "TBLPROPERTIES ('write.merge.mode' = 'merge-on-read')"
        )
        spark.sql(f"INSERT INTO {target(mode, round_)} SELECT * FROM src")

    def run(step: str, mode: str, round_: int) -> tuple[float, Any]:
        query = join
        if step == steps[1]:
            query = (
                f"MERGE INTO {target(mode, round_)} t USING lake.db.upd u ON t.id = u.id "
                "WHEN MATCHED THEN UPDATE SET value = u.value"
            )
        with session_conf(spark, conf(mode)):
            wrong = check_plan(mode, spark.sql(f"EXPLAIN {query}").collect()[0][0])
            if wrong is not None:
                raise SystemExit(f"{step}, {mode}: {wrong}")
            start = time.perf_counter()
            answer = sorted(spark.sql(query).collect())
            seconds = time.perf_counter() - start
        if step == steps[1]:
            answer = check_merged(spark, target(mode, round_), updated)
        return seconds, answer

    rounds = PairedRounds(list(steps), *modes)
    rounds.run(repeats, run, before=fresh_target)
    return rounds


def check_merged(spark: Any, table: str, updated: int) -> list[Any]:
    """The count and sum of ``table``'s negative values, the rows a benchmark's ``MERGE``
    updated from its negated copy; stops the run when they are not ``updated`` rows."""
    answer: list[Any] = spark.sql(
        f"SELECT count(*), sum(value) FROM {table} WHERE value < 0"
    ).collect()
    if answer[0][0] != updated:
        raise SystemExit(f"the MERGE of {table} updated {answer[0][0]} rows, not {updated}")
    return answer


@contextlib.contextmanager
def workdir(args: argparse.Namespace, prefix: str) -> Iterator[Path]:
    """The benchmark's scratch folder: ``--workdir`` or a temp folder removed at the end."""
    if args.workdir:
        path = Path(args.workdir).resolve()
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        if args.keep:
            print(f"work folder kept: {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    # ``python benchmarks/common.py RESULT.json...``: print results as Markdown (for the docs).
    import sys

    for result in sys.argv[1:]:
        print(report_from_json(result).markdown(), end="\n\n")
