"""lakecat quickstart: an embedded catalog (SQLite file + local warehouse folder).

Creates a partitioned table, appends, deletes and overwrites, then reads the current state and
two older snapshots, one by id and one by timestamp. Then what lakecat is for: four processes
append to the table at once and every append lands; a merge-on-read delete writes a small
delete file instead of rewriting data; a compaction and a snapshot expiry run as ordinary
commits; and the ``lakecat`` command shows the result. Run it with::

    python examples/quickstart.py [folder]

The folder (default ``examples/_quickstart_data``) is created fresh on every run.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa

from lakecat.catalog import Catalog
from lakecat.catalog.cli.entry import main as lakecat
from lakecat.catalog.maintenance import expire_snapshots, rewrite_data_files

WRITERS = 4
APPENDS_PER_WRITER = 5


def events(day: int, ids: range, region: str) -> pa.Table:
    ts = [dt.datetime(2024, 1, day, 12, 0, tzinfo=dt.UTC) + dt.timedelta(minutes=i) for i in ids]
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "region": pa.array([region] * len(ids)),
            "amount": pa.array([float(i) * 1.5 for i in ids]),
        }
    )


def show(title: str, table: pa.Table) -> None:
    print(f"  {title}: {table.num_rows} rows")
    by_region: dict[str, int] = {}
    for region in table.column("region").to_pylist():
        by_region[region] = by_region.get(region, 0) + 1
    print("    per region:", dict(sorted(by_region.items())))


def main(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    catalog = Catalog.embedded(folder)
    print(f"catalog: {catalog}")

    catalog.create_namespace("shop")
    schema = events(1, range(1), "eu").schema
    table = catalog.create_table(
        "shop.events", schema, partition_by=[("ts", "day"), "region"], sort_by=["id"]
    )
    print(f"created {table.name} at {table.location}")
    print(f"  partition spec: {[(f.name, f.transform) for f in table.spec().fields]}")

    first = table.append(events(1, range(0, 100), "eu"))
    print(f"append 100 rows (day 1, eu)       -> snapshot {first.snapshot_id}")
    time.sleep(0.01)
    second = table.append(events(2, range(100, 250), "us"))
    print(f"append 150 rows (day 2, us)       -> snapshot {second.snapshot_id}")
    between = second.metadata.current_snapshot.timestamp_ms  # type: ignore[union-attr]
    time.sleep(0.01)

    deleted = table.delete("region = 'us' AND id >= 200")
    assert deleted is not None
    print(f"delete us rows with id >= 200     -> snapshot {deleted.snapshot_id}")
    overwritten = table.overwrite(events(1, range(0, 40), "eu"), "region = 'eu'")
    assert overwritten is not None
    print(f"overwrite eu with 40 new rows     -> snapshot {overwritten.snapshot_id}")

    print("reads:")
    show("current", table.to_arrow())
    show(f"snapshot {first.snapshot_id} (by id)", table.to_arrow(snapshot_id=first.snapshot_id))
    as_of = dt.datetime.fromtimestamp(between / 1000, tz=dt.UTC)
    show(f"as of {as_of.isoformat()} (by timestamp)", table.to_arrow(as_of=as_of))
    show("current where amount > 250", table.to_arrow("amount > 250", columns=["id", "region"]))

    print("history:")
    for snap in table.snapshots():
        s = snap.summary
        print(
            f"  {snap.snapshot_id}  {snap.operation:<9} +{s.get('added-records', '0'):>4} rows"
            f"  -{s.get('deleted-records', '0'):>4} rows  total {s.get('total-records', '?')}"
        )

    several_writers(catalog, folder)
    maintenance(catalog)
    catalog.close()

    command = ["--catalog", catalog.uri, "--warehouse", str(catalog.warehouse)]
    print("the lakecat command on the result:")
    print(f"  lakecat {' '.join(command)} history shop.events")
    lakecat([*command, "history", "shop.events"])


def append_batches(folder: str, writer: int) -> None:
    """One writer process: its own catalog connection, a few appends to the shared table."""
    catalog = Catalog.embedded(folder)
    table = catalog.load_table("shop.events")
    for i in range(APPENDS_PER_WRITER):
        start = 10_000 * (writer + 1) + 100 * i
        table.append(events(3, range(start, start + 10), ("eu", "us", "ap", "sa")[writer]))
    catalog.close()


def several_writers(catalog: Catalog, folder: Path) -> None:
    before = catalog.load_table("shop.events").scan().count()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=append_batches, args=(str(folder), w)) for w in range(WRITERS)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0, f"a writer failed (exit code {p.exitcode})"
    table = catalog.load_table("shop.events")
    added = table.scan().count() - before
    appends = WRITERS * APPENDS_PER_WRITER
    assert added == appends * 10, (added, appends)
    print(
        f"{WRITERS} processes appended at once: {appends} appends, all landed "
        f"({added} rows, {time.perf_counter() - started:.1f} s)"
    )


def maintenance(catalog: Catalog) -> None:
    table = catalog.load_table("shop.events")
    table.set_properties({"write.delete.mode": "merge-on-read"})
    files = len(table.scan().plan_files())
    deleted = table.delete("id = 10005")
    assert deleted is not None
    written = deleted.metadata.current_snapshot.summary["added-files-size"]  # type: ignore[union-attr]
    print(
        f"merge-on-read delete of one row   -> {written} bytes written, "
        f"{len(table.scan().plan_files())} data files (was {files}): none rewritten"
    )
    rows = table.scan().count()
    compacted = rewrite_data_files(table, min_input_files=2)
    print(
        f"compaction: {compacted.files_removed} files -> {compacted.files_added} "
        f"({len(compacted.snapshot_ids)} replace snapshots), rows unchanged: "
        f"{table.scan().count() == rows}"
    )
    expired = expire_snapshots(table, older_than=dt.datetime.now(dt.UTC), retain_last=1)
    print(
        f"expiry: {len(expired.expired_snapshot_ids)} snapshots expired, "
        f"{len(expired.deleted_data_files)} data files deleted; "
        f"{len(table.refresh().snapshots())} snapshot left, {table.scan().count()} rows"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "_quickstart_data")
