"""Issue 20: copy-on-write rewrites of many files in bounded memory.

A copy-on-write ``delete`` / ``update`` / ``merge`` of the Python API reads each file holding a
row it changes and writes the file's other rows back. Since the rows it keeps are written out
whenever those it holds reach ``KEPT_ROWS_FLUSH_BYTES`` (256 MiB of Arrow data,
``catalog/write/row_ops.py``), its memory is about one file plus that bound; before, it held
every kept row until the end.

This script builds a table of ``--files`` data files of ``--rows`` rows each, and the same
rows in a table whose updates are merge-on-read, then runs, each in a fresh child process and
on a branch of its own made from the same snapshot (so every run starts from the same table):

* a copy-on-write ``delete`` and ``update`` of one row in each file (every file rewritten: the
  bound applies to the files' other rows);
* a merge-on-read ``update`` of every row (the bound applies to the rows' new versions);

each with the bound as shipped and with it lifted (``2**62``: every row held to the end, as
before), alternating the order each round. Reported per operation and setting: the child's
peak RSS growth over its RSS after loading the table (``resource.getrusage``, MiB) and
seconds, as medians (min-max), with the per-round ratios bounded / unbounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from common import Report, base_parser, lakecat_catalog, median, sqlite_url, workdir

MIB = 1 << 20
UNBOUNDED = str(2**62)
OPERATIONS = ("delete", "update", "update, merge-on-read")


def check(op: str, summary: dict[str, str], files: int, per_file: int) -> None:
    """That the run changed what it was meant to: every file rewritten (copy-on-write), or
    every row given a new version (merge-on-read)."""
    if op == "update, merge-on-read":
        assert int(summary["added-records"]) == files * per_file, summary
        assert summary.get("deleted-data-files", "0") == "0", summary
    else:
        assert int(summary["deleted-data-files"]) == files, summary


CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from lakecat.catalog import Catalog
    from lakecat.catalog.write import row_ops

    uri, warehouse, op, bound, condition, branch = sys.argv[1:7]
    if bound != "default":
        row_ops.KEPT_ROWS_FLUSH_BYTES = int(bound)
    catalog = Catalog(uri, warehouse=warehouse)
    table = catalog.load_table("bench.wide_mor" if op == "update, merge-on-read" else "bench.wide")
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    started = time.perf_counter()
    if op == "delete":
        result = table.delete(condition, branch=branch, create_branch=True)
    else:
        result = table.update({"amount": -1.0}, condition, branch=branch, create_branch=True)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    summary = table.snapshot(result.snapshot_id).summary
    print(json.dumps({"baseline": baseline, "peak": peak, "seconds": seconds,
                      "summary": dict(summary)}))
    """
)
# Linux carries a process's peak RSS over an exec: a child started straight from this process
# would report this process's peak. A small launcher in between starts it instead.
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def file_rows(first: int, count: int) -> pa.Table:
    ids = pa.array(range(first, first + count), pa.int64())
    return pa.table(
        {
            "id": ids,
            "amount": pa.array([i * 0.25 for i in range(first, first + count)], pa.float64()),
            "name": pa.array([f"customer-{i:012d}" for i in range(first, first + count)]),
            "score": pa.array([(i * 7919) % 1000 for i in range(first, first + count)], pa.int64()),
        }
    )


def build(catalog: Any, name: str, files: int, per_file: int, properties: dict[str, str]) -> int:
    """One append per file (one data file each); the Arrow bytes of the whole table."""
    table = catalog.create_table(f"bench.{name}", file_rows(0, 1).schema, properties=properties)
    total = 0
    for i in range(files):
        data = file_rows(i * per_file, per_file)
        total += data.nbytes
        table.append(data)
    return total


