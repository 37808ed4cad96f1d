"""The queue of a group commit: appends waiting for the commit lock, handed to its holder.

A writer with a blind append ready (data files and their manifests written) that finds the
table's commit lock busy leaves a request here before it waits. The next holder that commits an
append claims the waiting requests and commits each as its own snapshot in its own metadata
version (:mod:`lakecat.catalog.commit.coordination.group`). This module is only the hand-over; it
knows nothing of what a request says. The contract, for the file queue (a folder beside the file
lock, so its writers share one machine):

* **Enqueue**: the owner writes the request into a new file under a temporary name and
  renames it to ``<stem>.req``. The stem, ``<time>-<pid>-<n>``, is its owner's waiter name,
  also that of its doorbell ``<stem>.bell`` (:mod:`lakecat.catalog.commit.coordination.doorbell`).
  Its process holds a shared ``flock`` on the file while it lives, so a holder can tell a live
  owner from a dead one: the request of a process that is gone is dropped, never committed.
* **Claim**: only the lock holder claims, by renaming ``.req`` to ``.claimed``. The owner
  withdraws by removing its ``.req``. Both are atomic, so exactly one of them succeeds.
* **Done**: the holder renames a claimed request to ``.done`` only after its swap landed, then
  rings its owner's doorbell with the new metadata location. Whatever else happens (a lost
  swap, an error, a crash) leaves it ``.claimed``, and its owner, unable to tell, looks for its
  snapshot id in the table before committing on its own.
* **Settle**: the owner reads the state once it is done, or else once it holds the lock (the
  holder has finished then), and removes its request file. A later holder removes files left by
  owners that died: settled requests once a minute old and their owner gone, half-made files
  once a minute old, doorbells nobody listens at.
* **Wake**: a lock holder that lets go rings the oldest doorbell whose request is not done
  (:meth:`FileCommitQueue.wake_next`): every waiter for the lock, queued or not, has one.

Nothing here decides a commit: the catalog's compare-and-swap still does, and a snapshot id is
committed at most once because whoever commits it checks that the base does not hold it yet.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial

from lakecat.catalog.commit.coordination import switches
from lakecat.catalog.commit.coordination.doorbell import BELL, DONE, RELEASED, ring
from lakecat.catalog.commit.coordination.protocol import TMP, TicketState, make_file

log = logging.getLogger("lakecat.commit")

_REQ, _CLAIMED, _DONE = ".req", ".claimed", ".done"
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # a request lists manifests, not data files
_TIDY_AFTER_NS = 60 * 1_000_000_000
_TMP_TIDY_EVERY_S = 60.0
_last_tmp_tidy: dict[str, float] = {}  # queue folder -> when this process last tidied it


def _request_file(payload: bytes, path: str) -> int:
    """A new request file holding ``payload``, with a shared ``flock`` on it: held while its
    owner has it open, it tells holders that the owner lives."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        os.close(fd)
        raise
    return fd


class Ticket:
    """The owner's handle on one queued request. Close it when settled."""

    def __init__(self, folder: str, stem: str, fd: int) -> None:
        self._folder = folder
        self._stem = stem
        self._fd: int | None = fd  # the request file, open (and so flock'ed) until closed
        self._withdrawn = False

    def _path(self, suffix: str) -> str:
        return os.path.join(self._folder, self._stem + suffix)

    def withdraw(self) -> TicketState:
        """Take the request back if nobody claimed it; else say what the claimer reported.

        Call it holding the commit lock to read a final state; without the lock a claimed
        request may still be in its holder's hands (``CLAIMED``)."""
        if self._withdrawn or self._take_back(_REQ):
            self._withdrawn = True
            return TicketState.WITHDRAWN
        if self.is_done():
            return TicketState.DONE
        return TicketState.CLAIMED

    def is_done(self) -> bool:
        """A holder committed the request (final: no lock needed to read it)."""
        return os.path.exists(self._path(_DONE))

    def _take_back(self, suffix: str) -> bool:
        """Remove the request, if it is in state ``suffix``. A ticket whose closing was cut
        short (an interrupt) has no file to take back: False, so its state reads as claimed or
        done, and its owner deletes nothing and looks in the table."""
        if self._fd is None:
            return False
        try:
            os.unlink(self._path(suffix))
            return True
        except OSError:
            return False

    def close(self) -> None:
        """End the request: its file goes, in whatever state, and with it its liveness lock."""
        fd = self._fd
        if fd is None:
            return
        self._fd = None  # from here on it reads as claimed: its owner deletes nothing
        try:
            _remove_request(self._folder, self._stem)
        finally:
            os.close(fd)


