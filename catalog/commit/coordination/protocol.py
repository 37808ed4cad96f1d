"""What the platform-neutral commit code shares with the POSIX queue and doorbells
(:mod:`.queue`, :mod:`.doorbell`): where a queued request stands, and the messages a doorbell
rings with. Importing it needs nothing POSIX."""

from __future__ import annotations

import enum

RELEASED = b"R"  # a holder let go of the lock: the one rung may take it
DONE = b"D"  # followed by the metadata location: the request landed there


class TicketState(enum.Enum):
    """Where a request stands when its owner settles it."""

    WITHDRAWN = "withdrawn"  # nobody took it: the owner commits on its own
    DONE = "done"  # a holder committed it
    CLAIMED = "claimed"  # a holder took it and did not say it landed: look in the table
