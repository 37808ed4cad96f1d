"""Issue 7: long histories. One writer appends 100 rows at a time, lakecat and pyiceberg 0.12.

For each library, on a SQLite catalog in a temp folder, one process appends batches of 100 rows
to an unpartitioned table, one commit each, and records per append: wall and CPU time, and the
bytes of new files that appeared in the table's metadata folder (metadata.json, manifest list,
manifests). At each checkpoint N it reports

* append latency at N: the median of the ten appends around N (appends N-4 .. N+5; 1 .. 10 for
  N = 1), so one slow append (a manifest merge, a busy machine) does not decide it;
* the latency at 1 snapshot under the same load: a fresh table is created at the start of each
  window and appended to once after each of the window's appends (the growth target uses it,
  so that machine load drifting over the run does not decide the ratio);
* table load time: ``catalog.load_table`` right after append N (median of 3);
* metadata bytes written per commit (median over the same ten appends);
* the metadata folder's size right after append N.

lakecat tables use lakecat's defaults (manifest merging on, metadata-file pruning on);
pyiceberg tables use pyiceberg's. Both libraries first append to a throw-away table, so the
first measured append is not charged with imports and first-use set-up.

pyiceberg takes most of a second per append near 1,000 snapshots, so by default it runs to
1,000 snapshots only; ``--pyiceberg-full`` runs it to 2,000 like lakecat.

    python benchmarks/bench_history.py            # lakecat to 2,000, pyiceberg to 1,000
    python benchmarks/bench_history.py --pyiceberg-full
    python benchmarks/bench_history.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    NAMESPACE,
    Report,
    base_parser,
    file_sizes,
    folder_size,
    lakecat_catalog,
    local_path,
    machine,
    median,
    mib,
    ms,
    pyiceberg_catalog,
    ratio,
    rows,
    sqlite_url,
    timed,
    workdir,
)

FULL_CHECKPOINTS = (1, 100, 500, 1000, 2000)
QUICK_CHECKPOINTS = (1, 10, 30)
WINDOW = 10  # appends per latency sample: N-4 .. N+5
LOADS_PER_CHECKPOINT = 3


def window(n: int) -> range:
    """The 1-based append numbers whose median is "the latency at N snapshots"."""
    first = max(1, n - WINDOW // 2 + 1)
    return range(first, first + WINDOW)


@dataclass
class Library:
    """What the benchmark needs from a library: make a table, append, load, where metadata is."""

    name: str
    create: Callable[[str], Any]  # table name -> table
    append: Callable[[Any, int], Any]  # (table, batch) -> table (possibly a new object)
    load: Callable[[str], Any]  # table name -> table
    metadata_dir: Callable[[Any], Path]


@dataclass
class Series:
    """One library's run: per-append figures and per-checkpoint figures."""

    library: str
    appends: int = 0
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    bytes_written: list[int] = field(default_factory=list)
    folder_bytes: dict[int, int] = field(default_factory=dict)
    load_s: dict[int, float] = field(default_factory=dict)
    # Appends to a fresh table interleaved with the window around N: "latency at 1 snapshot"
    # measured under the same machine load as the latency at N.
    fresh_s: dict[int, list[float]] = field(default_factory=dict)
    fresh_cpu_s: dict[int, list[float]] = field(default_factory=dict)

    def at(self, n: int) -> dict[str, float] | None:
        """The figures at N snapshots, or None if the run did not reach N + 5."""
        span = window(n)
        if span[-1] > self.appends or n not in self.folder_bytes:
            return None
        idx = [i - 1 for i in span]
        return {
            "append_ms": ms(median([self.wall_s[i] for i in idx])),
            "append_cpu_ms": ms(median([self.cpu_s[i] for i in idx])),
            "written_kib": median([self.bytes_written[i] for i in idx]) / 1024,
            "load_ms": ms(self.load_s[n]),
            "folder_mib": mib(self.folder_bytes[n]),
            "fresh_ms": ms(median(self.fresh_s.get(n, []))),
            "fresh_cpu_ms": ms(median(self.fresh_cpu_s.get(n, []))),
        }


def lakecat_library(folder: Path) -> Library:
    catalog = lakecat_catalog(sqlite_url(folder), str(folder / "warehouse"))
    catalog.create_namespace(NAMESPACE)

    def append(table: Any, batch: int) -> Any:
        table.append(rows(batch))
        return table

    return Library(
        name="lakecat",
        create=lambda name: catalog.create_table(f"{NAMESPACE}.{name}", rows(0).schema),
        append=append,
        load=lambda name: catalog.load_table(f"{NAMESPACE}.{name}"),
        metadata_dir=lambda table: local_path(table.location) / "metadata",
    )


