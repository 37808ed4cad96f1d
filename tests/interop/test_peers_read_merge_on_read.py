"""Tables lakecat writes merge-on-read read the same in Iceberg Java, pyiceberg and DuckDB.

One table per partitioning (unpartitioned, identity on ``cat``) and format version (v2:
position delete files; v3: deletion vectors and row lineage), each through a history of
merge-on-read DELETE, UPDATE, upsert, MERGE delete clause, overwrite by filter, two disjoint
deletes planned on the same snapshot (the second re-applied at metadata level), and a
copy-on-write delete that rewrites a file and drops the delete files that applied to it. Every
snapshot is read by lakecat and by the three peers: pyiceberg and DuckDB must return exactly
lakecat's rows, Iceberg Java (through Spark, by metadata path) the same count and sum. On the
v3 tables, and on a v3 table rewritten copy-on-write and compacted, and on one upgraded from
v2 with position deletes, Iceberg Java reads every row's ``_row_id`` and
``_last_updated_sequence_number`` as lakecat does, at every snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from peers import (
    canonical_rows,
    counts_misread,
    lakecat_snapshot_rows,
    read_rows,
    require_peers,
    rows_misread,
    snapshot_jobs,
)

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import rewrite_data_files
from lakecat.catalog.write import row_ops

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


LINEAGE = ["id", "_row_id", "_last_updated_sequence_number"]


def history(catalog: Catalog, name: str, partition_by: list[str], version: int = 2) -> Table:
    t = catalog.create_table(
        f"db.{name}",
        SCHEMA,
        partition_by=partition_by,
        properties={**MOR, "format-version": str(version)},
    )
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
            "v3 unpartitioned": history(catalog, "flat_v3", [], version=3),
            "v3 identity": history(catalog, "by_cat_v3", ["cat"], version=3),
        }


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Table]]:
    """v3 tables whose rows moved: copy-on-write changes and a compaction; a v2 table with
    position deletes upgraded to v3, then changed merge-on-read; and a table whose changes
    wrote the rows they held before reading each next file (a bound of one byte on
    ``KEPT_ROWS_FLUSH_BYTES``), copy-on-write, then merge-on-read."""
    require_peers()
    root: Path = tmp_path_factory.mktemp("v3-peers")
    with Catalog.embedded(root) as catalog:
        catalog.create_namespace("db")
        cow = catalog.create_table("db.cow", SCHEMA, properties={"format-version": "3"})
        cow.append(batch(range(0, 100)))
        cow.append(batch(range(100, 150)))
        cow.delete("id IN (0, 7, 14, 21, 28, 35, 105, 112, 119)")
        cow.update({"note": "updated"}, "id >= 40 AND id < 60")
        cow.upsert(batch([10, 120, 500], "upserted"), on="id")
        rewrite_data_files(cow)
        cow.update({"note": "after"}, "id = 41")
        up = catalog.create_table("db.upgraded", SCHEMA, properties=MOR)
        up.append(batch(range(0, 60)))
        up.delete("id < 5")
        up.set_properties({"format-version": "3"})
        up.delete("id = 30")  # a DV holding the v2 position deletes too
        up.update({"note": "updated"}, "id = 31")
        up.append(batch(range(60, 70)))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(row_ops, "KEPT_ROWS_FLUSH_BYTES", 1)
            flushed = catalog.create_table(
                "db.flushed", SCHEMA, partition_by=["cat"], properties={"format-version": "3"}
            )
            for start in (0, 50, 100):
                flushed.append(batch(range(start, start + 50)))
            flushed.delete("id IN (3, 53, 103)")
            flushed.update({"note": "updated"}, "id IN (4, 54, 104)")
            flushed.upsert(batch([5, 55, 105, 900], "upserted"), on="id")
            flushed.set_properties(MOR)
            flushed.update({"note": "mor"}, "id IN (6, 56, 106)")
            flushed.merge(batch([7, 57, 107], "merged"), on="id", when_matched_update=True)
        yield {
            "v3 copy-on-write": cow.refresh(),
            "upgraded": up.refresh(),
            "written as they go": flushed.refresh(),
        }


def lakecat_rows(tables: dict[str, Table], key: list[Any]) -> list[list[Any]]:
    return lakecat_snapshot_rows(tables, key, COLUMNS)


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
    assert rows_misread(peer, tables, COLUMNS) == []


def test_iceberg_java_reads_every_snapshot_as_lakecat_does(tables: dict[str, Table]) -> None:
    assert counts_misread(tables, "id") == []


def lakecat_lineage(tables: dict[str, Table], key: list[Any]) -> list[list[Any]]:
    t = tables[key[0]]
    return canonical_rows(t.scan(snapshot_id=key[1], columns=LINEAGE).to_arrow(), LINEAGE)


def test_iceberg_java_reads_the_row_lineage_lakecat_wrote(
    tables: dict[str, Table], rewritten: dict[str, Table]
) -> None:
    v3 = {k: t for k, t in {**tables, **rewritten}.items() if t.metadata.format_version == 3}
    assert len(v3) == 5
    for key, t in rewritten.items():
        assert canonical_rows(t.to_arrow(), COLUMNS), key
    answers = read_rows("spark", snapshot_jobs(v3, columns=LINEAGE))
    wrong = [
        (a["key"], a.get("error") or "lineage differs")
        for a in answers
        if a.get("rows") != lakecat_lineage(v3, a["key"])
    ]
    assert wrong == []
    current = lakecat_lineage(
        v3, ["v3 copy-on-write", v3["v3 copy-on-write"].current_snapshot().snapshot_id]
    )  # type: ignore[union-attr]
    row_ids = [r[1] for r in current]
    assert None not in row_ids and len(set(row_ids)) == len(row_ids)


@pytest.mark.parametrize("peer", ["pyiceberg", "duckdb"])
def test_pyiceberg_and_duckdb_read_the_rewritten_v3_tables_as_lakecat_does(
    rewritten: dict[str, Table], peer: str
) -> None:
    assert rows_misread(peer, rewritten, COLUMNS) == []


def test_the_table_whose_changes_wrote_as_they_went_holds_the_expected_rows(
    rewritten: dict[str, Table],
) -> None:
    t = rewritten["written as they go"]
    got = {r[0]: r[2] for r in canonical_rows(t.to_arrow(), COLUMNS)}
    assert set(got) == {*range(150), 900} - {3, 53, 103}
    notes = {
        **{i: "updated" for i in (4, 54, 104)},
        **{i: "upserted" for i in (5, 55, 105, 900)},
        **{i: "mor" for i in (6, 56, 106)},
        **{i: "merged" for i in (7, 57, 107)},
    }
    assert {i: n for i, n in got.items() if not n.startswith("n")} == notes
    assert t.scan().plan().deletes  # the merge-on-read changes left deletion vectors
