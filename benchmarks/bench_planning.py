"""Issue 4: scan planning on many files, lakecat vs pyiceberg 0.12, on the same tables.

Part 1, a table with 10,000 data files in 100 partitions (identity-partitioned on ``part``).
Tiny Parquet files are written once with lakecat's writer and registered by ten append
intents of 1,000 files each (``Intent(OpKind.APPEND, added_files=...)`` through
``table.commit_intent``); commit k holds partitions 10k .. 10k+9, as a table loaded one
batch of partitions at a time would. The same table is then planned by both libraries:
lakecat with ``table.scan(filter).plan()``, pyiceberg 0.12 (its ``SqlCatalog`` on the same
SQLite file and catalog name) with ``tbl.scan(row_filter=...).plan_files()``. Four cases:
no filter and ``part = 42``, on the current snapshot and time-travelling to the snapshot after
five of the ten commits (5,000 files, partitions 0 .. 49). Both must plan the same files.

Part 2, manifest merging: a table built by 2,000 single-file appends (lakecat's defaults:
manifest merging on), against the same 2,000 files committed at once (one manifest: what a
fresh compaction of the manifests gives). Both planned with and without a partition filter; the
appended table is also planned at its worst point in the merge cycle (the snapshot among the
last 100 with the most manifests) by time travel.

Timings: every case is planned ``--repeats`` times *cold*, each time through a fresh catalog
instance (lakecat: a new ``Catalog``, so an empty manifest cache; pyiceberg: a new
``SqlCatalog`` after ``clear_manifest_cache()``), and ``--repeats`` times *warm*, by one table
object that planned the case once before; the tables show medians. Cold is a first query in a
new process; warm is a long-lived process (a service, a notebook) planning again. Files are in
the OS page cache either way. The times include building the scan (binding the filter), not
loading the table.

    python benchmarks/bench_planning.py
    python benchmarks/bench_planning.py --quick
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from common import (
    NAMESPACE,
    Report,
    base_parser,
    lakecat_catalog,
    median,
    ms,
    pyiceberg_catalog,
    ratio,
    repeat,
    sqlite_url,
    timed,
    workdir,
)

FILTER_PARTITION = 42
QUICK_FILTER_PARTITION = 4

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.int32(), nullable=False),
        pa.field("value", pa.float64()),
    ]
)


@dataclass(frozen=True)
class Sizes:
    partitions: int
    files_per_partition: int
    commits: int
    small_appends: int
    repeats: int
    filter_partition: int


FULL = Sizes(100, 100, 10, 2000, 11, FILTER_PARTITION)
QUICK = Sizes(10, 10, 2, 150, 3, QUICK_FILTER_PARTITION)


# ---- building tables ----------------------------------------------------------------------------


class Builder:
    """Writes tiny data files with lakecat's writer and registers them by append intents."""

    def __init__(self, catalog: Any, table: Any) -> None:
        self.catalog = catalog
        self.table = table
        self._next_id = 0

    def files(self, partitions: range | list[int], rows_per_file: int = 5) -> list[Any]:
        """One new data file per partition in ``partitions``."""
        from lakecat.catalog.write.writer import conform, write_files

        n = len(partitions) * rows_per_file
        ids = list(range(self._next_id, self._next_id + n))
        self._next_id += n
        data = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "part": pa.array([p for p in partitions for _ in range(rows_per_file)], pa.int32()),
                "value": pa.array([i * 0.5 for i in ids], pa.float64()),
            },
            schema=SCHEMA,
        )
        metadata = self.table.metadata
        files: list[Any] = write_files(self.table.io, metadata, conform(metadata, data))
        return files

    def commit(self, files: list[Any]) -> int:
        """Register ``files`` in one append commit; the new snapshot id."""
        from lakecat.catalog.commit.intent import Intent, OpKind

        result = self.table.commit_intent(Intent(OpKind.APPEND, added_files=tuple(files)))
        return int(result.snapshot_id)


