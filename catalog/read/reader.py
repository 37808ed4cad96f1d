"""The scan engine: a plan's data files as units of bounded read-ahead work.

Per-file overhead dominates tables of many small files (those fed by streaming or small
appends until compaction runs), so files are not read one by one:

* **Small files** (at most a batch of rows, a few MiB) are read in runs, one task per run:
  each file opened through ``pq.ParquetFile``'s reader (its footer read, the row groups its
  statistics cannot rule out chosen), and only its needed leaf columns read as stored. How
  its columns resolve depends on its physical schema alone, worked out once per distinct
  schema for the whole scan (:class:`~lakecat.metadata.io.parquet.DataFileReads`). The raw
  columns of consecutive files of one schema (and the same fill values for fields they lack)
  are concatenated and then resolved, cast and filtered once, as one batch.
* **Large files** are streamed: one batch per task, never the whole file first. With a filter,
  a row group whose page index (:mod:`lakecat.metadata.io.page_index`) narrows the rows
  that may match to at most a batch decodes only those pages (a lookup by a clustered key:
  one page of 20,000 rows, not the row group's million).
* **Files that differ** go the per-file way: a file with delete files to apply, or any file
  when the v3 row lineage columns are read (both need each row's position in its file), runs
  through the caller's reader for it (``Scan``'s: :class:`DeleteReader`, one batch per task).

Identity partition values of fields a file lacks, schema evolution and type promotion are
handled by the resolution, per group, not per file. :mod:`.read_ahead` runs the units.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from lakecat.catalog.read.read_ahead import Unit
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import ARROW_TO_PARQUET_RATIO, DataFileReads, OpenDataFile
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import PartitionSpec

__all__ = ["ScanReader"]

# A file of at most this many bytes (and a batch of rows) is read whole, with others
SMALL_FILE_BYTES = 4 << 20
# A run of small files read in one task: at most this many files and bytes (and a batch of
# rows); fewer when the table has few files, so that every thread gets runs, but not fewer
# than MIN_RUN_FILES (a task per file would cost more than the reads of such a table)
RUN_FILES = 64
MIN_RUN_FILES = 8
RUN_BYTES = 16 << 20

ReadSeparately = Callable[[DataFile, int], Iterator[pa.RecordBatch]]


class ScanReader:
    """Cuts a plan's files into :class:`Unit` s of one scan's reads."""

    def __init__(
        self,
        io: FileIO,
        reads: DataFileReads,
        specs: Mapping[int, PartitionSpec],
        *,
        batch_size: int,
        threads: int,
        separately: Callable[[DataFile], bool],
        read_separately: ReadSeparately,
    ) -> None:
        self.io = io
        self.reads = reads
        self.specs = specs
        self.batch_size = batch_size
        self.threads = threads
        self._separately = separately
        self._read_separately = read_separately

    def units(self, files: Sequence[DataFile]) -> Iterator[Unit]:
        """The units that read ``files``, in their order."""
        per_run = min(RUN_FILES, max(MIN_RUN_FILES, -(-len(files) // (4 * self.threads))))
        run: list[DataFile] = []
        rows = size = 0
        for f in files:
            small = f.record_count <= self.batch_size and f.file_size_in_bytes <= SMALL_FILE_BYTES
            if self._separately(f) or not small:
                if run:
                    yield self._run(run)
                    run, rows, size = [], 0, 0
                yield self._single(f)
                continue
            if run and (
                len(run) >= per_run
                or rows + f.record_count > self.batch_size
                or size + f.file_size_in_bytes > RUN_BYTES
            ):
                yield self._run(run)
                run, rows, size = [], 0, 0
            run.append(f)
            rows += f.record_count
            size += f.file_size_in_bytes
        if run:
            yield self._run(run)

    def _run(self, files: list[DataFile]) -> Unit:
        estimate = int(sum(f.file_size_in_bytes for f in files) * ARROW_TO_PARQUET_RATIO)
        return Unit(self._read_run(files), estimate)

    def _single(self, f: DataFile) -> Unit:
        share = min(1.0, self.batch_size / max(1, f.record_count))
        estimate = int(f.file_size_in_bytes * ARROW_TO_PARQUET_RATIO * share)
        if self._separately(f):
            return Unit(self._read_separately(f, self.batch_size), estimate)
        return Unit(self._stream(f), estimate)

    def _open(self, f: DataFile, *, whole: bool = False) -> OpenDataFile:
        return self.reads.open(self.io, f, self.specs.get(f.spec_id), whole=whole)

    def _stream(self, f: DataFile) -> Iterator[pa.RecordBatch]:
        with self._open(f) as opened:
            pages = opened.page_filter() if self.reads.row_filter is not None else None
            if pages is None:
                raws: Iterable[pa.RecordBatch] = opened.iter_raw(self.batch_size)
            else:  # a row group the page index narrows to a batch: only the pages kept
                batches = opened.pruned_batches(
                    opened.row_groups, pages, self.batch_size, use_threads=True
                )
                raws = (raw for raw, _, _ in batches)
            for raw in raws:
                out = opened.resolve(raw)
                if out.num_rows:
                    yield out

    def _read_run(self, files: Iterable[DataFile]) -> Iterator[pa.RecordBatch]:
        """The files' rows: each file's raw columns read, then each run of files of one
        group resolved as one batch."""
        groups: list[tuple[Any, OpenDataFile, list[pa.Table]]] = []
        # unfiltered, every byte is read: in one read per file; filtered, the row groups the
        # statistics rule out are never fetched
        whole = self.reads.row_group_filter is None
        for f in files:
            with self._open(f, whole=whole) as opened:
                if not opened.num_rows:
                    continue  # every row group ruled out by its statistics
                raw = opened.read_raw()
            if groups and groups[-1][0] == opened.group_key:
                groups[-1][2].append(raw)
            else:
                groups.append((opened.group_key, opened, [raw]))
        for _, first, raws in groups:
            table = raws[0] if len(raws) == 1 else pa.concat_tables(raws)
            for raw_batch in table.combine_chunks().to_batches():
                out = first.resolve(raw_batch)
                if out.num_rows:
                    yield out
