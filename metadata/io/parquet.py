"""Parquet data files: writing with Iceberg metrics, partitioning rows, reading by field id.

Writing (:func:`write_data_file`) expects data already in the table's Arrow form
(:func:`~lakecat.metadata.schema.arrow.conform_to_schema`); pyarrow writes the
``PARQUET:field_id`` metadata as Parquet field ids, and the returned :class:`DataFile` carries
the metrics of :mod:`lakecat.metadata.io.metrics`.

Reading (:func:`read_data_file`, :func:`iter_data_file_batches`; :class:`DataFileReads` for a
scan's many files) resolves columns by Parquet field id, so files written before a rename, an
added or dropped column, a reorder or a type promotion read correctly in the current schema.

Every read here, :func:`read_parquet_columns` included, goes through
``pyarrow.parquet.ParquetFile`` (or the reader it wraps, ``pyarrow._parquet.ParquetReader``)
with pre-buffering off, never through a ``pyarrow.dataset``
scan (which ``pq.read_table`` is). A dataset scan, like pre-buffering, reads ahead in tasks
on pyarrow's own threads that own the file reader and the buffers read from the Python file
object, and may let go of them after the read has returned; when that happens while the
interpreter exits, the process aborts (``terminate called without an active exception``,
apache/arrow#39862). The synchronous reader decodes columns on pyarrow's threads too, but
only within each call, in tasks that own nothing.

pyarrow errors are translated here: a file that cannot be decoded raises
:class:`CorruptMetadata` naming it; a missing file raises the FileIO's
``FileNotFoundStorageError``.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow._parquet import ParquetReader

from lakecat.metadata import properties as props
from lakecat.metadata.deletes import row_positions
from lakecat.metadata.errors import (
    CorruptMetadata,
    LakecatError,
    SchemaMismatch,
    StorageError,
    ValidationError,
)
from lakecat.metadata.io import page_index
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.metrics import file_metrics
from lakecat.metadata.io.page_index import PageFilter, read_file_index, read_range
from lakecat.metadata.io.row_groups import leaf_count, row_groups_to_read, stats_columns
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.partitioning.transforms import parse_transform
from lakecat.metadata.schema.arrow import (
    arrow_type_fits,
    field_id_of,
    field_to_arrow,
    list_parts,
    map_parts,
    schema_to_arrow,
    type_to_arrow,
)
from lakecat.metadata.schema.conversions import from_json_value
from lakecat.metadata.schema.name_mapping import NameMapping, has_field_ids
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DateType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

if TYPE_CHECKING:
    # only for annotations: at run time metadata.expressions imports metadata.manifests,
    # whose package imports this one
    from lakecat.metadata.expressions.evaluators import InclusiveMetricsEvaluator

# How much smaller a Parquet file is than the Arrow data it holds. Dictionary and run-length
# encoding plus zstd typically shrink Arrow data 3-5x; 3 errs towards files slightly under
# the target size rather than over it.
ARROW_TO_PARQUET_RATIO = 3.0

# Rows per batch read when the caller names no batch size: pyarrow.dataset's default.
_BATCH_ROWS = 131_072

_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "uncompressed": "none",
    "none": "none",
}

# ---------------------------------------------------------------------------------------------
# Writing


def write_data_file(
    io: FileIO,
    location: str,
    data: pa.Table,
    *,
    schema: Schema,
    spec: PartitionSpec,
    partition: tuple[Any, ...],
    properties: Mapping[str, str],
    sort_order_id: int | None = None,
) -> DataFile:
    """Write ``data`` (already in ``schema_to_arrow(schema)`` form) as one Parquet file at
    ``location`` and describe it as a :class:`DataFile` with Iceberg metrics.

    A top-level column may also come dictionary-encoded (``pa.dictionary(..., <its type>)``):
    pyarrow then writes the dictionary and indices as they are, without hashing every value
    (a position delete file's ``file_path``, one path repeated for every row). The file's
    Parquet types are the same either way, and it then stores no Arrow schema, so every
    reader reads the plain type.

    The file is created exclusively; if writing fails the partial file is deleted.
    Compression, row-group size, page and dictionary sizes come from the table
    ``properties`` (``write.parquet.*``).
    """
    expected = schema_to_arrow(schema)
    encoded = any(pa.types.is_dictionary(f.type) for f in data.schema)
    if not _plain_schema(data.schema).remove_metadata().equals(expected, check_metadata=True):
        raise SchemaMismatch(
            f"data for {location} is not in the table's Arrow form (field ids, types, "
            "nullability); pass it through conform_to_schema first"
        )
    options = _writer_options(properties)
    row_group_rows = _row_group_rows(data, properties)
    out = io.open_output(location)
    try:
        with out:
            writer = pq.ParquetWriter(
                out, data.schema if encoded else expected, store_schema=not encoded, **options
            )
            try:
                writer.write_table(data, row_group_size=row_group_rows)
            finally:
                writer.close()
            metadata = writer.writer.metadata
            size = out.tell()
    except BaseException as exc:
        io.delete(location)
        if isinstance(exc, StorageError) or not isinstance(exc, (OSError, pa.ArrowException)):
            raise
        if isinstance(exc, OSError):
            raise StorageError(f"cannot write {location}: {exc}") from exc
        raise SchemaMismatch(f"cannot write {location}: {exc}") from exc
    return file_metrics(metadata, data, schema, properties).data_file(
        location=location,
        size=size,
        spec_id=spec.spec_id,
        partition=partition,
        sort_order_id=sort_order_id,
    )


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each dictionary-encoded top-level column as its value type."""
    return pa.schema(
        [f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in schema],
        metadata=schema.metadata,
    )


def _writer_options(properties: Mapping[str, str]) -> dict[str, Any]:
    codec_name = properties.get(props.PARQUET_COMPRESSION, props.PARQUET_COMPRESSION_DEFAULT)
    codec = _CODECS.get(codec_name.strip().lower())
    if codec is None:
        raise ValidationError(
            f"unsupported {props.PARQUET_COMPRESSION} {codec_name!r}; "
            f"expected one of {', '.join(sorted(_CODECS))}"
        )
    options: dict[str, Any] = {
        "compression": codec,
        # Iceberg stores decimals of precision <= 18 as INT32/INT64, as Java does.
        "store_decimal_as_integer": True,
        "write_statistics": True,
        # The page index (each page's offset, first row and bounds), as parquet-java writes
        # it: what lets a merge-on-read delete decode only the pages its keys can be in
        # (metadata/io/page_index.py), and other engines skip pages.
        "write_page_index": True,
        "max_rows_per_page": max(
            1,
            props.get_int(
                properties, props.PARQUET_PAGE_ROW_LIMIT, props.PARQUET_PAGE_ROW_LIMIT_DEFAULT
            ),
        ),
    }
    level = props.get_int(properties, props.PARQUET_COMPRESSION_LEVEL, 0)
    if level and codec != "none":
        options["compression_level"] = level
    page_size = props.get_int(properties, props.PARQUET_PAGE_SIZE_BYTES, 0)
    if page_size > 0:
        options["data_page_size"] = page_size
    dict_size = props.get_int(properties, props.PARQUET_DICT_SIZE_BYTES, 0)
    if dict_size > 0:
        options["dictionary_pagesize_limit"] = dict_size
    return options


def _row_group_rows(data: pa.Table, properties: Mapping[str, str]) -> int:
    """Rows per row group: the byte target (measured on the Arrow data, as Java measures its
    buffered size) capped by the row limit."""
    limit = int(
        props.get_int(
            properties, props.PARQUET_ROW_GROUP_LIMIT, props.PARQUET_ROW_GROUP_LIMIT_DEFAULT
        )
    )
    target_bytes = int(
        props.get_int(
            properties,
            props.PARQUET_ROW_GROUP_SIZE_BYTES,
            props.PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT,
        )
    )
    nbytes, num_rows = int(data.nbytes), int(data.num_rows)
    if num_rows == 0 or nbytes == 0:
        return max(1, limit)
    by_bytes = target_bytes * num_rows // nbytes
    return max(1, min(limit, by_bytes))


# ---------------------------------------------------------------------------------------------
# Partitioning


def partition_and_split(
    data: pa.Table, *, schema: Schema, spec: PartitionSpec, target_file_size_bytes: int
) -> list[tuple[tuple[Any, ...], pa.Table]]:
    """Group ``data`` (in the table's Arrow form) by partition and cut each group into chunks
    of about ``target_file_size_bytes`` of Parquet each.

    Partition tuples hold lakecat's in-memory values of each field's result type (dates as
    days, timestamps as microseconds, ...). Groups come in order of first appearance and keep
    the rows' order. The Parquet size of a chunk is estimated as its Arrow ``nbytes`` divided
    by :data:`ARROW_TO_PARQUET_RATIO`; each group is cut into equal-row chunks so that every
    chunk's estimate stays under the target. An unpartitioned spec gives one group whose
    tuple has a ``None`` per void field (``()`` without fields); empty data gives no groups.
    """
    if data.num_rows == 0:
        return []
    if spec.is_unpartitioned:
        groups = [(tuple(None for _ in spec.fields), data)]
    else:
        groups = _group_by_partition(data, schema, spec)
    out: list[tuple[tuple[Any, ...], pa.Table]] = []
    for partition, table in groups:
        out.extend((partition, chunk) for chunk in _split(table, target_file_size_bytes))
    return out


def _group_by_partition(
    data: pa.Table, schema: Schema, spec: PartitionSpec
) -> list[tuple[tuple[Any, ...], pa.Table]]:
    keys: list[pa.Array] = []
    result_types: list[PrimitiveType] = []
    for pf in spec.fields:
        source = schema.find_field(pf.source_id)
        if not isinstance(source.field_type, PrimitiveType):
            raise SchemaMismatch(f"partition source {source.name!r} is not a primitive column")
        transform = parse_transform(pf.transform)
        column = source_column(data, schema, pf.source_id)
        keys.append(transform.apply_arrow(source.field_type, column))
        result_types.append(transform.result_type(source.field_type))
    names = [f"k{i}" for i in range(len(keys))]
    # group_by has no kernels for extension types (uuid): group on their storage.
    key_table = pa.table(
        [k.storage if isinstance(k.type, pa.ExtensionType) else k for k in keys]
        + [row_positions(0, data.num_rows)],
        names=[*names, "row"],
    )
    # Without threads group_by keeps first-appearance order of groups and row order in lists.
    grouped = key_table.group_by(names, use_threads=False).aggregate([("row", "list")])
    rows = grouped.column("row_list").combine_chunks()
    ordered = data.take(pc.list_flatten(rows))
    sizes = pc.list_value_length(rows).to_pylist()
    key_values = [
        _memory_values(t, grouped.column(name).combine_chunks())
        for t, name in zip(result_types, names, strict=True)
    ]
    out: list[tuple[tuple[Any, ...], pa.Table]] = []
    start = 0
    for g, size in enumerate(sizes):
        partition = tuple(values[g] for values in key_values)
        out.append((partition, ordered.slice(start, size)))
        start += size
    return out


def source_column(
    data: pa.Table,
    schema: Schema,
    field_id: int,
    *,
    refusal: str = "partition source {path!r} is inside a list or map",
) -> pa.Array:
    """The (combined) Arrow values of a possibly struct-nested source field. A field inside a
    list or map has no single value per row: :class:`ValidationError` with ``refusal``
    (formatted with the field's dotted ``path``).

    The field is found by walking the schema by id (:meth:`Schema.column_path`) and the Arrow
    column by those names one level at a time, so names with dots, spaces or quotes resolve
    to the one field they name."""
    path = schema.column_path(field_id)
    column: pa.Array | None = None
    arrow_type: pa.DataType | pa.Schema = data.schema
    for depth, name in enumerate(path):
        if depth and not pa.types.is_struct(arrow_type):
            raise ValidationError(refusal.format(path=schema.column_name(field_id)))
        index = arrow_type.get_field_index(name)
        if index < 0:  # -1: missing, or more than one field of that name
            raise SchemaMismatch(
                f"the data has no single column {'.'.join(repr(p) for p in path[: depth + 1])} "
                f"for field {schema.column_name(field_id)!r} (id {field_id})"
            )
        column = data.column(index).combine_chunks() if column is None else column.flatten()[index]
        arrow_type = column.type
    assert column is not None
    return column


def _memory_values(t: PrimitiveType, arr: pa.Array) -> list[Any]:
    """Arrow values as lakecat's in-memory values of type ``t``."""
    if isinstance(t, DateType) and pa.types.is_date32(arr.type):
        arr = arr.cast(pa.int32())
    elif isinstance(t, (TimeType, TimestampType, TimestamptzType)) and not pa.types.is_integer(
        arr.type
    ):
        arr = arr.cast(pa.int64())
    elif isinstance(t, UUIDType) and pa.types.is_fixed_size_binary(arr.type):
        arr = pa.ExtensionArray.from_storage(pa.uuid(), arr)
    return list(arr.to_pylist())


def _split(table: pa.Table, target_file_size_bytes: int) -> list[pa.Table]:
    estimate = table.nbytes / ARROW_TO_PARQUET_RATIO
    chunks = max(1, math.ceil(estimate / max(1, target_file_size_bytes)))
    rows = math.ceil(table.num_rows / chunks)
    return [table.slice(start, rows) for start in range(0, table.num_rows, rows)]


def partition_path(spec: PartitionSpec, schema: Schema, partition: tuple[Any, ...]) -> str:
    """``"name=value/..."`` for a partition tuple, values in human form and escaped like
    Java's ``PartitionSpec.partitionToPath`` (``URLEncoder``: space as ``+``, only
    ``A-Za-z0-9.-*_`` left as they are). Empty for a spec without fields."""
    if len(partition) != len(spec.fields):
        raise ValidationError(
            f"partition {partition!r} has {len(partition)} values, spec {spec.spec_id} has "
            f"{len(spec.fields)} fields"
        )
    parts = []
    for pf, value in zip(spec.fields, partition, strict=True):
        transform = parse_transform(pf.transform)
        result_type = transform.result_type(schema.find_type(pf.source_id))
        human = "null" if value is None else transform.to_human_string(result_type, value)
        parts.append(f"{_url_encode(pf.name)}={_url_encode(human)}")
    return "/".join(parts)


def _url_encode(text: str) -> str:
    # Python leaves "~" unescaped, Java's URLEncoder does not; "*" is the reverse.
    return quote_plus(text, safe="*").replace("~", "%7E")


# ---------------------------------------------------------------------------------------------
# Reading


def read_data_file(
    io: FileIO,
    data_file: DataFile,
    *,
    projected: Schema,
    row_filter: pc.Expression | None = None,
    batch_size: int | None = None,
    filter_schema: Schema | None = None,
    spec: PartitionSpec | None = None,
    row_group_filter: InclusiveMetricsEvaluator | None = None,
    name_mapping: NameMapping | None = None,
) -> pa.Table:
    """The rows of a Parquet data file in ``schema_to_arrow(projected)`` form.

    See :func:`iter_data_file_batches` for how columns are resolved and filtered.
    """
    batches = iter_data_file_batches(
        io,
        data_file,
        projected=projected,
        row_filter=row_filter,
        batch_size=batch_size,
        filter_schema=filter_schema,
        spec=spec,
        row_group_filter=row_group_filter,
        name_mapping=name_mapping,
    )
    return pa.Table.from_batches(list(batches), schema=schema_to_arrow(projected))


def iter_data_file_batches(
    io: FileIO,
    data_file: DataFile,
    *,
    projected: Schema,
    row_filter: pc.Expression | None = None,
    batch_size: int | None = None,
    filter_schema: Schema | None = None,
    spec: PartitionSpec | None = None,
    row_group_filter: InclusiveMetricsEvaluator | None = None,
    name_mapping: NameMapping | None = None,
) -> Iterator[pa.RecordBatch]:
    """Stream a Parquet data file written by any Iceberg writer as record batches in
    ``schema_to_arrow(projected)`` form.

    Columns are resolved by Parquet field id, never by name: a renamed column is found by
    its id, a column dropped from the schema is not read, a promoted type is cast (int ->
    long, float -> double, wider decimal), struct fields are matched by id at every level.
    A field the file lacks (added after it was written) reads as its identity partition
    value from ``data_file.partition`` when ``spec`` (the file's partition spec) has one, else
    as its ``initial_default``, else as nulls. A file without any field ids (a plain Parquet
    file, e.g. imported) gets them from ``name_mapping`` (the table's
    ``schema.name-mapping.default``: :mod:`lakecat.metadata.schema.name_mapping`), or without
    one is resolved by column names.

    ``row_filter`` is a pyarrow expression over the column names of ``filter_schema``
    (default: ``projected``), typically the table schema so that the filter may use columns
    that are not returned. Only the projected columns and the filter's columns are read, and
    the filter is applied exactly to the resolved batches (so renamed and promoted columns
    filter by their table names and types). ``row_group_filter``, the same filter as a
    metrics evaluator over that schema, skips the row groups whose Parquet statistics show
    that no row matches (:mod:`lakecat.metadata.io.row_groups`). Batches hold at most
    ``batch_size`` rows (default 131,072).

    A scan of many files reads them through one :class:`DataFileReads` instead, which
    resolves each distinct file schema once.
    """
    reads = DataFileReads(
        projected=projected,
        row_filter=row_filter,
        filter_schema=filter_schema,
        row_group_filter=row_group_filter,
        name_mapping=name_mapping,
    )
    with reads.open(io, data_file, spec) as opened:
        for raw in opened.iter_raw(batch_size or _BATCH_ROWS):
            yield opened.resolve(raw)


def read_parquet_columns(source: Any, columns: Sequence[str]) -> pa.Table:
    """The top-level ``columns`` (by name) of the Parquet file open as ``source``, as stored
    (no resolution by field id: for files of a fixed layout, such as position deletes)."""
    return _open(source).read(columns=list(columns))


def _open(source: Any) -> pq.ParquetFile:
    # pre_buffer=False: pre-buffering reads ahead on pyarrow's I/O threads (the module
    # docstring). Arrow extension types stay off, as in pyarrow.dataset, so that a uuid
    # column reads as its fixed_size_binary(16) storage.
    return pq.ParquetFile(source, pre_buffer=False, arrow_extensions_enabled=False)


# a footer's leaf column count and key-value metadata (its items, in the file's order)
_FooterKey = tuple[int, tuple[tuple[bytes, bytes], ...]]


def _open_reader(source: Any) -> ParquetReader:
    # What pq.ParquetFile wraps, without the wrapper's per-file walk of the schema in Python
    # (half the cost of opening a small file); the same options as _open.
    reader = ParquetReader()
    reader.open(source, pre_buffer=False, arrow_extensions_enabled=False)
    return reader


class DataFileReads:
    """Reads of many data files for one projection and filter (a scan's).

    How a file's columns resolve depends only on its physical schema (field ids, names,
    types), so it is worked out once per distinct schema (:class:`ColumnLayout`) and shared
    by every file that has that schema: the files a table's writers wrote between two schema
    changes all do. Thread-safe.
    """

    def __init__(
        self,
        *,
        projected: Schema,
        row_filter: pc.Expression | None = None,
        filter_schema: Schema | None = None,
        row_group_filter: InclusiveMetricsEvaluator | None = None,
        name_mapping: NameMapping | None = None,
    ) -> None:
        self.projected = projected
        self.name_mapping = name_mapping
        self.target = schema_to_arrow(projected)
        self.row_filter = row_filter
        self.filter_schema = filter_schema or projected
        self.row_group_filter = row_group_filter
        wanted = list(projected.fields)
        if row_filter is not None:
            have = {f.field_id for f in projected.fields}
            used = _referenced_fields(row_filter, self.filter_schema)
            wanted += [f for f in used if f.field_id not in have]
        self.wanted = tuple(wanted)
        # by schema and leaf count; pa.Schema's == (so a dict's lookup) ignores field metadata,
        # where the field ids are: each key holds the layouts of schemas that differ in it
        self._layouts: dict[tuple[pa.Schema, int], list[tuple[pa.Schema, ColumnLayout]]] = {}
        # the layouts of the files opened so far, by what their Arrow schema is made from
        self._by_footer: dict[_FooterKey, list[tuple[pq.ParquetSchema, ColumnLayout]]] = {}
        self._lock = threading.Lock()

    def layout(self, file_schema: pa.Schema, leaves: int) -> ColumnLayout:
        """How a file of schema ``file_schema`` with ``leaves`` Parquet leaf columns resolves
        (a file without field ids: with the ids the name mapping gives its names)."""
        key = (file_schema, leaves)
        fields = file_schema.remove_metadata()  # the fields, with their metadata (ids)
        with self._lock:
            for known, found in self._layouts.get(key, ()):
                if known.equals(fields, check_metadata=True):
                    return found
        mapped = False
        if self.name_mapping is not None and not has_field_ids(file_schema):
            file_schema = self.name_mapping.with_ids(file_schema)
            mapped = True
        # mapped: by the ids the mapping gave, even if it named none of the columns
        found = ColumnLayout(file_schema, leaves, self, by_ids=True if mapped else None)
        with self._lock:
            self._layouts.setdefault(key, []).append((fields, found))
        return found

    def footer_layout(self, reader: ParquetReader) -> ColumnLayout:
        """The layout of the file open in ``reader``, as :meth:`layout` of its Arrow schema.

        Found by what pyarrow makes that schema from, the footer's Parquet schema (field ids
        included) and key-value metadata (the stored Arrow schema among it), without making
        it: converting a footer to an Arrow schema and hashing that costs more than the rest
        of opening a small file, and the files of a scan mostly share a handful of schemas."""
        footer = reader.metadata
        parquet_schema = footer.schema
        kv = footer.metadata
        key = (footer.num_columns, tuple(kv.items()) if kv else ())
        with self._lock:
            for known, found in self._by_footer.get(key, ()):
                if known.equals(parquet_schema):
                    return found
        found = self.layout(reader.schema_arrow, footer.num_columns)
        with self._lock:
            self._by_footer.setdefault(key, []).append((parquet_schema, found))
        return found

    def open(
        self,
        io: FileIO,
        data_file: DataFile,
        spec: PartitionSpec | None,
        *,
        whole: bool = False,
    ) -> OpenDataFile:
        """``data_file`` opened (its footer read), ready to read; close it (or use ``with``).

        ``whole``: read the file into memory first, in one read (``io.read``; for small files:
        one request to an object store instead of one per footer and column chunk, and no
        reads through a Python file object while pyarrow decodes)."""
        source = (
            pa.BufferReader(io.read(data_file.file_path))
            if whole
            else io.open_input(data_file.file_path)
        )
        try:
            try:
                reader = _open_reader(source)
                layout = self.footer_layout(reader)
                row_groups = layout.row_groups(reader.metadata, data_file.file_path)
            except (pa.ArrowException, OSError) as exc:
                if isinstance(exc, StorageError):
                    raise
                # The file opened, so an error here means its footer cannot be decoded
                # (pyarrow reports some decoding failures as OSError).
                raise CorruptMetadata(
                    f"cannot read Parquet file {data_file.file_path}: {exc}"
                ) from exc
        except BaseException:
            source.close()
            raise
        return OpenDataFile(source, reader, layout, data_file, spec, row_groups)


class OpenDataFile:
    """One data file opened for a :class:`DataFileReads`: the row groups it reads, its
    layout and the values it fills in for the fields it lacks."""

    def __init__(
        self,
        source: Any,
        reader: ParquetReader,
        layout: ColumnLayout,
        data_file: DataFile,
        spec: PartitionSpec | None,
        row_groups: list[int],
    ) -> None:
        self._source = source
        self._reader = reader
        self.layout = layout
        self.path = data_file.file_path
        self.row_groups = row_groups
        footer = reader.metadata
        self.num_rows = (
            footer.num_rows
            if len(row_groups) == footer.num_row_groups
            else sum(footer.row_group(i).num_rows for i in row_groups)
        )
        fills = _identity_partition_values(data_file, spec) if layout.missing_ids else {}
        self.fill_values = {i: v for i, v in fills.items() if i in layout.missing_ids}
        # files whose raw batches can be concatenated and resolved as one
        self.group_key = (layout, tuple(sorted(self.fill_values.items(), key=_first)))

    def __enter__(self) -> OpenDataFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._source.close()

    def read_raw(self) -> pa.Table:
        """The file's columns that the layout reads, as stored, all of its row groups to read."""
        try:
            return self._reader.read_row_groups(
                self.row_groups, column_indices=self.layout.columns, use_threads=False
            )
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, LakecatError):
                raise
            raise self._corrupt(exc) from exc

    def iter_raw(self, batch_size: int) -> Iterator[pa.RecordBatch]:
        """The same as :meth:`read_raw`, streamed as batches of at most ``batch_size`` rows
        (columns decoded on pyarrow's threads, within each call)."""
        batches = self._reader.iter_batches(
            batch_size, self.row_groups, column_indices=self.layout.columns, use_threads=True
        )
        try:
            yield from batches
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, LakecatError):
                raise
            raise self._corrupt(exc) from exc

    @property
    def row_group_sizes(self) -> list[int]:
        """The number of rows of each row group of the file (read or not)."""
        footer = self._reader.metadata
        return [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]

    def iter_row_group(
        self, index: int, batch_size: int | None = None, *, use_threads: bool = False
    ) -> Iterator[pa.RecordBatch]:
        """Row group ``index`` of the file (any of them, read or not by :attr:`row_groups`),
        the columns that the layout reads, as stored, in batches of ``batch_size`` rows (one
        batch: the whole row group), decoded on the calling thread unless ``use_threads``."""
        rows = max(1, batch_size or self._reader.metadata.row_group(index).num_rows)
        batches = self._reader.iter_batches(
            rows, [index], column_indices=self.layout.columns, use_threads=use_threads
        )
        try:
            yield from batches
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, LakecatError):
                raise
            raise self._corrupt(exc) from exc

    def resolve(self, raw: pa.RecordBatch, *, filtered: bool = True) -> pa.RecordBatch:
        """Raw ``raw`` of this file (or of files of the same :attr:`group_key`, concatenated)
        in the projection's form, filtered; unless ``filtered`` is false: then every row, with
        the filter's columns after the projection's."""
        try:
            if not filtered:
                return self.layout.resolve_all(raw, path=self.path, fill_values=self.fill_values)
            return self.layout.resolve(raw, path=self.path, fill_values=self.fill_values)
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, LakecatError):
                raise
            raise self._corrupt(exc) from exc

    def pruned_batches(
        self,
        row_groups: Sequence[int],
        pages: PageFilter | None,
        batch_size: int | None = None,
        *,
        use_threads: bool = False,
    ) -> Iterator[tuple[pa.RecordBatch, int, np.ndarray | None]]:
        """The raw batches of ``row_groups`` (as :meth:`iter_row_group`, none empty), in file
        order, each as ``(raw, start, rows)``. Where ``pages`` (:meth:`page_filter`) narrows
        a row group to at most ``batch_size`` rows, one batch of only those rows: ``start``
        is the row group's first position in the file and ``rows`` the rows' positions
        relative to it. Else consecutive rows from position ``start``, and ``rows`` None."""
        sizes = self.row_group_sizes
        starts = [0, *accumulate(sizes)]
        for r in row_groups:
            found = None
            if pages is not None:
                found = pages.read_row_group(self.read_range, r, sizes[r], max_rows=batch_size)
            if found is not None:
                raw, rows = found
                if raw.num_rows:
                    yield raw, starts[r], rows
                continue
            start = starts[r]
            for raw in self.iter_row_group(r, batch_size, use_threads=use_threads):
                if raw.num_rows:
                    yield raw, start, None
                start += raw.num_rows

    def page_filter(self) -> PageFilter | None:
        """Page-level pruning of this file's row groups by its page index
        (:mod:`lakecat.metadata.io.page_index`), for the reads' filter; ``None`` when the
        reads have no filter, the file no page index that can serve it, or too few rows to
        read for its footer's size (:func:`~lakecat.metadata.io.page_index.worth_reading`)."""
        layout = self.layout
        evaluator = layout.reads.row_group_filter
        if evaluator is None or layout.columns is None:
            return None
        footer_length = self._reader.metadata.serialized_size
        if not page_index.worth_reading(footer_length, self.num_rows):
            return None
        try:
            index = read_file_index(self.read_range, self.size, footer_length)
        except StorageError:
            raise
        except (OSError, ValueError, AttributeError):
            return None  # a source without random access: no page index
        if index is None:
            return None
        stats = stats_columns(
            layout.file_schema,
            layout.reads.filter_schema,
            evaluator.field_ids,
            layout.match,
            self._reader.metadata.num_columns,
        )
        fields = sorted({i for i in layout.matches if i is not None})
        found = PageFilter(
            index,
            columns=layout.columns,
            raw_schema=pa.schema([layout.file_schema.field(i) for i in fields]),
            stats=stats,
            evaluator=evaluator,
            path=self.path,
        )
        return found if found.usable else None

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes of the file at ``offset`` (for what pyarrow does not read: the
        page index, single pages)."""
        return read_range(self._source, offset, length)

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        size = getattr(self._source, "size", None)  # a pyarrow NativeFile
        if size is not None:
            return int(size())
        return os.fstat(self._source.fileno()).st_size  # a local file

    def _corrupt(self, exc: BaseException) -> CorruptMetadata:
        return CorruptMetadata(f"cannot read Parquet file {self.path}: {exc}")


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def _first(item: tuple[int, Any]) -> int:
    return item[0]


class ColumnLayout:
    """How the top-level columns of one physical file schema resolve to a projection and the
    filter's columns: which Parquet leaf columns to read and where each field is found."""

    def __init__(
        self,
        file_schema: pa.Schema,
        leaves: int,
        reads: DataFileReads,
        *,
        by_ids: bool | None = None,
    ) -> None:
        self.file_schema = file_schema
        # by field id when the file has any (None: see), else by name
        self.by_ids = (
            any(field_id_of(f) is not None for f in file_schema) if by_ids is None else by_ids
        )
        self.reads = reads
        file_fields = list(file_schema)
        self.matches = [self.match(f, file_fields) for f in reads.wanted]
        self.columns, self._position = self._columns(
            {i for i in self.matches if i is not None}, leaves
        )
        self.missing_ids = frozenset(self._missing(reads.wanted, file_fields))
        self._full = (
            None
            if reads.row_filter is None
            else pa.schema([field_to_arrow(f) for f in reads.wanted])
        )

    def match(self, f: NestedField, fields: list[pa.Field]) -> int | None:
        """Index of the file field that ``f`` resolves to among sibling ``fields``."""
        for i, candidate in enumerate(fields):
            if (field_id_of(candidate) == f.field_id) if self.by_ids else candidate.name == f.name:
                return i
        return None

    def _missing(self, fields: Sequence[NestedField], file_fields: list[pa.Field]) -> set[int]:
        """The ids of ``fields`` (and of their struct children) that the file lacks."""
        out: set[int] = set()
        for f in fields:
            i = self.match(f, file_fields)
            if i is None:
                out.add(f.field_id)
            elif isinstance(f.field_type, StructType) and pa.types.is_struct(file_fields[i].type):
                t = file_fields[i].type
                children = [t.field(k) for k in range(t.num_fields)]
                out |= self._missing(f.field_type.fields, children)
        return out

    def _columns(self, fields: set[int], leaves: int) -> tuple[list[int] | None, dict[int, int]]:
        """The Parquet leaf columns to read for top-level file ``fields`` (``None``: all),
        and where each of the fields is in a batch read so.

        By leaf column index, not by name: names may repeat at different depths ("a.b" the
        column and field b of struct a), indices never do."""
        counts = [leaf_count(f.type) for f in self.file_schema]
        if sum(counts) != leaves:
            # not the leaf-for-leaf mapping pyarrow makes of the files we know: read them all
            return None, {i: i for i in fields}
        starts = [0, *accumulate(counts)]
        selected = sorted(fields)  # a batch holds the fields in file order
        columns = [leaf for i in selected for leaf in range(starts[i], starts[i] + counts[i])]
        return columns, {i: k for k, i in enumerate(selected)}

    def row_groups(self, footer: pq.FileMetaData, path: str) -> list[int]:
        """The row groups to read: those whose statistics may match the filter."""
        evaluator = self.reads.row_group_filter
        if evaluator is None or footer.num_row_groups < 2:
            return list(range(footer.num_row_groups))  # planning decided on the whole file
        return row_groups_to_read(
            footer,
            self.file_schema,
            self.reads.filter_schema,
            evaluator,
            match=self.match,
            path=path,
        )

    def resolve(
        self, raw: pa.RecordBatch, *, path: str, fill_values: Mapping[int, Any]
    ) -> pa.RecordBatch:
        """``raw`` (read with :attr:`columns`) resolved, cast and filtered."""
        target = self.reads.target
        if self._full is None:
            return self.resolve_all(raw, path=path, fill_values=fill_values)
        full = self.resolve_all(raw, path=path, fill_values=fill_values)
        filtered = full.filter(self.reads.row_filter)
        if not len(target):  # no column, but the rows still count (a read of positions)
            return filtered.select([])
        return pa.RecordBatch.from_arrays(filtered.columns[: len(target)], schema=target)

    def resolve_all(
        self, raw: pa.RecordBatch, *, path: str, fill_values: Mapping[int, Any]
    ) -> pa.RecordBatch:
        """``raw`` resolved and cast, unfiltered: the projection's columns, then the other
        columns the filter reads."""
        schema = self._full or self.reads.target
        if not len(schema):
            return raw.select([])
        return pa.RecordBatch.from_arrays(self._arrays(raw, path, fill_values), schema=schema)

    def _arrays(
        self, raw: pa.RecordBatch, path: str, fill_values: Mapping[int, Any]
    ) -> list[pa.Array]:
        resolver = _Resolver(self, path, fill_values)
        file_fields = list(self.file_schema)
        n = raw.num_rows
        return [
            resolver.project(
                None if i is None else raw.column(self._position[i]),
                f,
                None if i is None else file_fields[i],
                f.name,
                n,
            )
            for f, i in zip(self.reads.wanted, self.matches, strict=True)
        ]