def create(catalog: Any, name: str) -> Any:
    return catalog.create_table(f"{NAMESPACE}.{name}", SCHEMA, partition_by=["part"])


def manifest_count(table: Any, snapshot_id: int) -> int:
    from lakecat.metadata.manifests.manifest import read_manifest_list

    snapshot = table.metadata.snapshot_by_id(snapshot_id)
    return len(read_manifest_list(table.io, snapshot.manifest_list))


# ---- planning ----------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    filter_partition: int | None
    snapshot_id: int | None  # None: current


@dataclass
class Measured:
    library: str
    table: str
    case: str
    files: int
    cold_s: list[float]  # each on a fresh catalog instance (and cleared caches)
    warm_s: list[float]  # repeated on one table object after a first plan
    cold_cpu_s: list[float]
    warm_cpu_s: list[float]

    @property
    def cold(self) -> float:
        return median(self.cold_s)

    @property
    def warm(self) -> float:
        return median(self.warm_s)


class Planner:
    """Plans cases on one table, loaded through a fresh catalog instance of one library."""

    def __init__(self, library: str, uri: str, warehouse: str, table_name: str) -> None:
        self.library = library
        identifier = f"{NAMESPACE}.{table_name}"
        if library == "lakecat":
            self.catalog = lakecat_catalog(uri, warehouse)  # a new catalog: an empty cache
            self.table = self.catalog.load_table(identifier)
        else:
            from pyiceberg.manifest import clear_manifest_cache

            clear_manifest_cache()  # pyiceberg's process-wide cache of manifest-list rows
            self.catalog = pyiceberg_catalog(uri, warehouse)
            self.table = self.catalog.load_table(identifier)

    def plan(self, case: Case) -> int:
        """The number of files the plan holds."""
        if self.library == "lakecat":
            from lakecat.metadata.expressions.expressions import EqualTo

            row_filter = (
                None if case.filter_partition is None else EqualTo("part", case.filter_partition)
            )
            return len(self.table.scan(row_filter, snapshot_id=case.snapshot_id).plan().files)
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.expressions import EqualTo as PyEqualTo

        py_filter = (
            AlwaysTrue()
            if case.filter_partition is None
            else PyEqualTo("part", case.filter_partition)  # type: ignore[call-arg, arg-type]
        )
        scan = self.table.scan(row_filter=py_filter, snapshot_id=case.snapshot_id)
        return len(scan.plan_files())

    def close(self) -> None:
        if self.library == "lakecat":
            self.catalog.close()
        else:
            self.catalog.engine.dispose()


def measure(
    library: str, uri: str, warehouse: str, table: str, case: Case, repeats: int
) -> Measured:
    """Cold: ``repeats`` plans, each by a fresh catalog. Warm: ``repeats`` plans by one table
    object that planned the case once already."""
    cold = []
    for _ in range(repeats):
        planner = Planner(library, uri, warehouse, table)
        with timed() as t:
            files = planner.plan(case)
        planner.close()
        cold.append(t)
    planner = Planner(library, uri, warehouse, table)
    planner.plan(case)
    warm = repeat(lambda: planner.plan(case), repeats)
    planner.close()
    return Measured(
        library,
        table,
        case.name,
        files,
        [t.wall_s for t in cold],
        [t.wall_s for t in warm],
        [t.cpu_s for t in cold],
        [t.cpu_s for t in warm],
    )


# ---- the benchmark ----------------------------------------------------------------------------


LIBRARIES = ("lakecat", "pyiceberg")


