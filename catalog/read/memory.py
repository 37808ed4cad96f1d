"""How much a scan may materialise: the memory this process can still take.

Streaming (``Scan.to_batches``) is bounded by its read-ahead cap whatever the table's size.
Materialising (``Scan.to_arrow`` and what builds on it) holds every row at once, so it stops
with :class:`~lakecat.metadata.errors.ResultTooLarge` as soon as the rows read pass the
memory available when it started (less a margin for the reads in flight), instead of being
killed by the kernel or the container for running out of memory.
"""

from __future__ import annotations

import contextlib
import os

from lakecat.metadata.errors import ResultTooLarge

__all__ = ["ResultTooLarge", "available_memory", "materialise_budget"]  # the error: re-exported

# the share of the available memory that materialised rows may take: the rest is for the
# reads in flight, the concatenation's bookkeeping and the caller
_SHARE = 0.75
_CGROUP = "/sys/fs/cgroup"


def available_memory() -> int | None:
    """Bytes this process can still allocate: the system's available memory, or what the
    cgroup (a container's limit) leaves if less; ``None`` where neither is known."""
    # free pages (sysconf) leave out the page cache the kernel gives back: only a fallback
    system = _meminfo_available() or _sysconf_available()
    found = [m for m in (system, _cgroup_left()) if m is not None]
    return min(found) if found else None


def materialise_budget() -> int | None:
    """Bytes of rows a materialising read may hold (``None``: no known limit)."""
    available = available_memory()
    return None if available is None else int(available * _SHARE)


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_left() -> int | None:
    """cgroup v2: memory.max less memory.current of this process's cgroup."""
    try:
        with open("/proc/self/cgroup") as f:
            line = f.readline().strip()
        if not line.startswith("0::"):
            return None
        folder = os.path.join(_CGROUP, line[3:].lstrip("/"))
        with open(os.path.join(folder, "memory.max")) as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(folder, "memory.current")) as f:
            current = int(f.read().strip())
        return max(0, int(limit) - current)
    except (OSError, ValueError):
        return None


def _sysconf_available() -> int | None:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        pages = os.sysconf("SC_AVPHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and size > 0:
            return int(pages * size)
    return None
