"""Page-level pruning: the rows of a row group that a filter may match, by the Parquet page
index, and those rows' values read from their pages alone.

A row group holds a million rows or so; a merge-on-read ``DELETE`` of a few keys still decodes
the key column of each row group whose statistics it cannot rule out. Writers that keep a page
index (Iceberg Java and Spark through parquet-java, and lakecat: ``write_page_index``) store,
for every column chunk, where each page starts, its first row (``OffsetIndex``) and each
page's min/max and null count (``ColumnIndex``). As parquet-java's ``ColumnIndexFilter`` does:

1. the row group's rows are cut at every page boundary of the columns the filter reads; each
   segment lies within one page of each column, so those pages' bounds are bounds of the
   segment, and the filter's metrics evaluator (the one that prunes files and row groups)
   decides per segment whether a row of it may match;
2. only the pages holding the remaining segments are decoded. pyarrow cannot read a page
   alone, so each column's selected pages (with the dictionary page, when one of them is
   dictionary-encoded) are framed as a one-column Parquet file in memory, its footer written
   from the original's schema element and column metadata, and read by pyarrow as any file.

Everything here is an optimisation: a file without a page index, a column the scheme cannot
frame (nested, repeated), an index it cannot decode, all answer ``None`` and the caller reads
the row group as before. Bounds are used only where the page index is defined by the
column's type order and a value's bytes are Iceberg's bound bytes (integers, dates, times,
timestamps in microseconds, strings).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyarrow._parquet import ParquetReader

from lakecat.metadata.io.row_groups import StatsColumn
from lakecat.metadata.io.thrift_compact import (
    BINARY,
    I32,
    I64,
    LIST,
    STRUCT,
    Struct,
    ThriftError,
    TList,
    decode_struct,
    encode_struct,
)
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.types import (
    DateType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

if TYPE_CHECKING:
    from lakecat.metadata.expressions.evaluators import InclusiveMetricsEvaluator

__all__ = [
    "MIN_ROWS",
    "FileIndex",
    "PageFilter",
    "read_file_index",
    "read_range",
    "worth_reading",
]

# A range read of the file: (offset, length) -> bytes.
ReadRange = Callable[[int, int], bytes]

# Footers above this size are not decoded in Python (a very wide file with many row groups):
# its row groups are read whole, as without a page index.
MAX_FOOTER_BYTES = 4 << 20
# Reads of fewer rows than this (all the row groups to read together) do not use the page
# index: decoding them costs less than reading the footer and the index again.
MIN_ROWS = 100_000
# ... nor reads of fewer rows than this many per byte of the footer: decoding a footer in
# Python costs ~0.35 us a byte (a file of 100 columns in 20 row groups: 264 KB, 92 ms), which
# only a read of many rows per column repays.
ROWS_PER_FOOTER_BYTE = 8
# A row group whose candidate rows are more than this share of it is read whole: decoding
# most pages one by one costs more than decoding the chunk.
MAX_SELECTED_SHARE = 0.5

_REQUIRED, _OPTIONAL = 0, 1
_DATA_PAGE, _DATA_PAGE_V2 = 0, 3
_DICTIONARY_ENCODINGS = frozenset({2, 8})  # PLAIN_DICTIONARY, RLE_DICTIONARY
# Iceberg types whose page min/max bytes, by width, are Iceberg's bound bytes
_BOUND_WIDTH: dict[type[PrimitiveType], int | None] = {
    IntegerType: 4,
    DateType: 4,
    LongType: 8,
    TimeType: 8,
    TimestampType: 8,
    TimestamptzType: 8,
    StringType: None,
}


def worth_reading(footer_bytes: int, rows: int) -> bool:
    """Whether reading a file's page index may repay itself, for a read of ``rows`` rows (of
    the row groups its statistics kept) of a file whose footer is ``footer_bytes`` long."""
    return rows >= MIN_ROWS and footer_bytes * ROWS_PER_FOOTER_BYTE <= rows


def read_range(source: Any, offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` of an open file (a pyarrow NativeFile or a Python file)."""
    read_at = getattr(source, "read_at", None)
    if read_at is not None:
        return bytes(read_at(length, offset))
    source.seek(offset)
    data: bytes = source.read(length)
    return data


@dataclass(frozen=True, slots=True)
class _Leaf:
    element: Struct  # its SchemaElement
    top_level: bool  # a top-level column, neither repeated nor inside a group
    type_ordered: bool  # min/max follow the type's order (FileMetaData.column_orders)


