"""A table lakecat replaced (``Catalog.replace_table``: new schema, partitioning and rows in one
commit, the old snapshots kept) reads the same in Iceberg Java, pyiceberg and DuckDB, at its
current snapshot (the new definition) and at the snapshots from before the replace (the old
schema, time travel)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from peers import canonical_rows, read_batch, read_rows, require_peers

from lakecat.catalog import Catalog, Table

pytestmark = pytest.mark.interop

OLD = pa.schema([("id", pa.int64()), ("region", pa.string())])
NEW = pa.schema([("id", pa.int64()), ("day", pa.string()), ("amount", pa.float64())])


@pytest.fixture(scope="module")
def replaced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    require_peers()
    root: Path = tmp_path_factory.mktemp("replaced-peers")
    with Catalog.embedded(root) as catalog:
        catalog.create_namespace("db")
        t = catalog.create_table("db.t", OLD, partition_by=["region"])
        t.append(pa.table({"id": list(range(10)), "region": ["eu", "us"] * 5}, OLD))
        t.delete("id = 3")
        rows = pa.table(
            {
                "id": list(range(100, 120)),
                "day": ["mon", "tue"] * 10,
                "amount": [i * 0.5 for i in range(20)],
            },
            NEW,
        )
        yield catalog.replace_table("db.t", NEW, partition_by=["day"], data=rows)


def columns_at(t: Table, snapshot_id: int) -> list[str]:
    return (
        ["id", "day", "amount"]
        if snapshot_id == t.current_snapshot().snapshot_id
        else [
            "id",
            "region",
        ]
    )


def jobs(t: Table, **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "key": [s.snapshot_id],
            "metadata": t.metadata_location,
            "snapshot": s.snapshot_id,
            "columns": columns_at(t, s.snapshot_id),
            **extra,
        }
        for s in t.snapshots()
    ]


def lakecat_rows(t: Table, snapshot_id: int) -> list[list[Any]]:
    return canonical_rows(t.to_arrow(snapshot_id=snapshot_id), columns_at(t, snapshot_id))


@pytest.mark.parametrize("peer", ["pyiceberg", "duckdb"])
def test_pyiceberg_and_duckdb_read_the_replaced_table_and_its_history(
    replaced: Table, peer: str
) -> None:
    assert len(replaced.snapshots()) == 3
    answers = read_rows(peer, jobs(replaced))
    wrong = [
        (a["key"], a.get("error") or "rows differ")
        for a in answers
        if a.get("rows") != lakecat_rows(replaced, a["key"][0])
    ]
    assert wrong == []


def test_iceberg_java_reads_the_replaced_table_and_its_history(replaced: Table) -> None:
    answers = read_batch("spark", [{**j, "column": "id"} for j in jobs(replaced)])
    wrong = []
    for a in answers:
        ids = [r[0] for r in lakecat_rows(replaced, a["key"][0])]
        if (a.get("rows"), a.get("sum")) != (len(ids), sum(ids)):
            wrong.append((a["key"], a, len(ids), sum(ids)))
    assert wrong == []