def _remove_request(folder: str, stem: str) -> None:
    for suffix in (_REQ, _CLAIMED, _DONE):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, stem + suffix))


@dataclass
class Claim:
    """A request the lock holder took. ``payload`` is what its owner enqueued."""

    path: str
    payload: bytes

    def done(self, location: str | None) -> None:
        """Tell the owner its request landed, in the metadata at ``location`` if known. Only
        after the swap; a failure to say so only makes the owner look in the table."""
        try:
            os.rename(self.path, self.path[: -len(_CLAIMED)] + _DONE)
        except OSError as exc:
            log.warning("could not mark queued request %s done: %s", self.path, exc)
            return
        if switches.doorbells():
            folder, name = os.path.split(self.path)
            ring(folder, name[: -len(_CLAIMED)], DONE + (location or "").encode())

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

    def enqueue(self, stem: str, payload: bytes) -> Ticket | None:
        """Queue a request as waiter ``stem``
        (:func:`lakecat.catalog.commit.coordination.protocol.new_stem`); ``None`` if it cannot be
        queued (the owner just waits its turn)."""
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError as exc:
            log.debug("could not queue commit request (%s); waiting for the lock", exc)
            return None
        # in place (claimable) only once written and locked
        fd = make_file(os.path.join(self.folder, stem + _REQ), partial(_request_file, payload))
        return None if fd is None else Ticket(self.folder, stem, fd)

    def claim(self, limit: int) -> list[Claim]:
        """Take up to ``limit`` waiting requests, oldest first. Only the lock holder calls this.

        A request whose owner is gone is removed instead."""
        try:
            listed = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        names = sorted(n for n in listed if n.endswith(_REQ))
        self._tidy(n for n in listed if n.endswith((_CLAIMED, _DONE)))
        self._tidy_tmp(listed)
        claims: list[Claim] = []
        for name in names:
            if len(claims) >= limit:
                break
            claim = self._claim(os.path.join(self.folder, name))
            if claim is not None:
                claims.append(claim)
        return claims

    def _tidy(self, names: Iterable[str]) -> None:
        """Remove settled requests left by writers that died."""
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

    def _tidy_tmp(self, listed: list[str]) -> None:
        """Remove half-made files (a process died while making its doorbell or request), once
        a minute old; at most once a minute."""
        now = time.monotonic()
        if now - _last_tmp_tidy.get(self.folder, -_TMP_TIDY_EVERY_S) < _TMP_TIDY_EVERY_S:
            return
        _last_tmp_tidy[self.folder] = now
        cutoff = time.time_ns() - _TIDY_AFTER_NS
        for name in listed:
            if not name.endswith(TMP):
                continue
            try:
                made = int(name.split("-", 1)[0])
            except ValueError:
                continue
            if made <= cutoff:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.folder, name))

    def wake_next(self) -> None:
        """Ring the oldest waiter that still needs the lock (whose request, if any, is not
        done). Called by a holder after letting go of the lock."""
        try:
            listed = os.listdir(self.folder)
        except FileNotFoundError:
            return
        bells = sorted(n[: -len(BELL)] for n in listed if n.endswith(BELL))
        if not bells:
            return
        done = {n[: -len(_DONE)] for n in listed if n.endswith(_DONE)}
        for stem in bells:
            if stem in done:
                continue
            if ring(self.folder, stem, RELEASED):
                return
            # A bell is put in place only once its waiter listens, so nobody listening means
            # its waiter is gone (or leaving): remove it.
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.folder, stem + BELL))

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