@dataclass(frozen=True, slots=True)
class FileIndex:
    """What a Parquet footer holds beyond what pyarrow exposes: each leaf column's schema
    element and sort order, and each row group's column chunks as stored."""

    leaves: tuple[_Leaf, ...]
    row_groups: tuple[Struct, ...]

    def chunk(self, row_group: int, column: int) -> Struct:
        """The ``ColumnChunk`` of leaf ``column`` in ``row_group``."""
        columns: TList = self.row_groups[row_group][1][1]
        chunk: Struct = columns.items[column]
        return chunk


def read_file_index(
    read: ReadRange, size: int, footer_length: int | None = None
) -> FileIndex | None:
    """The footer of the Parquet file of ``size`` bytes read through ``read``, decoded;
    ``None`` when it is encrypted, too large or not decodable here. With the footer's length
    known (what pyarrow's metadata calls ``serialized_size``), the footer and the file's last
    8 bytes come in one read (one request on an object store) instead of two."""
    if size < 12:
        return None
    body: bytes | None = None
    if footer_length is None:
        tail = read(size - 8, 8)
    elif footer_length > MAX_FOOTER_BYTES or footer_length + 12 > size:
        return None
    else:
        data = read(size - 8 - footer_length, footer_length + 8)
        tail, body = data[-8:], data[:-8]
    length = int.from_bytes(tail[:4], "little")
    if tail[4:] != b"PAR1":
        return None  # "PARE": an encrypted footer
    if length > MAX_FOOTER_BYTES or length + 12 > size:
        return None
    if body is not None and length != len(body):
        return None  # not the footer pyarrow read
    try:
        footer, _ = decode_struct(body if body is not None else read(size - 8 - length, length))
        if 8 in footer:  # encryption_algorithm: columns may be encrypted
            return None
        schema: list[Struct] = footer[2][1].items
        orders: list[Struct] = footer[7][1].items if 7 in footer else []
        leaves: list[_Leaf] = []
        _walk(schema, 1, schema[0].get(5, (I32, 0))[1], 0, leaves, orders)
        return FileIndex(tuple(leaves), tuple(footer[4][1].items))
    except (ThriftError, KeyError, IndexError, TypeError, AttributeError):
        return None


def _walk(
    schema: list[Struct],
    pos: int,
    children: int,
    depth: int,
    leaves: list[_Leaf],
    orders: list[Struct],
) -> int:
    """Adds the leaves of ``children`` schema elements from ``pos``; the position after."""
    for _ in range(children):
        element = schema[pos]
        pos += 1
        kids = element.get(5, (I32, 0))[1]
        if kids:
            pos = _walk(schema, pos, kids, depth + 1, leaves, orders)
            continue
        repetition = element.get(3, (I32, _REQUIRED))[1]
        index = len(leaves)
        ordered = index < len(orders) and 1 in orders[index]  # TypeDefinedOrder
        leaves.append(_Leaf(element, depth == 0 and repetition in (_REQUIRED, _OPTIONAL), ordered))
    return pos


@dataclass(frozen=True, slots=True)
class _Pages:
    """One column chunk's pages: first row, offset and length (header included) of each."""

    first_rows: list[int]
    offsets: list[int]
    lengths: list[int]

    def rows(self, page: int, num_rows: int) -> tuple[int, int]:
        end = self.first_rows[page + 1] if page + 1 < len(self.first_rows) else num_rows
        return self.first_rows[page], end


@dataclass(frozen=True, slots=True)
class _Bounds:
    """One column chunk's page index: per page, all nulls?, min, max, null count."""

    null_pages: list[bool]
    mins: list[bytes]
    maxs: list[bytes]
    null_counts: list[int] | None


