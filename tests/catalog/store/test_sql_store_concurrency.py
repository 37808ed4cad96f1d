"""Writers racing the compare-and-swap, in threads and in processes, on SQLite and PostgreSQL.

In every round all contenders read the same pointer and then swap from it at once: exactly one
must win and every other one must get CommitFailed; nothing else (no "database is locked", no
serialization failure) may surface.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from lakecat.catalog.store.store import SqlCatalogStore, TablePointer
from lakecat.metadata.errors import CatalogUnavailable, CommitFailed

CONTENDERS = 8
ROUNDS = 4
NAMESPACE = "race"
TABLE = "pointer"
INITIAL = "file:///warehouse/race/pointer/metadata/00000-initial.metadata.json"
WON = "won"
LOST = "lost"


def new_location(round_number: int, contender: str) -> str:
    return (
        f"file:///warehouse/race/pointer/metadata/{round_number + 1:05d}-{contender}.metadata.json"
    )


@pytest.fixture
def race_store(catalog_url: str) -> Any:
    with SqlCatalogStore(catalog_url) as store:
        store.create_namespace(NAMESPACE)
        store.create_table_row(NAMESPACE, TABLE, INITIAL)
        yield store


def swap_once(store: SqlCatalogStore, *, expected: str, new: str) -> str:
    try:
        store.swap_metadata_location(NAMESPACE, TABLE, expected=expected, new=new)
    except CommitFailed:
        return LOST
    return WON


def assert_one_winner_per_round(
    outcomes: dict[int, dict[str, str]], store: SqlCatalogStore, first_expected: str
) -> None:
    expected = first_expected
    for round_number in range(ROUNDS):
        by_contender = outcomes[round_number]
        winners = [c for c, outcome in by_contender.items() if outcome == WON]
        assert sorted(by_contender.values()) == [LOST] * (CONTENDERS - 1) + [WON], by_contender
        expected = new_location(round_number, winners[0])
    assert store.get_metadata_location(NAMESPACE, TABLE) == expected


def test_threads_racing_the_swap_have_exactly_one_winner_per_round(
    race_store: SqlCatalogStore,
) -> None:
    barrier = threading.Barrier(CONTENDERS)
    outcomes: dict[int, dict[str, str]] = {}
    with ThreadPoolExecutor(CONTENDERS) as pool:
        for round_number in range(ROUNDS):
            expected = race_store.get_metadata_location(NAMESPACE, TABLE)

            def contend(
                index: int, expected: str = expected, round_number: int = round_number
            ) -> str:
                barrier.wait(timeout=60)
                new = new_location(round_number, f"t{index}")
                return swap_once(race_store, expected=expected, new=new)

            futures = {f"t{i}": pool.submit(contend, i) for i in range(CONTENDERS)}
            outcomes[round_number] = {name: f.result(timeout=120) for name, f in futures.items()}
            winner = next(
                name for name, outcome in outcomes[round_number].items() if outcome == WON
            )
            assert race_store.get_table_pointer(NAMESPACE, TABLE) == TablePointer(
                new_location(round_number, winner), expected
            )
    assert_one_winner_per_round(outcomes, race_store, INITIAL)


_barrier: Any = None  # set in each contender process by remember_barrier


def remember_barrier(barrier: Any) -> None:  # pragma: no cover - runs in a spawned process
    global _barrier
    _barrier = barrier


def race_in_process(
    url: str, index: int, rounds: int
) -> list[tuple[int, str, str]]:  # pragma: no cover - runs in a spawned process
    """One contender: per round, read the pointer, wait for all, swap from it at once."""
    outcomes = []
    with SqlCatalogStore(url) as store:
        for round_number in range(rounds):
            try:
                _barrier.wait(timeout=120)
                expected = store.get_metadata_location(NAMESPACE, TABLE)
                _barrier.wait(timeout=120)  # everyone has read the same pointer
                outcome = swap_once(
                    store, expected=expected, new=new_location(round_number, f"p{index}")
                )
            except Exception as exc:  # reported to the parent, which fails the test
                outcome = f"{type(exc).__name__}: {exc}"
            outcomes.append((round_number, f"p{index}", outcome))
    return outcomes


@pytest.fixture(scope="module")
def contender_processes() -> Iterator[tuple[ProcessPoolExecutor, Any]]:
    """Eight spawned processes, shared by the backends: starting them is the slow part."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(CONTENDERS)
    with ProcessPoolExecutor(
        CONTENDERS, mp_context=context, initializer=remember_barrier, initargs=(barrier,)
    ) as pool:
        yield pool, barrier


def test_processes_racing_the_swap_have_exactly_one_winner_per_round(
    catalog_url: str,
    race_store: SqlCatalogStore,
    contender_processes: tuple[ProcessPoolExecutor, Any],
) -> None:
    pool, barrier = contender_processes
    barrier.reset()
    # A blocked contender keeps its process busy, so the eight tasks run in eight processes.
    futures = [pool.submit(race_in_process, catalog_url, i, ROUNDS) for i in range(CONTENDERS)]
    outcomes: dict[int, dict[str, str]] = {r: {} for r in range(ROUNDS)}
    for future in futures:
        for round_number, contender, outcome in future.result(timeout=300):
            outcomes[round_number][contender] = outcome
    assert_one_winner_per_round(outcomes, race_store, INITIAL)


