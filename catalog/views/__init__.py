"""Iceberg views in the SQL catalog: the :class:`View` handle and the commit of its changes
(the view spec's metadata files, swapped by the store's ``VIEW`` rows)."""

from lakecat.catalog.views.view import (
    View,
    ViewOps,
    commit_new_view,
    engine_summary,
    now_ms,
    representations_of,
)

__all__ = [
    "View",
    "ViewOps",
    "commit_new_view",
    "engine_summary",
    "now_ms",
    "representations_of",
]
