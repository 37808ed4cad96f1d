"""Which rows of a data file a filter matches, by position: what a merge-on-read delete needs.

A merge-on-read ``DELETE`` writes the positions of the rows it deletes and rewrites nothing,
so its cost is finding those positions. :func:`matching_positions` does only that work:

* it reads the filter's columns and no other (resolved by field id, cast and filled in as any
  read of the file would: :class:`~lakecat.metadata.io.parquet.DataFileReads`);
* it skips the row groups whose statistics show that no row matches (a delete by a clustered
  key reads one row group of a big file), and, in a file with a page index, decodes only the
  pages that may hold a match (:mod:`lakecat.metadata.io.page_index`: ten keys spread over a
  ten-million-row file decode ten pages of 20,000 rows, not ten million values);
* it decodes the other row groups on up to ``threads`` threads, each with its own reader of
  the file, one row group at a time (memory: one row group of the filter's columns per
  thread), and numbers only the rows that match (each row group's positions start where the
  previous row groups' rows end, counted from the footer, pruned row groups included).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.deletes.apply import row_positions
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.page_index import PageFilter
from lakecat.metadata.io.parquet import DataFileReads, OpenDataFile
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.name_mapping import NameMapping
from lakecat.metadata.schema.schema import Schema

if TYPE_CHECKING:
    from lakecat.metadata.expressions.evaluators import InclusiveMetricsEvaluator

__all__ = ["matching_positions"]

_POSITION = "__lakecat_position"


def matching_positions(
    io: FileIO,
    data_file: DataFile,
    *,
    filter_schema: Schema,
    row_filter: pc.Expression,
    row_group_filter: InclusiveMetricsEvaluator | None = None,
    spec: PartitionSpec | None = None,
    threads: int = 1,
    name_mapping: NameMapping | None = None,
) -> pa.Int64Array:
    """The positions in Parquet ``data_file`` of the rows that ``row_filter`` (a pyarrow
    expression over ``filter_schema``'s column names) matches, ascending; ``row_group_filter``
    (the same filter as a metrics evaluator over ``filter_schema``) skips row groups by their
    statistics; ``name_mapping`` gives a file without field ids its ids. Deletes are not
    applied: every row counts, and is numbered as in the file."""
    reads = DataFileReads(
        projected=Schema((), filter_schema.schema_id),
        row_filter=row_filter,
        filter_schema=filter_schema,
        row_group_filter=row_group_filter,
        name_mapping=name_mapping,
    )
    with reads.open(io, data_file, spec) as opened:
        groups = opened.row_groups
        sizes = opened.row_group_sizes
        pages = opened.page_filter() if groups else None
        # positions 0..n-1 for the largest row group, sliced per batch (none needed when
        # the page index answers: it numbers the rows it reads)
        numbers = (
            row_positions(0, max((sizes[i] for i in groups), default=0)) if pages is None else None
        )
        parts = max(1, min(threads, len(groups)))
        if parts == 1:
            return _sorted(_positions(opened, groups, numbers, row_filter, pages))

    def read(chunk: Sequence[int]) -> list[pa.Array]:
        with reads.open(io, data_file, spec) as own:
            return _positions(own, chunk, numbers, row_filter, pages)

    # interleaved, so that a cluster of matching row groups spreads over the threads
    chunks = [groups[k::parts] for k in range(parts)]
    with ThreadPoolExecutor(parts, thread_name_prefix="lakecat-positions") as pool:
        return _sorted([a for found in pool.map(read, chunks) for a in found])


def _positions(
    opened: OpenDataFile,
    groups: Sequence[int],
    numbers: pa.Array | None,
    row_filter: pc.Expression,
    pages: PageFilter | None,
) -> list[pa.Array]:
    """The matching positions of row groups ``groups`` of ``opened``, one array per batch."""
    out: list[pa.Array] = []
    for raw, start, rows in opened.pruned_batches(groups, pages):
        if rows is not None:  # the page index's rows, numbered from the row group's start
            local = pa.array(rows, pa.int64())
        elif numbers is None:
            local = row_positions(0, raw.num_rows)
        else:
            local = numbers.slice(0, raw.num_rows)
        batch = opened.resolve(raw, filtered=False)
        numbered = (
            batch.append_column(_POSITION, local)
            if batch.num_columns  # else a filter that reads no column (``true``)
            else pa.RecordBatch.from_arrays([local], names=[_POSITION])
        )
        found = numbered.filter(row_filter).column(_POSITION)
        if len(found):
            out.append(pc.add(found, pa.scalar(start, pa.int64())))
    return out


def _sorted(found: list[pa.Array]) -> pa.Int64Array:
    arrays = [a for a in found if len(a)]
    if not arrays:
        return pa.array([], pa.int64())
    merged = pa.concat_arrays(arrays)
    if len(arrays) > 1:
        merged = pc.take(merged, pc.sort_indices(merged))
    result: pa.Int64Array = merged
    return result
