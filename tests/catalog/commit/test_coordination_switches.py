"""Each optional piece of the commit coordination switched off on its own
(``lakecat.catalog.commit.coordination.switches``): writers queued behind a held lock still all
commit, each exactly once, by the simpler mechanism the switch falls back to."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.commit.coordination import switches
from lakecat.metadata.table.metadata_files import parse_version

WRITERS = 4
SWITCHES = {
    "all on": {},
    "no doorbells": {switches.DOORBELLS_ENV: "0"},
    "no group commit": {switches.GROUP_COMMIT_ENV: "off"},
}


def _rows(writer: int) -> pa.Table:
    return pa.table({"writer": pa.array([writer] * 5, pa.int64())})


@pytest.fixture(params=list(SWITCHES))
def switched(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    for variable in (switches.DOORBELLS_ENV, switches.GROUP_COMMIT_ENV):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in SWITCHES[request.param].items():
        monkeypatch.setenv(variable, value)
    return str(request.param)


@pytest.fixture
def lake(sqlite_url: str, warehouse: str) -> Iterator[Catalog]:
    catalog = Catalog(sqlite_url, warehouse=warehouse)
    catalog.create_namespace("db")
    catalog.create_table("db.t", _rows(0).schema)
    yield catalog
    catalog.close()


def _queue_folder(lake: Catalog) -> str:
    queue = lake._ops(("db",), "t").commit_queue({})
    assert queue is not None
    return str(queue.folder)


def _watch(folder: str, seen: set[str], stop: threading.Event) -> None:
    while not stop.is_set():
        if os.path.isdir(folder):
            seen.update(os.listdir(folder))
        time.sleep(0.001)


def test_the_switches_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in (switches.DOORBELLS_ENV, switches.GROUP_COMMIT_ENV):
        monkeypatch.delenv(variable, raising=False)
    assert switches.doorbells() and switches.group_commit({})
    assert not switches.group_commit({"commit.group-commit.enabled": "false"})
    for off in ("0", "false", "No", " off "):
        monkeypatch.setenv(switches.DOORBELLS_ENV, off)
        assert not switches.doorbells()
    monkeypatch.setenv(switches.DOORBELLS_ENV, "1")
    assert switches.doorbells()
    monkeypatch.setenv(switches.GROUP_COMMIT_ENV, "0")
    assert not switches.group_commit({"commit.group-commit.enabled": "true"})


def test_writers_behind_a_held_lock_all_commit_once(switched: str, lake: Catalog) -> None:
    ops: Any = lake._ops(("db",), "t")
    folder = _queue_folder(lake)
    before = parse_version(lake.load_table("db.t").metadata_location)
    seen: set[str] = set()
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(folder, seen, stop))
    watcher.start()
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def append(writer: int) -> None:
        catalog = Catalog(lake.uri, warehouse=lake.warehouse)
        try:
            results[writer] = catalog.load_table("db.t").append(_rows(writer))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            catalog.close()

    try:
        with ops.commit_lock({}) as hold:
            assert hold is not None
            threads = [threading.Thread(target=append, args=(w,)) for w in range(1, WRITERS + 1)]
            for t in threads:
                t.start()
            time.sleep(0.3)  # they find the lock busy and wait (queued, where grouping is on)
        for t in threads:
            t.join(timeout=60)
            assert not t.is_alive()
    finally:
        stop.set()
        watcher.join()
    assert not errors, errors

    table = lake.load_table("db.t")
    assert sorted(table.to_arrow().column("writer").to_pylist()) == sorted(
        w for w in range(1, WRITERS + 1) for _ in range(5)
    )
    assert {s.snapshot_id for s in table.snapshots()} == {r.snapshot_id for r in results.values()}
    versions = parse_version(table.metadata_location) - before
    if switched == "no group commit":
        assert versions == WRITERS  # each writer committed its own
        assert not any(n.endswith(".req") for n in seen)
    else:
        assert versions < WRITERS  # a holder committed the others' with its own
    bells = any(n.endswith(".bell") for n in seen)
    assert bells is (switched != "no doorbells")
    assert os.listdir(folder) == []  # every wait's files removed after it
