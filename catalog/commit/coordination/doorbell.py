"""Doorbells: how a writer waiting for the file commit lock is woken.

A writer that finds a table's file commit lock busy hangs a doorbell, a FIFO named
``<stem>.bell``, in the table's queue folder (:mod:`lakecat.catalog.commit.coordination.queue`), and
sleeps in ``select`` on it between tries of the lock
(:class:`lakecat.catalog.commit.coordination.file_lock.FileLock`). The FIFO is made for one wait
and removed after it; it is put in place only once open for reading, so a bell nobody listens at
belongs to a process that is gone. Others ring it:

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

from lakecat.catalog.commit.coordination.protocol import DONE, RELEASED, make_file

__all__ = ["DONE", "RELEASED"]  # re-exported: the messages are the protocol's

BELL = ".bell"
SAFETY_POLL_S = 0.05
_MAX_MESSAGE = select.PIPE_BUF - 1  # one write of at most PIPE_BUF bytes is never interleaved


class Doorbell:
    """A FIFO of this process, open for reading (and writing, so it never reads as closed)."""

    def __init__(self, path: str, fd: int) -> None:
        self._path = path
        self._fd: int | None = fd

    def wait(self, timeout_s: float) -> list[bytes]:
        """Sleep until rung or ``timeout_s`` passed; the rings heard (none after a timeout)."""
        assert self._fd is not None
        if timeout_s > 0:
            select.select([self._fd], [], [], timeout_s)
        return self._rings()

    def take_down(self) -> list[bytes]:
        """End the wait: the bell is removed; the rings that came since the last :meth:`wait`."""
        if self._fd is None:
            return []
        with contextlib.suppress(OSError):  # removed under us, e.g. by a holder's tidying
            os.unlink(self._path)
        rings = self._rings()
        os.close(self._fd)
        self._fd = None
        return rings

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


def hang(folder: str, stem: str) -> Doorbell | None:
    """Hang a doorbell ``<folder>/<stem>.bell`` for one wait (:meth:`Doorbell.take_down` ends
    it); None if none can be had (no FIFOs on the file system, no room: the waiter then polls)."""
    path = os.path.join(folder, stem + BELL)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    fd = make_file(path, _listened_fifo)  # in place only once listened at
    return None if fd is None else Doorbell(path, fd)


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
