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

``--ablation`` measures what each piece of lakecat's commit coordination is worth
(``lakecat.catalog.commit.coordination.switches``): lakecat only, SQLite, a catalog and
warehouse in ``--workdir`` (so on the file system to be measured), P = 1 and 8, every
configuration of :data:`ABLATION_CONFIGS` in each repeat (their order rotated from repeat to
repeat), ``--repeats`` (default 5) times. It reports per configuration and P the median and
the min-max of appends/s and p95 latency, the P = 8 / P = 1 ratio per repeat, and per piece
its gain paired within each repeat (all on vs that piece off, seconds apart):

    python benchmarks/bench_concurrency.py --ablation --workdir /mnt/somewhere/lk-bench
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import multiprocessing as mp
import os
import shutil
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

# --ablation: name -> (environment of the writer processes, table properties). The switches
# are documented in lakecat.catalog.commit.coordination.switches. ("no pooled files",
# LAKECAT_COMMIT_POOLED_FILES=0, was measured too, and the pooling removed: docs/benchmarks.md.)
ABLATION_CONFIGS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "all on": ({}, {}),
    "no doorbells": ({"LAKECAT_COMMIT_DOORBELLS": "0"}, {}),
    "no group commit": ({}, {"commit.group-commit.enabled": "false"}),
    "no lock": ({}, {"commit.lock.enabled": "false"}),
}
ABLATION_WRITERS = (1, 8)
KEEP_GAIN = 0.10  # a piece is kept if it gains at least this in every repeat (see below)


@dataclass(frozen=True)
class WriterJob:
    variant: str
    uri: str
    warehouse: str
    writer: int
    appends: int
    pyiceberg_attempts: int
    env: tuple[tuple[str, str], ...] = ()  # set in the writer process before anything else


@dataclass
class WriterLog:
    writer: int
    start: float = 0.0
    end: float = 0.0
    committed: list[int] = field(default_factory=list)  # batch numbers
    latencies_s: list[float] = field(default_factory=list)  # of committed appends
    attempts: list[int] = field(default_factory=list)  # commit attempts of every append
    failed: list[tuple[int, str]] = field(default_factory=list)  # (batch, error type)
    cpu_s: float = 0.0  # this process's CPU time (user + system) over its appends


def batch_number(writer: int, i: int) -> int:
    return writer * 1000 + i


# ---- the writer processes ---------------------------------------------------------------------


def writer_main(job: WriterJob, barrier: Any, results: Any) -> None:
    """One writer process: set up, wait for the others, append, report."""
    os.environ.update(dict(job.env))  # the coordination switches are read at each use
    log = WriterLog(job.writer)
    batches = [
        (batch_number(job.writer, i), rows(batch_number(job.writer, i))) for i in range(job.appends)
    ]
    appender = LakecatAppender(job) if job.variant == "lakecat" else PyicebergAppender(job)
    barrier.wait(timeout=BARRIER_TIMEOUT_S)
    cpu = time.process_time()
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
    log.cpu_s = time.process_time() - cpu
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
    config: str = ""  # --ablation: which coordination pieces were switched off
    metadata_versions: int = 0  # --ablation: swaps that landed (fewer than appends if grouped)
    cpu_ms_per_append: float = 0.0  # the writers' CPU time over committed appends

    @property
    def throughput(self) -> float:
        return ratio(self.committed, self.elapsed_s)


