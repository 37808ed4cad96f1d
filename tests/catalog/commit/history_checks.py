"""Checks the multi-process stress tests run on a table's final state."""

from __future__ import annotations

import os
from collections.abc import Sequence

from lakecat.catalog import Table
from lakecat.catalog.maintenance.reachable import reachable_files


def assert_one_chain_holding(table: Table, acknowledged: Sequence[int]) -> list[int]:
    """The history is one linear chain and holds every acknowledged commit exactly once;
    returns the chain (newest first)."""
    meta = table.metadata
    chain = [s.snapshot_id for s in meta.ancestors(meta.current_snapshot_id)]
    assert len(chain) == len(set(chain)) == len(meta.snapshots), "history is not one linear chain"
    assert len(acknowledged) == len(set(acknowledged))
    assert set(acknowledged) <= set(chain), "an acknowledged commit is missing from the history"
    return chain


def assert_files_are_exactly_the_referenced_ones(table: Table) -> None:
    """Every file the table references exists, and no other file is under its location (no
    file of a failed attempt left behind)."""
    referenced = reachable_files(table.io, table.metadata, table.metadata_location)
    root = table.location.removeprefix("file://")
    on_disk = {"file://" + os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}
    assert referenced <= on_disk, "a referenced file is missing"
    assert on_disk == referenced, f"left behind: {sorted(on_disk - referenced)[:5]}"