def run_child(
    uri: str, warehouse: str, op: str, bound: str, condition: str, branch: str
) -> dict[str, Any]:
    child = [sys.executable, "-c", CHILD, uri, warehouse, op, bound, condition, branch]
    done = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *child],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--files", type=int, default=None, help="data files (12)")
    parser.add_argument("--rows", type=int, default=None, help="rows per file (2,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (3)")
    parser.add_argument(
        "--bound-mib", type=int, default=None, help="the bound to measure (as shipped; 1 quick)"
    )
    args = parser.parse_args()
    files = args.files or (3 if args.quick else 12)
    per_file = args.rows or (20_000 if args.quick else 2_000_000)
    repeats = args.repeats or (1 if args.quick else 3)
    bound = (
        "default" if args.bound_mib is None and not args.quick else str((args.bound_mib or 1) * MIB)
    )
    from lakecat.catalog.write.row_ops import KEPT_ROWS_FLUSH_BYTES

    bound_bytes = KEPT_ROWS_FLUSH_BYTES if bound == "default" else int(bound)
    label = f"{bound_bytes // MIB} MiB bound"
    report = Report(
        "bench_rewrite_memory", {**vars(args), "files": files, "rows": per_file, "repeats": repeats}
    )
    with workdir(args, "lakecat-bench-rewrite-memory-") as root:
        uri = sqlite_url(root)
        warehouse = str(Path(root) / "warehouse")
        catalog = lakecat_catalog(uri, warehouse)
        catalog.create_namespace("bench")
        started = time.monotonic()
        arrow_bytes = build(catalog, "wide", files, per_file, {})
        build(catalog, "wide_mor", files, per_file, {"write.update.mode": "merge-on-read"})
        catalog.close()
        report.note(
            f"tables: {files} files x {per_file:,} rows, {arrow_bytes / MIB:,.0f} MiB of Arrow "
            f"data each, built in {time.monotonic() - started:.0f} s"
        )
        one_per_file = ", ".join(str(f * per_file + per_file // 2) for f in range(files))
        conditions = {
            "delete": f"id IN ({one_per_file})",
            "update": f"id IN ({one_per_file})",
            "update, merge-on-read": "id >= 0",
        }
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        runs = 0
        for r in range(repeats):
            for k, op in enumerate(OPERATIONS):
                bounds = (bound, UNBOUNDED) if (r + k) % 2 == 0 else (UNBOUNDED, bound)
                for setting in bounds:
                    runs += 1
                    got = run_child(uri, warehouse, op, setting, conditions[op], f"run-{runs}")
                    check(op, got["summary"], files, per_file)
                    results.setdefault((op, setting), []).append(got)
        body = []
        for op in OPERATIONS:
            bounded, unbounded = results[(op, bound)], results[(op, UNBOUNDED)]
            growth = [
                [(x["peak"] - x["baseline"]) / MIB for x in series]
                for series in (bounded, unbounded)
            ]
            seconds = [[x["seconds"] for x in series] for series in (bounded, unbounded)]
            memory_ratio = [b / u for b, u in zip(growth[0], growth[1], strict=True)]
            time_ratio = [b / u for b, u in zip(seconds[0], seconds[1], strict=True)]
            for kept, g, s in (
                (label, growth[0], seconds[0]),
                ("unbounded", growth[1], seconds[1]),
            ):
                body.append(
                    [
                        op,
                        kept,
                        f"{median(g):,.0f} ({min(g):,.0f}-{max(g):,.0f})",
                        f"{median(s):.2f} ({min(s):.2f}-{max(s):.2f})",
                    ]
                )
            report.target(
                f"{op} ({conditions[op] if op.endswith('read') else 'one row per file'}, "
                f"{files} files): peak RSS growth with the bound below that of holding every row",
                max(memory_ratio) < 1.0,
                f"{median(memory_ratio):.2f}x ({min(memory_ratio):.2f}-{max(memory_ratio):.2f}x); "
                f"time {median(time_ratio):.2f}x ({min(time_ratio):.2f}-{max(time_ratio):.2f}x)",
            )
            report.data[op] = {"bounded": bounded, "unbounded": unbounded}
        report.table(
            "Peak RSS growth of a child process over its RSS after loading the table (MiB) "
            "and seconds, median (min-max)",
            ["operation", "kept rows", "peak growth, MiB", "seconds"],
            body,
        )
    report.write()


if __name__ == "__main__":
    main()
