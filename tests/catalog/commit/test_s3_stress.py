"""Four processes append to one table in an S3 warehouse at once (a real S3 server): every
append lands exactly once, the history is one chain, and the files under the table are
exactly the ones it references (no file of a lost attempt, no folder marker)."""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest
from history_checks import assert_one_chain_holding
from local_s3 import S3Warehouse

from lakecat.catalog import Catalog
from lakecat.catalog.maintenance.reachable import reachable_files

WRITERS = 4
APPENDS = 5

pytestmark = [pytest.mark.s3, pytest.mark.slow]


def _rows(writer: int, ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "writer": pa.array([writer] * len(ids))})


def _writer(
    url: str, warehouse: str, properties: dict[str, str], writer: int, out: mp.Queue
) -> None:  # type: ignore[type-arg]
    catalog = Catalog(url, warehouse=warehouse, properties=properties)
    acknowledged = []
    for n in range(APPENDS):
        ids = [writer * 1000 + n * 10 + i for i in range(3)]
        result = catalog.load_table("db.stress").append(_rows(writer, ids))
        acknowledged.append(result.snapshot_id)
    catalog.close()
    out.put(acknowledged)


@pytest.mark.parametrize("lock", ["true", "false"], ids=["commit-lock", "cas-only"])
def test_processes_appending_at_once_to_s3_all_land(
    sqlite_url: str, s3_warehouse: S3Warehouse, lock: str
) -> None:
    catalog = Catalog(
        sqlite_url, warehouse=s3_warehouse.location, properties=s3_warehouse.properties
    )
    catalog.create_namespace("db")
    catalog.create_table(
        "db.stress",
        _rows(0, [0]).schema,
        properties={"commit.retry.num-retries": "30", "commit.lock.enabled": lock},
    )
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    args = (sqlite_url, s3_warehouse.location, s3_warehouse.properties)
    procs = [ctx.Process(target=_writer, args=(*args, w, queue)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    acknowledged = [snap for _ in procs for snap in queue.get(timeout=240)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    table = catalog.load_table("db.stress")
    chain = assert_one_chain_holding(table, acknowledged)
    assert len(chain) == len(acknowledged) == WRITERS * APPENDS
    ids = table.to_arrow().column("id").to_pylist()
    expected = [
        w * 1000 + n * 10 + i for w in range(WRITERS) for n in range(APPENDS) for i in range(3)
    ]
    assert sorted(ids) == sorted(expected)

    referenced = reachable_files(table.io, table.metadata, table.metadata_location)
    stored = {f"s3://{s3_warehouse.server.bucket}/{key}" for key in s3_warehouse.stored_keys()}
    assert stored == referenced, f"left behind: {sorted(stored - referenced)[:5]}"
    catalog.close()
