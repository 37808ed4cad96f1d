"""Tables lakecat writes merge-on-read read the same in Iceberg Java, pyiceberg and DuckDB.

One table per partitioning (unpartitioned, identity on ``cat``), each through a history of
merge-on-read DELETE, UPDATE, upsert, MERGE delete clause, overwrite by filter, two disjoint
deletes planned on the same snapshot (the second re-applied at metadata level), and a
copy-on-write delete that rewrites a file and drops the delete files that applied to it. Every
snapshot is read by lakecat and by the three peers: pyiceberg and DuckDB must return exactly
lakecat's rows, Iceberg Java (through Spark, by metadata path) the same count and sum.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from peers import canonical_rows, read_batch, read_rows, require_peers

from lakecat.catalog import Catalog, Table

pytestmark = pytest.mark.interop

COLUMNS = ["id", "cat", "note"]
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("note", pa.string())])


def batch(ids: range | list[int], note: str = "") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cat": [("a", "b", "c", None)[i % 4] for i in ids],
            "note": [note or f"n{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def history(catalog: Catalog, name: str, partition_by: list[str]) -> Table:
    t = catalog.create_table(f"db.{name}", SCHEMA, partition_by=partition_by, properties=MOR)
    t.append(batch(range(0, 200)))
    t.append(batch(range(200, 300)))
    t.delete("id < 20 OR id = 250")
    t.update({"note": "updated"}, "id >= 100 AND id < 110")
    t.upsert(batch([5, 30, 150, 205, 1000, 1001], "upserted"), on="id")
    t.merge(
        pa.table({"id": pa.array([31, 32, 260], pa.int64())}), on="id", when_matched_delete=True
    )
    t.overwrite(batch([2000, 2001], "overwritten"), "id >= 280 AND id < 290")
    earlier, later = catalog.load_table(f"db.{name}"), catalog.load_table(f"db.{name}")
    earlier.delete("id = 40 OR id = 41")
    later.delete("id = 45 OR id = 241")  # planned before the other delete: re-applied
    t.refresh().set_properties({"write.delete.mode": "copy-on-write"})
    t.delete("id = 230")  # rewrites the second file; its delete files go with it
    return t.refresh()


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Table]]:
    require_peers()
    root: Path = tmp_path_factory.mktemp("mor-peers")
    with Catalog.embedded(root) as catalog:
        catalog.create_namespace("db")
        yield {
            "unpartitioned": history(catalog, "flat", []),
            "identity": history(catalog, "by_cat", ["cat"]),
        }


def jobs(tables: dict[str, Table], **extra: Any) -> list[dict[str, Any]]:
    out = []
    for key, t in tables.items():
        for s in t.snapshots():
            out.append(
                {
                    "key": [key, s.snapshot_id],
                    "metadata": t.metadata_location,
                    "snapshot": s.snapshot_id,
                    **extra,
                }
            )
    return out


def lakecat_rows(tables: dict[str, Table], key: list[Any]) -> list[list[Any]]:
    t = tables[key[0]]
    return canonical_rows(t.to_arrow(snapshot_id=key[1]), COLUMNS)


def test_the_histories_hold_delete_files_and_the_expected_rows(tables: dict[str, Table]) -> None:
    for key, t in tables.items():
        operations = [s.operation for s in t.snapshots()]
        assert operations.count("delete") >= 3 and "overwrite" in operations
        current = t.current_snapshot()
        assert current is not None
        got = {r[0]: r for r in lakecat_rows(tables, [key, current.snapshot_id])}
        gone = {*range(20), 250, 31, 32, 260, *range(280, 290), 40, 41, 45, 241, 230}
        assert set(got) == ({*range(300), 1000, 1001, 2000, 2001} - gone) | {5}
        assert got[5][2] == "upserted" and got[150][2] == "upserted" and got[105][2] == "updated"
        assert t.scan().plan().deletes  # the current snapshot still has delete files applying


@pytest.mark.parametrize("peer", ["pyiceberg", "duckdb"])
def test_pyiceberg_and_duckdb_read_every_snapshot_as_lakecat_does(
    tables: dict[str, Table], peer: str
) -> None:
    answers = read_rows(peer, jobs(tables, columns=COLUMNS))
    wrong = [
        (a["key"], a.get("error") or "rows differ")
        for a in answers
        if a.get("rows") != lakecat_rows(tables, a["key"])
    ]
    assert wrong == []


def test_iceberg_java_reads_every_snapshot_as_lakecat_does(tables: dict[str, Table]) -> None:
    answers = read_batch("spark", jobs(tables, column="id"))
    wrong = []
    for a in answers:
        ids = [r[0] for r in lakecat_rows(tables, a["key"])]
        if (a.get("rows"), a.get("sum")) != (len(ids), sum(ids)):
            wrong.append((a["key"], a, len(ids), sum(ids)))
    assert wrong == []