class _Resolver:
    """File values in a table field's Arrow form, for one file (its path for messages, its
    fill values) of one layout."""

    def __init__(self, layout: ColumnLayout, path: str, fill_values: Mapping[int, Any]) -> None:
        self.layout = layout
        self.path = path
        self.fill_values = fill_values

    def project(
        self, arr: pa.Array | None, f: NestedField, file_field: pa.Field | None, path: str, n: int
    ) -> pa.Array:
        """File values ``arr`` (or ``None`` if the file lacks ``f``) in ``f``'s Arrow form."""
        if arr is None or file_field is None:
            return self.fill(f, path, n)
        t = f.field_type
        mask = arr.is_null() if arr.null_count else None
        # the file's field types, which carry the field ids (given by the name mapping for a
        # file written without them; the values' own types may lack them)
        declared = file_field.type
        if isinstance(t, StructType):
            if not pa.types.is_struct(arr.type):
                raise self._mismatch(path, arr.type, t)
            described = declared if pa.types.is_struct(declared) else arr.type
            children_in_file = [described.field(i) for i in range(described.num_fields)]
            flat = arr.flatten()
            children = []
            for child in t.fields:
                i = self.layout.match(child, children_in_file)
                child_arr = None if i is None else flat[i]
                child_file = None if i is None else children_in_file[i]
                children.append(
                    self.project(child_arr, child, child_file, f"{path}.{child.name}", n)
                )
            fields = [field_to_arrow(child) for child in t.fields]
            return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
        if isinstance(t, ListType):
            if not pa.types.is_list(arr.type) and not pa.types.is_large_list(arr.type):
                raise self._mismatch(path, arr.type, t)
            offsets, values = list_parts(arr)
            listed = declared if _is_list(declared) else arr.type
            element = self.project(
                values, t.element_field, listed.value_field, f"{path}.element", len(values)
            )
            return pa.ListArray.from_arrays(offsets, element, type=type_to_arrow(t), mask=mask)
        if isinstance(t, MapType):
            if not pa.types.is_map(arr.type):
                raise self._mismatch(path, arr.type, t)
            offsets, keys, values = map_parts(arr)
            mapped = declared if pa.types.is_map(declared) else arr.type
            keys = self.project(keys, t.key_field, mapped.key_field, f"{path}.key", len(keys))
            values = self.project(
                values, t.value_field, mapped.item_field, f"{path}.value", len(values)
            )
            return pa.MapArray.from_arrays(offsets, keys, values, type=type_to_arrow(t), mask=mask)
        assert isinstance(t, PrimitiveType)
        return self._cast(arr, t, path)

    def _cast(self, arr: pa.Array, t: PrimitiveType, path: str) -> pa.Array:
        target = type_to_arrow(t)
        if arr.type == target:
            return arr
        if not arrow_type_fits(arr.type, t):
            raise self._mismatch(path, arr.type, t)
        try:
            # Promotions (int -> long, float -> double, wider decimal), large/small string
            # forms, timestamp units and zone labels (the values are UTC instants either way).
            return arr.cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise CorruptMetadata(
                f"{self.path}: column {path!r} of type {arr.type} cannot be read as {t}: {exc}"
            ) from exc

    def fill(self, f: NestedField, path: str, n: int) -> pa.Array:
        """Values for a field the file does not have."""
        t = f.field_type
        if f.field_id in self.fill_values:
            return _repeat(t, self.fill_values[f.field_id], n)
        if f.initial_default is not None and isinstance(t, PrimitiveType):
            return _repeat(t, from_json_value(t, f.initial_default), n)
        if f.required:
            raise SchemaMismatch(
                f"{self.path} has no column {path!r} (id {f.field_id}), which is required "
                "and has no initial default"
            )
        return pa.nulls(n, type=type_to_arrow(t))

    def _mismatch(self, path: str, found: pa.DataType, t: IcebergType) -> CorruptMetadata:
        return CorruptMetadata(f"{self.path}: column {path!r} has type {found}, expected {t}")


