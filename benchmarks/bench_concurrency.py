"""Issue 3: concurrent writers. P processes append to one table, lakecat vs pyiceberg 0.12.

For P = 1, 2, 4, 8 writer processes, each makes 20 appends of 100 rows to one shared,
unpartitioned table, on a SQLite catalog and on a PostgreSQL catalog (a throw-away local
server). Three writers are compared side by side, each on a fresh catalog and table:

* ``lakecat``: ``catalog.load_table(...)`` then ``table.append(batch)``. lakecat retries lost
  commit races by itself; its retries are read back from the snapshot summaries
  (``lakecat.commit.attempts``).
* ``pyiceberg``: ``catalog.load_table(...)`` then ``tbl.append(batch)``, nothing more. The
  installed pyiceberg 0.12.0 retries a lost commit inside ``Transaction.commit_transaction``
  (``commit.retry.num-retries``, default 4, exponential backoff from 100 ms); an append that
  still loses raises ``CommitFailedException`` and counts as a failed append. Its internal
  retries are counted from the warning it logs for each one.
* ``pyiceberg+loop``: the same wrapped in the simple loop a pyiceberg user would write: on
  ``CommitFailedException`` reload the table and append again, up to ``--pyiceberg-attempts``
  calls (no extra backoff). Other errors are not retried.

Processes are started with multiprocessing's ``spawn`` and wait on a barrier after their
imports and set-up, so all start appending at once. One append's latency runs from the
``load_table`` call to the end of the last attempt. Throughput = committed appends / (last
writer's end - first writer's start). Afterwards the table is read back with the library that
wrote it: it must hold exactly 100 rows per committed batch and no row of a failed batch.

    python benchmarks/bench_concurrency.py                 # SQLite and PostgreSQL
    python benchmarks/bench_concurrency.py --backends sqlite
    python benchmarks/bench_concurrency.py --quick         # a few seconds
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from common import (
    NAMESPACE,
    LocalPostgres,
    Report,
    base_parser,
    lakecat_catalog,
    machine,
    median,
    ms,
    percentile,
    pyiceberg_catalog,
    ratio,
    rows,
    sqlite_url,
    workdir,
)

VARIANTS = ("lakecat", "pyiceberg", "pyiceberg+loop")
FULL_WRITERS = (1, 2, 4, 8)
QUICK_WRITERS = (2,)
FULL_APPENDS = 20
QUICK_APPENDS = 3
TABLE = f"{NAMESPACE}.events"
BARRIER_TIMEOUT_S = 600
ATTEMPTS_KEY = "lakecat.commit.attempts"
WAIT_MS_KEY = "lakecat.commit.wait-ms"


@dataclass(frozen=True)
class WriterJob:
    variant: str
    uri: str
    warehouse: str
    writer: int
    appends: int
    pyiceberg_attempts: int


@dataclass
class WriterLog:
    writer: int
    start: float = 0.0
    end: float = 0.0
    committed: list[int] = field(default_factory=list)  # batch numbers
    latencies_s: list[float] = field(default_factory=list)  # of committed appends
    attempts: list[int] = field(default_factory=list)  # commit attempts of every append
    failed: list[tuple[int, str]] = field(default_factory=list)  # (batch, error type)


def batch_number(writer: int, i: int) -> int:
    return writer * 1000 + i


# ---- the writer processes ---------------------------------------------------------------------


def writer_main(job: WriterJob, barrier: Any, results: Any) -> None:
    """One writer process: set up, wait for the others, append, report."""
    log = WriterLog(job.writer)
    batches = [
        (batch_number(job.writer, i), rows(batch_number(job.writer, i))) for i in range(job.appends)
    ]
    appender = LakecatAppender(job) if job.variant == "lakecat" else PyicebergAppender(job)
    barrier.wait(timeout=BARRIER_TIMEOUT_S)
    log.start = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
    for batch, data in batches:
        t0 = time.perf_counter()
        try:
            appender.append(data)
        except Exception as exc:  # a failed append is a result here, recorded by type
            log.failed.append((batch, type(exc).__name__))
        else:
            log.latencies_s.append(time.perf_counter() - t0)
            log.committed.append(batch)
        log.attempts.append(appender.attempts)
    log.end = time.perf_counter()
    results.put(asdict(log))


class LakecatAppender:
    """``load_table`` + ``append``; lakecat retries lost races itself."""

    def __init__(self, job: WriterJob) -> None:
        self.catalog = lakecat_catalog(job.uri, job.warehouse)
        self.catalog.load_table(TABLE)  # connect and warm up before the barrier
        self.attempts = 0

    def append(self, data: Any) -> None:
        self.attempts = 0  # unknown if it raises
        result = self.catalog.load_table(TABLE).append(data)
        self.attempts = int(result.attempts)


class _PyicebergRetries(logging.Handler):
    """Counts the commit retries pyiceberg makes inside ``append`` (it logs one per retry)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        # Benchmark bookkeeping only: pyiceberg exposes no counter, just this log line.
        if record.getMessage().startswith("Commit failed due to a concurrent update"):
            self.count += 1