def part1(root: Path, sizes: Sizes, rep: Report) -> list[Measured]:
    uri, warehouse = sqlite_url(root / "p1"), str(root / "p1" / "warehouse")
    lake = lakecat_catalog(uri, warehouse)
    lake.create_namespace(NAMESPACE)
    builder = Builder(lake, create(lake, "many_files"))
    per_commit = sizes.partitions // sizes.commits
    snapshots = []
    with timed() as build:
        for k in range(sizes.commits):
            parts = range(k * per_commit, (k + 1) * per_commit)
            files = []
            for _ in range(sizes.files_per_partition):
                files += builder.files(parts)
            snapshots.append(builder.commit(files))
            print(f"  part 1: commit {k + 1}/{sizes.commits}", file=sys.stderr, flush=True)
    lake.close()
    total_files = sizes.partitions * sizes.files_per_partition
    rep.note(
        f"part 1 table: {total_files:,} files in {sizes.partitions} partitions, "
        f"{sizes.commits} commits of {total_files // sizes.commits:,} files "
        f"({per_commit} partitions each); written and committed in {build.wall_s:.1f} s"
    )
    old = snapshots[sizes.commits // 2 - 1]
    p = sizes.filter_partition
    cases = [
        Case("current, no filter", None, None),
        Case(f"current, part = {p}", p, None),
        Case("time travel, no filter", None, old),
        Case(f"time travel, part = {p}", p, old),
    ]
    results = []
    for case in cases:
        for library in LIBRARIES:  # interleaved: drifting machine load hits both alike
            results.append(measure(library, uri, warehouse, "many_files", case, sizes.repeats))
            print(f"  part 1: {case.name}, {library}", file=sys.stderr, flush=True)
    body = []
    for case in cases:
        a, b = (find(results, lib, "many_files", case.name) for lib in LIBRARIES)
        body.append(
            [
                case.name,
                a.files,
                "yes" if a.files == b.files else f"NO ({b.files})",
                ms(a.cold),
                ms(b.cold),
                ratio(b.cold, a.cold),
                ms(a.warm),
                ms(b.warm),
                ratio(b.warm, a.warm),
            ]
        )
    rep.table(
        f"Part 1: planning a table of {total_files:,} files in {sizes.partitions} partitions "
        f"(medians of {sizes.repeats}; cold = a fresh catalog per plan, warm = the same table "
        "object planning again)",
        [
            "case",
            "files planned",
            "pyiceberg same",
            "lakecat cold ms",
            "pyiceberg cold ms",
            "cold: pyiceberg/lakecat",
            "lakecat warm ms",
            "pyiceberg warm ms",
            "warm: pyiceberg/lakecat",
        ],
        body,
    )
    return results


def find(results: list[Measured], library: str, table: str, case: str) -> Measured:
    return next(m for m in results if (m.library, m.table, m.case) == (library, table, case))


def part2(root: Path, sizes: Sizes, rep: Report) -> list[Measured]:
    uri, warehouse = sqlite_url(root / "p2"), str(root / "p2" / "warehouse")
    lake = lakecat_catalog(uri, warehouse)
    lake.create_namespace(NAMESPACE)
    appended = Builder(lake, create(lake, "appended"))
    compacted = Builder(lake, create(lake, "compacted"))
    all_files = []
    snapshots = []
    with timed() as build:
        for i in range(sizes.small_appends):
            files = appended.files([i % sizes.partitions])
            all_files += files
            snapshots.append(appended.commit(files))
            if (i + 1) % 250 == 0:
                print(
                    f"  part 2: append {i + 1}/{sizes.small_appends}", file=sys.stderr, flush=True
                )
    compacted.commit(all_files)  # the same files, one manifest
    counts = {sid: manifest_count(appended.table, sid) for sid in snapshots[-100:]}
    worst = max(counts, key=lambda sid: counts[sid])
    worst_files = snapshots.index(worst) + 1
    compacted_manifests = manifest_count(
        compacted.table, compacted.table.metadata.current_snapshot_id
    )
    lake.close()
    rep.note(
        f"part 2: {sizes.small_appends:,} single-file appends (file i in partition i mod "
        f"{sizes.partitions}) in {build.wall_s:.1f} s; the appended table has "
        f"{counts[snapshots[-1]]} manifests at the end and {counts[worst]} at its worst point of "
        f"the merge cycle (snapshot {worst_files:,}, {worst_files:,} files); the compacted table "
        f"has {compacted_manifests}"
    )
    p = sizes.filter_partition
    cases = {
        "appended": [
            Case("current, no filter", None, None),
            Case(f"current, part = {p}", p, None),
            Case("worst merge point, no filter", None, worst),
            Case(f"worst merge point, part = {p}", p, worst),
        ],
        "compacted": [
            Case("current, no filter", None, None),
            Case(f"current, part = {p}", p, None),
        ],
    }
    results = []
    for name, table_cases in cases.items():
        for case in table_cases:
            for library in LIBRARIES:
                results.append(measure(library, uri, warehouse, name, case, sizes.repeats))
                print(f"  part 2: {name}, {case.name}, {library}", file=sys.stderr, flush=True)

    body = []
    for case in cases["appended"]:
        base_case = compacted_case(case.name)
        row: list[Any] = [case.name]
        for library, how in (("lakecat", "cold"), ("lakecat", "warm"), ("pyiceberg", "cold")):
            a = getattr(find(results, library, "appended", case.name), how)
            c = getattr(find(results, library, "compacted", base_case), how)
            row += [ms(a), ms(c), ratio(a, c)]
        body.append(row)
    rep.table(
        f"Part 2: {sizes.small_appends:,} single-file appends (merging on) vs the same files "
        f"compacted into one commit (medians of {sizes.repeats})",
        [
            "case",
            "lakecat cold appended ms",
            "compacted ms",
            "ratio",
            "lakecat warm appended ms",
            "compacted ms",
            "ratio",
            "pyiceberg cold appended ms",
            "compacted ms",
            "ratio",
        ],
        body,
    )
    return results


def compacted_case(case: str) -> str:
    """The compacted table's case a case of the appended table is compared with."""
    return case.replace("worst merge point", "current")


def targets(rep: Report, sizes: Sizes, one: list[Measured], two: list[Measured]) -> None:
    p = sizes.filter_partition
    for case in (f"current, part = {p}", f"time travel, part = {p}"):
        a = find(one, "lakecat", "many_files", case)
        b = find(one, "pyiceberg", "many_files", case)
        for how in ("cold", "warm"):
            mine, theirs = getattr(a, how), getattr(b, how)
            speed = ratio(theirs, mine)
            rep.target(
                f"lakecat plans a single-partition scan >= 5x faster than pyiceberg ({case}, "
                f"{how})",
                speed >= 5,
                f"{ms(mine):.1f} ms vs {ms(theirs):.1f} ms = {speed:.1f}x",
            )
    for how in ("cold", "warm"):
        worst_case, worst_ratio, figures = "", 0.0, ""
        for m in two:
            if m.library != "lakecat" or m.table != "appended":
                continue
            c = find(two, "lakecat", "compacted", compacted_case(m.case))
            r = ratio(getattr(m, how), getattr(c, how))
            if r > worst_ratio:
                worst_case, worst_ratio = m.case, r
                figures = f"{ms(getattr(m, how)):.1f} ms vs {ms(getattr(c, how)):.1f} ms"
        rep.target(
            f"after {sizes.small_appends:,} small appends (merging on) lakecat plans within 2x of "
            f"the compacted table ({how}; the worst of the four cases)",
            worst_ratio <= 2,
            f"worst: {worst_case}, {figures} = {worst_ratio:.2f}x",
        )


def main() -> None:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=None, help="plans per case and mode")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    if args.repeats:
        sizes = Sizes(**{**sizes.__dict__, "repeats": args.repeats})
    rep = Report("planning", vars(args))
    with workdir(args, "lakecat-bench-planning-") as root:
        one = part1(root, sizes, rep)
        two = part2(root, sizes, rep)
    rep.data = {"sizes": sizes.__dict__, "measurements": [m.__dict__ for m in one + two]}
    targets(rep, sizes, one, two)
    rep.write()


if __name__ == "__main__":
    main()