def run_once(
    backend: str,
    uri: str,
    warehouse: str,
    variant: str,
    writers: int,
    args: argparse.Namespace,
    *,
    properties: str | None = None,
    env: tuple[tuple[str, str], ...] = (),
) -> RunResult:
    props = args.lakecat_properties if properties is None else properties
    _create_table(variant, uri, warehouse, props)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers)
    results = ctx.Queue()
    jobs = [
        WriterJob(variant, uri, warehouse, w, args.appends, args.pyiceberg_attempts, env)
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
        metadata_versions=check.versions,
        cpu_ms_per_append=ms(ratio(sum(log.cpu_s for log in logs), len(committed))),
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
    versions: int = 0  # lakecat: metadata versions after the table's creation


def _check(variant: str, uri: str, warehouse: str, committed: list[int]) -> Check:
    """Read the table back: exactly 100 rows per committed batch, nothing else."""
    retries: int | None = None
    backoff_s: float | None = None
    versions = 0
    if variant == "lakecat":
        catalog = lakecat_catalog(uri, warehouse)
        table = catalog.load_table(TABLE)
        batches = table.to_arrow(columns=["batch"]).column("batch").to_pylist()
        snapshots = table.snapshots()
        retries = sum(int(s.summary.get(ATTEMPTS_KEY, "1")) - 1 for s in snapshots)
        backoff_s = sum(int(s.summary.get(WAIT_MS_KEY, "0")) for s in snapshots) / 1000
        # the version number in the current metadata file's name: swaps since the creation
        name = table.metadata_location.rsplit("/", 1)[-1]
        versions = int(name.split("-", 1)[0]) if name.split("-", 1)[0].isdigit() else 0
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
    return Check(len(batches), "; ".join(problems) or "ok", retries, backoff_s, versions)


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
    parser.add_argument(
        "--ablation",
        action="store_true",
        help="lakecat on SQLite only: each coordination piece switched off in turn, interleaved "
        "(run it with --workdir on the file system to measure)",
    )
    parser.add_argument(
        "--configs",
        default=None,
        help=f"--ablation: comma-separated subset of {', '.join(ABLATION_CONFIGS)}",
    )
    args = parser.parse_args()
    if args.from_json:
        rerun_report(args.from_json)
        return
    if args.ablation:
        ablation(args)
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
    if getattr(args, "ablation", False):
        rep = ablation_report(args, results, payload["data"].get("file_system", {}))
    else:
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


# ---- --ablation: what each coordination piece is worth ----------------------------------------


def file_system(path: Path) -> dict[str, str]:
    """The mount that holds ``path`` (from /proc/self/mounts): device, type, options."""
    target = os.path.realpath(path)
    best: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/mounts") as mounts:
        for line in mounts:
            device, point, kind, options = line.split()[:4]
            point = point.replace("\\040", " ")
            inside = target == point or target.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best.get("mount_point", "")):
                best = {
                    "device": device,
                    "mount_point": point,
                    "type": kind,
                    "options": options,
                }
    best["path"] = target
    return best


def ablation(args: argparse.Namespace) -> None:
    names = [c.strip() for c in args.configs.split(",")] if args.configs else list(ABLATION_CONFIGS)
    unknown = [n for n in names if n not in ABLATION_CONFIGS]
    if unknown:
        raise SystemExit(f"unknown --configs {unknown}; known: {', '.join(ABLATION_CONFIGS)}")
    args.configs = ",".join(names)
    args.backends = "sqlite"
    writer_counts = (
        tuple(int(x) for x in args.writers.split(",")) if args.writers else ABLATION_WRITERS
    )
    args.writers = ",".join(map(str, writer_counts))
    if args.appends is None:
        args.appends = QUICK_APPENDS if args.quick else FULL_APPENDS
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    info = machine()
    results: list[RunResult] = []
    with workdir(args, "lakecat-bench-ablation-") as root:
        fs = file_system(root)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        run_root = root / f"ablation-{stamp}"
        print(f"  work folder {run_root} on {fs}", file=sys.stderr, flush=True)
        try:
            # a first run warms the page cache and the interpreter's files: not measured
            folder = run_root / "warm-up"
            run_once("sqlite", sqlite_url(folder), str(folder / "warehouse"), "lakecat", 1, args)
            for repeat in range(args.repeats):
                shift = repeat % len(names)
                for name in names[shift:] + names[:shift]:  # rotated: no config always first
                    env, props = ABLATION_CONFIGS[name]
                    for writers in writer_counts:
                        folder = run_root / f"{name.replace(' ', '-')}-p{writers}-r{repeat}"
                        os.sync()  # the previous run's dirty pages are not written during this
                        uri, warehouse = sqlite_url(folder), str(folder / "warehouse")
                        result = run_once(
                            "sqlite",
                            uri,
                            warehouse,
                            "lakecat",
                            writers,
                            args,
                            properties=",".join(f"{k}={v}" for k, v in props.items()),
                            env=tuple(env.items()),
                        )
                        result.repeat, result.config = repeat, name
                        results.append(result)
                        print(
                            f"  run {repeat + 1}/{args.repeats} {name} P={writers}: "
                            f"{result.throughput:.1f}/s, p95 {result.p95_ms:.1f} ms, "
                            f"{result.metadata_versions} versions, {result.retries} retries, "
                            f"{result.failed} failed, check {result.loss_check}",
                            file=sys.stderr,
                            flush=True,
                        )
        finally:
            if not args.keep:
                shutil.rmtree(run_root, ignore_errors=True)
        rep = ablation_report(args, results, fs)
        rep.info = info
        rep.write()


def _spread(values: list[float], fmt: str = "{:.0f}") -> str:
    return f"{fmt.format(min(values))}-{fmt.format(max(values))}" if values else "-"


def _pct(values: list[float]) -> str:
    return ", ".join(f"{v:+.0%}" for v in values)


