"""The queue of a group commit: appends waiting for the commit lock, handed to its holder.

A writer with a blind append ready (data files and their manifests written) that finds the
table's commit lock busy leaves a request here before it waits. The next holder that commits an
append claims the waiting requests and commits each as its own snapshot in its own metadata
version (:mod:`lakecat.catalog.group_commit`). This module is only the hand-over; it knows
nothing of what a request says. The contract, for the file queue (a folder beside the file
lock, so its writers share one machine):

* **Enqueue**: ``<time>-<snapshot id>.req`` is written whole (a temporary file, then a rename).
  Its owner holds a shared ``flock`` on it until it has settled, so a holder can tell a live
  owner from a dead one: the request of a process that is gone is dropped, never committed.
* **Claim**: only the lock holder claims, by renaming ``.req`` to ``.claimed``. The owner
  withdraws by removing its ``.req``. Both are atomic, so exactly one of them succeeds.
* **Done**: the holder renames a claimed request to ``.done`` only after its swap landed.
  Whatever else happens (a lost swap, an error, a crash) leaves it ``.claimed``, and its owner,
  unable to tell, looks for its snapshot id in the table before committing on its own.
* **Settle**: the owner reads the state when it holds the lock (the holder has finished
  then) and removes its file. A later holder removes files left by owners that died while
  settling, once they are a minute old.

Nothing here decides a commit: the catalog's compare-and-swap still does, and a snapshot id is
committed at most once because whoever commits it checks that the base does not hold it yet.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

log = logging.getLogger("lakecat.commit")

_REQ, _CLAIMED, _DONE = ".req", ".claimed", ".done"
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # a request lists manifests, not data files
_TIDY_AFTER_NS = 60 * 1_000_000_000


class TicketState(enum.Enum):
    """Where a request stands when its owner settles it."""

    WITHDRAWN = "withdrawn"  # nobody took it: the owner commits on its own
    DONE = "done"  # a holder committed it
    CLAIMED = "claimed"  # a holder took it and did not say it landed: look in the table


class Ticket:
    """The owner's handle on one queued request. Close it when settled."""

    def __init__(self, folder: str, stem: str, fd: int) -> None:
        self._folder = folder
        self._stem = stem
        self._fd: int | None = fd

    def _path(self, suffix: str) -> str:
        return os.path.join(self._folder, self._stem + suffix)

    def withdraw(self) -> TicketState:
        """Take the request back if nobody claimed it; else say what the claimer reported.

        Call it holding the commit lock to read a final state; without the lock a claimed
        request may still be in its holder's hands (``CLAIMED``)."""
        try:
            os.unlink(self._path(_REQ))
            return TicketState.WITHDRAWN
        except FileNotFoundError:
            pass
        if os.path.exists(self._path(_DONE)):
            return TicketState.DONE
        return TicketState.CLAIMED

    def close(self) -> None:
        """Remove what is left of the request and let go of its liveness lock."""
        for suffix in (_REQ, _CLAIMED, _DONE):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path(suffix))
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass
class Claim:
    """A request the lock holder took. ``payload`` is what its owner enqueued."""

    path: str
    payload: bytes

    def done(self) -> None:
        """Tell the owner its request landed. Only after the swap; a failure to say so
        only makes the owner look in the table."""
        try:
            os.rename(self.path, self.path[: -len(_CLAIMED)] + _DONE)
        except OSError as exc:
            log.warning("could not mark queued request %s done: %s", self.path, exc)

    def give_back(self) -> None:
        """Return a request this holder will not commit (e.g. one it cannot read) to its owner."""
        try:
            os.rename(self.path, self.path[: -len(_CLAIMED)] + _REQ)
        except OSError as exc:  # stays claimed: its owner checks the table and commits itself
            log.debug("could not give back queued request %s: %s", self.path, exc)


class FileCommitQueue:
    """Requests as files in one folder per table (see the module docstring)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def enqueue(self, snapshot_id: int, payload: bytes) -> Ticket | None:
        """Queue a request; ``None`` if it cannot be queued (the owner just waits its turn)."""
        stem = f"{time.time_ns():020d}-{snapshot_id}"
        tmp = os.path.join(self.folder, f".{stem}.tmp")
        fd = -1
        try:
            os.makedirs(self.folder, exist_ok=True)
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            fcntl.flock(fd, fcntl.LOCK_SH)  # held while this process waits: proof of life
            os.write(fd, payload)
            os.rename(tmp, os.path.join(self.folder, stem + _REQ))
        except OSError as exc:
            log.debug("could not queue commit request (%s); waiting for the lock", exc)
            if fd >= 0:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            return None
        return Ticket(self.folder, stem, fd)

    def claim(self, limit: int) -> list[Claim]:
        """Take up to ``limit`` waiting requests, oldest first. Only the lock holder calls this.

        A request whose owner is gone is removed instead."""
        try:
            listed = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        names = sorted(n for n in listed if n.endswith(_REQ))
        self._tidy(n for n in listed if n.endswith((_CLAIMED, _DONE)))
        claims: list[Claim] = []
        for name in names:
            if len(claims) >= limit:
                break
            claim = self._claim(os.path.join(self.folder, name))
            if claim is not None:
                claims.append(claim)
        return claims

    def _tidy(self, names: Iterable[str]) -> None:
        """Remove settled requests left by writers that died before removing them."""
        cutoff = time.time_ns() - _TIDY_AFTER_NS
        for name in names:
            try:
                queued_at = int(name.split("-", 1)[0])
            except ValueError:
                continue
            if queued_at > cutoff:
                continue  # its writer is most likely settling it right now
            path = os.path.join(self.folder, name)
            try:
                with _open(path) as fd:
                    if _owner_gone(fd):
                        os.unlink(path)
            except OSError:
                continue

    def _claim(self, path: str) -> Claim | None:
        claimed = path[: -len(_REQ)] + _CLAIMED
        try:
            os.rename(path, claimed)
        except FileNotFoundError:
            return None  # withdrawn meanwhile (its owner timed out waiting for the lock)
        except OSError as exc:
            log.debug("could not claim %s: %s", path, exc)
            return None
        try:
            with _open(claimed) as fd:
                if _owner_gone(fd):
                    log.info("dropping the queued request of a writer that is gone: %s", path)
                    os.unlink(claimed)
                    return None
                payload = _read_all(fd)
        except OSError as exc:
            log.debug("could not read %s: %s", claimed, exc)
            return None
        return Claim(claimed, payload)


@contextlib.contextmanager
def _open(path: str) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def _owner_gone(fd: int) -> bool:
    """The owner holds a shared flock while it lives; an exclusive one can be had only once
    it is gone (its process exited and the kernel released the lock)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _read_all(fd: int) -> bytes:
    chunks = []
    size = 0
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise OSError(f"queued commit request over {MAX_REQUEST_BYTES} bytes")
    return b"".join(chunks)
