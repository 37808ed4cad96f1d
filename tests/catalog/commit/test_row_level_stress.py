"""Processes change different rows of the same files at once, merge-on-read, while a compaction
runs; a checker replays what was acknowledged.

The table (format v2: position delete files; v3: deletion vectors, merged on a retry and
re-targeted by row id onto a compaction's files) starts as three files holding ids 0..2999
(``v`` = 0). Each of five writer processes
owns the ids ``id % 5 == w``, interleaved through every file, and runs merge-on-read deletes,
updates and upserts of its own rows (an upsert also inserts new own ids); a sixth process
compacts the table in a loop. A writer re-plans an operation that fails with a conflict (a
compaction removed a file it deleted rows from) up to three times. The checker asserts: the
history is one linear chain holding every acknowledged commit, and nothing else but
compactions; no row is lost, resurrected or duplicated (the final rows equal a replay of each
writer's acknowledged operations, in its order: writers never touch each other's rows); every
referenced file exists and no file of a failed attempt is left behind.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import time

import pyarrow as pa
import pytest
from history_checks import assert_files_are_exactly_the_referenced_ones, assert_one_chain_holding

from lakecat.catalog import Catalog
from lakecat.catalog.maintenance.compaction import rewrite_data_files
from lakecat.metadata.errors import CommitConflict, LakecatError, RetriesExhausted

WRITERS = 5
OPS_PER_WRITER = 8
ROWS = 3000
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "commit.retry.num-retries": "30",
}
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
Op = tuple[str, int | None, list[int], int]  # (kind, snapshot id or None if failed, ids, value)


def _table(ids: list[int], value: int) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "v": pa.array([value] * len(ids), pa.int64())},
        schema=SCHEMA,
    )


def _in(ids: list[int]) -> str:
    return f"id IN ({', '.join(map(str, ids))})"


def _writer(url: str, warehouse: str, writer: int, seed: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    rng = random.Random(seed)
    catalog = Catalog(url, warehouse=warehouse)
    present = set(range(writer, ROWS, WRITERS))
    next_new = ROWS + writer
    log: list[Op] = []
    for n in range(OPS_PER_WRITER):
        kind = rng.choice(["delete", "update", "upsert"])
        value = writer * 1000 + n + 1
        ids = rng.sample(sorted(present), 5)
        if kind == "upsert":
            ids = [*ids[:3], next_new, next_new + WRITERS]
            next_new += 2 * WRITERS
        snapshot = None
        for _attempt in range(3):
            table = catalog.load_table("db.rows")
            try:
                if kind == "delete":
                    result = table.delete(_in(ids))
                elif kind == "update":
                    result = table.update({"v": value}, _in(ids))
                else:
                    result = table.upsert(_table(ids, value), on="id")
                assert result is not None
                snapshot = result.snapshot_id
                break
            except (CommitConflict, RetriesExhausted):
                continue  # re-plan on the new state
        log.append((kind, snapshot, ids, value))
        if snapshot is not None:
            if kind == "delete":
                present -= set(ids)
            elif kind == "upsert":
                present |= set(ids)
    catalog.close()
    out.put((writer, log))


def _compactor(url: str, warehouse: str, stop: mp.Event, out: mp.Queue) -> None:  # type: ignore[type-arg]
    catalog = Catalog(url, warehouse=warehouse)
    committed: list[int] = []
    while not stop.is_set():
        try:
            result = rewrite_data_files(catalog.load_table("db.rows"), min_input_files=2)
            committed.extend(result.snapshot_ids)
        except LakecatError:
            pass
        time.sleep(0.05)
    catalog.close()
    out.put(("compactor", committed))


def _replay(logs: dict[int, list[Op]]) -> dict[int, int]:
    rows = {i: 0 for i in range(ROWS)}
    for log in logs.values():
        for kind, snapshot, ids, value in log:
            if snapshot is None:
                continue
            if kind == "delete":
                for i in ids:
                    rows.pop(i, None)
            elif kind == "update":
                for i in ids:
                    if i in rows:
                        rows[i] = value
            else:
                for i in ids:
                    rows[i] = value
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2", "3"])
def test_writers_changing_different_rows_of_the_same_files_and_a_compaction_stay_correct(
    catalog_url: str, warehouse: str, version: str
) -> None:
    catalog = Catalog(catalog_url, warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table("db.rows", SCHEMA, properties={**MOR, "format-version": version})
    for start in range(0, ROWS, 1000):
        table.append(_table(list(range(start, start + 1000)), 0))
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    stop = ctx.Event()
    writers = [
        ctx.Process(target=_writer, args=(catalog_url, warehouse, w, 7000 + w, queue))
        for w in range(WRITERS)
    ]
    compactor = ctx.Process(target=_compactor, args=(catalog_url, warehouse, stop, queue))
    for p in [*writers, compactor]:
        p.start()
    logs: dict[int, list[Op]] = dict(queue.get(timeout=400) for _ in writers)
    stop.set()  # the compactor answers only once stopped
    key, compactions = queue.get(timeout=120)
    assert key == "compactor"
    for p in [*writers, compactor]:
        p.join(timeout=60)
        assert p.exitcode == 0

    table = catalog.load_table("db.rows")
    meta = table.metadata
    acknowledged = [snap for log in logs.values() for _, snap, _, _ in log if snap is not None]
    chain = assert_one_chain_holding(table, acknowledged)
    others = [meta.snapshot_by_id(s) for s in chain if s not in set(acknowledged)]
    assert all(s.operation in ("append", "replace") for s in others)
    assert len([s for s in others if s.operation == "append"]) == 3  # the initial loads
    replaced = {s.snapshot_id for s in others if s.operation == "replace"}
    assert replaced == set(compactions) and compactions, "no compaction raced the writers"
    assert len(acknowledged) >= WRITERS * OPS_PER_WRITER // 2, "too few operations committed"

    data = table.to_arrow()
    got = list(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))
    assert len({i for i, _ in got}) == len(got), "a row appears twice"
    assert dict(got) == _replay(logs)

    assert_files_are_exactly_the_referenced_ones(table)
    if version == "3":  # one deletion vector per data file, and every row keeps a unique id
        dvs = [d.referenced_data_file for ds in table.scan().plan().deletes.values() for d in ds]
        assert len(dvs) == len(set(dvs))
        row_ids = table.scan(columns=["_row_id"]).to_arrow().column("_row_id").to_pylist()
        assert None not in row_ids and len(set(row_ids)) == len(row_ids)
    catalog.close()