def _identity_partition_values(data_file: DataFile, spec: PartitionSpec | None) -> dict[int, Any]:
    """Source field id -> partition value, for the identity fields of the file's spec."""
    if spec is None or len(spec.fields) != len(data_file.partition):
        return {}
    return {
        pf.source_id: value
        for pf, value in zip(spec.fields, data_file.partition, strict=True)
        if parse_transform(pf.transform, strict=False).is_identity and value is not None
    }


def _repeat(t: IcebergType, value: Any, n: int) -> pa.Array:
    """``n`` copies of an in-memory value as an Arrow array of ``t``'s Arrow type."""
    target = type_to_arrow(t)
    if isinstance(t, DateType):
        one = pa.array([value], pa.int32()).cast(target)
    elif isinstance(t, (TimeType, TimestampType, TimestamptzType)):
        one = pa.array([value], pa.int64()).cast(target)
    elif isinstance(t, UUIDType):
        one = pa.ExtensionArray.from_storage(target, pa.array([value.bytes], pa.binary(16)))
    else:
        one = pa.array([value], target)
    return pa.repeat(one[0], n) if n else one.slice(0, 0)


def _referenced_fields(row_filter: pc.Expression, schema: Schema) -> list[NestedField]:
    """Top-level fields of ``schema`` that ``row_filter`` uses.

    pyarrow exposes no field references of an expression, so columns are tested: the filter
    fails to bind on an empty table without a column it uses. Halving the candidates keeps
    this to a few binds for the usual filter on one or two columns of a wide table.
    """
    empty = schema_to_arrow(schema).empty_table()

    def binds_without(names: list[str]) -> bool:
        try:
            empty.drop_columns(names).filter(row_filter)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return False
        return True

    def used_among(names: list[str]) -> list[str]:
        if not names or binds_without(names):
            return []
        if len(names) == 1:
            return names
        half = len(names) // 2
        return used_among(names[:half]) + used_among(names[half:])

    try:
        empty.filter(row_filter)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise ValidationError(f"row filter {row_filter} does not apply: {exc}") from exc
    used = set(used_among([f.name for f in schema.fields]))
    return [f for f in schema.fields if f.name in used]
