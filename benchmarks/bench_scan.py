"""Issue 21: reads at the speed of the files, in bounded memory.

Four parts, each run interleaved (every engine once per repeat, in turn) ``--repeats`` times;
the tables show the median and the spread (min-max) of the wall time, and ratios per repeat.

1. **Many small files**: full reads of a 2,000 x 50-row and a 10,000 x 5-row table (lakecat's
   writer, one commit) with lakecat ``scan().to_arrow()``, pyiceberg 0.12 ``scan().to_arrow()``
   and DuckDB ``read_parquet([...])`` over the same file list (the floor: no catalog, no
   planning), and lakecat's per-file path the engine replaced (``per file``: each file read
   alone, four at a time). Targets: lakecat within 1.5x of DuckDB, >= 3x faster than
   pyiceberg.
2. **Large files**: 10 million rows in 10 files, lakecat ``to_arrow`` against
   ``pyarrow.dataset.dataset(files).to_table()``. Target: within 1.1x.
3. **Projection and filter**: 2 of 20 columns where 1% of the rows match (on a column whose
   statistics rule out no file), lakecat against DuckDB. Target: within 1.2x.
4. **Memory**: in a child process each (peak RSS by ``resource.getrusage``), streaming a large
   table through ``to_batches()`` and materialising one large file with ``to_arrow()``.
   Targets: streaming peak RSS < 600 MB; ``to_arrow`` of a file does not first double it
   (peak RSS less than twice the table's Arrow size plus the interpreter's baseline).

Every engine must return the same rows (row count and the sum of ``id``).

    python benchmarks/bench_scan.py            # full sizes (about 15 minutes on 2 CPUs)
    python benchmarks/bench_scan.py --quick    # small sizes, same code paths
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from common import (
    Report,
    base_parser,
    lakecat_catalog,
    local_path,
    median,
    pyiceberg_catalog,
    sqlite_url,
    workdir,
)


@dataclass(frozen=True)
class Sizes:
    small: tuple[tuple[int, int], ...]  # (files, rows per file)
    large_files: int
    large_rows: int
    wide_files: int
    wide_rows: int
    stream_files: int
    stream_rows: int  # per file
    one_file_rows: int
    repeats: int


FULL = Sizes(
    ((2_000, 50), (10_000, 5)), 10, 10_000_000, 10, 5_000_000, 16, 2_500_000, 12_000_000, 5
)
QUICK = Sizes(((200, 50), (500, 5)), 4, 400_000, 4, 200_000, 4, 100_000, 300_000, 3)


# ---- data ---------------------------------------------------------------------------------------


def rows(first: int, count: int, columns: int = 5) -> pa.Table:
    """``count`` rows with ids from ``first``: id, k (uniform in [0, 1), for a 1% filter),
    region (a string), and float columns up to ``columns``."""
    ids = pa.array(range(first, first + count), pa.int64())
    data: dict[str, pa.Array] = {
        "id": ids,
        "k": pc.random(count),
        "region": pc.choose(pc.cast(pc.bit_wise_and(ids, 3), pa.int8()), "eu", "us", "ap", "sa"),
    }
    for c in range(columns - 3):
        data[f"c{c}"] = pc.multiply(pc.cast(ids, pa.float64()), 0.5 + c)
    return pa.table(data)


def build(catalog: Any, name: str, files: int, per_file: int, columns: int = 5) -> Any:
    """A table of ``files`` data files of ``per_file`` rows each, written by lakecat's writer and
    committed at once."""
    from lakecat.catalog.commit.intent import Intent, OpKind
    from lakecat.catalog.write.writer import conform
    from lakecat.metadata.io.parquet import write_data_file

    table = catalog.create_table(f"bench.{name}", rows(0, 1, columns).schema)
    metadata = table.metadata
    written = []
    for i in range(files):
        data = conform(metadata, rows(i * per_file, per_file, columns))[0]
        location = f"{metadata.location}/data/{i:05d}-{uuid.uuid4()}.parquet"
        written.append(
            write_data_file(
                table.io,
                location,
                data,
                schema=metadata.schema(),
                spec=metadata.spec(),
                partition=(),
                properties=metadata.properties,
            )
        )
    table.commit_intent(Intent(OpKind.APPEND, added_files=tuple(written)))
    return table.refresh()


def paths(table: Any) -> list[str]:
    return [str(local_path(f.file_path)) for f in table.scan().plan().files]


def checksum(t: pa.Table) -> tuple[int, int]:
    return t.num_rows, int(pc.sum(t.column("id")).as_py() or 0)


# ---- timing -------------------------------------------------------------------------------------


def interleaved(
    engines: dict[str, Callable[[], pa.Table]], repeats: int
) -> tuple[dict[str, list[float]], dict[str, tuple[int, int]]]:
    """Each engine once per repeat, in turn; wall seconds per engine, and what each read."""
    times: dict[str, list[float]] = {n: [] for n in engines}
    sums: dict[str, tuple[int, int]] = {}
    for name, fn in engines.items():  # warm-up (imports, the page cache) and what each reads
        sums[name] = checksum(fn())
    for _ in range(repeats):
        for name, fn in engines.items():
            gc.collect()
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            del out
    return times, sums


def spread(values: list[float]) -> list[Any]:
    return [round(median(values) * 1000), round(min(values) * 1000), round(max(values) * 1000)]


def ratios(times: dict[str, list[float]], a: str, b: str) -> list[float]:
    return [x / y for x, y in zip(times[a], times[b], strict=True)]


def read_per_file(table: Any) -> pa.Table:
    """The read before the engine: each file read, resolved and filtered alone
    (``Scan._read_one``, kept as the engine's reference), four files at a time."""
    scan = table.scan()
    plan = scan.plan()
    read_schema = scan._read_schema()
    with ThreadPoolExecutor(max_workers=4) as pool:
        tables = list(pool.map(lambda f: scan._read_one(f, read_schema, None), plan.files))
    return pa.concat_tables(tables)


def duckdb_reader(files: list[str], sql: str = "SELECT * FROM read_parquet(?)") -> Any:
    import duckdb

    def read() -> pa.Table:
        con = duckdb.connect()
        try:
            return con.sql(sql, params=[files]).to_arrow_table()
        finally:
            con.close()

    return read


# ---- parts --------------------------------------------------------------------------------------


def part_small(report: Report, uri: str, warehouse: str, sizes: Sizes) -> None:
    catalog = lakecat_catalog(uri, warehouse)
    py_catalog = pyiceberg_catalog(uri, warehouse)
    body = []
    for files, per_file in sizes.small:
        name = f"small_{files}"
        table = build(catalog, name, files, per_file)
        py_table = py_catalog.load_table(f"bench.{name}")
        engines = {
            "lakecat": lambda t=table: t.scan().to_arrow(),
            "per file": lambda t=table: read_per_file(t),
            "pyiceberg": lambda t=py_table: t.scan().to_arrow(),
            "duckdb": duckdb_reader(paths(table)),
        }
        times, sums = interleaved(engines, sizes.repeats)
        assert len(set(sums.values())) == 1, sums
        to_duck = ratios(times, "lakecat", "duckdb")
        to_py = ratios(times, "pyiceberg", "lakecat")
        body.append(
            [
                f"{files:,} x {per_file}",
                *spread(times["lakecat"]),
                round(median(times["per file"]) * 1000),
                *spread(times["pyiceberg"]),
                *spread(times["duckdb"]),
                round(median(to_duck), 2),
                round(median(to_py), 2),
            ]
        )
        report.target(
            f"{files:,} x {per_file}-row files: lakecat within 1.5x of DuckDB",
            median(to_duck) <= 1.5,
            f"{median(to_duck):.2f}x ({min(to_duck):.2f}-{max(to_duck):.2f}x)",
        )
        report.target(
            f"{files:,} x {per_file}-row files: lakecat >= 3x faster than pyiceberg",
            median(to_py) >= 3,
            f"{median(to_py):.2f}x ({min(to_py):.2f}-{max(to_py):.2f}x)",
        )
    report.table(
        f"Full read of many small files, ms (median, min, max of {sizes.repeats}, interleaved)",
        [
            "table",
            "lakecat",
            "min",
            "max",
            "per file",
            "pyiceberg",
            "min",
            "max",
            "DuckDB",
            "min",
            "max",
            "lakecat/DuckDB",
            "pyiceberg/lakecat",
        ],
        body,
    )
    catalog.close()
    py_catalog.engine.dispose()


def part_large(report: Report, uri: str, warehouse: str, sizes: Sizes) -> None:
    import pyarrow.dataset as ds

    catalog = lakecat_catalog(uri, warehouse)
    per_file = sizes.large_rows // sizes.large_files
    table = build(catalog, "large", sizes.large_files, per_file)
    files = paths(table)
    engines = {
        "lakecat": lambda: table.scan().to_arrow(),
        "pyarrow.dataset": lambda: ds.dataset(files, format="parquet").to_table(),
    }
    times, sums = interleaved(engines, sizes.repeats)
    assert len(set(sums.values())) == 1, sums
    r = ratios(times, "lakecat", "pyarrow.dataset")
    report.table(
        f"{sizes.large_rows:,} rows in {sizes.large_files} files, full read, ms",
        ["engine", "median", "min", "max"],
        [[n, *spread(t)] for n, t in times.items()],
    )
    report.target(
        f"{sizes.large_rows:,} rows in {sizes.large_files} files: within 1.1x of pyarrow.dataset",
        median(r) <= 1.1,
        f"{median(r):.2f}x ({min(r):.2f}-{max(r):.2f}x)",
    )
    catalog.close()


def part_projection(report: Report, uri: str, warehouse: str, sizes: Sizes) -> None:
    catalog = lakecat_catalog(uri, warehouse)
    per_file = sizes.wide_rows // sizes.wide_files
    table = build(catalog, "wide", sizes.wide_files, per_file, columns=20)
    files = paths(table)
    engines = {
        "lakecat": lambda: table.scan("k < 0.01", columns=["id", "c5"]).to_arrow(),
        "duckdb": duckdb_reader(files, "SELECT id, c5 FROM read_parquet(?) WHERE k < 0.01"),
    }
    times, sums = interleaved(engines, sizes.repeats)
    assert len(set(sums.values())) == 1, sums
    r = ratios(times, "lakecat", "duckdb")
    matched = sums["lakecat"][0]
    report.table(
        f"2 of 20 columns, {matched:,} of {sizes.wide_rows:,} rows match (k < 0.01), "
        f"{sizes.wide_files} files, ms",
        ["engine", "median", "min", "max"],
        [[n, *spread(t)] for n, t in times.items()],
    )
    report.target(
        "2 of 20 columns, 1% of rows: within 1.2x of DuckDB",
        median(r) <= 1.2,
        f"{median(r):.2f}x ({min(r):.2f}-{max(r):.2f}x)",
    )
    catalog.close()


CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from lakecat.catalog import Catalog

    uri, warehouse, name, mode = sys.argv[1:5]
    catalog = Catalog(uri, warehouse=warehouse)
    table = catalog.load_table(name)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rows = nbytes = 0
    if mode == "stream":
        for batch in table.scan().to_batches():
            rows += batch.num_rows
            nbytes += batch.nbytes
    else:
        data = table.scan().to_arrow()
        rows, nbytes = data.num_rows, data.nbytes
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with open("/proc/self/status") as f:  # the same peak as the kernel keeps it per process
        hwm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    print(json.dumps({"rows": rows, "arrow_bytes": nbytes, "baseline": baseline, "peak": peak,
                      "vm_hwm": hwm}))
    """
)
# Linux carries a process's peak RSS over an exec: a child started straight from this (large)
# process would report this process's peak. A small launcher in between starts it instead.
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def measure_child(uri: str, warehouse: str, name: str, mode: str) -> dict[str, int]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            LAUNCHER,
            sys.executable,
            "-c",
            CHILD,
            uri,
            warehouse,
            f"bench.{name}",
            mode,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, int] = json.loads(done.stdout)
    return result


def part_memory(report: Report, uri: str, warehouse: str, sizes: Sizes) -> None:
    catalog = lakecat_catalog(uri, warehouse)
    build(catalog, "stream", sizes.stream_files, sizes.stream_rows)
    build(catalog, "one_file", 1, sizes.one_file_rows)
    catalog.close()
    mib = 1 << 20
    stream = measure_child(uri, warehouse, "stream", "stream")
    whole = measure_child(uri, warehouse, "one_file", "arrow")
    report.table(
        "Peak RSS of a child process (resource.getrusage), MiB",
        ["read", "rows", "Arrow data", "RSS after load", "peak RSS", "peak - load"],
        [
            [
                label,
                m["rows"],
                round(m["arrow_bytes"] / mib),
                round(m["baseline"] / mib),
                round(m["peak"] / mib),
                round((m["peak"] - m["baseline"]) / mib),
            ]
            for label, m in (("to_batches, streamed", stream), ("to_arrow, one file", whole))
        ],
    )
    report.target(
        f"streaming {stream['arrow_bytes'] / mib:,.0f} MiB of Arrow data: peak RSS < 600 MB",
        stream["peak"] < 600_000_000,
        f"{stream['peak'] / 1e6:,.0f} MB",
    )
    grown = whole["peak"] - whole["baseline"]
    report.target(
        "to_arrow of one file does not first double it (peak growth < 2x its Arrow size)",
        grown < 2 * whole["arrow_bytes"],
        f"peak grew {grown / whole['arrow_bytes']:.2f}x the table's Arrow size",
    )


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--parts", default="small,large,projection,memory", help="comma-separated parts to run"
    )
    parser.add_argument(
        "--stream-files",
        type=int,
        default=None,
        help="files of the streamed table in the memory part (16; 34 make ~3.1 GiB of Arrow data)",
    )
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    if args.repeats:
        sizes = Sizes(**{**sizes.__dict__, "repeats": args.repeats})
    if args.stream_files:
        sizes = Sizes(**{**sizes.__dict__, "stream_files": args.stream_files})
    report = Report("bench_scan", {**vars(args), "sizes": sizes.__dict__})
    parts = {
        "small": part_small,
        "large": part_large,
        "projection": part_projection,
        "memory": part_memory,
    }
    with workdir(args, "lakecat-bench-scan-") as root:
        uri = sqlite_url(root)
        warehouse = str(Path(root) / "warehouse")
        lakecat_catalog(uri, warehouse).create_namespace("bench")
        for name in args.parts.split(","):
            started = time.monotonic()
            parts[name](report, uri, warehouse, sizes)
            report.note(f"part {name}: {time.monotonic() - started:.0f} s")
    report.write()


if __name__ == "__main__":
    main()
