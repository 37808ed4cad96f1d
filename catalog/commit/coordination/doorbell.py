"""Doorbells: how a writer waiting for the file commit lock is woken.

A writer that finds a table's file commit lock busy hangs a doorbell, a FIFO named
``<stem>.bell``, in the table's queue folder (:mod:`lakecat.catalog.commit.coordination.queue`), and
sleeps in ``select`` on it between tries of the lock
(:class:`lakecat.catalog.commit.coordination.lock.FileLock`). The FIFO is its process's, reused from
wait to wait (:mod:`lakecat.catalog.commit.coordination.idle_files`); it is open for reading all
along, so a bell nobody listens at belongs to a process that is gone. Others ring it:

* ``R`` (**released**): a holder let go of the lock and rang the oldest waiter that still
  needs it. That waiter tries the lock; if another writer took it first, it sleeps again, and
  the one that took it rings when it lets go in turn.
* ``D<location>`` (**done**): a holder committed the append this waiter had queued, in the
  metadata version at ``location`` (just ``D`` if the location does not fit in one atomic
  write). The waiter need not wait for the lock at all.

A ring only wakes: the waiter then tries the lock, and a ``D`` counts only once its request's
file says done. So a stray or lost ring can cost time, never correctness. Waiters also wake
on their own every :data:`SAFETY_POLL_S` (a holder that crashed rings nobody), and poll more
often where FIFOs cannot be made.

Why not simply block in ``flock``: that wait cannot be given up. A waiter whose queued append
a holder committed must stop waiting at once, and a thread left blocked in ``flock`` takes the
lock later and holds it until its process lets it run.
"""

from __future__ import annotations

import contextlib
import os
import select
import stat

from lakecat.catalog.commit.coordination.idle_files import Pool, make_file
from lakecat.catalog.commit.coordination.protocol import DONE, RELEASED

__all__ = ["DONE", "RELEASED"]  # re-exported: the messages are the protocol's

BELL = ".bell"
IDLE_SUFFIX = ".fifo"
SAFETY_POLL_S = 0.05
_MAX_MESSAGE = select.PIPE_BUF - 1  # one write of at most PIPE_BUF bytes is never interleaved


class Doorbell:
    """A FIFO of this process, open for reading (and writing, so it never reads as closed)."""

    def __init__(self, folder: str, idle: str, fd: int) -> None:
        self.folder = folder
        self._idle = idle
        self._fd: int | None = fd
        self._hung: str | None = None  # the public name while a waiter uses it

    @staticmethod
    def make(folder: str, idle: str) -> Doorbell | None:
        """A new doorbell at ``idle``; None if the file system has no FIFOs (or no room)."""
        fd = make_file(idle, _listened_fifo)  # in place only once listened at
        return None if fd is None else Doorbell(folder, idle, fd)

    def wait(self, timeout_s: float) -> list[bytes]:
        """Sleep until rung or ``timeout_s`` passed; the rings heard (none after a timeout)."""
        assert self._fd is not None
        if timeout_s > 0:
            select.select([self._fd], [], [], timeout_s)
        return self._rings()

    def _hang(self, stem: str) -> bool:
        path = os.path.join(self.folder, stem + BELL)
        try:
            os.rename(self._idle, path)
        except OSError:
            return False
        self._hung = path
        self._rings()  # rings meant for an earlier wait
        return True

    def take_down(self) -> list[bytes]:
        """End the wait: the bell goes back to its process's pool; the rings that came since
        the last :meth:`wait`."""
        if self._hung is None or self._fd is None:
            return []
        try:
            os.rename(self._hung, self._idle)
        except OSError:  # removed under us: nothing to give back
            rings = self._rings()
            self.destroy()
            return rings
        self._hung = None
        rings = self._rings()
        _bells.give_back(self)
        return rings

    def destroy(self) -> None:
        for path in (self._hung, self._idle):
            if path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        self.forget()

    def forget(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _rings(self) -> list[bytes]:
        assert self._fd is not None
        chunks = []
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return [m for m in b"".join(chunks).split(b"\n") if m]


def _listened_fifo(path: str) -> int:
    os.mkfifo(path, 0o600)
    return os.open(path, os.O_RDWR | os.O_NONBLOCK)


_bells: Pool[Doorbell] = Pool(IDLE_SUFFIX, Doorbell.make)


def hang(folder: str, stem: str) -> Doorbell | None:
    """Hang a doorbell ``<folder>/<stem>.bell`` for one wait (:meth:`Doorbell.take_down` ends
    it); None if none can be had (the waiter then polls)."""
    bell = _bells.take(folder)
    if bell is None:
        return None
    if not bell._hang(stem):
        bell.destroy()
        return None
    return bell


def listening(path: str) -> bool:
    """Whether the FIFO at ``path`` has a reader (a live waiter), without ringing it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(fd)
    return True


def ring(folder: str, stem: str, message: bytes) -> bool:
    """Ring ``<folder>/<stem>.bell``; False if nobody waits there (no such bell, or its waiter
    is gone). ``message`` is ``RELEASED`` or ``DONE`` + a location."""
    if len(message) > _MAX_MESSAGE or b"\n" in message:
        message = message[:1]
    try:
        fd = os.open(os.path.join(folder, stem + BELL), os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # FileNotFoundError; ENXIO: no reader, its waiter is gone
        return False
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        os.write(fd, message + b"\n")
        return True
    except BlockingIOError:
        return True  # full of rings it has not read yet: it will wake
    except OSError:
        return False
    finally:
        os.close(fd)