class PageFilter:
    """Page-level pruning and reading for one file: its decoded footer, the Parquet leaf
    columns a read takes (``columns``, in order; one per top-level field) and the filter's
    columns whose page bounds may prune (``stats``, by field id)."""

    def __init__(
        self,
        index: FileIndex,
        *,
        columns: Sequence[int],
        raw_schema: pa.Schema,
        stats: Mapping[int, StatsColumn],
        evaluator: InclusiveMetricsEvaluator,
        path: str,
    ) -> None:
        self.index = index
        self.columns = list(columns)
        self.raw_schema = raw_schema
        self.evaluator = evaluator
        self.path = path
        self.stats = {
            fid: (s.index, s.field_type)
            for fid, s in stats.items()
            if s.index in self.columns and _bounds_usable(index.leaves[s.index], s.field_type)
        }
        self.usable = bool(self.stats) and all(index.leaves[c].top_level for c in self.columns)

    def read_row_group(
        self, read: ReadRange, row_group: int, num_rows: int, *, max_rows: int | None = None
    ) -> tuple[pa.RecordBatch, np.ndarray] | None:
        """The rows of ``row_group`` (``num_rows`` rows) that the filter may match by the page
        index: their raw columns (``raw_schema``) and their positions in the row group; an
        empty batch when no page may match; ``None`` when the page index does not help (or
        is missing), or would return more than ``max_rows`` rows, so that the caller reads
        the row group whole."""
        if not self.usable:
            return None
        try:
            pages: dict[int, _Pages] = {}
            for c in self.columns:
                found_pages = self._pages(read, row_group, c)
                if found_pages is None:
                    return None
                pages[c] = found_pages
            bounds = {fid: self._bounds(read, row_group, c) for fid, (c, _) in self.stats.items()}
            kept = self._kept_segments(pages, bounds, num_rows)
            selected = sum(end - start for start, end in kept)
            if selected > num_rows * MAX_SELECTED_SHARE or (
                max_rows is not None and selected > max_rows
            ):
                return None
            rows = _ranges_to_rows(kept)
            if not selected:
                return pa.RecordBatch.from_pylist([], schema=self.raw_schema), rows
            arrays = []
            for k, column in enumerate(self.columns):
                found = self._read_column(read, row_group, column, pages[column], kept, num_rows)
                if found is None:
                    return None
                values, value_rows = found
                if len(value_rows) != len(rows) or not np.array_equal(value_rows, rows):
                    values = values.take(pa.array(np.searchsorted(value_rows, rows)))
                want = self.raw_schema.field(k).type
                if not values.type.equals(want):
                    values = values.cast(want)
                arrays.append(values)
            return pa.RecordBatch.from_arrays(arrays, schema=self.raw_schema), rows
        except (ThriftError, KeyError, IndexError, TypeError, AttributeError, pa.ArrowException):
            return None

    # -- the page index ---------------------------------------------------------------------

    def _pages(self, read: ReadRange, row_group: int, column: int) -> _Pages | None:
        chunk = self.index.chunk(row_group, column)
        if 4 not in chunk or 5 not in chunk:
            return None
        offset_index, _ = decode_struct(read(chunk[4][1], chunk[5][1]))
        locations: list[Struct] = offset_index[1][1].items
        if not locations:
            return None
        return _Pages(
            [loc[3][1] for loc in locations],
            [loc[1][1] for loc in locations],
            [loc[2][1] for loc in locations],
        )

    def _bounds(self, read: ReadRange, row_group: int, column: int) -> _Bounds | None:
        chunk = self.index.chunk(row_group, column)
        if 6 not in chunk or 7 not in chunk:
            return None
        column_index, _ = decode_struct(read(chunk[6][1], chunk[7][1]))
        return _Bounds(
            column_index[1][1].items,
            column_index[2][1].items,
            column_index[3][1].items,
            column_index[5][1].items if 5 in column_index else None,
        )

    def _kept_segments(
        self,
        pages: Mapping[int, _Pages],
        bounds: Mapping[int, _Bounds | None],
        num_rows: int,
    ) -> list[tuple[int, int]]:
        """The row ranges of the row group that may match, merged, ascending."""
        cuts = sorted({r for p in pages.values() for r in p.first_rows if r < num_rows} | {0})
        ends = [*cuts[1:], num_rows]
        decided: dict[tuple[int, ...], bool] = {}
        kept: list[tuple[int, int]] = []
        for start, end in zip(cuts, ends, strict=True):
            where = tuple(
                bisect.bisect_right(pages[c].first_rows, start) - 1 for c, _ in self.stats.values()
            )
            may = decided.get(where)
            if may is None:
                may = self.evaluator.eval(self._segment_metrics(where, bounds, end - start))
                decided[where] = may
            if not may:
                continue
            if kept and kept[-1][1] == start:
                kept[-1] = (kept[-1][0], end)
            else:
                kept.append((start, end))
        return kept

    def _segment_metrics(
        self, where: tuple[int, ...], bounds: Mapping[int, _Bounds | None], rows: int
    ) -> DataFile:
        """Metrics of a segment of ``rows`` rows lying in page ``where[k]`` of the k-th stats
        column: its page's bounds, and its null count where the page's settles it."""
        values: dict[int, int] = {}
        nulls: dict[int, int] = {}
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        for page, (fid, (_, t)) in zip(where, self.stats.items(), strict=True):
            b = bounds[fid]
            if b is None:
                continue
            values[fid] = rows
            if b.null_pages[page]:
                nulls[fid] = rows
                continue
            if b.null_counts is not None and b.null_counts[page] == 0:
                nulls[fid] = 0
            low, high = b.mins[page], b.maxs[page]
            if _valid_bound(t, low) and _valid_bound(t, high):
                lower[fid], upper[fid] = low, high
        return DataFile(
            self.path,
            "PARQUET",
            (),
            rows,
            0,
            value_counts=values,
            null_value_counts=nulls,
            lower_bounds=lower,
            upper_bounds=upper,
        )

    # -- reading pages ----------------------------------------------------------------------

    def _read_column(
        self,
        read: ReadRange,
        row_group: int,
        column: int,
        pages: _Pages,
        kept: Sequence[tuple[int, int]],
        num_rows: int,
    ) -> tuple[pa.Array, np.ndarray] | None:
        """The values of leaf ``column`` in the pages that hold rows of ``kept``, and the row
        of each value."""
        chosen: list[int] = []
        k = 0
        for page in range(len(pages.first_rows)):
            start, end = pages.rows(page, num_rows)
            while k < len(kept) and kept[k][1] <= start:
                k += 1
            if k < len(kept) and kept[k][0] < end:
                chosen.append(page)
        blobs = _read_pages(read, pages, chosen)
        chunk = self.index.chunk(row_group, column)
        meta: Struct = chunk[3][1]
        dictionary = b""
        if 11 in meta and any(_dictionary_encoded(b) for b in blobs):
            start = meta[11][1]
            if not 0 < start < pages.offsets[0]:
                return None  # no dictionary page where the chunk starts: not framed
            dictionary = read(start, pages.offsets[0] - start)
        rows_in = [pages.rows(p, num_rows) for p in chosen]
        count = sum(end - start for start, end in rows_in)
        framed = _frame(self.index.leaves[column].element, meta, dictionary, blobs, count)
        reader = ParquetReader()
        reader.open(pa.BufferReader(framed), pre_buffer=False, arrow_extensions_enabled=False)
        values = reader.read_all(use_threads=False).column(0).combine_chunks()
        if len(values) != count:
            return None
        return values, _ranges_to_rows(rows_in)


