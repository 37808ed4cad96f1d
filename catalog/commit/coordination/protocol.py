"""What the platform-neutral commit code shares with the POSIX queue and doorbells
(:mod:`.queue`, :mod:`.doorbell`): where a queued request stands, the messages a doorbell
rings with, and how their files are named and made. Importing it needs nothing POSIX."""

from __future__ import annotations

import contextlib
import enum
import itertools
import logging
import os
import time
from collections.abc import Callable

log = logging.getLogger("lakecat.commit")

RELEASED = b"R"  # a holder let go of the lock: the one rung may take it
DONE = b"D"  # followed by the metadata location: the request landed there
TMP = ".tmp"  # a file being made (:func:`make_file`)

_numbers = itertools.count()


class TicketState(enum.Enum):
    """Where a request stands when its owner settles it."""

    WITHDRAWN = "withdrawn"  # nobody took it: the owner commits on its own
    DONE = "done"  # a holder committed it
    CLAIMED = "claimed"  # a holder took it and did not say it landed: look in the table


def new_stem() -> str:
    """A waiter's name in a queue folder, unique on the machine and sorting by the time it was
    made: ``<time ns>-<pid>-<n>`` (its doorbell and its request are named after it)."""
    return f"{time.time_ns():020d}-{os.getpid()}-{next(_numbers)}"


def make_file(path: str, create: Callable[[str], int]) -> int | None:
    """A new file at ``path``, made by ``create(tmp path)`` (which returns it open) under a
    temporary name first, so the file is in place only once ready; None if it cannot be made."""
    tmp = path + TMP
    fd = -1
    try:
        fd = create(tmp)
        os.rename(tmp, path)
    except OSError as exc:
        log.debug("could not make %s (%s)", path, exc)
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return None
    return fd
