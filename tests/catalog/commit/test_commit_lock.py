"""The advisory commit lock: lakecat writers queue instead of losing races; the lock never
decides a commit and never blocks one for longer than its timeout."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.commit.conflicts import ATTEMPTS_KEY
from lakecat.catalog.commit.coordination.file_lock import FileLock
from lakecat.catalog.commit.coordination.lock import PostgresAdvisoryLock, ProcessLock, lock_id

WRITERS = 4
APPENDS = 6


def _rows(writer: int, n: int) -> pa.Table:
    return pa.table(
        {"writer": pa.array([writer] * n, pa.int64()), "n": pa.array(range(n), pa.int64())}
    )


def _append_many(url: str, warehouse: str, writer: int, barrier: object) -> None:
    catalog = Catalog(url, warehouse=warehouse)
    barrier.wait()  # type: ignore[attr-defined]
    for _ in range(APPENDS):
        catalog.load_table("db.t").append(_rows(writer, 10))
    catalog.close()


def _race(url: str, warehouse: str, lock: str) -> Catalog:
    catalog = Catalog(url, warehouse=warehouse)
    catalog.create_namespace("db")
    catalog.create_table("db.t", _rows(0, 0).schema, properties={"commit.lock.enabled": lock})
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    procs = [
        ctx.Process(target=_append_many, args=(url, warehouse, w, barrier)) for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    return catalog


@pytest.mark.parametrize("lock", ["true", "false"])
def test_racing_appends_all_land_with_or_without_the_lock(
    catalog_url: str, warehouse: str, lock: str
) -> None:
    catalog = _race(catalog_url, warehouse, lock)
    table = catalog.load_table("db.t")
    counts = table.to_arrow().group_by("writer").aggregate([("n", "count")]).to_pylist()
    assert sorted((r["writer"], r["n_count"]) for r in counts) == [
        (w, 10 * APPENDS) for w in range(WRITERS)
    ]
    assert len(table.snapshots()) == WRITERS * APPENDS
    if lock == "true":  # queued on the lock: every commit landed on its first attempt
        attempts = {s.summary[ATTEMPTS_KEY] for s in table.snapshots()}
        assert attempts == {"1"}
    catalog.close()


def test_a_commit_goes_ahead_without_the_lock_after_the_timeout(
    catalog_url: str, warehouse: str
) -> None:
    catalog = Catalog(catalog_url, warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", _rows(0, 0).schema, properties={"commit.lock.acquire-timeout-ms": "200"}
    )
    key = f"{catalog.name}/db/t"
    with catalog.commit_lock.hold(key, 1.0) as held:  # another writer is stuck holding it
        assert held
        started = time.monotonic()
        table.append(_rows(1, 5))
        waited = time.monotonic() - started
    assert 0.2 <= waited < 5
    assert catalog.load_table("db.t").to_arrow().num_rows == 5
    catalog.close()


def test_a_table_with_the_lock_off_does_not_wait_for_it(catalog_url: str, warehouse: str) -> None:
    catalog = Catalog(catalog_url, warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        _rows(0, 0).schema,
        properties={"commit.lock.enabled": "false", "commit.lock.acquire-timeout-ms": "60000"},
    )
    with catalog.commit_lock.hold(f"{catalog.name}/db/t", 1.0) as held:
        assert held
        table.append(_rows(1, 5))  # would wait a minute if it took the lock
    assert catalog.load_table("db.t").to_arrow().num_rows == 5
    catalog.close()


def test_file_lock_excludes_threads_and_times_out(tmp_path: Path) -> None:
    lock = FileLock(str(tmp_path / "locks"))
    inside: list[int] = []
    overlaps: list[int] = []

    def worker(i: int) -> None:
        for _ in range(20):
            with lock.hold("k", 10) as held:
                assert held
                inside.append(i)
                if len(inside) > 1:
                    overlaps.append(i)
                time.sleep(0.0005)
                inside.remove(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    with lock.hold("k", 1) as held, lock.hold("k", 0.05) as second:
        assert held and not second
    # the waiter that gave up left nothing behind that could take the lock later
    with lock.hold("k", 0) as again:
        assert again
    with lock.hold("k", 1) as held, lock.hold("other", 0.05) as other:
        assert held and other  # keys are independent


def test_a_killed_holder_releases_the_file_lock(tmp_path: Path) -> None:
    folder = str(tmp_path / "locks")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from lakecat.catalog.commit.coordination.file_lock import FileLock\n"
            f"with FileLock({folder!r}).hold('k', 5) as held:\n"
            "    print(held is not None, flush=True)\n"
            "    time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        with FileLock(folder).hold("k", 0.1) as held:
            assert not held
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        with FileLock(folder).hold("k", 5) as held:
            assert held
    finally:
        if holder.poll() is None:
            holder.kill()


@pytest.mark.postgres
def test_postgres_advisory_lock_is_exclusive_and_released_with_its_connection(
    postgres_url: str,
) -> None:
    catalog = Catalog(postgres_url, warehouse="/tmp/unused-warehouse")
    lock = catalog.commit_lock
    assert isinstance(lock, PostgresAdvisoryLock)
    with lock.hold("k", 1) as held, lock.hold("k", 0.1) as second:
        assert held and not second
    with lock.hold("k", 0.1) as again:
        assert again  # released when the block ended
    engine = catalog.store.engine
    connection = engine.connect()  # a holder whose session dies
    from sqlalchemy import text

    connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": lock_id("lakecat-commit:k")})
    with lock.hold("k", 0.1) as held:
        assert not held
    connection.invalidate()  # the connection is closed without unlocking
    with lock.hold("k", 5) as held:
        assert held
    catalog.close()


@pytest.mark.postgres
@pytest.mark.parametrize("moment", ["taking", "releasing"])
def test_ctrl_c_while_the_postgres_lock_is_taken_or_released_leaves_it_free(
    postgres_url: str, moment: str
) -> None:
    # SIGINT arrives inside the driver's COMMIT of the lock or unlock statement: it is held
    # back until that step is done, then raised as KeyboardInterrupt, and the lock is free
    import os
    import signal

    from sqlalchemy.engine import Connection

    catalog = Catalog(postgres_url, warehouse="/tmp/unused-warehouse")
    lock = catalog.commit_lock
    assert isinstance(lock, PostgresAdvisoryLock)
    commit = Connection.commit
    calls = {"n": 0}

    def interrupted_commit(self: Connection) -> None:
        calls["n"] += 1
        if calls["n"] == (1 if moment == "taking" else 2):
            os.kill(os.getpid(), signal.SIGINT)
        commit(self)

    Connection.commit = interrupted_commit  # type: ignore[method-assign]
    try:
        with pytest.raises(KeyboardInterrupt), lock.hold("k", 1) as held:
            assert held
    finally:
        Connection.commit = commit  # type: ignore[method-assign]
    with lock.hold("k", 0.5) as again:
        assert again  # nobody holds it: not a pooled connection that kept it
    catalog.close()


def test_an_in_memory_catalog_locks_within_the_process() -> None:
    catalog = Catalog("sqlite://", warehouse="/tmp/unused-warehouse")
    assert isinstance(catalog.commit_lock, ProcessLock)
    with catalog.commit_lock.hold("k", 1) as held, catalog.commit_lock.hold("k", 0.05) as second:
        assert held and not second
    catalog.close()


@pytest.mark.postgres
def test_a_postgres_lock_that_stops_working_says_so_and_the_commit_counts_it(
    postgres_url: str, warehouse: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A timeout is the lock doing its job (silent); a lock that fails is a warning, and a
    commit made without it lists the fault in its result."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    catalog = Catalog(postgres_url, warehouse=warehouse)
    lock = catalog.commit_lock
    assert isinstance(lock, PostgresAdvisoryLock)
    faults: list[str] = []
    with lock.hold("k", 1, faults=faults) as held, lock.hold("k", 0.1, faults=faults) as second:
        assert held and not second
    assert faults == []  # a wait that timed out is no fault

    # the lock's session is killed while it is held: releasing it fails
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with caplog.at_level("WARNING", logger="lakecat.commit"):
        with lock.hold("k", 1, faults=faults) as held:
            assert held
            with admin.connect() as connection:
                connection.execute(
                    sa.text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE pid <> pg_backend_pid() AND datname = current_database()"
                    )
                )
        assert len(faults) == 1 and "cannot release" in faults[0]
        assert "cannot release" in caplog.text
    admin.dispose()
    with lock.hold("k", 1) as again:  # the lock works again
        assert again

    # a commit whose lock cannot connect: it lands without the lock and says so
    dead = make_url(postgres_url).set(host="127.0.0.1", port=_closed_port())
    catalog.commit_lock = PostgresAdvisoryLock(sa.create_engine(dead))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", _rows(0, 0).schema)
    result = table.append(_rows(1, 3))
    assert len(result.warnings) == 1 and result.warnings[0].startswith("commit lock: no connection")
    assert catalog.load_table("db.t").to_arrow().num_rows == 3
    catalog.close()


def _closed_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens there once the probe is closed


def test_a_file_lock_that_cannot_be_made_says_so_and_the_commit_counts_it(
    sqlite_url: str, warehouse: str, tmp_path: Path
) -> None:
    catalog = Catalog(sqlite_url, warehouse=warehouse)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    catalog.commit_lock = FileLock(str(blocker))  # its folder cannot be made: a file is there
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", _rows(0, 0).schema)
    result = table.append(_rows(1, 3))
    assert len(result.warnings) == 1 and "cannot open" in result.warnings[0]
    assert catalog.load_table("db.t").to_arrow().num_rows == 3
    catalog.close()


def test_lakecat_imports_and_commits_where_flock_and_fifos_are_missing(tmp_path: Path) -> None:
    """The POSIX parts of the commit coordination are imported only when a SQLite file catalog
    asks for its lock; without them, such a catalog commits without the lock."""
    script = (
        "import sys\n"
        "sys.modules['fcntl'] = None  # as on a platform without it: import fcntl fails\n"
        "import pyarrow as pa\n"
        "import lakecat.catalog, lakecat.catalog.maintenance\n"
        "from lakecat.catalog import Catalog\n"
        "from lakecat.catalog.commit.coordination.lock import ProcessLock\n"
        "assert 'lakecat.catalog.commit.coordination.file_lock' not in sys.modules\n"
        f"catalog = Catalog.embedded({str(tmp_path / 'lake')!r})\n"
        "assert isinstance(catalog.commit_lock, ProcessLock), catalog.commit_lock\n"
        "catalog.create_namespace('db')\n"
        "t = catalog.create_table('db.t', pa.schema([('id', pa.int64())]))\n"
        "t.append(pa.table({'id': [1, 2]}))\n"
        "t.delete('id = 1')\n"
        "assert catalog.load_table('db.t').to_arrow().column('id').to_pylist() == [2]\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
