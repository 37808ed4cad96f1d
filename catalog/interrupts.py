"""Holding Ctrl-C back while a commit crosses its point of no return.

Python raises ``KeyboardInterrupt`` at whatever bytecode runs when SIGINT arrives: inside the
database driver's COMMIT of the pointer swap, say, after the database committed it and before
the call returned. The commit would then look failed to the code around it although the table
now points at the new metadata, and any cleanup of "this attempt's files" would delete the
table's current metadata file.

So from just before the swap is sent until the steps after it are done, a commit runs under
:class:`DeferredInterrupts`: a SIGINT that arrives meanwhile is recorded, and delivered to the
handler that was installed before (normally Python's, which raises ``KeyboardInterrupt``) when
the window closes, with a note saying whether the commit landed. The window lasts one swap and
a few best-effort steps, milliseconds.

Signal handlers belong to the main thread: in any other thread (where SIGINT never raises
anyway) and where the current handler was not installed from Python, nothing is deferred.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["DeferredInterrupts", "deferred_interrupts"]


class DeferredInterrupts:
    """Defers SIGINT between :meth:`start` and :meth:`stop`; each may be called once."""

    def __init__(self) -> None:
        self._previous: Any = None
        self._active = False
        self._received: tuple[int, FrameType | None] | None = None

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        """Begin deferring (a no-op outside the main thread or when already deferring)."""
        if self._active or threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGINT)
        if previous is None:  # installed from C: it could not be put back
            return
        try:
            signal.signal(signal.SIGINT, self._record)
        except (ValueError, OSError):  # not the main interpreter
            return
        self._previous = previous
        self._active = True

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self._received = (signum, frame)

    def stop(self, note: str | None = None) -> None:
        """Stop deferring and deliver a SIGINT that arrived meanwhile to the previous handler;
        an exception it raises (``KeyboardInterrupt``) carries ``note``."""
        if not self._active:
            return
        self._active = False
        previous, self._previous = self._previous, None
        signal.signal(signal.SIGINT, previous)
        received, self._received = self._received, None
        if received is None:
            return
        if callable(previous):
            try:
                previous(*received)
            except BaseException as exc:
                if note:
                    exc.add_note(note)
                raise
        elif previous == signal.SIG_DFL:
            signal.raise_signal(signal.SIGINT)
        # SIG_IGN: the signal was to be ignored all along


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """A block that SIGINT cannot cut: one that arrives meanwhile is delivered at its end (for
    short steps that must not be left half done, e.g. publishing a file and remembering it)."""
    interrupts = DeferredInterrupts()
    interrupts.start()
    try:
        yield
    finally:
        interrupts.stop()
