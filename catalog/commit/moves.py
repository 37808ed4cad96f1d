"""Where a rewrite moved each row: what lets a compaction carry a concurrent delete over.

A compaction without a sort reads its input files' live rows in order and writes them, in the
same order, to output files of one partition. :class:`RowMoves` records that layout as data:
per input file, the run of output rows it became (its first row's index in the run) and the
positions that were already deleted when it was read; per run, the output files in order with
their row counts. :meth:`RowMoves.moved` turns deleted positions of an input file into the same
rows' positions in the output files. The commit pipeline uses it when a concurrent commit added
position deletes (or deletion vectors) for files the compaction removes: instead of failing, it
writes those deletes again against the output files (:mod:`lakecat.catalog.commit.pipeline`).
Pure: no IO.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class MovedFile:
    """One input file: the run its live rows went to, where they start in it, and the
    positions (ascending) that were deleted when it was read."""

    run: int
    offset: int
    deleted: pa.Int64Array


@dataclass(frozen=True)
class RowMoves:
    """The layout of a rewrite (see the module docstring). ``runs[r]``: the output files of
    run ``r`` in order, as (path, row count)."""

    inputs: Mapping[str, MovedFile]
    runs: Sequence[Sequence[tuple[str, int]]]

    def covers(self, path: str) -> bool:
        return path in self.inputs

    def moved(self, path: str, positions: pa.Int64Array) -> dict[str, pa.Int64Array]:
        """Output file -> positions there, for ``positions`` of input file ``path`` (rows
        that were already deleted when it was read are dropped: they were not written)."""
        source = self.inputs[path]
        positions = pc.unique(pc.cast(positions, pa.int64()))
        if len(source.deleted):
            positions = positions.filter(pc.invert(pc.is_in(positions, value_set=source.deleted)))
        if not len(positions):
            return {}
        # a live position's index among the live rows: minus the deleted positions before it
        before = _count_less(source.deleted, positions)
        rows = pc.add(pc.subtract(positions, before), pa.scalar(source.offset, pa.int64()))
        files = self.runs[source.run]
        starts = [0]
        for _, count in files:
            starts.append(starts[-1] + count)
        out: dict[str, list[int]] = {}
        for row in rows.to_pylist():
            k = bisect.bisect_right(starts, row) - 1
            if not 0 <= k < len(files):
                raise ValueError(f"row {row} of {path} is outside the rewrite's output")
            name, _count = files[k]
            out.setdefault(name, []).append(row - starts[k])
        return {name: pa.array(sorted(v), pa.int64()) for name, v in out.items()}


def _count_less(sorted_values: pa.Int64Array, positions: pa.Array) -> pa.Int64Array:
    """For each position, how many of ``sorted_values`` are smaller."""
    values = sorted_values.to_pylist()
    return pa.array([bisect.bisect_left(values, p) for p in positions.to_pylist()], pa.int64())
