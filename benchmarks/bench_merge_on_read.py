"""Issue 19: deleting a few rows from a big one-file table, merge-on-read against copy-on-write.

Two tables of the same rows, each one data file (``--rows``, default 10 million; five columns:
id, region, amount, note, ts): ``mor`` with ``write.delete.mode=merge-on-read``, ``cow`` with the
default copy-on-write. Each repeat deletes 10 rows spread over the file (``id IN (...)``, other
ids each repeat) from ``mor`` then from ``cow`` (interleaved), timing ``table.delete(...)`` (plan,
read, write, commit) and counting the bytes it added under the table's data folder. The tables
show the median and the spread (min-max) per repeat, and the ratio copy-on-write / merge-on-read
per repeat.

Targets: merge-on-read >= 50x faster than copy-on-write, and it writes < 1/1,000 of the bytes.

    python benchmarks/bench_merge_on_read.py               # 10 million rows, 5 repeats
    python benchmarks/bench_merge_on_read.py --quick       # 200,000 rows, 3 repeats
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from common import Report, base_parser, folder_size, local_path, median, workdir

from lakecat.catalog import Catalog, Table

DELETED_PER_REPEAT = 10


def make_rows(n: int) -> pa.Table:
    ids = pa.array(range(n), pa.int64())
    return pa.table(
        {
            "id": ids,
            "region": pc.cast(pc.bit_wise_and(ids, 7), pa.string()),
            "amount": pc.multiply(pc.cast(ids, pa.float64()), 0.37),
            "note": pc.binary_join_element_wise("row-", pc.cast(ids, pa.string()), "-note", ""),
            "ts": pc.cast(pc.add(ids, 1_700_000_000_000_000), pa.timestamp("us")),
        }
    )


def delete_once(table: Table, ids: list[int]) -> tuple[float, int]:
    data = local_path(table.location) / "data"
    before = folder_size(data)
    gc.collect()
    t0 = time.perf_counter()
    result = table.delete(f"id IN ({', '.join(map(str, ids))})")
    elapsed = time.perf_counter() - t0
    assert result is not None
    return elapsed, folder_size(data) - before


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows (10,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats (5)")
    args = parser.parse_args()
    rows = args.rows or (200_000 if args.quick else 10_000_000)
    repeats = args.repeats or (3 if args.quick else 5)
    report = Report("bench_merge_on_read", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-mor-") as root:
        catalog = Catalog.embedded(Path(root))
        catalog.create_namespace("db")
        data = make_rows(rows)
        one_file = {"write.target-file-size-bytes": str(1 << 40)}
        tables = {
            "merge-on-read": catalog.create_table(
                "db.mor",
                data.schema,
                properties={**one_file, "write.delete.mode": "merge-on-read"},
            ),
            "copy-on-write": catalog.create_table("db.cow", data.schema, properties=one_file),
        }
        for t in tables.values():
            t.append(data)
            assert len(t.scan().plan_files()) == 1
        file_bytes = folder_size(local_path(tables["copy-on-write"].location) / "data")
        del data
        times: dict[str, list[float]] = {k: [] for k in tables}
        written: dict[str, list[int]] = {k: [] for k in tables}
        step = rows // DELETED_PER_REPEAT
        for r in range(repeats):
            ids = [i * step + r for i in range(DELETED_PER_REPEAT)]
            for mode, table in tables.items():
                elapsed, added = delete_once(table, ids)
                times[mode].append(elapsed)
                written[mode].append(added)
        counts = {mode: t.scan().count() for mode, t in tables.items()}
        catalog.close()
    assert counts["merge-on-read"] == counts["copy-on-write"] == rows - repeats * 10, counts
    report.note(f"one data file of {file_bytes / 2**20:.1f} MiB")
    report.table(
        f"Deleting {DELETED_PER_REPEAT} rows from one {rows:,}-row file ({repeats} repeats)",
        ["mode", "median s", "min s", "max s", "median bytes written"],
        [
            [
                mode,
                round(median(times[mode]), 4),
                round(min(times[mode]), 4),
                round(max(times[mode]), 4),
                int(median(written[mode])),
            ]
            for mode in tables
        ],
    )
    speedups = [c / m for c, m in zip(times["copy-on-write"], times["merge-on-read"], strict=True)]
    byte_ratios = [
        m / c for m, c in zip(written["merge-on-read"], written["copy-on-write"], strict=True)
    ]
    report.table(
        "Copy-on-write time / merge-on-read time, merge-on-read bytes / copy-on-write bytes",
        ["ratio", "median", "min", "max"],
        [
            [
                "speed-up",
                round(median(speedups), 1),
                round(min(speedups), 1),
                round(max(speedups), 1),
            ],
            [
                "bytes written",
                f"{median(byte_ratios):.2e}",
                f"{min(byte_ratios):.2e}",
                f"{max(byte_ratios):.2e}",
            ],
        ],
    )
    report.target(
        "merge-on-read delete of 10 rows >= 50x faster than copy-on-write",
        median(speedups) >= 50,
        f"{median(speedups):.0f}x median ({min(speedups):.0f}-{max(speedups):.0f}x)",
    )
    report.target(
        "merge-on-read writes < 1/1,000 of copy-on-write's bytes",
        median(byte_ratios) < 1e-3,
        f"{median(byte_ratios):.1e} median (max {max(byte_ratios):.1e})",
    )
    report.write()


if __name__ == "__main__":
    main()