def _bounds_usable(leaf: _Leaf, t: PrimitiveType) -> bool:
    return leaf.type_ordered and type(t) in _BOUND_WIDTH


def _valid_bound(t: PrimitiveType, value: bytes) -> bool:
    width = _BOUND_WIDTH[type(t)]
    if width is not None:
        return len(value) == width
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False  # a truncated bound cut inside a character
    return True


def _ranges_to_rows(ranges: Sequence[tuple[int, int]]) -> np.ndarray:
    if not ranges:
        return np.empty(0, dtype=np.int64)
    return np.concatenate([np.arange(s, e, dtype=np.int64) for s, e in ranges])


def _read_pages(read: ReadRange, pages: _Pages, chosen: Sequence[int]) -> list[bytes]:
    """The bytes (header and body) of pages ``chosen``, adjacent pages in one read."""
    out: list[bytes] = []
    run: list[int] = []

    def flush() -> None:
        if not run:
            return
        start = pages.offsets[run[0]]
        data = read(start, pages.offsets[run[-1]] + pages.lengths[run[-1]] - start)
        for p in run:
            at = pages.offsets[p] - start
            out.append(data[at : at + pages.lengths[p]])
        run.clear()

    for p in chosen:
        if run and pages.offsets[run[-1]] + pages.lengths[run[-1]] != pages.offsets[p]:
            flush()
        run.append(p)
    flush()
    return out


def _dictionary_encoded(page: bytes) -> bool:
    header, _ = decode_struct(page)
    kind = header[1][1]
    if kind == _DATA_PAGE:
        encoding = header[5][1][2][1]
    elif kind == _DATA_PAGE_V2:
        encoding = header[8][1][4][1]
    else:
        raise ThriftError(f"page type {kind} where a data page was expected")
    return encoding in _DICTIONARY_ENCODINGS


def _frame(
    element: Struct, meta: Struct, dictionary: bytes, pages: Sequence[bytes], rows: int
) -> bytes:
    """A one-column, one-row-group Parquet file of ``pages`` (after ``dictionary``, if any),
    the column described by its original ``element`` and column metadata ``meta``."""
    body = dictionary + b"".join(pages)
    first = 4 + len(dictionary)
    column_meta: Struct = {
        1: meta[1],
        2: meta[2],
        3: meta[3],
        4: meta[4],
        5: (I64, rows),
        6: (I64, len(body)),
        7: (I64, len(body)),
        9: (I64, first),
    }
    if dictionary:
        column_meta[11] = (I64, 4)
    row_group: Struct = {
        1: (LIST, TList(STRUCT, [{2: (I64, 4), 3: (STRUCT, column_meta)}])),
        2: (I64, len(body)),
        3: (I64, rows),
    }
    footer = encode_struct(
        {
            1: (I32, 1),
            2: (LIST, TList(STRUCT, [{4: (BINARY, b"schema"), 5: (I32, 1)}, element])),
            3: (I64, rows),
            4: (LIST, TList(STRUCT, [row_group])),
        }
    )
    return b"PAR1" + body + footer + len(footer).to_bytes(4, "little") + b"PAR1"
