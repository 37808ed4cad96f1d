"""Issue 19: P processes deleting their own rows of the same files, merge-on-read.

Two layouts of the same 200,000 rows, both ``write.delete.mode=merge-on-read`` on the embedded
SQLite catalog:

* ``same files``: unpartitioned, 4 data files; writer ``w`` owns the ids ``id % P == w``, so
  every writer's rows are spread over every file (row-level concurrency: the writers' deletes
  land in the same data files);
* ``disjoint files``: partitioned by ``owner``, one data file per writer; writer ``w`` deletes
  only in its own partition (the file-level best case).

Each of the P processes (``spawn``, started together on a barrier) makes ``--ops`` deletes of 5
of its own rows (``id IN (...)``), reloading the table before each. Throughput = committed
deletes / (last writer's end - first writer's start). The two layouts run interleaved,
``--repeats`` times; every delete must commit (a conflict counts as a failure), and the rows
left are checked.

Target: every delete commits, and the throughput on the same files is >= 50% of the
throughput on disjoint files.

    python benchmarks/bench_row_concurrency.py              # P = 8, 10 deletes each, 3 repeats
    python benchmarks/bench_row_concurrency.py --quick      # P = 4, 3 deletes each, 1 repeat
"""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from common import Report, base_parser, median, workdir

from lakecat.catalog import Catalog
from lakecat.metadata.errors import LakecatError

ROWS = 200_000
PER_DELETE = 5
LAYOUTS = ("same files", "disjoint files")


def _rows(writers: int) -> pa.Table:
    ids = list(range(ROWS))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "owner": pa.array([i % writers for i in ids], pa.int64()),
            "note": [f"n{i}" for i in ids],
        }
    )


def _create(root: Path, layout: str, writers: int) -> None:
    catalog = Catalog.embedded(root)
    catalog.create_namespace("db")
    data = _rows(writers)
    props = {"write.delete.mode": "merge-on-read", "commit.retry.num-retries": "100"}
    if layout == "same files":
        table = catalog.create_table("db.t", data.schema, properties=props)
        step = ROWS // 4
        for start in range(0, ROWS, step):
            table.append(data.slice(start, step))
    else:
        table = catalog.create_table("db.t", data.schema, partition_by=["owner"], properties=props)
        table.append(data)
    catalog.close()


def _writer(
    root: str, writer: int, writers: int, ops: int, partitioned: bool, barrier: Any, out: Any
) -> None:
    catalog = Catalog.embedded(Path(root))
    own = list(range(writer, ROWS, writers))
    barrier.wait()
    start = time.perf_counter()
    committed, failed = 0, []
    for n in range(ops):
        ids = own[n * PER_DELETE : (n + 1) * PER_DELETE]
        cond = f"id IN ({', '.join(map(str, ids))})"
        if partitioned:  # the partition predicate keeps the writers' files apart
            cond += f" AND owner = {writer}"
        try:
            catalog.load_table("db.t").delete(cond)
            committed += 1
        except LakecatError as exc:
            failed.append(f"{type(exc).__name__}: {exc}"[:200])
    end = time.perf_counter()
    catalog.close()
    out.put((writer, start, end, committed, failed))


def run(root: Path, layout: str, writers: int, ops: int) -> dict[str, Any]:
    _create(root, layout, writers)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers)
    out = ctx.Queue()
    procs = [
        ctx.Process(
            target=_writer,
            args=(str(root), w, writers, ops, layout == "disjoint files", barrier, out),
        )
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=900) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    first = min(r[1] for r in results)
    last = max(r[2] for r in results)
    committed = sum(r[3] for r in results)
    failures = [f for r in results for f in r[4]]
    catalog = Catalog.embedded(root)
    left = catalog.load_table("db.t").scan().count()
    catalog.close()
    assert left == ROWS - committed * PER_DELETE, (left, committed)
    return {
        "throughput": committed / (last - first),
        "committed": committed,
        "failures": failures,
        "seconds": last - first,
    }


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--writers", type=int, default=None, help="processes (8)")
    parser.add_argument("--ops", type=int, default=None, help="deletes per process (10)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats (3)")
    args = parser.parse_args()
    writers = args.writers or (4 if args.quick else 8)
    ops = args.ops or (3 if args.quick else 10)
    repeats = args.repeats or (1 if args.quick else 3)
    report = Report(
        "bench_row_concurrency", {**vars(args), "writers": writers, "ops": ops, "repeats": repeats}
    )
    runs: dict[str, list[dict[str, Any]]] = {layout: [] for layout in LAYOUTS}
    with workdir(args, "lakecat-bench-rowconc-") as root:
        for r in range(repeats):
            for layout in LAYOUTS:
                folder = root / f"{layout.replace(' ', '-')}-{r}"
                runs[layout].append(run(folder, layout, writers, ops))
    report.table(
        f"{writers} processes x {ops} merge-on-read deletes of {PER_DELETE} own rows "
        f"({repeats} repeats, interleaved)",
        ["layout", "deletes/s median", "min", "max", "committed", "failed"],
        [
            [
                layout,
                round(median([x["throughput"] for x in runs[layout]]), 1),
                round(min(x["throughput"] for x in runs[layout]), 1),
                round(max(x["throughput"] for x in runs[layout]), 1),
                sum(x["committed"] for x in runs[layout]),
                sum(len(x["failures"]) for x in runs[layout]),
            ]
            for layout in LAYOUTS
        ],
    )
    ratios = [
        a["throughput"] / b["throughput"]
        for a, b in zip(runs["same files"], runs["disjoint files"], strict=True)
    ]
    failures = [f for layout in LAYOUTS for x in runs[layout] for f in x["failures"]]
    for f in failures[:5]:
        report.note(f"failed: {f}")
    report.target(
        "every merge-on-read delete on the same files commits",
        not any(x["failures"] for x in runs["same files"]),
        f"{sum(len(x['failures']) for x in runs['same files'])} failed of "
        f"{writers * ops * repeats}",
    )
    report.target(
        "throughput on the same files >= 50% of disjoint files",
        median(ratios) >= 0.5,
        f"{median(ratios):.0%} median ({min(ratios):.0%}-{max(ratios):.0%})",
    )
    report.write()


if __name__ == "__main__":
    main()
