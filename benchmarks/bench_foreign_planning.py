"""Issue 21, item 4: planning a table whose manifests another engine (pyiceberg 0.12) wrote.

The table: 10,000 tiny Parquet data files in 100 identity partitions (``part``), written with
pyarrow and registered by pyiceberg's ``add_files`` in ten commits of 1,000 files (commit k
holds partitions 10k .. 10k+9, as in ``bench_planning.py``), through pyiceberg's ``SqlCatalog``
on a SQLite file. Every manifest is pyiceberg's: no lakecat partition order, no block summaries
(pyiceberg writes one Avro block per entry). The same table is planned by:

* ``lakecat``: ``table.scan(filter).plan()``, manifests decoded by the compiled decoder
  (``lakecat.metadata.manifests.avro_decoder``);
* ``lakecat (fastavro)``: the same, with that decoder (its splitter and its entry decoder)
  switched off (this script replaces ``manifest.decode_records``, ``manifest.split_records``
  and ``manifest.decode_entries`` by functions that decline, so every manifest goes to
  fastavro, as before issue 21; the filtering of records before entries are built stays):
  what the decoder is worth;
* ``pyiceberg``: ``tbl.scan(row_filter=...).plan_files()``.

Cases: no filter, ``part = 42`` (one manifest of 1,000 entries left by the manifest list's
partition summaries), ``id < 500`` (a column no partition prunes: every manifest decoded, file
metrics keep 100 files), and ``part = 42`` time-travelling to the snapshot after five commits.
Then lakecat's ``rewrite_manifests`` converts the manifests to lakecat's layout and the current
cases are planned again (``after rewrite_manifests``).

**Cold** = each plan through a fresh catalog instance (lakecat: an empty manifest cache;
pyiceberg: a new ``SqlCatalog`` after ``clear_manifest_cache()``), in this process (imports and
one-time set-up done by a first plan that is not counted); **warm** = one table object planning
again. Each repeat runs every library once per case, libraries interleaved (and their order
rotated per repeat), so drifting machine load hits all alike. Reported: median and range
(min-max) over the repeats, and the median of the per-repeat ratios.

    python benchmarks/bench_foreign_planning.py [--quick] [--repeats 7]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from common import (
    NAMESPACE,
    Report,
    base_parser,
    lakecat_catalog,
    median,
    ms,
    pyiceberg_catalog,
    sqlite_url,
    timed,
    workdir,
)

TABLE = "foreign"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.int32(), nullable=False),
        pa.field("value", pa.float64()),
    ]
)
ROWS_PER_FILE = 5


@dataclass(frozen=True)
class Sizes:
    partitions: int
    files_per_partition: int
    commits: int
    repeats: int
    filter_partition: int
    id_below: int


FULL = Sizes(100, 100, 10, 7, 42, 500)
QUICK = Sizes(10, 10, 2, 3, 4, 50)
LIBRARIES = ("lakecat", "lakecat (fastavro)", "pyiceberg")


# ---- the table ------------------------------------------------------------------------------


def build(uri: str, warehouse: str, root: Path, sizes: Sizes) -> list[int]:
    """The pyiceberg-written table; the snapshot id after each commit."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField

    catalog = pyiceberg_catalog(uri, warehouse)
    catalog.create_namespace(NAMESPACE)
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "part", IntegerType(), required=True),
        NestedField(3, "value", DoubleType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
    table = catalog.create_table(f"{NAMESPACE}.{TABLE}", schema, partition_spec=spec)
    files_dir = root / "files"
    files_dir.mkdir(parents=True, exist_ok=True)
    per_commit = sizes.partitions // sizes.commits
    next_id = 0
    snapshots = []
    for k in range(sizes.commits):
        paths = []
        for part in range(k * per_commit, (k + 1) * per_commit):
            for j in range(sizes.files_per_partition):
                ids = list(range(next_id, next_id + ROWS_PER_FILE))
                next_id += ROWS_PER_FILE
                data = pa.table(
                    {"id": ids, "part": [part] * len(ids), "value": [i * 0.5 for i in ids]},
                    schema=SCHEMA,
                )
                path = files_dir / f"p{part}-{j}.parquet"
                pq.write_table(data, path)
                paths.append(str(path))
        table = catalog.load_table(f"{NAMESPACE}.{TABLE}")
        table.add_files(paths)
        snapshots.append(table.refresh().current_snapshot().snapshot_id)
        print(f"  commit {k + 1}/{sizes.commits}", file=sys.stderr, flush=True)
    catalog.engine.dispose()
    return snapshots


# ---- planning -------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    row_filter: str | None
    snapshot_id: int | None  # None: current


def fastavro_only() -> Callable[[], None]:
    """Switch lakecat's compiled manifest decoder off (every manifest then goes to fastavro,
    as before issue 21); returns the function that switches it back on. Benchmark only: the
    library has no such switch."""
    from lakecat.metadata.manifests import avro_decoder, manifest

    originals = manifest.decode_records, manifest.split_records, manifest.decode_entries

    def declined(data: bytes, *args: Any) -> Any:
        raise avro_decoder.Unsupported("switched off by the benchmark")

    manifest.decode_records = manifest.split_records = manifest.decode_entries = declined

    def restore() -> None:
        manifest.decode_records, manifest.split_records, manifest.decode_entries = originals

    return restore


class Planner:
    """One library's fresh catalog instance with the table loaded."""

    def __init__(self, library: str, uri: str, warehouse: str) -> None:
        self.library = library
        identifier = f"{NAMESPACE}.{TABLE}"
        if library.startswith("lakecat"):
            self.catalog = lakecat_catalog(uri, warehouse)
            self.table = self.catalog.load_table(identifier)
        else:
            from pyiceberg.manifest import clear_manifest_cache

            clear_manifest_cache()
            self.catalog = pyiceberg_catalog(uri, warehouse)
            self.table = self.catalog.load_table(identifier)

    def plan(self, case: Case) -> int:
        if self.library.startswith("lakecat"):
            restore = fastavro_only() if self.library == "lakecat (fastavro)" else None
            try:
                scan = self.table.scan(case.row_filter, snapshot_id=case.snapshot_id)
                return len(scan.plan().files)
            finally:
                if restore is not None:
                    restore()
        scan = self.table.scan(row_filter=case.row_filter or "True", snapshot_id=case.snapshot_id)
        return len(scan.plan_files())

    def close(self) -> None:
        if self.library.startswith("lakecat"):
            self.catalog.close()
        else:
            self.catalog.engine.dispose()


@dataclass
class Series:
    library: str
    stage: str  # "pyiceberg manifests" or "after rewrite_manifests"
    case: str
    files: int = 0
    cold_s: list[float] = field(default_factory=list)
    warm_s: list[float] = field(default_factory=list)
    cold_cpu_s: list[float] = field(default_factory=list)


def measure(
    uri: str,
    warehouse: str,
    stage: str,
    cases: list[Case],
    libraries: tuple[str, ...],
    repeats: int,
) -> list[Series]:
    series = {(lib, c.name): Series(lib, stage, c.name) for lib in libraries for c in cases}
    for library in libraries:  # one uncounted plan each: imports, one-time set-up
        p = Planner(library, uri, warehouse)
        p.plan(cases[0])
        p.close()
    for r in range(repeats):
        order = libraries[r % len(libraries) :] + libraries[: r % len(libraries)]
        for case in cases:
            for library in order:
                p = Planner(library, uri, warehouse)
                with timed() as t:
                    n = p.plan(case)
                s = series[(library, case.name)]
                s.files = n
                s.cold_s.append(t.wall_s)
                s.cold_cpu_s.append(t.cpu_s)
                with timed() as w:  # the same table object again: warm
                    p.plan(case)
                s.warm_s.append(w.wall_s)
                p.close()
        print(f"  {stage}: repeat {r + 1}/{repeats}", file=sys.stderr, flush=True)
    return list(series.values())


def paired_ratio(a: Series, b: Series, how: str) -> float:
    """Median over repeats of b/a within each repeat."""
    xs, ys = getattr(a, f"{how}_s"), getattr(b, f"{how}_s")
    return median([y / x for x, y in zip(xs, ys, strict=True) if x > 0])


def spread(values: list[float]) -> str:
    return f"{ms(min(values)):.1f}-{ms(max(values)):.1f}"


def report_stage(rep: Report, title: str, results: list[Series], cases: list[Case]) -> None:
    body = []
    for case in cases:
        found = {s.library: s for s in results if s.case == case.name}
        lake, py = found["lakecat"], found["pyiceberg"]
        row: list[Any] = [case.name, lake.files, "yes" if lake.files == py.files else "NO"]
        for lib in LIBRARIES:
            if lib in found:
                s = found[lib]
                row += [ms(median(s.cold_s)), spread(s.cold_s)]
        row.append(paired_ratio(lake, py, "cold"))
        if "lakecat (fastavro)" in found:
            row.append(paired_ratio(lake, found["lakecat (fastavro)"], "cold"))
        row += [ms(median(lake.warm_s)), ms(median(py.warm_s)), paired_ratio(lake, py, "warm")]
        body.append(row)
    libs = [lib for lib in LIBRARIES if any(s.library == lib for s in results)]
    headers = ["case", "files", "pyiceberg same"]
    for lib in libs:
        headers += [f"{lib} cold ms", "range"]
    headers.append("cold: pyiceberg/lakecat")
    if "lakecat (fastavro)" in libs:
        headers.append("cold: fastavro/compiled")
    headers += ["lakecat warm ms", "pyiceberg warm ms", "warm: pyiceberg/lakecat"]
    rep.table(title, headers, body)


def main() -> None:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=None, help="cold plans per case")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    if args.repeats:
        sizes = Sizes(**{**sizes.__dict__, "repeats": args.repeats})
    rep = Report("foreign-planning", vars(args))
    with workdir(args, "lakecat-bench-foreign-planning-") as root:
        uri, warehouse = sqlite_url(root), str(root / "warehouse")
        with timed() as t:
            snapshots = build(uri, warehouse, root, sizes)
        files = sizes.partitions * sizes.files_per_partition
        rep.note(
            f"table: {files:,} files in {sizes.partitions} partitions, registered by pyiceberg "
            f"add_files in {sizes.commits} commits; built in {t.wall_s:.1f} s"
        )
        p, below = sizes.filter_partition, sizes.id_below
        old = snapshots[len(snapshots) // 2 - 1]
        cases = [
            Case("no filter", None, None),
            Case(f"part = {p}", f"part = {p}", None),
            Case(f"id < {below}", f"id < {below}", None),
            Case(f"time travel, part = {p}", f"part = {p}", old),
        ]
        foreign = measure(uri, warehouse, "pyiceberg manifests", cases, LIBRARIES, sizes.repeats)
        from lakecat.catalog.maintenance import rewrite_manifests

        lake = lakecat_catalog(uri, warehouse)
        with timed() as t:
            result = rewrite_manifests(lake.load_table(f"{NAMESPACE}.{TABLE}"))
        lake.close()
        rep.note(
            f"rewrite_manifests: {result.manifests_before} pyiceberg manifests -> "
            f"{result.manifests_after} in lakecat's layout in {t.wall_s:.2f} s"
        )
        current = cases[:3]
        converted = measure(
            uri,
            warehouse,
            "after rewrite_manifests",
            current,
            ("lakecat", "pyiceberg"),
            sizes.repeats,
        )
    report_stage(
        rep,
        f"Planning {files:,} files whose manifests pyiceberg wrote (cold: median and range of "
        f"{sizes.repeats} interleaved repeats, each a fresh catalog; ratios: median of "
        "per-repeat ratios)",
        foreign,
        cases,
    )
    report_stage(
        rep,
        "The same table after lakecat's rewrite_manifests (manifests in lakecat's layout)",
        converted,
        current,
    )
    rep.data = {
        "sizes": sizes.__dict__,
        "measurements": [s.__dict__ for s in foreign + converted],
    }
    for case in cases:
        lake_s = next(s for s in foreign if (s.library, s.case) == ("lakecat", case.name))
        py_s = next(s for s in foreign if (s.library, s.case) == ("pyiceberg", case.name))
        speed = paired_ratio(lake_s, py_s, "cold")
        rep.target(
            f"pyiceberg-written manifests, {case.name}: lakecat plans >= 3x faster than "
            "pyiceberg, cold",
            speed >= 3,
            f"{ms(median(lake_s.cold_s)):.1f} ms vs {ms(median(py_s.cold_s)):.1f} ms = "
            f"{speed:.2f}x",
        )
    rep.write()


if __name__ == "__main__":
    main()