def pyiceberg_library(folder: Path) -> Library:
    catalog = pyiceberg_catalog(sqlite_url(folder), str(folder / "warehouse"))
    catalog.create_namespace(NAMESPACE)

    def append(table: Any, batch: int) -> Any:
        table.append(rows(batch))  # the Table object moves to the committed metadata
        return table

    return Library(
        name="pyiceberg",
        create=lambda name: catalog.create_table(f"{NAMESPACE}.{name}", schema=rows(0).schema),
        append=append,
        load=lambda name: catalog.load_table(f"{NAMESPACE}.{name}"),
        metadata_dir=lambda table: local_path(table.metadata.location) / "metadata",
    )


def run(library: Library, checkpoints: tuple[int, ...], last: int) -> Series:
    """Append up to ``last`` snapshots (+5 for the last window), measuring as described."""
    warm = library.create("warmup")  # imports, first Parquet write, first commit: not measured
    for batch in range(3):
        warm = library.append(warm, batch)

    table = library.create("history")
    folder = library.metadata_dir(table)
    series = Series(library.name)
    total = window(last)[-1]
    measured = [c for c in checkpoints if c <= last]
    fresh: dict[int, Any] = {}
    before = file_sizes(folder)
    for n in range(1, total + 1):
        for c in measured:
            if n == window(c)[0]:
                fresh[c] = library.create(f"fresh_{c}")
        with timed() as t:
            table = library.append(table, n)
        after = file_sizes(folder)
        written = sum(size for name, size in after.items() if name not in before)
        before = after
        series.appends = n
        series.wall_s.append(t.wall_s)
        series.cpu_s.append(t.cpu_s)
        series.bytes_written.append(written)
        for c in measured:
            if n in window(c):
                with timed() as ft:
                    fresh[c] = library.append(fresh[c], n)
                series.fresh_s.setdefault(c, []).append(ft.wall_s)
                series.fresh_cpu_s.setdefault(c, []).append(ft.cpu_s)
        if n in checkpoints and n <= last:
            series.folder_bytes[n] = folder_size(folder)
            loads = []
            for _ in range(LOADS_PER_CHECKPOINT):
                with timed() as lt:
                    library.load("history")
                loads.append(lt.wall_s)
            series.load_s[n] = median(loads)
        if n % 100 == 0 or n == total:
            print(
                f"  {library.name}: {n}/{total} appends, last {ms(t.wall_s):.1f} ms",
                file=sys.stderr,
                flush=True,
            )
    return series


