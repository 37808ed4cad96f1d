"""Where a rewrite moved each row: what lets a compaction carry a concurrent delete over.

A compaction without a sort reads its input files' live rows in order and writes them, in the
same order, to output files of one partition. :class:`RowMoves` records that layout as data:
per input file, the run of output rows it became (its first row's index in the run) and the
positions that were already deleted when it was read; per run, the output files in order with
their row counts. :meth:`RowMoves.moved` turns deleted positions of an input file into the same
rows' positions in the output files. The commit pipeline uses it when a concurrent commit added
position deletes (or deletion vectors) for files the compaction removes: instead of failing, it
writes those deletes again against the output files (:mod:`lakecat.catalog.commit.pipeline`).

The other way round, a merge-on-read change of a format v2 table (no row ids) that loses the
race to a compaction finds its rows in the compaction's output through the same record: the
compaction writes its :class:`RowMoves` next to its metadata (:func:`write_row_moves`, a small
Parquet file) and names it in its snapshot summary (:data:`ROW_MOVES_KEY`); the change's retry
reads it (:func:`read_row_moves`) and writes its position deletes for the output files. The
file lives as long as the compaction's snapshot (expiry and orphan removal know it).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.datafile import DataFile

# The snapshot summary property naming a compaction's row-moves file.
ROW_MOVES_KEY = "lakecat.row-moves"
_INPUT, _OUTPUT = 0, 1
_FILE_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.int8(), nullable=False),  # 0: an input file, 1: an output file
        pa.field("path", pa.string(), nullable=False),
        pa.field("run", pa.int32(), nullable=False),
        # an input: its first row in the run; an output: its row count (outputs in run order)
        pa.field("rows", pa.int64(), nullable=False),
        pa.field("deleted", pa.list_(pa.int64())),  # an input's deleted positions
    ]
)


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

    @staticmethod
    def joined(parts: Sequence[RowMoves | None]) -> RowMoves | None:
        """The moves of rewrites committed together (their runs one after the other); None
        when any part's moves are not known, or for no parts."""
        known = [p for p in parts if p is not None]
        if not known or len(known) != len(parts):
            return None
        inputs: dict[str, MovedFile] = {}
        runs: list[Sequence[tuple[str, int]]] = []
        for part in known:
            for path, moved in part.inputs.items():
                inputs[path] = replace(moved, run=moved.run + len(runs))
            runs.extend(part.runs)
        return RowMoves(inputs, tuple(runs))

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


# One block of rows a rewrite wrote, in the order it wrote them: (the input file's index among
# the run's inputs, the first row's position in it, how many consecutive positions).
PositionBlock = tuple[int, int, int]


def observed_moves(
    runs: Sequence[tuple[Sequence[DataFile], Sequence[PositionBlock], Sequence[DataFile]]],
) -> RowMoves | None:
    """The :class:`RowMoves` of a rewrite that saw where each row came from as it wrote it
    (Spark's compaction: its rows carry their file and position to the writer), per run:
    the input files, the blocks of input positions in the order they were written, and the
    output files in the order written. ``None`` when the rows do not have the layout a
    record describes: an input's rows not contiguous or not in position order, outputs in
    several partitions, or counts that disagree. Positions an input did not write were
    deleted when it was read."""
    inputs: dict[str, MovedFile] = {}
    layout: list[tuple[tuple[str, int], ...]] = []
    for run, (files, blocks, outputs) in enumerate(runs):
        if len({(f.spec_id, f.partition) for f in outputs}) > 1:
            return None
        if sum(count for _, _, count in blocks) != sum(f.record_count for f in outputs):
            return None
        spans: dict[int, list[tuple[int, int]]] = {}
        offsets: dict[int, int] = {}
        current, end, stream = -1, 0, 0
        for index, first, count in blocks:
            if not 0 <= index < len(files) or count <= 0 or first < 0:
                return None
            if index != current:
                if index in offsets:
                    return None  # the file's rows are split by another file's
                offsets[index], current = stream, index
            elif first < end:
                return None  # not in position order
            end = first + count
            if end > files[index].record_count:
                return None
            spans.setdefault(index, []).append((first, count))
            stream += count
        for index, f in enumerate(files):
            live = np.ones(f.record_count, dtype=bool)
            for first, count in spans.get(index, ()):
                live[first : first + count] = False
            deleted = pa.array(np.flatnonzero(live).astype(np.int64), pa.int64())
            inputs[f.file_path] = MovedFile(run, offsets.get(index, 0), deleted)
        layout.append(tuple((f.file_path, f.record_count) for f in outputs))
    return RowMoves(inputs, tuple(layout)) if inputs else None


