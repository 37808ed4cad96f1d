"""Writers killed with SIGKILL at random moments, at the commit lock and right after their swap:
no acknowledged commit is lost, none lands twice, and the table always loads.

Four writer processes (``kill_writer.py``) commit at random to one table: blind appends to a
shared partition, appends, deletes and overwrites of their own partition. The test kills them
(``kill -9``) at random times, and also as soon as one says it holds the commit lock or that its
swap just landed; a killed writer is restarted. With the lock on, that covers a killed lock
holder (and group-commit holder); with it off, the retry path runs under kills.

Which operations landed is read from the history (each snapshot's summary names its
operation), so an operation killed before it could say so is accounted for either way. The
checks: the history is one linear chain; every acknowledged operation is in it once; no
operation that failed with a definite error is in it; the rows are exactly a replay of the
operations that landed, in each writer's order; every referenced file exists.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.maintenance.reachable import reachable_files

WRITERS = 4
KILLS = 24
AIMED = 0.25  # chance that a writer saying it holds the lock or just swapped is killed there
KILL_EVERY_S = 0.5  # at most one kill in this time, so that restarted writers get to work
ACKS_PER_KILL = 2  # and only once this many more commits were acknowledged (a loaded machine)
TIME_LIMIT_S = 150
WRITER = str(Path(__file__).with_name("kill_writer.py"))


@dataclass
class Op:
    tag: str
    kind: str
    ids: list[int]
    outcome: str = "unknown"  # "ack", a typed error's name, or "unknown" (killed)


@dataclass
class Writer:
    index: int
    args: list[str]
    ops: list[Op] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    incarnation: int = 0
    aim: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self.incarnation += 1
        self.proc = subprocess.Popen(
            [sys.executable, WRITER, *self.args, str(self.index), str(self.incarnation)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        by_tag: dict[str, Op] = {}
        for raw in proc.stdout:
            words = raw.decode().split()
            if not words:
                continue
            if words[0] == "begin":
                op = Op(words[1], words[2], [int(i) for i in words[3:]])
                by_tag[op.tag] = op
                self.ops.append(op)
            elif words[0] == "ack":
                by_tag[words[1]].outcome = "ack"
            elif words[0] == "failed":
                by_tag[words[1]].outcome = words[2]
            elif words[0] == "at":
                self.aim.set()

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def _landed_tags(catalog: Catalog) -> list[str]:
    table = catalog.load_table("db.k")
    meta = table.metadata
    chain = list(reversed(list(meta.ancestors(meta.current_snapshot_id))))
    assert len(chain) == len(meta.snapshots), "the history is not one linear chain"
    return [s.summary["stress-op"] for s in chain if "stress-op" in s.summary]


def _replay(writers: list[Writer], landed: set[str]) -> set[tuple[int, int]]:
    expected: set[tuple[int, int]] = set()
    for w in writers:
        own: set[int] = set()
        for op in w.ops:  # each writer's operations ran one after the other
            if op.tag not in landed:
                continue
            if op.kind == "shared":
                expected |= {(i, w.index) for i in op.ids}
            elif op.kind == "own":
                own |= set(op.ids)
            elif op.kind == "delete":
                own = {i for i in own if i >= op.ids[0]}
            else:
                own = set(op.ids)
        expected |= {(i, w.index) for i in own}
    return expected


@pytest.mark.slow
@pytest.mark.parametrize("lock", ["true", "false"], ids=["commit-lock", "cas-only"])
def test_writers_killed_at_any_moment_never_lose_or_repeat_a_commit(
    catalog_url: str, warehouse: str, lock: str, tmp_path: Path
) -> None:
    catalog = Catalog(catalog_url, warehouse=warehouse)
    catalog.create_namespace("db")
    catalog.create_table(
        "db.k",
        pa.schema([("id", pa.int64()), ("writer", pa.int64()), ("part", pa.string())]),
        partition_by=["part"],
        properties={"commit.retry.num-retries": "20", "commit.lock.enabled": lock},
    )
    stop = str(tmp_path / "stop")
    writers = [Writer(i + 1, [catalog_url, warehouse, stop]) for i in range(WRITERS)]
    for w in writers:
        w.start()
    rng = random.Random(7)
    kills = aimed = acks_at_last_kill = 0
    last_kill = time.monotonic()
    deadline = last_kill + TIME_LIMIT_S
    try:
        while kills < KILLS and time.monotonic() < deadline:
            time.sleep(0.002)
            for w in writers:
                assert w.proc is not None
                if w.proc.poll() is not None:
                    w.start()  # killed, or died: a new incarnation
                    continue
                aiming = w.aim.is_set()
                w.aim.clear()
                acks = sum(op.outcome == "ack" for v in writers for op in v.ops)
                if time.monotonic() - last_kill < KILL_EVERY_S:
                    continue
                if acks - acks_at_last_kill < ACKS_PER_KILL:
                    continue
                if aiming and rng.random() < AIMED:
                    aimed += 1
                elif aiming or rng.random() > 0.002:  # now and then, at a random moment
                    continue
                w.kill()
                kills, last_kill, acks_at_last_kill = kills + 1, time.monotonic(), acks
    finally:
        Path(stop).touch()
        for w in writers:
            assert w.proc is not None
            try:
                w.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                w.kill()
    assert kills == KILLS, f"only {kills} kills in {TIME_LIMIT_S} s"
    assert aimed > 0

    landed_in_order = _landed_tags(catalog)  # the table loads
    landed = set(landed_in_order)
    assert len(landed_in_order) == len(landed), "an operation landed twice"
    ops = [op for w in writers for op in w.ops]
    acked = [op.tag for op in ops if op.outcome == "ack"]
    assert len(acked) >= KILLS * ACKS_PER_KILL
    missing = [op for op in ops if op.outcome == "ack" and op.tag not in landed]
    assert missing == [], "an acknowledged commit is missing"
    failed = [op for op in ops if op.outcome not in ("ack", "unknown", "CommitStateUnknown")]
    failed = [op for op in failed if op.outcome != "nothing-to-commit"]
    assert [op for op in failed if "Concurrent" in op.outcome] == [], "disjoint writers conflicted"
    assert [op.tag for op in failed if op.tag in landed] == [], (
        "an operation that failed definitely is in the history"
    )

    table = catalog.load_table("db.k")
    data = table.to_arrow()
    got = list(zip(data.column("id").to_pylist(), data.column("writer").to_pylist(), strict=True))
    assert len(got) == len(set(got)), "a row appears twice"
    assert set(got) == _replay(writers, landed)
    for path in reachable_files(table.io, table.metadata, table.metadata_location):
        assert os.path.exists(path.removeprefix("file://")), f"referenced file missing: {path}"
    catalog.close()