def test_sqlite_lock_held_by_another_writer_is_waited_out_not_surfaced(sqlite_url: str) -> None:
    # A short busy timeout so that the store sees SQLITE_BUSY and must retry the statement.
    with SqlCatalogStore(sqlite_url, busy_timeout_ms=50, max_statement_attempts=20) as store:
        store.create_namespace(NAMESPACE)
        store.create_table_row(NAMESPACE, TABLE, INITIAL)
        blocker = sqlite3.connect(
            sqlite_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False
        )
        blocker.execute("BEGIN IMMEDIATE")  # holds the write lock
        release = threading.Timer(0.3, blocker.rollback)
        release.start()
        started = time.monotonic()
        try:
            store.swap_metadata_location(
                NAMESPACE, TABLE, expected=INITIAL, new=new_location(0, "x")
            )
        finally:
            release.join()
            blocker.close()
        assert time.monotonic() - started >= 0.25
        assert store.get_metadata_location(NAMESPACE, TABLE) == new_location(0, "x")


def test_sqlite_lock_never_released_is_unavailable_and_not_committed(sqlite_url: str) -> None:
    with SqlCatalogStore(sqlite_url, busy_timeout_ms=20, max_statement_attempts=3) as store:
        store.create_namespace(NAMESPACE)
        store.create_table_row(NAMESPACE, TABLE, INITIAL)
        blocker = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(CatalogUnavailable):
                store.swap_metadata_location(
                    NAMESPACE, TABLE, expected=INITIAL, new=new_location(0, "x")
                )
        finally:
            blocker.rollback()
            blocker.close()
        assert store.get_metadata_location(NAMESPACE, TABLE) == INITIAL


@pytest.mark.postgres
def test_racing_under_repeatable_read_surfaces_only_commit_failed(postgres_url: str) -> None:
    """Under REPEATABLE READ, losers blocked on the winner's row lock get SQLSTATE 40001."""
    with SqlCatalogStore(postgres_url) as setup:
        setup.create_namespace(NAMESPACE)
        setup.create_table_row(NAMESPACE, TABLE, INITIAL)
    repeatable_read = {"isolation_level": "REPEATABLE READ"}
    with SqlCatalogStore(postgres_url, engine_kwargs=repeatable_read) as store:
        store.initialize()
        barrier = threading.Barrier(CONTENDERS)

        def contend(index: int) -> str:
            barrier.wait(timeout=60)
            return swap_once(store, expected=INITIAL, new=new_location(0, f"t{index}"))

        with ThreadPoolExecutor(CONTENDERS) as pool:
            results = list(pool.map(contend, range(CONTENDERS)))
    assert sorted(results) == [LOST] * (CONTENDERS - 1) + [WON]


@pytest.mark.postgres
def test_postgres_serialization_failure_is_retried_then_reported_as_lost(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Deterministic 40001: the store's UPDATE waits on a row lock whose holder then commits."""
    with SqlCatalogStore(postgres_url) as setup:
        setup.create_namespace(NAMESPACE)
        setup.create_table_row(NAMESPACE, TABLE, INITIAL)
    moved = new_location(0, "blocker")
    engine = sa.create_engine(postgres_url, poolclass=NullPool)
    repeatable_read = {"isolation_level": "REPEATABLE READ"}
    caplog.set_level("INFO", logger="lakecat.catalog.store.transactions")
    try:
        with (
            engine.connect() as blocker,
            SqlCatalogStore(postgres_url, engine_kwargs=repeatable_read) as store,
        ):
            store.initialize()
            blocker.begin()
            blocker.execute(
                sa.text("UPDATE iceberg_tables SET metadata_location = :m"), {"m": moved}
            )
            with ThreadPoolExecutor(1) as pool:
                swap = pool.submit(swap_once, store, expected=INITIAL, new=new_location(0, "store"))
                wait_until_a_backend_waits_for_a_lock(engine)
                blocker.commit()
                outcome = swap.result(timeout=60)
            assert outcome == LOST
            assert any("retrying" in record.getMessage() for record in caplog.records)
            assert store.get_metadata_location(NAMESPACE, TABLE) == moved
    finally:
        engine.dispose()


def wait_until_a_backend_waits_for_a_lock(engine: sa.Engine) -> None:
    deadline = time.monotonic() + 30
    with engine.connect() as watcher:
        while time.monotonic() < deadline:
            waiting = watcher.execute(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE wait_event_type = 'Lock' AND datname = current_database()"
                )
            ).scalar()
            watcher.rollback()
            if waiting:
                return
            time.sleep(0.01)
    pytest.fail("the store's UPDATE never waited for the row lock")