class PyicebergAppender:
    """``load_table`` + ``append``, in a retry loop of ``max_calls`` for ``pyiceberg+loop``."""

    def __init__(self, job: WriterJob) -> None:
        from pyiceberg.exceptions import CommitFailedException

        self.retry_on = CommitFailedException
        self.retries = _PyicebergRetries()
        pyiceberg_log = logging.getLogger("pyiceberg.table")
        pyiceberg_log.addHandler(self.retries)
        pyiceberg_log.propagate = False  # counted, not printed
        self.catalog = pyiceberg_catalog(job.uri, job.warehouse)
        self.catalog.load_table(TABLE)
        self.max_calls = job.pyiceberg_attempts if job.variant == "pyiceberg+loop" else 1
        self.attempts = 0

    def append(self, data: Any) -> None:
        self.retries.count = 0
        for call in range(1, self.max_calls + 1):
            try:
                self.catalog.load_table(TABLE).append(data)
                return
            except self.retry_on:
                if call == self.max_calls:
                    raise
            finally:
                # each call is one attempt plus the retries pyiceberg made inside it
                self.attempts = call + self.retries.count


# ---- one run: a fresh table, P writers --------------------------------------------------------


@dataclass
class RunResult:
    backend: str
    variant: str
    writers: int
    appends_per_writer: int
    committed: int
    failed: int
    retries: int
    retries_reported: int
    backoff_s: float | None  # lakecat: sum of lakecat.commit.wait-ms over committed snapshots
    elapsed_s: float
    p50_ms: float
    p95_ms: float
    errors: dict[str, int]
    rows_in_table: int
    loss_check: str
    repeat: int = 0
    load_average: float = 0.0  # 1-minute load average when the run ended

    @property
    def throughput(self) -> float:
        return ratio(self.committed, self.elapsed_s)


