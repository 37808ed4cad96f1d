"""What this lakecat is: its installed version, which commits and views record."""

from __future__ import annotations

from importlib import metadata as importlib_metadata

__all__ = ["lakecat_version"]


def lakecat_version() -> str:
    """The installed lakecat distribution's version (``unknown`` when it is not installed)."""
    try:
        return importlib_metadata.version("lakecat")
    except importlib_metadata.PackageNotFoundError:
        return "unknown"
