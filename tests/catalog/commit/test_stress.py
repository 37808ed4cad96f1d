"""Eight processes commit to one table at once; a checker verifies the final history.

Each writer appends to a shared partition (blind appends: must all land) and appends to,
deletes from and overwrites its own partition (disjoint: must never conflict). The checker
asserts: every acknowledged commit is in the snapshot chain exactly once, the chain is linear,
no row appears that no writer wrote, no acknowledged row is lost (the final state equals a
replay of each writer's acknowledged operations), no referenced file is missing, and no file
written by a failed attempt is left behind.
"""

from __future__ import annotations

import multiprocessing as mp
import random

import pyarrow as pa
import pytest
from history_checks import assert_files_are_exactly_the_referenced_ones, assert_one_chain_holding

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import CommitConflict, RetriesExhausted

WRITERS = 8
OPS_PER_WRITER = 8


def _rows(writer: int, partition: str, ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "writer": pa.array([writer] * len(ids), pa.int64()),
            "part": [partition] * len(ids),
        }
    )


def _writer(url: str, warehouse: str, writer: int, seed: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    rng = random.Random(seed)
    catalog = Catalog(url, warehouse=warehouse)
    own = f"w{writer}"
    log: list[tuple[str, int | None, list[int]]] = []
    next_id = writer * 1_000_000
    for _ in range(OPS_PER_WRITER):
        kind = rng.choice(["shared", "own", "own", "delete", "overwrite"])
        table = catalog.load_table("db.stress")
        ids = list(range(next_id, next_id + rng.randint(1, 20)))
        next_id += 100
        try:
            if kind == "shared":
                result = table.append(_rows(writer, "shared", ids))
            elif kind == "own":
                result = table.append(_rows(writer, own, ids))
            elif kind == "delete":
                cutoff = next_id - rng.randint(0, 400)
                result = table.delete(f"part = '{own}' AND id < {cutoff}")
                ids = [cutoff]
            else:
                result = table.overwrite(_rows(writer, own, ids), f"part = '{own}'")
            log.append((kind, result.snapshot_id if result else None, ids))
        except (RetriesExhausted, CommitConflict) as exc:
            log.append((f"failed:{type(exc).__name__}", None, ids))
    catalog.close()
    out.put((writer, log))


def _expected(logs: dict[int, list[tuple[str, int | None, list[int]]]]) -> set[tuple[int, int]]:
    """Replay each writer's acknowledged operations: (id, writer) of every surviving row."""
    rows: set[tuple[int, int]] = set()
    for writer, log in logs.items():
        own: set[int] = set()
        for kind, _snapshot, ids in log:
            if kind == "shared":
                rows |= {(i, writer) for i in ids}
            elif kind == "own":
                own |= set(ids)
            elif kind == "delete":
                own = {i for i in own if i >= ids[0]}
            elif kind == "overwrite":
                own = set(ids)
        rows |= {(i, writer) for i in own}
    return rows


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lock", "version"),
    [("true", "2"), ("false", "2"), ("true", "3")],
    ids=["commit-lock", "cas-only", "commit-lock-v3"],
)
def test_eight_writers_keep_the_table_correct(
    catalog_url: str, warehouse: str, lock: str, version: str
) -> None:
    catalog = Catalog(catalog_url, warehouse=warehouse)
    catalog.create_namespace("db")
    catalog.create_table(
        "db.stress",
        _rows(0, "x", [0]).schema,
        partition_by=["part"],
        properties={
            "commit.retry.num-retries": "20",
            "commit.lock.enabled": lock,
            "format-version": version,
        },
    )
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(catalog_url, warehouse, w, 1000 + w, queue))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    logs = dict(queue.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    table = catalog.load_table("db.stress")
    acknowledged = [snap for log in logs.values() for _, snap, _ in log if snap is not None]
    chain = assert_one_chain_holding(table, acknowledged)
    assert len(chain) == len(acknowledged), "a commit nobody acknowledged is in the history"

    data = table.to_arrow()
    got = set(zip(data.column("id").to_pylist(), data.column("writer").to_pylist(), strict=True))
    assert len(got) == data.num_rows, "a row appears twice"
    assert got == _expected(logs)

    assert_files_are_exactly_the_referenced_ones(table)
    if version == "3":
        _assert_row_ids_unique_and_ranges_disjoint(table)
    catalog.close()


def _assert_row_ids_unique_and_ranges_disjoint(table: Table) -> None:
    """Row lineage under concurrency: every attempt assigned row ids on the base it landed
    on, so the snapshots' ranges follow each other and no two rows share an id."""
    next_row_id = table.metadata.next_row_id
    assert next_row_id is not None
    end = 0
    for snap in sorted(table.snapshots(), key=lambda s: s.sequence_number):
        assert snap.first_row_id is not None and snap.added_rows is not None
        assert snap.first_row_id >= end
        end = snap.first_row_id + snap.added_rows
    assert end <= next_row_id
    row_ids = table.scan(columns=["_row_id"]).to_arrow().column("_row_id").to_pylist()
    assert None not in row_ids and len(set(row_ids)) == len(row_ids)
    assert max(row_ids) < next_row_id