def run_once(
    backend: str, uri: str, warehouse: str, variant: str, writers: int, args: argparse.Namespace
) -> RunResult:
    _create_table(variant, uri, warehouse, args.lakecat_properties)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers)
    results = ctx.Queue()
    jobs = [
        WriterJob(variant, uri, warehouse, w, args.appends, args.pyiceberg_attempts)
        for w in range(writers)
    ]
    procs = [ctx.Process(target=writer_main, args=(job, barrier, results)) for job in jobs]
    for p in procs:
        p.start()
    logs = [WriterLog(**results.get(timeout=BARRIER_TIMEOUT_S * 2)) for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a {variant} writer exited with code {p.exitcode}")

    committed = [b for log in logs for b in log.committed]
    failed = [f for log in logs for f in log.failed]
    latencies = [s for log in logs for s in log.latencies_s]
    elapsed = max(log.end for log in logs) - min(log.start for log in logs)
    retries_reported = sum(max(a - 1, 0) for log in logs for a in log.attempts)
    check = _check(variant, uri, warehouse, committed)
    return RunResult(
        backend=backend,
        variant=variant,
        writers=writers,
        appends_per_writer=args.appends,
        committed=len(committed),
        failed=len(failed),
        retries=check.retries if check.retries is not None else retries_reported,
        retries_reported=retries_reported,
        backoff_s=check.backoff_s,
        elapsed_s=elapsed,
        p50_ms=ms(median(latencies)),
        p95_ms=ms(percentile(latencies, 95)),
        errors=dict(Counter(kind for _, kind in failed)),
        rows_in_table=check.rows,
        loss_check=check.verdict,
        load_average=os.getloadavg()[0],
    )


def _create_table(variant: str, uri: str, warehouse: str, lakecat_properties: str) -> None:
    if variant == "lakecat":
        catalog = lakecat_catalog(uri, warehouse)
        catalog.create_namespace(NAMESPACE)
        props = dict(kv.split("=", 1) for kv in lakecat_properties.split(",") if kv)
        catalog.create_table(TABLE, rows(0).schema, properties=props)
        catalog.close()
    else:
        catalog = pyiceberg_catalog(uri, warehouse)
        catalog.create_namespace(NAMESPACE)
        catalog.create_table(TABLE, schema=rows(0).schema)
        catalog.engine.dispose()


@dataclass
class Check:
    rows: int
    verdict: str  # "ok" or what is wrong
    retries: int | None = None  # lakecat: from the snapshot summaries
    backoff_s: float | None = None  # lakecat: from the snapshot summaries


def _check(variant: str, uri: str, warehouse: str, committed: list[int]) -> Check:
    """Read the table back: exactly 100 rows per committed batch, nothing else."""
    retries: int | None = None
    backoff_s: float | None = None
    if variant == "lakecat":
        catalog = lakecat_catalog(uri, warehouse)
        table = catalog.load_table(TABLE)
        batches = table.to_arrow(columns=["batch"]).column("batch").to_pylist()
        snapshots = table.snapshots()
        retries = sum(int(s.summary.get(ATTEMPTS_KEY, "1")) - 1 for s in snapshots)
        backoff_s = sum(int(s.summary.get(WAIT_MS_KEY, "0")) for s in snapshots) / 1000
        catalog.close()
    else:
        catalog = pyiceberg_catalog(uri, warehouse)
        tbl = catalog.load_table(TABLE)
        batches = tbl.scan(selected_fields=("batch",)).to_arrow().column("batch").to_pylist()
        snapshots = tbl.snapshots()
        catalog.engine.dispose()
    counts = Counter(batches)
    problems = []
    missing = [b for b in committed if counts.get(b) != 100]
    if missing:
        problems.append(f"{len(missing)} committed batch(es) missing or incomplete")
    extra = set(counts) - set(committed)
    if extra:
        problems.append(f"{len(extra)} batch(es) present that were not acknowledged")
    if len(batches) != 100 * len(committed):
        problems.append(f"{len(batches)} rows, expected {100 * len(committed)}")
    if len(snapshots) != len(committed):
        problems.append(f"{len(snapshots)} snapshots for {len(committed)} committed appends")
    return Check(len(batches), "; ".join(problems) or "ok", retries, backoff_s)


# ---- the benchmark ----------------------------------------------------------------------------


@contextmanager
def backend_urls(backend: str, root: Path) -> Iterator[Any]:
    """Yields a function (run name) -> (catalog URL, warehouse folder) for fresh catalogs."""
    if backend == "sqlite":

        def fresh_sqlite(name: str) -> tuple[str, str]:
            folder = root / backend / name
            return sqlite_url(folder), str(folder / "warehouse")

        yield fresh_sqlite
        return
    with LocalPostgres() as server:

        def fresh_postgres(name: str) -> tuple[str, str]:
            database = name.replace("+", "_").replace("-", "_")
            return server.create_database(database), str(root / backend / name / "warehouse")

        yield fresh_postgres


def main() -> None:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default=None, help="comma-separated: sqlite,postgres")
    parser.add_argument("--writers", default=None, help="comma-separated process counts")
    parser.add_argument("--appends", type=int, default=None, help="appends per writer")
    parser.add_argument(
        "--pyiceberg-attempts",
        type=int,
        default=10,
        help="append calls per batch of the pyiceberg+loop writer (default 10)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="runs of every configuration (default 3; 1 with --quick); the median is shown",
    )
    parser.add_argument(
        "--lakecat-properties",
        default="",
        help="extra table properties for lakecat tables, k=v,k=v (for tuning experiments)",
    )
    parser.add_argument(
        "--from-json",
        default=None,
        help="do not run: recompute the tables and targets from a results JSON of this script",
    )
    args = parser.parse_args()
    if args.from_json:
        rerun_report(args.from_json)
        return
    if args.backends is None:
        args.backends = "sqlite" if args.quick else "sqlite,postgres"
    writer_counts = (
        tuple(int(x) for x in args.writers.split(","))
        if args.writers
        else (QUICK_WRITERS if args.quick else FULL_WRITERS)
    )
    if args.appends is None:
        args.appends = QUICK_APPENDS if args.quick else FULL_APPENDS
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3

    info = machine()  # the machine as the run starts (load, CPU pressure)
    results: list[RunResult] = []
    with workdir(args, "lakecat-bench-concurrency-") as root:
        for backend in args.backends.split(","):
            with backend_urls(backend, root) as fresh:
                # Interleaved (every P and writer in each repeat): drifting machine load hits
                # every configuration alike.
                for repeat in range(args.repeats):
                    for writers in writer_counts:
                        for variant in VARIANTS:
                            uri, warehouse = fresh(f"{variant}-p{writers}-r{repeat}")
                            result = run_once(backend, uri, warehouse, variant, writers, args)
                            result.repeat = repeat
                            results.append(result)
                            print(
                                f"  {backend} run {repeat + 1}/{args.repeats} P={writers} "
                                f"{variant}: {result.committed} committed, {result.failed} "
                                f"failed, {result.throughput:.1f}/s, check {result.loss_check}",
                                file=sys.stderr,
                                flush=True,
                            )
        rep = report(args, results, writer_counts)
        rep.info = info
        rep.write()