def report(
    args: argparse.Namespace,
    checkpoints: tuple[int, ...],
    lake: Series,
    pyi: Series,
    pyi_last: int,
) -> Report:
    rep = Report("history", vars(args))
    rep.data = {
        s.library: {
            "append_wall_s": s.wall_s,
            "append_cpu_s": s.cpu_s,
            "metadata_bytes_written": s.bytes_written,
            "metadata_folder_bytes": s.folder_bytes,
            "load_s": s.load_s,
            "fresh_table_append_wall_s": s.fresh_s,
            "fresh_table_append_cpu_s": s.fresh_cpu_s,
        }
        for s in (lake, pyi)
    }
    latency, sizes = [], []
    for n in checkpoints:
        a, b = lake.at(n), pyi.at(n)
        latency.append(
            [
                n,
                a and a["append_ms"],
                a and a["append_cpu_ms"],
                a and a["fresh_ms"],
                a and ratio(a["append_ms"], a["fresh_ms"]),
                b and b["append_ms"],
                b and b["append_cpu_ms"],
                b and b["fresh_ms"],
                a and b and ratio(b["append_ms"], a["append_ms"]),
            ]
        )
        sizes.append(
            [
                n,
                a and a["load_ms"],
                b and b["load_ms"],
                a and a["written_kib"],
                b and b["written_kib"],
                a and a["folder_mib"],
                b and b["folder_mib"],
                a and b and ratio(b["folder_mib"], a["folder_mib"]),
            ]
        )
    rep.table(
        "Append latency at N snapshots (median of the 10 appends around N; 'fresh' = appends "
        "to a new table interleaved with them: the latency at 1 snapshot under the same load)",
        [
            "snapshots",
            "lakecat ms",
            "lakecat CPU ms",
            "lakecat fresh ms",
            "lakecat N/fresh",
            "pyiceberg ms",
            "pyiceberg CPU ms",
            "pyiceberg fresh ms",
            "pyiceberg/lakecat",
        ],
        latency,
    )
    rep.table(
        "Table load time and metadata size at N snapshots",
        [
            "snapshots",
            "lakecat load ms",
            "pyiceberg load ms",
            "lakecat KiB/commit",
            "pyiceberg KiB/commit",
            "lakecat folder MiB",
            "pyiceberg folder MiB",
            "pyiceberg/lakecat folder",
        ],
        sizes,
    )
    for s in (lake, pyi):
        total_written = sum(s.bytes_written)
        rep.note(
            f"{s.library}: {s.appends} appends in {sum(s.wall_s):.1f} s; metadata written "
            f"{mib(total_written):.1f} MiB in all, {total_written / max(s.appends, 1) / 1024:.1f} "
            "KiB per commit on average"
        )

    first, last = checkpoints[0], checkpoints[-1]
    mid = checkpoints[-2]
    a_first, a_last, a_mid = lake.at(first), lake.at(last), lake.at(mid)
    b_mid, b_last = pyi.at(mid), pyi.at(last)
    if a_first and a_last:
        growth = ratio(a_last["append_ms"], a_last["fresh_ms"])
        sequential = ratio(a_last["append_ms"], a_first["append_ms"])
        rep.target(
            f"lakecat append latency at {last:,} snapshots <= 3x its latency at {first} "
            "(against a fresh table appended to in between)",
            growth <= 3,
            f"{a_last['append_ms']:.1f} ms vs {a_last['fresh_ms']:.1f} ms = {growth:.1f}x; "
            f"CPU {a_last['append_cpu_ms']:.1f} vs {a_last['fresh_cpu_ms']:.1f} ms = "
            f"{ratio(a_last['append_cpu_ms'], a_last['fresh_cpu_ms']):.1f}x; against the first "
            f"appends of this table, minutes earlier: {a_first['append_ms']:.1f} ms = "
            f"{sequential:.1f}x",
        )
    if a_mid and b_mid:
        speedup = ratio(b_mid["append_ms"], a_mid["append_ms"])
        rep.target(
            f"at {mid:,} snapshots lakecat appends >= 10x faster than pyiceberg",
            speedup >= 10,
            f"{b_mid['append_ms']:.1f} ms vs {a_mid['append_ms']:.1f} ms = {speedup:.1f}x",
        )
    if a_last and b_last:
        folders = ratio(b_last["folder_mib"], a_last["folder_mib"])
        rep.target(
            f"lakecat's metadata folder after {last:,} commits <= 1/10 of pyiceberg's",
            folders >= 10,
            f"{a_last['folder_mib']:.1f} MiB vs {b_last['folder_mib']:.1f} MiB = 1/{folders:.1f}",
        )
    elif a_last and a_mid and b_mid:
        at_mid = ratio(b_mid["folder_mib"], a_mid["folder_mib"])
        bound = ratio(b_mid["folder_mib"], a_last["folder_mib"])
        rep.note(
            f"pyiceberg stopped at {pyi_last:,} snapshots (run with --pyiceberg-full for "
            f"{last:,}); the folder target is compared at {mid:,} and bounded at {last:,}"
        )
        rep.target(
            f"lakecat's metadata folder <= 1/10 of pyiceberg's, compared at {mid:,} commits "
            f"(pyiceberg stopped at {pyi_last:,})",
            at_mid >= 10,
            f"{a_mid['folder_mib']:.1f} MiB vs {b_mid['folder_mib']:.1f} MiB = 1/{at_mid:.1f}",
        )
        rep.target(
            f"lakecat's metadata folder after {last:,} commits <= 1/10 of pyiceberg's, "
            f"lower bound: pyiceberg's folder at {mid:,} (it only grows)",
            bound >= 10,
            f"{a_last['folder_mib']:.1f} MiB (lakecat, {last:,}) vs >= "
            f"{b_mid['folder_mib']:.1f} MiB (pyiceberg, {mid:,}) = 1/{bound:.1f} or better",
        )
    return rep


def main() -> None:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pyiceberg-full",
        action="store_true",
        help="run pyiceberg to 2,000 snapshots too (slow: about an hour)",
    )
    parser.add_argument(
        "--skip-pyiceberg", action="store_true", help="lakecat only (for profiling lakecat)"
    )
    args = parser.parse_args()
    checkpoints = QUICK_CHECKPOINTS if args.quick else FULL_CHECKPOINTS
    info = machine()  # the machine as the run starts (load, CPU pressure)
    lake_last = checkpoints[-1]
    pyi_last = lake_last if (args.quick or args.pyiceberg_full) else checkpoints[-2]
    with workdir(args, "lakecat-bench-history-") as root:
        print(f"lakecat: {lake_last + WINDOW // 2:,} appends", file=sys.stderr)
        lake = run(lakecat_library(root / "lakecat"), checkpoints, lake_last)
        pyi = Series("pyiceberg")
        if not args.skip_pyiceberg:
            print(f"pyiceberg: {pyi_last + WINDOW // 2:,} appends", file=sys.stderr)
            pyi = run(pyiceberg_library(root / "pyiceberg"), checkpoints, pyi_last)
        rep = report(args, checkpoints, lake, pyi, pyi_last)
        rep.info = info
        rep.write()


if __name__ == "__main__":
    main()