def _count_less(sorted_values: pa.Int64Array, positions: pa.Array) -> pa.Int64Array:
    """For each position, how many of ``sorted_values`` are smaller."""
    values = sorted_values.to_pylist()
    return pa.array([bisect.bisect_left(values, p) for p in positions.to_pylist()], pa.int64())


# ---- the file ------------------------------------------------------------------------------
def row_moves_table(moves: RowMoves) -> pa.Table:
    """``moves`` as rows of the row-moves file (inputs, then each run's outputs in order)."""
    kinds: list[int] = []
    paths: list[str] = []
    runs: list[int] = []
    counts: list[int] = []
    deleted: list[list[int] | None] = []
    for path, moved in sorted(moves.inputs.items()):
        kinds.append(_INPUT)
        paths.append(path)
        runs.append(moved.run)
        counts.append(moved.offset)
        deleted.append(moved.deleted.to_pylist())
    for run, files in enumerate(moves.runs):
        for path, count in files:
            kinds.append(_OUTPUT)
            paths.append(path)
            runs.append(run)
            counts.append(count)
            deleted.append(None)
    return pa.Table.from_arrays(
        [
            pa.array(kinds, pa.int8()),
            pa.array(paths, pa.string()),
            pa.array(runs, pa.int32()),
            pa.array(counts, pa.int64()),
            pa.array(deleted, pa.list_(pa.int64())),
        ],
        schema=_FILE_SCHEMA,
    )


def row_moves_of(table: pa.Table) -> RowMoves:
    """The :class:`RowMoves` that :func:`row_moves_table` wrote; ``ValueError`` when the rows
    do not make one."""
    if not table.schema.equals(_FILE_SCHEMA, check_metadata=False):
        raise ValueError(f"unexpected columns {table.schema.names}")
    inputs: dict[str, MovedFile] = {}
    runs: dict[int, list[tuple[str, int]]] = {}
    for row in table.to_pylist():
        if row["kind"] == _INPUT:
            deleted = pa.array(row["deleted"] or [], pa.int64())
            inputs[row["path"]] = MovedFile(row["run"], row["rows"], deleted)
        elif row["kind"] == _OUTPUT:
            runs.setdefault(row["run"], []).append((row["path"], row["rows"]))
        else:
            raise ValueError(f"unknown row kind {row['kind']}")
    # a run may have no output file: every row of its inputs was deleted before the rewrite
    named = {*runs, *(m.run for m in inputs.values())}
    if any(r < 0 for r in named):
        raise ValueError("a negative run index")
    count = max(named, default=-1) + 1
    return RowMoves(inputs, tuple(tuple(runs.get(r, ())) for r in range(count)))


def write_row_moves(io: FileIO, location: str, moves: RowMoves) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(row_moves_table(moves), sink, compression="zstd")
    io.write(location, sink.getvalue().to_pybytes(), exclusive=True)


def read_row_moves(io: FileIO, location: str) -> RowMoves:
    """The record at ``location``; :class:`CorruptMetadata` naming it when it cannot be read
    (a missing file raises the storage error)."""
    data = io.read(location)
    try:
        table = pq.ParquetFile(pa.BufferReader(data), pre_buffer=False).read()
        return row_moves_of(table)
    except (pa.ArrowException, ValueError, KeyError, TypeError) as exc:
        raise CorruptMetadata(f"row-moves file {location} is unreadable: {exc}") from exc
