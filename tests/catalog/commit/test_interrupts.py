"""Ctrl-C at any moment of a commit never breaks the table or loses an acknowledged commit.

Writer processes append one row at a time, each with a new id, and print ``ack <id>`` once an
append returned. The test sends SIGINT to them at random moments, hundreds of times (a writer
catches the ``KeyboardInterrupt`` and goes on with the next id; one that dies of it is
restarted; a writer is interrupted again only once it acknowledged another append, so a slow
machine still makes progress). Afterwards the table loads, every acknowledged id is in it exactly
once, no id is in it twice, and every file the table references exists. A writer may meet a typed
error (an interrupt can break a pooled database connection, which the next use reports as
``CatalogUnavailable``), never an untyped one.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.interrupts import DeferredInterrupts
from lakecat.catalog.maintenance.reachable import reachable_files

INTERRUPTS = 200
MIN_INTERRUPTS = 50
TIME_LIMIT_S = 120
WRITERS = 2

WRITER = r"""
import os, sys
import pyarrow as pa
from lakecat.catalog import Catalog
from lakecat.metadata.errors import LakecatError

url, warehouse, first, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
catalog = Catalog(url, warehouse=warehouse)
os.write(1, b"ready\n")
i = first
while True:
    try:
        i += 1
        if os.path.exists(stop):
            break
        catalog.load_table("db.t").append(pa.table({"id": pa.array([i], pa.int64())}))
        os.write(1, f"ack {i}\n".encode())  # one write: an interrupt cannot split it
    except KeyboardInterrupt:
        pass
    except LakecatError as exc:  # typed (e.g. a pooled connection an interrupt broke)
        os.write(1, f"typed {i} {type(exc).__name__}\n".encode())
    except Exception as exc:
        import traceback
        where = " | ".join(traceback.format_exception(exc)[-3:]).replace("\n", " ")
        os.write(1, f"error {i} {type(exc).__name__}: {exc} at {where}\n".encode())
"""


class _Writer:
    """One writer process at a time for one id range; restarted if an interrupt kills it."""

    def __init__(self, url: str, warehouse: str, index: int, stop: Path) -> None:
        self.args = [url, warehouse, str(index * 10_000_000), str(stop)]
        self.acks: list[int] = []
        self.errors: list[str] = []
        self.typed: list[str] = []
        self.restarts = 0
        self.acks_at_last_interrupt = 0
        self.next_first = index * 10_000_000
        self.proc: subprocess.Popen[str] | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        self.ready.clear()
        self.args[2] = str(self.next_first)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            word, _, rest = line.strip().partition(" ")
            if word == "ready":
                self.ready.set()
            elif word == "ack":
                self.acks.append(int(rest))
            elif word == "typed":
                self.typed.append(rest)
            else:
                self.errors.append(line)

    def interrupt(self) -> bool:
        """Send SIGINT if the writer is running and acknowledged an append since the last one
        (so it makes progress on any machine, however slow); restart it if it died."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            self.restarts += 1
            # the new process starts past every id the old one may have used
            self.next_first = max([self.next_first, *self.acks]) + 1_000_000
            self.start()
            return False
        if not self.ready.is_set() or len(self.acks) <= self.acks_at_last_interrupt:
            return False
        self.acks_at_last_interrupt = len(self.acks)
        self.proc.send_signal(signal.SIGINT)
        return True


def _table_ids(catalog: Catalog) -> list[int]:
    table = catalog.load_table("db.t")  # always loads
    for path in reachable_files(table.io, table.metadata, table.metadata_location):
        assert os.path.exists(path.removeprefix("file://")), f"referenced file missing: {path}"
    ids: list[int] = table.to_arrow().column("id").to_pylist()
    return ids


@pytest.mark.slow
def test_ctrl_c_at_random_moments_never_breaks_the_table_or_loses_an_acknowledged_commit(
    catalog_url: str, warehouse: str, tmp_path: Path
) -> None:
    catalog = Catalog(catalog_url, warehouse=warehouse)
    catalog.create_namespace("db")
    # A short lock wait: an interrupted writer can leave the advisory lock busy for a while
    # (see the closing note of issue 16); this test is about the table, not the lock's speed.
    catalog.create_table(
        "db.t",
        pa.schema([("id", pa.int64())]),
        properties={"commit.lock.acquire-timeout-ms": "200"},
    )
    stop = tmp_path / "stop"
    writers = [_Writer(catalog_url, warehouse, i + 1, stop) for i in range(WRITERS)]
    for w in writers:
        w.start()
    rng = random.Random(20261124)
    sent = 0
    deadline = time.monotonic() + TIME_LIMIT_S
    try:
        while sent < INTERRUPTS and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.0, 0.03))
            if rng.choice(writers).interrupt():
                sent += 1
    finally:
        stop.touch()
        for w in writers:
            assert w.proc is not None
            try:
                w.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
    # Writers sometimes stop making progress after an interrupt (an open problem, see the note
    # on issue 16): the test then stops at its time limit, with at least this many sent.
    assert sent >= MIN_INTERRUPTS, f"only {sent} interrupts in the time allowed"
    acked = [i for w in writers for i in w.acks]
    assert len(acked) >= sent, "an interrupt is sent only after a new acknowledged commit"
    assert not [e for w in writers for e in w.errors], "a writer saw an untyped error"
    counts = Counter(_table_ids(catalog))
    assert [i for i, n in counts.items() if n > 1] == [], "an append landed twice"
    assert [i for i in acked if counts[i] != 1] == [], "an acknowledged append is missing"
    catalog.close()


@pytest.fixture
def python_sigint_handler() -> Iterator[None]:
    """Python's own SIGINT handler for the test (a SparkContext made earlier in the process
    installs its own), the one found put back afterwards."""
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, found)


@pytest.mark.usefixtures("python_sigint_handler")
def test_an_interrupt_in_the_window_is_delivered_when_it_closes_with_a_note() -> None:
    window = DeferredInterrupts()
    window.start()
    assert window.active
    signal.raise_signal(signal.SIGINT)  # held back: no KeyboardInterrupt here
    with pytest.raises(KeyboardInterrupt) as info:
        window.stop("lakecat: the commit landed")
    assert "lakecat: the commit landed" in getattr(info.value, "__notes__", [])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("python_sigint_handler")
def test_outside_the_main_thread_nothing_is_deferred() -> None:
    seen: list[bool] = []

    def run() -> None:
        window = DeferredInterrupts()
        window.start()
        seen.append(window.active)
        window.stop()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [False]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
