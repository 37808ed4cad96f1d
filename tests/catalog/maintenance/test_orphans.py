"""Remove orphan files: in-flight writers are safe, leftovers of dead writers go."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import urllib.parse

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.maintenance import expire_snapshots, remove_orphan_files
from lakecat.catalog.maintenance.orphans import normalize_location
from lakecat.catalog.maintenance.reachable import reachable_files
from lakecat.catalog.write.writer import conform, write_files
from lakecat.metadata.io.fileio import local_path

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])
FOUR_DAYS_S = 4 * 24 * 3600


def rows(ids: list[int], region: str = "eu") -> pa.Table:
    return pa.table({"id": ids, "region": [region] * len(ids)}, schema=SCHEMA)


def soon() -> int:
    return int(time.time() * 1000) + 60_000


def path_of(location: str) -> str:
    path = local_path(location)
    assert path is not None
    return path


def age(locations: list[str], seconds: int = FOUR_DAYS_S) -> None:
    """Make files look as if they were last written ``seconds`` ago."""
    then = time.time() - seconds
    for location in locations:
        os.utime(path_of(location), (then, then))


def all_files(t: Table) -> list[str]:
    return [info.location for info in t.io.list_prefix(t.location)]


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.events", SCHEMA, partition_by=["region"])
    for i in range(3):
        t.append(rows([i], "eu" if i % 2 else "us"))
    return t


def test_a_table_without_leftovers_has_no_orphans_even_when_every_file_is_old(
    table: Table,
) -> None:
    age(all_files(table))
    result = remove_orphan_files(table)
    assert result.orphans == () and result.deleted
    assert table.to_arrow().num_rows == 3


def test_files_of_a_commit_in_flight_are_kept_and_the_commit_then_lands(table: Table) -> None:
    # A writer has written its data files but not committed yet.
    written = write_files(table.io, table.metadata, conform(table.metadata, rows([42])))
    age([f.file_path for f in table.scan().plan_files()])  # the table's own files are old
    result = remove_orphan_files(table)
    assert result.orphans == ()
    assert all(os.path.exists(path_of(f.file_path)) for f in written)
    table.commit_intent(
        Intent(kind=OpKind.APPEND, added_files=tuple(written), starting_snapshot_id=None)
    )
    assert 42 in table.to_arrow().column("id").to_pylist()


def _killed_writer(url: str, warehouse: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    catalog = Catalog(url, warehouse=warehouse)
    table = catalog.load_table("db.events")
    written = write_files(table.io, table.metadata, conform(table.metadata, rows([7, 8, 9])))
    out.put([f.file_path for f in written])
    time.sleep(600)  # killed here, before committing


def test_leftovers_of_a_killed_writer_are_deleted_once_past_the_guard(
    catalog_url: str, warehouse: str, table: Table
) -> None:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    writer = ctx.Process(target=_killed_writer, args=(catalog_url, warehouse, queue))
    writer.start()
    try:
        leftovers = queue.get(timeout=60)
    finally:
        writer.kill()
        writer.join(timeout=30)
    before = sorted(table.to_arrow().column("id").to_pylist())

    assert remove_orphan_files(table).orphans == ()  # still inside the 3-day guard
    assert all(os.path.exists(path_of(p)) for p in leftovers)

    age(leftovers)
    result = remove_orphan_files(table)
    assert sorted(normalize_location(p) for p in result.orphans) == sorted(
        normalize_location(p) for p in leftovers
    )
    assert not any(os.path.exists(path_of(p)) for p in leftovers)
    assert sorted(table.to_arrow().column("id").to_pylist()) == before


def test_dry_run_lists_without_deleting(table: Table) -> None:
    stray = table.location + "/data/stray.parquet"
    table.io.write(stray, b"not parquet")
    result = remove_orphan_files(table, older_than=soon(), dry_run=True)
    assert result.orphans == (stray,) and not result.deleted
    assert os.path.exists(path_of(stray))
    assert remove_orphan_files(table, older_than=soon()).orphans == (stray,)
    assert not os.path.exists(path_of(stray))


def test_files_left_by_expiry_without_deletion_become_orphans(table: Table) -> None:
    table.delete("region = 'us'")
    expired = expire_snapshots(table, older_than=soon(), delete_files=False)
    assert expired.expired_snapshot_ids
    result = remove_orphan_files(table, older_than=soon())
    assert result.orphans  # the us data files, old manifests and manifest lists
    referenced = reachable_files(table.io, table.metadata, table.metadata_location)
    assert not set(result.orphans) & referenced
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1]


def test_a_plain_path_location_matches_uri_references(table: Table) -> None:
    plain = path_of(table.location)
    stray = os.path.join(plain, "data", "stray.bin")
    with open(stray, "wb") as f:
        f.write(b"x")
    result = remove_orphan_files(table, location=plain, older_than=soon(), dry_run=True)
    assert result.orphans == (stray,)


def test_locations_are_normalized_for_comparison() -> None:
    assert normalize_location("file:///a/b/../c") == normalize_location("/a/c")
    assert normalize_location("file:/a/c") == "/a/c"
    assert normalize_location("s3a://bucket//key") == normalize_location("s3://bucket/key")


def test_files_under_unescaped_legacy_names_are_read_and_never_orphans(catalog: Catalog) -> None:
    """lakecat used to unescape file: URIs, so a partition value such as "a/b" went to the
    folder region=a/b while the manifest says region=a%2Fb. Such tables stay readable and
    their files are never taken for orphans."""
    t = catalog.create_table("db.legacy", SCHEMA, partition_by=["region"])
    t.append(rows([1, 2], "a/b"))
    t.append(rows([3], "50%"))
    for f in t.scan().plan_files():  # move each file to where the old code wrote it
        literal = path_of(f.file_path)
        legacy = urllib.parse.unquote(literal)
        assert legacy != literal
        os.makedirs(os.path.dirname(legacy), exist_ok=True)
        os.rename(literal, legacy)
    fresh = catalog.load_table("db.legacy")
    assert sorted(fresh.to_arrow()["id"].to_pylist()) == [1, 2, 3]
    age(all_files(fresh))
    assert remove_orphan_files(fresh).orphans == ()
    assert sorted(fresh.to_arrow()["id"].to_pylist()) == [1, 2, 3]
