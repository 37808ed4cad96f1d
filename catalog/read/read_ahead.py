"""Bounded read-ahead: batches of many readers, in order, read on a thread pool.

A scan is cut into *units* (a run of small files, one large file, one file with deletes), each
an iterator of record batches. Worker threads advance the units one batch at a time ahead of
the consumer, and the consumer gets every batch of the first unit, then of the second, and so
on: the planning order. Two bounds hold whatever the table's size:

* at most ``max_bytes`` of batches are read ahead and not yet consumed (each step in flight
  counts with its unit's estimate until it returns; the unit the consumer waits for may
  always take one step, so a batch larger than the cap still makes progress);
* every task on the pool reads one batch and returns, so a consumer that stops early (or an
  interpreter that exits with a scan left open) waits for at most one batch per thread, and
  no pyarrow thread outlives a call (``lakecat.metadata.io.parquet``'s docstring says why).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

import pyarrow as pa

__all__ = ["Unit", "read_ahead", "read_ahead_sized", "read_threads", "unsized"]

# a batch read and its size in bytes (``nbytes``: measured once, on the thread that read it)
Sized = tuple[pa.RecordBatch, int]


def read_threads() -> int:
    """Reading threads for this machine: two per CPU the process may use (a small file's
    read is half waiting for the file system), at most 16."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(2, min(16, 2 * cpus))


class Unit:
    """An iterator of batches stepped on the pool, and the bytes one step is expected to
    read (what it counts against the cap while in flight)."""

    __slots__ = ("batches", "done", "estimate", "future", "ready")

    def __init__(self, batches: Iterator[pa.RecordBatch], estimate: int) -> None:
        self.batches = batches
        self.estimate = max(1, estimate)
        self.ready: deque[Sized] = deque()
        self.future: Future[Sized | None] | None = None
        self.done = False

    def step(self) -> Sized | None:
        """The next batch and its size, ``None`` at the end (runs on a worker thread, so the
        consumer does not measure it: ``nbytes`` walks every buffer's referenced range)."""
        batch = next(self.batches, None)
        return None if batch is None else (batch, batch.nbytes)


class _Window:
    """The units started and not yet consumed, and the bytes they hold or are reading."""

    def __init__(self, units: Iterable[Unit], pool: ThreadPoolExecutor, threads: int, cap: int):
        self.waiting = iter(units)
        self.active: deque[Unit] = deque()
        self.pool = pool
        self.threads = threads
        self.cap = cap
        self.held = 0  # bytes of batches read and not consumed, plus estimates in flight
        self.running = 0
        self.exhausted = False

    def schedule(self) -> None:
        """Start steps, in order, while threads are free and the cap allows."""
        for unit in self._candidates():
            if self.running >= self.threads:
                return
            head = unit is self.active[0]
            if self.held + unit.estimate > self.cap and not (head and not unit.ready):
                return
            self.held += unit.estimate
            self.running += 1
            unit.future = self.pool.submit(unit.step)

    def _candidates(self) -> Iterator[Unit]:
        for unit in list(self.active):
            if unit.future is None and not unit.done:
                yield unit
        while not self.exhausted and self.running < self.threads:
            started = next(self.waiting, None)
            if started is None:
                self.exhausted = True
                return
            self.active.append(started)
            yield started

    def collect(self, unit: Unit) -> None:
        """Take the finished step of ``unit`` (re-raising its error)."""
        assert unit.future is not None
        future, unit.future = unit.future, None
        self.running -= 1
        self.held -= unit.estimate
        sized = future.result()
        if sized is None:
            unit.done = True
        else:
            unit.ready.append(sized)
            self.held += sized[1]

    def in_flight(self, head: Unit) -> list[Future[Sized | None]]:
        if head.future is not None:
            return [head.future]
        return [u.future for u in self.active if u.future is not None]

    def collect_finished(self) -> None:
        for unit in self.active:
            if unit.future is not None and unit.future.done():
                self.collect(unit)


def read_ahead(units: Iterable[Unit], *, threads: int, max_bytes: int) -> Iterator[pa.RecordBatch]:
    """Every batch of every unit, unit after unit, read ahead on ``threads`` threads within
    ``max_bytes`` (see the module docstring)."""
    yield from unsized(read_ahead_sized(units, threads=threads, max_bytes=max_bytes))


def unsized(sized: Iterator[Sized]) -> Iterator[pa.RecordBatch]:
    """The batches alone; closing this closes ``sized`` (the pool stops) at once."""
    try:
        for batch, _ in sized:
            yield batch
    finally:
        close = getattr(sized, "close", None)
        if close is not None:
            close()


def read_ahead_sized(units: Iterable[Unit], *, threads: int, max_bytes: int) -> Iterator[Sized]:
    """:func:`read_ahead`, each batch with its size in bytes (``nbytes``)."""
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lakecat-read")
    window = _Window(units, pool, threads, max_bytes)
    try:
        while True:
            window.schedule()
            if not window.active:
                return
            head = window.active[0]
            if head.ready:
                sized = head.ready.popleft()
                window.held -= sized[1]
                yield sized
                continue
            if head.done:
                window.active.popleft()
                continue
            # the head's step, or (every thread busy with later units) any step
            wait(window.in_flight(head), return_when=FIRST_COMPLETED)
            window.collect_finished()
    finally:
        # a consumer that stopped early: the steps queued are dropped, those running finish
        pool.shutdown(wait=True, cancel_futures=True)