def ablation_report(
    args: argparse.Namespace, results: list[RunResult], fs: dict[str, str]
) -> Report:
    """Per configuration and P: medians and spreads; per piece: its paired gain and whether
    it is kept. The rule: a piece is kept if, at the highest P, the configuration with it
    beats the one without it by at least KEEP_GAIN in every repeat (the lowest of the per-repeat
    gains, i.e. the whole run-to-run spread of the gain, is at least KEEP_GAIN), in appends/s
    or in p95 latency."""
    rep = Report("concurrency-ablation", vars(args))
    rep.data = {
        "file_system": fs,
        "runs": [{**asdict(r), "throughput_per_s": r.throughput} for r in results],
    }
    names = [n for n in args.configs.split(",") if any(r.config == n for r in results)]
    counts = tuple(sorted({r.writers for r in results}))
    repeats = sorted({r.repeat for r in results})
    top, one = max(counts), min(counts)

    def run(name: str, writers: int, repeat: int) -> RunResult | None:
        found = [r for r in results if (r.config, r.writers, r.repeat) == (name, writers, repeat)]
        return found[0] if found else None

    body = []
    for name in names:
        for writers in counts:
            runs = [r for r in results if (r.config, r.writers) == (name, writers)]
            if not runs:
                continue
            speeds = [r.throughput for r in runs]
            p95s = [r.p95_ms for r in runs]
            body.append(
                [
                    name,
                    writers,
                    median(speeds),
                    _spread(speeds),
                    median(p95s),
                    _spread(p95s, "{:.1f}"),
                    median([float(r.metadata_versions) for r in runs]),
                    median([r.cpu_ms_per_append for r in runs]),
                    sum(r.retries for r in runs),
                    sum(r.failed for r in runs),
                    "ok" if all(r.loss_check == "ok" for r in runs) else "FAILED",
                ]
            )
    where = fs.get("mount_point", "?")
    rep.table(
        f"{fs.get('path', '?')} ({fs.get('type', '?')} on {fs.get('device', '?')} at {where}, "
        f"{fs.get('options', '?')}): {args.appends} appends of 100 rows per writer, "
        f"{len(repeats)} interleaved repeats",
        [
            "config",
            "P",
            "appends/s median",
            "appends/s min-max",
            "p95 ms median",
            "p95 ms min-max",
            "versions",
            "CPU ms/append",
            "retries",
            "failed",
            "no-loss check",
        ],
        body,
    )

    scaling = []
    for name in names:
        ratios = []
        for repeat in repeats:
            a, b = run(name, top, repeat), run(name, one, repeat)
            if a is not None and b is not None:
                ratios.append(ratio(a.throughput, b.throughput))
        if ratios:
            scaling.append(
                [
                    name,
                    f"{median(ratios):.0%}",
                    _spread(ratios, "{:.0%}"),
                    ", ".join(f"{v:.0%}" for v in ratios),
                ]
            )
            if name == "all on":
                rep.target(
                    f"lakecat throughput at P={top} >= 80% of P={one} (all pieces on, median of "
                    "the per-repeat ratios)",
                    median(ratios) >= 0.8,
                    f"{median(ratios):.0%} (min-max {_spread(ratios, '{:.0%}')})",
                )
    rep.table(
        f"P = {top} / P = {one} appends/s, per repeat (the target: >= 80%)",
        ["config", "median", "min-max", "per repeat"],
        scaling,
    )

    gains = []
    for name in names:
        if name == "all on":
            continue
        speed, latency = [], []
        for repeat in repeats:
            on, off = run("all on", top, repeat), run(name, top, repeat)
            if on is None or off is None:
                continue
            speed.append(ratio(on.throughput, off.throughput) - 1)
            latency.append(ratio(off.p95_ms, on.p95_ms) - 1)
        if not speed:
            continue
        keep = min(speed) >= KEEP_GAIN or min(latency) >= KEEP_GAIN
        gains.append(
            [
                name.removeprefix("no "),
                f"{median(speed):+.0%}",
                _pct(speed),
                f"{median(latency):+.0%}",
                _pct(latency),
                "keep" if keep else "remove",
            ]
        )
    rep.table(
        f"What each piece gains at P = {top}: all on vs that piece off, paired per repeat "
        f"(appends/s: on/off - 1; p95: off/on - 1); kept if the lowest per-repeat gain of "
        f"either is >= {KEEP_GAIN:.0%}",
        [
            "piece",
            "appends/s gain median",
            "per repeat",
            "p95 gain median",
            "per repeat",
            "verdict",
        ],
        gains,
    )
    bad = [r for r in results if r.loss_check != "ok" or r.failed]
    if bad:
        for r in bad:
            rep.note(
                f"{r.config} P={r.writers} repeat {r.repeat}: {r.failed} failed, {r.loss_check}"
            )
    else:
        rep.note("no failed append and the no-loss check passed in every run")
    return rep


if __name__ == "__main__":
    main()
