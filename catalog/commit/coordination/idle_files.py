"""Files a process keeps and reuses for its commit-lock waits instead of creating new ones.

A writer waiting for the file commit lock needs a doorbell
(:mod:`lakecat.catalog.commit.coordination.doorbell`) and, for a queued append, a request file
(:mod:`lakecat.catalog.commit.coordination.queue`). Creating a file costs an inode allocation, the
most expensive metadata operation of many file systems (ext4 without a journal, for one, checks each
free inode it passes for a recent deletion), and under contention it is paid while other writers
wait. So each process keeps such files open in a pool: a wait takes one, gives it its public name
with a rename, and renames it back to its hidden idle name, ``.idle-<time>-<pid>-<n><suffix>``, when
done. Renames allocate nothing.

Pooled files are removed when the process exits. A process that is killed leaves its idle
files behind; they are hidden from the queue, and a lock holder removes them once their
owner is gone (:meth:`lakecat.catalog.commit.coordination.queue.FileCommitQueue.claim`). A forked
child starts with an empty pool: it must not share its parent's files.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

log = logging.getLogger("lakecat.commit")

IDLE_PREFIX = ".idle-"
MAX_IDLE = 16  # per kind and process


class Pooled(Protocol):
    folder: str

    def destroy(self) -> None:
        """Remove the file and close it."""

    def forget(self) -> None:
        """Close without removing (a forked child's copy of its parent's file)."""


T = TypeVar("T", bound=Pooled)
_numbers = itertools.count()


def new_stem() -> str:
    """A new name, unique on the machine and sorting by the time it was made:
    ``<time>-<pid>-<n>`` (a waiter's name in the queue folder, or the core of an idle one)."""
    return f"{time.time_ns():020d}-{os.getpid()}-{next(_numbers)}"


def idle_path(folder: str, suffix: str) -> str:
    return os.path.join(folder, f"{IDLE_PREFIX}{new_stem()}{suffix}")


def idle_since_ns(name: str) -> int | None:
    """When the idle file ``name`` was made, or None if it is not one."""
    if not name.startswith(IDLE_PREFIX):
        return None
    try:
        return int(name[len(IDLE_PREFIX) :].split("-", 1)[0])
    except ValueError:
        return None


def make_file(idle: str, create: Callable[[str], int]) -> int | None:
    """A new file at ``idle``, made by ``create(path)`` (which returns it open) under a
    temporary name first, so the file is in place only once ready; None if it cannot be made."""
    tmp = idle + ".tmp"
    fd = -1
    try:
        fd = create(tmp)
        os.rename(tmp, idle)
    except OSError as exc:
        log.debug("could not make %s (%s)", idle, exc)
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return None
    return fd


class Pool(Generic[T]):
    """Idle files of one kind; at most :data:`MAX_IDLE` of them, the least recently used
    removed first (a process committing to many tables keeps only the latest few open)."""

    def __init__(self, suffix: str, make: Callable[[str, str], T | None]) -> None:
        self.suffix = suffix
        self._make = make  # (folder, idle path) -> a new file there, or None
        self._guard = threading.Lock()
        self._idle: list[T] = []  # the most recently used last
        _pools.append(self)

    def take(self, folder: str) -> T | None:
        """An idle file of ``folder`` (made if there is none); None if none can be made."""
        with self._guard:
            for i in range(len(self._idle) - 1, -1, -1):
                if self._idle[i].folder == folder:
                    return self._idle.pop(i)
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            return None
        return self._make(folder, idle_path(folder, self.suffix))

    def give_back(self, item: T) -> None:
        """Return ``item``, under its idle name again."""
        with self._guard:
            self._idle.append(item)
            evicted = self._idle.pop(0) if len(self._idle) > MAX_IDLE else None
        if evicted is not None:
            evicted.destroy()

    def _drain(self) -> list[T]:
        with self._guard:
            items, self._idle = self._idle, []
        return items

    def _destroy_all(self) -> None:
        for item in self._drain():
            item.destroy()

    def _forget_all(self) -> None:
        self._guard = threading.Lock()  # a parent thread may have held it at the fork
        for item in self._drain():
            item.forget()


_pools: list[Pool] = []  # type: ignore[type-arg]


@atexit.register
def _at_exit() -> None:
    for pool in _pools:
        pool._destroy_all()


def _after_fork_in_child() -> None:
    for pool in _pools:
        pool._forget_all()


os.register_at_fork(after_in_child=_after_fork_in_child)