def rerun_report(path: str) -> None:
    """Print (and write) the report of an earlier run from its raw per-run data."""
    payload = json.loads(Path(path).read_text())
    args = argparse.Namespace(**payload["args"])
    fields = set(RunResult.__dataclass_fields__)
    results = [
        RunResult(**{k: v for k, v in run.items() if k in fields})
        for run in payload["data"]["runs"]
    ]
    counts = tuple(sorted({r.writers for r in results}))
    rep = report(args, results, counts)
    rep.info = payload["machine"]
    rep.note(f"recomputed from {Path(path).name} (the measurements of that run)")
    rep.write()


def median_run(runs: list[RunResult]) -> RunResult:
    """The run with the median throughput (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda r: r.throughput)
    return ordered[(len(ordered) - 1) // 2]


def report(args: argparse.Namespace, results: list[RunResult], counts: tuple[int, ...]) -> Report:
    rep = Report("concurrency", vars(args))
    rep.data = {"runs": [{**asdict(r), "throughput_per_s": r.throughput} for r in results]}
    for backend in args.backends.split(","):
        body = []
        for writers in counts:
            for variant in VARIANTS:
                runs = [
                    r
                    for r in results
                    if (r.backend, r.variant, r.writers) == (backend, variant, writers)
                ]
                if not runs:
                    continue
                r = median_run(runs)
                checks = sum(x.loss_check == "ok" for x in runs)
                body.append(
                    [
                        r.writers,
                        r.variant,
                        f"{r.committed}/{r.writers * r.appends_per_writer}",
                        r.throughput,
                        " / ".join(f"{x.throughput:.0f}" for x in runs),
                        r.retries,
                        r.backoff_s,
                        r.failed,
                        r.p50_ms,
                        r.p95_ms,
                        ", ".join(f"{k} x{v}" for k, v in sorted(r.errors.items())) or "-",
                        f"ok {checks}/{len(runs)}" if checks == len(runs) else "FAILED",
                    ]
                )
        rep.table(
            f"{backend}: {args.appends} appends of 100 rows per writer (the median of "
            f"{args.repeats} runs by appends/s; every run's appends/s in 'runs')",
            [
                "P",
                "writer",
                "committed",
                "appends/s",
                "runs",
                "retries",
                "backoff s",
                "failed",
                "p50 ms",
                "p95 ms",
                "errors",
                "no-loss check",
            ],
            body,
        )

    def find(backend: str, variant: str, writers: int) -> RunResult | None:
        runs = [
            r for r in results if (r.backend, r.variant, r.writers) == (backend, variant, writers)
        ]
        return median_run(runs) if runs else None

    def paired(backend: str, a: tuple[str, int], b: tuple[str, int], metric: str) -> list[float]:
        """metric(a) / metric(b) per repeat: both ends of each ratio ran minutes apart at most,
        under the same machine load (runs of different repeats may not have)."""
        out = []
        for repeat in sorted({r.repeat for r in results}):
            x = [
                r
                for r in results
                if (r.backend, r.variant, r.writers, r.repeat) == (backend, *a, repeat)
            ]
            y = [
                r
                for r in results
                if (r.backend, r.variant, r.writers, r.repeat) == (backend, *b, repeat)
            ]
            if x and y:
                out.append(ratio(getattr(x[0], metric), getattr(y[0], metric)))
        return out

    def listed(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" if v < 1 else f"{v:.1f}" for v in values)

    top, one = max(counts), min(counts)
    for backend in args.backends.split(","):
        lake = find(backend, "lakecat", top)
        if lake is None:
            continue
        if backend == "sqlite":
            for variant in ("pyiceberg", "pyiceberg+loop"):
                other = find(backend, variant, top)
                if other is None:
                    continue
                speeds = paired(backend, ("lakecat", top), (variant, top), "throughput")
                speed = median(speeds)
                rep.target(
                    f"SQLite, P={top}: lakecat commits >= 10x the appends/s of {variant} "
                    "(median of the per-run ratios)",
                    speed >= 10,
                    f"{speed:.1f}x (runs: {listed(speeds)}); medians {lake.throughput:.1f}/s vs "
                    f"{other.throughput:.1f}/s = {ratio(lake.throughput, other.throughput):.1f}x",
                )
                p95s = paired(backend, (variant, top), ("lakecat", top), "p95_ms")
                p95 = median(p95s)
                rep.target(
                    f"SQLite, P={top}: lakecat p95 latency <= 1/10 of {variant}'s "
                    "(median of the per-run ratios)",
                    p95 >= 10,
                    f"1/{p95:.1f} (runs: 1/{', 1/'.join(f'{v:.1f}' for v in p95s)}); medians "
                    f"{lake.p95_ms:.0f} ms vs {other.p95_ms:.0f} ms",
                )
            lake_runs = [r for r in results if (r.backend, r.variant) == (backend, "lakecat")]
            lake_failed = sum(r.failed for r in lake_runs)
            rep.target(
                "SQLite: lakecat has zero failed appends (every P, every run)",
                lake_failed == 0,
                f"{lake_failed} failed in {sum(r.committed + r.failed for r in lake_runs)} appends",
            )
            base = find(backend, "lakecat", one)
            if base is not None:
                kepts = paired(backend, ("lakecat", top), ("lakecat", one), "throughput")
                kept = median(kepts)
                rep.target(
                    f"SQLite: lakecat throughput at P={top} >= 80% of P={one} (median of the "
                    "per-run ratios)",
                    kept >= 0.8,
                    f"{kept:.0%} (runs: {', '.join(f'{v:.0%}' for v in kepts)}); medians "
                    f"{lake.throughput:.1f}/s vs {base.throughput:.1f}/s",
                )
        for r in results:
            if r.backend == backend and r.loss_check != "ok":
                rep.note(
                    f"{backend} P={r.writers} {r.variant}: no-loss check FAILED: {r.loss_check}"
                )
    if all(r.loss_check == "ok" for r in results):
        rep.note("no-loss check passed for every run (rows == committed x 100, every batch once)")
    return rep


if __name__ == "__main__":
    main()
