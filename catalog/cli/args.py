"""Value parsers for ``lakecat`` command-line arguments (argparse ``type=`` functions).

Each raises :class:`argparse.ArgumentTypeError` with a short message, which the command turns
into a one-line usage error (exit code 2).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import time

__all__ = [
    "byte_size",
    "key_value",
    "non_blank",
    "non_negative_int",
    "positive_int",
    "split_list",
    "timestamp_ms",
]

_RELATIVE = re.compile(r"^(\d+)\s*(s|m|h|d|w)$", re.IGNORECASE)
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)$", re.IGNORECASE)
_SIZE_FACTOR = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def timestamp_ms(text: str, *, now_ms: int | None = None) -> int:
    """Milliseconds since the epoch from ``1700000000000`` (ms), an ISO-8601 time
    (``2024-01-01``, ``2024-01-01T10:00:00``, naive = UTC; ``Z`` or an offset allowed) or an
    age before now: ``30s``, ``15m``, ``12h``, ``7d``, ``2w``."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    relative = _RELATIVE.match(value)
    if relative:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return now - int(relative.group(1)) * _UNIT_MS[relative.group(2).lower()]
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (use ISO-8601 like 2024-01-01T10:00:00, epoch "
            "milliseconds, or an age like 7d, 12h, 30m)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def byte_size(text: str) -> int:
    """Bytes from ``134217728``, ``128MB``, ``128MiB``, ``1.5G``, ``512k`` (powers of 1024)."""
    match = _SIZE.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 134217728, 128MB, 1G)")
    unit = match.group(2).lower().rstrip("b").rstrip("i")
    size = int(float(match.group(1)) * _SIZE_FACTOR[unit])
    if size <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive: {text!r}")
    return size


def key_value(text: str) -> tuple[str, str]:
    """``key=value`` (the value may contain ``=``; the key must not be empty)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def non_blank(text: str) -> str:
    """Text that is not empty or only spaces (a ``--where`` filter: an empty one would match
    every row, which ``--all`` says explicitly)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty (--all changes every row)")
    return text


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value


def ratio(text: str) -> float:
    """A share: above 0, at most 1 (``0.3``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1: {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def split_list(text: str | None) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``; ``None`` or blank -> ``[]``."""
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]
