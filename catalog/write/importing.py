"""Adding existing Parquet files to a table as they are (``Table.add_files``, the ``add_files``
procedure): what Iceberg's ``add_files`` does, for files written by any Parquet writer.

Each file is described from its footer and checked before anything is committed:

* its columns resolve to the table's: by field id when the file has them (every id must be a
  column of the table), else by name through the table's name mapping
  (``schema.name-mapping.default``; a table without one gets one from its current schema,
  set before the files are added, as Iceberg Java does), and at least one column resolves;
  every required column of the table is in the file, and the file's types read as the
  table's (a first batch is read through the same resolution a scan uses);
* on a partitioned table, every row of the file falls in one partition of the default spec,
  which becomes the file's partition tuple: computed from the file's source columns, or, for
  an identity field whose column the file lacks, taken from the file's Hive-style
  ``<column>=<value>`` folder (how Hive and Spark lay out partitioned tables; the scan then
  fills the column from the partition value). A folder naming a column that the file lacks
  and the partitioning does not hold is refused (the column would read as nulls);
* a file already in the table (by path) is refused, unless ``check_duplicates`` is off.

The files stay where they are and become the table's: a later delete, compaction or expiry
may delete them. Their column metrics (value and null counts, bounds truncated by the table's
metrics modes) come from the footer's statistics, for each column of the table that the file
holds in the table's own type outside lists and maps (found by field id as a read finds it),
so scans prune the added files as any other; where the footer has no statistics, or the file
stores a column in another type (read with a promotion), that column has none ("may match").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import unquote

import pyarrow as pa

from lakecat.metadata.errors import SchemaMismatch, ValidationError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.metrics import leaves, resolved_footer_metrics
from lakecat.metadata.io.parquet import iter_data_file_batches, partition_and_split, read_data_file
from lakecat.metadata.io.parquet_footer import read_footer
from lakecat.metadata.io.row_groups import stats_columns
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.schema.arrow import field_id_of
from lakecat.metadata.schema.conversions import from_python
from lakecat.metadata.schema.name_mapping import NameMapping, has_field_ids
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import NestedField, PrimitiveType
from lakecat.metadata.table.table_metadata import TableMetadata

__all__ = ["imported_data_files"]

_CHECK_ROWS = 1024
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def imported_data_files(
    io: FileIO,
    metadata: TableMetadata,
    paths: Iterable[str],
    mapping: NameMapping,
    *,
    existing: set[str] | None = None,
) -> tuple[list[DataFile], bool]:
    """The data files of the Parquet files at ``paths`` for the table ``metadata`` describes,
    resolved through ``mapping`` where they have no field ids, and whether any has none;
    ``existing``: the table's data file paths, refused again. Raises :class:`SchemaMismatch` /
    :class:`ValidationError` (nothing is committed)."""
    files: list[DataFile] = []
    without_ids = False
    seen: set[str] = set()
    for path in paths:
        if path in seen or (existing is not None and path in existing):
            raise ValidationError(f"{path} is already a data file of the table")
        seen.add(path)
        described, by_ids = _describe(io, metadata, path, mapping)
        files.append(described)
        without_ids = without_ids or not by_ids
    if not files:
        raise ValidationError("add_files needs at least one file")
    return files, without_ids


def _describe(
    io: FileIO, metadata: TableMetadata, path: str, mapping: NameMapping
) -> tuple[DataFile, bool]:
    footer = read_footer(io, path)
    schema, spec = metadata.schema(), metadata.spec()
    file_schema = footer.schema.to_arrow_schema()
    by_ids = has_field_ids(file_schema)
    resolved = file_schema if by_ids else mapping.with_ids(file_schema)
    ids = {field_id_of(f) for f in resolved} - {None}
    known = {f.field_id for f in schema.fields}
    if by_ids and not ids <= known:
        unknown = sorted(i for i in ids if i is not None and i not in known)
        raise SchemaMismatch(f"{path}: field ids {unknown} are not columns of the table")
    if not ids & known:
        raise SchemaMismatch(
            f"{path}: none of its columns ({', '.join(file_schema.names)}) is a column of the "
            "table" + ("" if by_ids else " or a name the table's name mapping knows")
        )
    folders = _hive_values(path)
    from_folders = _folder_partition_values(schema, spec, ids, folders, path)
    missing = [
        f.name
        for f in schema.fields
        if f.required and f.field_id not in ids and f.field_id not in from_folders
    ]
    if missing:
        raise SchemaMismatch(f"{path}: lacks the required column(s) {', '.join(missing)}")
    unheld = [f.name for f in schema.fields if f.name in folders and f.field_id not in ids]
    unheld = [n for n in unheld if schema.find_field(n).field_id not in from_folders]
    if unheld:
        raise SchemaMismatch(
            f"{path}: its folder names a value of column {unheld[0]!r}, which the file lacks "
            "and the table's partitioning does not hold (it would read as nulls)"
        )
    probe = DataFile(path, "PARQUET", (), footer.num_rows, 0)
    name_mapping = None if by_ids else mapping
    # the file's values read as the table's types (a mismatch is a typed error here)
    held = Schema(tuple(f for f in schema.fields if f.field_id in ids), schema.schema_id)
    for _ in iter_data_file_batches(
        io, probe, projected=held, batch_size=_CHECK_ROWS, name_mapping=name_mapping
    ):
        break
    partition: tuple[object, ...] = ()
    if not spec.is_unpartitioned:
        in_file = [f for f in spec.fields if schema.top_level_id(f.source_id) in ids]
        computed = iter(_partition(io, metadata, probe, in_file, name_mapping) if in_file else ())
        partition = tuple(
            from_folders[f.source_id]
            if schema.top_level_id(f.source_id) not in ids
            else next(computed)
            for f in spec.fields
        )
    size = _size(io, path)
    metrics = resolved_footer_metrics(
        footer, schema, metadata.properties, _metric_columns(resolved, schema, footer.num_columns)
    )
    described = metrics.data_file(
        location=path, size=size, spec_id=spec.spec_id, partition=partition
    )
    return described, by_ids


def _metric_columns(file_schema: pa.Schema, schema: Schema, num_columns: int) -> dict[int, int]:
    """The Parquet column of the file (``file_schema``, with field ids) that a read returns
    unchanged for each leaf of ``schema`` outside lists and maps, by field id."""

    def by_id(f: NestedField, fields: list[pa.Field]) -> int | None:
        return next((i for i, c in enumerate(fields) if field_id_of(c) == f.field_id), None)

    ids = [leaf.field_id for leaf in leaves(schema) if not leaf.repeated]
    found = stats_columns(file_schema, schema, ids, by_id, num_columns)
    return {field_id: column.index for field_id, column in found.items()}


def _hive_values(path: str) -> dict[str, str | None]:
    """The ``name=value`` folders of a path (Hive's partition layout), values unescaped;
    ``__HIVE_DEFAULT_PARTITION__`` is null."""
    out: dict[str, str | None] = {}
    for part in path.split("/")[:-1]:
        name, eq, value = part.partition("=")
        if eq and name:
            text = unquote(value)
            out[unquote(name)] = None if text == _HIVE_NULL else text
    return out


def _folder_partition_values(
    schema: Schema,
    spec: PartitionSpec,
    ids: set[int | None],
    folders: dict[str, str | None],
    path: str,
) -> dict[int, object]:
    """The values, by source field id, of the identity partition fields whose top-level
    source column the file lacks, from its Hive-style folders (as Hive, Spark and Iceberg's
    ``add_files`` lay out partitioned tables); a partition source the file lacks that no
    folder gives is refused."""
    values: dict[int, object] = {}
    for f in spec.fields:
        top = schema.top_level_id(f.source_id)
        if top in ids:
            continue
        source = schema.find_field(f.source_id)
        if f.transform != "identity" or top != f.source_id or source.name not in folders:
            raise SchemaMismatch(
                f"{path}: lacks the partition source column {source.name!r}, and no "
                f"{source.name}=<value> folder gives its value"
            )
        text = folders[source.name]
        assert isinstance(source.field_type, PrimitiveType)
        values[f.source_id] = None if text is None else from_python(source.field_type, text)
    return values


def _partition(
    io: FileIO,
    metadata: TableMetadata,
    probe: DataFile,
    fields: Sequence[PartitionField],
    name_mapping: NameMapping | None,
) -> tuple[object, ...]:
    """The values of partition ``fields`` (of the default spec, their sources in the file)
    that every row of the file shares."""
    schema, spec = metadata.schema(), metadata.spec()
    tops = {schema.top_level_id(f.source_id) for f in fields}
    sources = Schema(tuple(f for f in schema.fields if f.field_id in tops), schema.schema_id)
    rows = read_data_file(io, probe, projected=sources, name_mapping=name_mapping)
    part = PartitionSpec(spec.spec_id, tuple(fields))
    groups = partition_and_split(rows, schema=sources, spec=part, target_file_size_bytes=1 << 62)
    if len(groups) != 1:
        found = "no rows" if not groups else f"rows of {len(groups)} partitions"
        raise ValidationError(
            f"{probe.file_path}: holds {found}; an added file must hold rows of exactly one "
            "partition of the table's spec"
        )
    return groups[0][0]


def _size(io: FileIO, path: str) -> int:
    source = io.open_input(path)
    try:
        return int(source.seek(0, 2))
    finally:
        source.close()
