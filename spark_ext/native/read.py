"""Native reads: lakecat plans the data files, Spark's own Parquet reader reads them.

>>> import lakecat.spark_ext as lk
>>> lk.read(spark, "db.events")
>>> lk.read(spark, "db.events", **{"snapshot-id": 7613386734127489232})
>>> lk.read(spark, "db.events", filter="region = 'eu'")  # prunes files, filters rows
>>> lk.native_read_support(spark, "db.events").reason     # None: native

lakecat resolves the snapshot (time travel and incremental options as the data source takes
them), plans its files (the ``filter`` option prunes them by partition values and column
bounds) and hands the list to ``spark.read.schema(<the table's Spark schema>).parquet(...)``;
the ``filter`` option is also applied to the rows, translated into a Spark condition. Spark
resolves a Parquet file's columns by *name*, lakecat by field id, so a read is native only
when the two give the same rows (else the ``lakecat`` data source serves it, the reason
logged):

* every schema in the table's history names each field id as the read schema does, and no
  other field ever had the name (case-insensitively, as Spark matches names) of a field of
  the read schema; no field changed type (promoted columns would be read with the file's
  type); no field has an initial default (Spark fills a missing column with nulls);
* field names are Avro-compatible (Iceberg Java writes other names sanitized into Parquet);
* no uuid or time columns (which have no Spark form that Spark's reader produces);
* no equality delete file applies (the data source applies those); every file is Parquet,
  local, without glob characters in its path (``spark.read.parquet`` expands globs) and, for
  identity partition fields, holds the source column (imported files may not; lakecat fills
  those from the partition value);
* the ``filter`` option translates exactly: comparisons, IN, NOT IN, LIKE 'prefix%' and null
  checks on boolean, integer, decimal, date, timestamp, string and binary columns, NaN and
  null checks on float and double columns (other comparisons of floats differ from Spark on
  NaN);
* the table has no name mapping (``schema.name-mapping.default``: files imported without
  field ids are read by the names it maps, which may not be the read schema's);
* no ``metadata-columns``, ``row-lineage`` or ``files`` options (driver-side operations use
  the data source).

Position deletes and deletion vectors keep a read native: lakecat reads them on the driver
into (file, position) rows and the DataFrame drops the rows whose ``_metadata.file_path`` and
``_metadata.row_index`` (Spark's own Parquet reader numbers every row of a file) match one,
by a left anti join; Spark's name of each file is predicted from its listing of the files and
checked on every row (:mod:`.file_keys`). No column may be named ``_metadata`` (it would hide
Spark's). Past :data:`MAX_NATIVE_DELETED_POSITIONS` deleted positions in the files read, the
data source reads them (it applies the deletes in its tasks, a bitmap per file, where the
native read would hold them all on the driver and ship them to the executors).

Spark's file sources make every column nullable; a native read's DataFrame schema therefore
has no non-nullable columns, while the data source's keeps the table's required columns.

The SQL catalog's scans decide with the same checks (:func:`check_native_options`,
:func:`check_native_schema`, :func:`check_native_files`; :mod:`.scan`).
"""

from __future__ import annotations

import logging
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as st

from lakecat.catalog import Catalog
from lakecat.catalog.engine import DeleteReader
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Operation,
    Or,
    bind,
)
from lakecat.metadata.io import FileIO, to_uri
from lakecat.metadata.manifests import Content, DataFile
from lakecat.metadata.partitioning import PartitionSpec, parse_transform
from lakecat.metadata.schema import (
    NAME_MAPPING_PROPERTY,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    Schema,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from lakecat.metadata.table import TableMetadata, read_metadata
from lakecat.spark_ext.native.columns import quoted
from lakecat.spark_ext.native.file_keys import (
    FILE_INDEX,
    joined_by_file,
    native_os_path,
    os_paths,
    spark_file_keys,
    without_deleted,
)
from lakecat.spark_ext.native.partitions import EPOCH_NTZ
from lakecat.spark_ext.native.support import (
    NATIVE,
    NativeSupport,
    NotNative,
    normalized_options,
)
from lakecat.spark_ext.settings import (
    DEFAULT_FORMAT,
    CatalogSettings,
    settings_from_session,
)
from lakecat.spark_ext.source.planning import (
    METADATA_LOCATION,
    FilePlan,
    ReadOptions,
    ReadView,
    plan_files,
)
from lakecat.spark_ext.types import spark_schema

# A native read ships the deleted positions of the files it reads to the executors, from the
# driver (8 bytes each, more for the anti join's rows); past this many (64 MiB) the data source
# reads the files, applying the delete files in its own tasks. The SQL catalog's scans share it.
MAX_NATIVE_DELETED_POSITIONS = 8 << 20

log = logging.getLogger("lakecat.spark")

# Spark reads files without a writer that tells otherwise with these modes by default; a read
# sets them so that a session configured for legacy files still reads Iceberg's dates as is.
READ_OPTIONS: Mapping[str, str] = {
    "datetimeRebaseMode": "CORRECTED",
    "int96RebaseMode": "CORRECTED",
}
_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_GLOB_CHARACTERS = re.compile(r"[{}\[\]*?\\]")
# The join keys of a native read with deletes.
_FILE_KEY = "__lakecat_file"
_POS_KEY = "__lakecat_pos"
_COMPARISONS: Mapping[Operation, Callable[[Any, Any], Any]] = {
    Operation.EQ: operator.eq,
    Operation.NOT_EQ: operator.ne,
    Operation.LT: operator.lt,
    Operation.LT_EQ: operator.le,
    Operation.GT: operator.gt,
    Operation.GT_EQ: operator.ge,
}
_COMPARABLE = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimestampType,
    TimestamptzType,
    StringType,
    BinaryType,
    FixedType,
)


@dataclass(frozen=True)
class NativeReadPlan:
    """A qualifying read: its files, the row condition of its ``filter`` option, and the
    row positions that position deletes and deletion vectors delete (by data file path)."""

    files: tuple[DataFile, ...]
    row_filter: Column | None
    deleted: Mapping[str, pa.Int64Array] = field(default_factory=dict)


def plan_native_read(view: ReadView, io: FileIO) -> NativeReadPlan:
    """The files and row condition of a native read; :class:`NotNative` when it does not
    qualify."""
    check_native_options(view.options)
    check_native_schema(view.metadata, view.schema)
    row_filter = spark_filter(bind(view.schema, view.base_filter()))
    if view.snapshot is None:
        return NativeReadPlan((), row_filter)
    plan = plan_files(io, view, [])
    check_native_files(view.metadata, plan.files)
    return NativeReadPlan(plan.files, row_filter, _deleted_positions(io, view, plan))


def check_native_options(options: ReadOptions) -> None:
    """:class:`NotNative` for read options only the data source serves."""
    if options.metadata_columns:
        raise NotNative("the metadata columns _file and _pos come from the data source")
    if options.row_lineage:
        raise NotNative("the row lineage columns come from the data source")
    if options.files is not None:
        raise NotNative("the files option is for driver-side operations")


def check_native_schema(metadata: TableMetadata, schema: Schema) -> None:
    """:class:`NotNative` unless Spark's reader, matching Parquet columns by name, reads the
    fields of ``schema`` (a read's schema of the table ``metadata``, or the columns of it the
    read needs) as lakecat does by field id in every file of the table's history."""
    if NAME_MAPPING_PROPERTY in metadata.properties:
        # files imported without field ids are read by the names the mapping gives them,
        # which may not be the read schema's names (a column renamed since the import)
        raise NotNative("the table has a name mapping for files written without field ids")
    check_readable(schema)
    check_history(schema, metadata.schemas)


def check_native_files(metadata: TableMetadata, files: Iterable[DataFile]) -> None:
    """:class:`NotNative` unless Spark's Parquet reader can read each of ``files`` (data files
    of the table ``metadata``) as it is (local Parquet under the name its path gives, holding
    its identity partition columns)."""
    specs = metadata.specs_by_id()
    for f in files:
        _check_file(f, specs)


def _deleted_positions(io: FileIO, view: ReadView, plan: FilePlan) -> dict[str, pa.Int64Array]:
    """The positions the plan's position deletes and deletion vectors delete, by data file
    path; :class:`NotNative` when an equality delete applies."""
    if not plan.deletes:
        return {}
    check_file_metadata(view.schema)
    return position_deletes(io, view.metadata, view.schema, plan.files, plan.deletes)


def position_deletes(
    io: FileIO,
    metadata: TableMetadata,
    schema: Schema,
    files: Iterable[DataFile],
    deletes: Mapping[str, Sequence[DataFile]],
) -> dict[str, pa.Int64Array]:
    """The positions that the position deletes and deletion vectors of ``files`` delete
    (``deletes``: the delete files of each, by path), by data file path, for the files with
    any; :class:`NotNative` when an equality delete applies (Spark's reader cannot apply
    it) or past :data:`MAX_NATIVE_DELETED_POSITIONS` positions in all."""
    reader = DeleteReader(io, schema, metadata.schemas)
    out: dict[str, pa.Int64Array] = {}
    total = 0
    for f in files:
        applied = deletes.get(f.file_path, ())
        if any(d.content is Content.EQUALITY_DELETES for d in applied):
            raise NotNative(f"equality deletes apply to {f.file_path}")
        index = reader.position_index(f, applied) if applied else None
        if index is not None and len(index):
            total += len(index)
            if total > MAX_NATIVE_DELETED_POSITIONS:
                raise NotNative(
                    f"more than {MAX_NATIVE_DELETED_POSITIONS:,} deleted positions to ship to "
                    "the executors (the data source applies the delete files in its tasks)"
                )
            out[f.file_path] = index.positions
    return out


def check_native_rows(metadata: TableMetadata, read: Schema, files: Iterable[DataFile]) -> None:
    """:class:`NotNative` unless Spark's Parquet reader reads the fields of ``read`` (of the
    table ``metadata``) from ``files``, with each row's file and position
    (:func:`read_located`), as lakecat does."""
    check_file_metadata(metadata.schema())
    check_native_schema(metadata, read)
    check_native_files(metadata, files)


def read_located(
    spark: Any,
    files: Sequence[DataFile],
    read: st.StructType,
    schema: Schema,
    *,
    file_column: str,
    pos_column: str,
) -> DataFrame:
    """Spark's Parquet read of ``files`` (local data files of a table of ``schema``): the
    columns of ``read`` (a Spark schema of its fields), each row's file (Spark's
    ``_metadata.file_path``) in ``file_column`` and position (``_metadata.row_index``) in
    ``pos_column``, float columns out of reach of filter pushdown (:func:`unpruned_floats`)."""
    scanned = spark.read.schema(read).options(**READ_OPTIONS)
    located = scanned.parquet(*[to_uri(f.file_path) for f in files]).select(
        *[F.col(quoted(c)) for c in read.fieldNames()],
        F.col("_metadata.file_path").alias(file_column),
        F.col("_metadata.row_index").alias(pos_column),
    )
    return unpruned_floats(located, schema)


def check_file_metadata(schema: Schema) -> None:
    """:class:`NotNative` when a column of ``schema`` is named ``_metadata``, which hides
    Spark's file metadata column (``_metadata.file_path``, ``_metadata.row_index``) of a
    Parquet read."""
    if any(name.lower() == "_metadata" for name in schema.column_names):
        raise NotNative("a column named _metadata hides Spark's file metadata column")


def _drop_deleted(
    spark: Any, df: DataFrame, files: Sequence[DataFile], deleted: Mapping[str, pa.Int64Array]
) -> DataFrame:
    """``df`` (a Parquet read of ``files``) without the rows at the ``deleted`` positions (by
    path in the table) of its files; :class:`NotNative` when Spark's listing of the files does
    not name each once."""
    keys = spark_file_keys(df, os_paths(files))
    keyed = df.withColumn(_FILE_KEY, F.col("_metadata.file_path")).withColumn(
        _POS_KEY, F.col("_metadata.row_index")
    )
    known = joined_by_file(spark, keyed, _FILE_KEY, files, keys)
    kept = without_deleted(spark, known, _POS_KEY, files, deleted)
    return kept.drop(_FILE_KEY, _POS_KEY, FILE_INDEX)


def read_support(view: ReadView, io: FileIO) -> NativeSupport:
    """Whether a read of ``view`` qualifies, and why not."""
    try:
        plan_native_read(view, io)
    except NotNative as exc:
        return NativeSupport(exc.reason)
    return NATIVE


def native_read_support(
    spark: Any,
    table: str,
    *,
    catalog: Catalog | None = None,
    format_name: str = DEFAULT_FORMAT,
    **options: Any,
) -> NativeSupport:
    """Whether :func:`read` with these arguments would read natively, and why not."""
    opts = normalized_options(options)
    settings = settings_from_session(spark, catalog, format_name=format_name).with_options(opts)
    view = _view(settings, table, opts)
    return read_support(view, settings.file_io(view.metadata.location))


def read(
    spark: Any,
    table: str,
    *,
    catalog: Catalog | None = None,
    format_name: str = DEFAULT_FORMAT,
    **options: Any,
) -> DataFrame:
    """A lakecat table as a DataFrame, read by Spark's own Parquet reader when the read
    qualifies, else by the data source (``spark.read.format(format_name)``, pinned to the
    same table metadata; the reason is logged). Takes the data source's read options
    (``snapshot-id``, ``as-of-timestamp``, ``tag``, ``branch``, ``start-snapshot-id``, ...,
    ``filter``; pass hyphenated keys as ``**{"snapshot-id": 42}``).

    The table state is resolved now: the DataFrame reads that snapshot whenever it runs.
    """
    opts = normalized_options(options)
    settings = settings_from_session(spark, catalog, format_name=format_name).with_options(opts)
    view = _view(settings, table, opts)
    io = settings.file_io(view.metadata.location)
    try:
        return _native_frame(spark, view, plan_native_read(view, io))
    except NotNative as exc:
        log.info("lakecat: reading %s through the Python data source: %s", table, exc.reason)
    df: DataFrame = (
        spark.read.format(format_name)
        .options(**opts)
        .options(**settings.as_options())
        .option(METADATA_LOCATION, view.metadata_location)
        .load(table)
    )
    return df


def _native_frame(spark: Any, view: ReadView, plan: NativeReadPlan) -> DataFrame:
    """The DataFrame of a native read; :class:`NotNative` when Spark's listing of the files
    does not name each once (only checked where deletes apply)."""
    schema = spark_schema(view.schema)
    df: DataFrame
    if not plan.files:
        df = spark.createDataFrame([], schema)
        return df
    paths = [to_uri(f.file_path) for f in plan.files]
    df = spark.read.schema(schema).options(**READ_OPTIONS).parquet(*paths)
    if plan.deleted:
        df = _drop_deleted(spark, df, plan.files, plan.deleted)
    df = unpruned_floats(df, view.schema)
    return df.where(plan.row_filter) if plan.row_filter is not None else df


def _view(settings: CatalogSettings, table: str, options: Mapping[str, str]) -> ReadView:
    location = options.get(METADATA_LOCATION)
    if location:
        metadata = read_metadata(settings.file_io(location), location)
    else:
        with settings.open() as catalog:
            loaded = catalog.load_table(table)
            metadata, location = loaded.metadata, loaded.metadata_location
    return ReadView.resolve(metadata, location, ReadOptions.parse(options))


# ---- what Spark reads by name as lakecat reads by id --------------------------------------


def check_readable(schema: Schema) -> None:
    """:class:`NotNative` for a field Spark's reader would read differently."""
    for path, f in _walk(schema.fields, ()):
        name = ".".join(path)
        if isinstance(f.field_type, (UUIDType, TimeType)):
            raise NotNative(f"column {name!r} has type {f.field_type}, read by the data source")
        if f.initial_default is not None:
            raise NotNative(f"column {name!r} has an initial default, which Spark would not fill")
        if not _AVRO_NAME.match(f.name):
            raise NotNative(
                f"column {name!r}: Iceberg Java writes such names sanitized into Parquet files"
            )


def unpruned_floats(df: DataFrame, schema: Schema) -> DataFrame:
    """``df`` (a Parquet read of a table of ``schema``, columns by name) with each float and
    double column passed through ``nanvl(c, c)`` (the same value, bit for bit) and each struct
    that holds one rebuilt around it. Parquet writers leave NaN out of a column's statistics,
    and Spark orders NaN above every number (``NaN > 5`` and ``NaN <> 5`` hold): a filter that
    Spark pushed into its Parquet reader would skip row groups whose NaN rows match. An
    expression is not a column Spark can push a filter on; the other columns keep their
    pruning."""
    types = {f.name: f.field_type for f in schema.fields}
    columns: list[Column] = []
    changed = False
    for name in df.columns:
        column = F.col(quoted(name))
        kept = _unpruned(column, types[name]) if name in types else None
        changed = changed or kept is not None
        columns.append(kept.alias(name) if kept is not None else column)
    if not changed:
        return df
    out: DataFrame = df.select(*columns)
    return out


def _unpruned(column: Column, t: IcebergType) -> Column | None:
    """``column`` (of type ``t``) with its floats out of reach of filter pushdown, or ``None``
    when it holds none Spark pushes filters on (those in lists and maps it does not)."""
    if isinstance(t, (FloatType, DoubleType)):
        return F.nanvl(column, column)
    if not isinstance(t, StructType):
        return None
    fields = [(f.name, _unpruned(column.getField(f.name), f.field_type)) for f in t.fields]
    if all(kept is None for _, kept in fields):
        return None
    rebuilt = F.struct(
        *[(kept if kept is not None else column.getField(n)).alias(n) for n, kept in fields]
    )
    return F.when(column.isNull(), F.lit(None)).otherwise(rebuilt)


def check_history(schema: Schema, history: tuple[Schema, ...]) -> None:
    """:class:`NotNative` unless reading by name gives the fields of ``schema`` in the files
    of every schema of the table's ``history``: the same names and types for the same ids,
    and no name (case-insensitively) that another field id had."""
    read = {f.field_id: (path, _type_key(f.field_type)) for path, f in _walk(schema.fields, ())}
    by_name: dict[tuple[str, ...], int] = {}
    for fid, (path, _) in read.items():
        key = tuple(p.lower() for p in path)
        if by_name.setdefault(key, fid) != fid:
            raise NotNative(f"columns {'.'.join(path)!r} differ only in case")
    for old in history:
        for path, f in _walk(old.fields, ()):
            name = ".".join(path)
            if f.field_id in read:
                now, t = read[f.field_id]
                if now != path:
                    raise NotNative(
                        f"column {'.'.join(now)!r} was named {name!r} in schema {old.schema_id}"
                    )
                if t != _type_key(f.field_type):
                    raise NotNative(f"column {name!r} changed type since schema {old.schema_id}")
            other = by_name.get(tuple(p.lower() for p in path))
            if other is not None and other != f.field_id:
                raise NotNative(
                    f"the name {name!r} belonged to another column in schema {old.schema_id}"
                )


def _walk(
    fields: tuple[NestedField, ...], prefix: tuple[str, ...]
) -> list[tuple[tuple[str, ...], NestedField]]:
    out: list[tuple[tuple[str, ...], NestedField]] = []
    for f in fields:
        path = (*prefix, f.name)
        out.append((path, f))
        t = f.field_type
        if isinstance(t, StructType):
            out.extend(_walk(t.fields, path))
        elif isinstance(t, ListType):
            out.extend(_walk((t.element_field,), path))
        elif isinstance(t, MapType):
            out.extend(_walk((t.key_field, t.value_field), path))
    return out


def _type_key(t: IcebergType) -> str:
    return str(t) if isinstance(t, PrimitiveType) else type(t).__name__


def _check_file(f: DataFile, specs: Mapping[int, PartitionSpec]) -> None:
    if f.file_format.upper() != "PARQUET":
        raise NotNative(f"{f.file_path} is a {f.file_format} file")
    native_os_path(f.file_path)
    if _GLOB_CHARACTERS.search(f.file_path):
        raise NotNative(f"{f.file_path} has characters spark.read.parquet takes for a glob")
    known = {*(f.value_counts or {}), *(f.column_sizes or {})}
    spec = specs[f.spec_id]
    for pf, value in zip(spec.fields, f.partition, strict=False):
        identity = parse_transform(pf.transform, strict=False).is_identity
        if identity and value is not None and pf.source_id not in known:
            raise NotNative(
                f"{f.file_path} may lack its identity partition column (no column metrics)"
            )


# ---- the filter option as a Spark condition -----------------------------------------------


def spark_filter(expression: Expression) -> Column | None:
    """A bound lakecat expression as a Spark condition selecting the same rows (None: all
    rows). lakecat's predicates are false for nulls and a bound expression has no NOT, so
    Spark's NULL results drop the same rows."""
    if isinstance(expression, AlwaysTrue):
        return None
    return _condition(expression)


def _condition(expression: Expression) -> Column:
    if isinstance(expression, And):
        return _condition(expression.left) & _condition(expression.right)
    if isinstance(expression, Or):
        return _condition(expression.left) | _condition(expression.right)
    if isinstance(expression, AlwaysTrue):
        return F.lit(True)
    if isinstance(expression, AlwaysFalse):
        return F.lit(False)
    if isinstance(expression, BoundPredicate):
        return _predicate(expression)
    raise ValidationError(f"expected a bound expression, got {expression}")


def _predicate(pred: BoundPredicate) -> Column:
    path = pred.ref.path or (pred.ref.name,)
    column = F.col(quoted(path[0]))
    for name in path[1:]:
        column = column.getField(name)
    op, t = pred.op, pred.ref.type
    if op is Operation.IS_NULL:
        return column.isNull()
    if op is Operation.NOT_NULL:
        return column.isNotNull()
    if isinstance(t, (FloatType, DoubleType)) and op in (Operation.IS_NAN, Operation.NOT_NAN):
        nan = F.isnan(column)
        return nan if op is Operation.IS_NAN else column.isNotNull() & ~nan
    if not isinstance(t, _COMPARABLE):
        raise NotNative(f"the filter {pred} compares {t} values, which Spark orders differently")
    if op in (Operation.IN, Operation.NOT_IN):
        member = column.isin([_literal(t, v) for v in pred.literals])
        return member if op is Operation.IN else ~member
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        starts = column.startswith(F.lit(pred.literal))
        return starts if op is Operation.STARTS_WITH else ~starts
    compare = _COMPARISONS.get(op)
    if compare is None:
        raise NotNative(f"the filter {pred} has no Spark form")
    result: Column = compare(column, _literal(t, pred.literal))
    if isinstance(t, (FloatType, DoubleType)) and op in (Operation.GT, Operation.GT_EQ):
        # lakecat compares as IEEE 754 (a NaN operand makes every comparison false but !=),
        # Spark orders NaN above every number; <, <=, =, != and the lists mean the same in
        # both (a bound literal is never NaN). The read applies the condition after
        # unpruned_floats, so none of it reaches Parquet's row-group pruning, whose
        # statistics leave NaN out (a pushed x != v could skip a row group of v and NaN).
        result = result & ~F.isnan(column)
    return result


def _literal(t: IcebergType, value: Any) -> Column:
    """A lakecat in-memory value as a Spark literal of the column's type (computed without
    the session time zone)."""
    if isinstance(t, DateType):
        return F.date_from_unix_date(F.lit(value))
    if isinstance(t, TimestamptzType):
        return F.timestamp_micros(F.lit(value))
    if isinstance(t, TimestampType):
        return F.timestamp_add("MICROSECOND", F.lit(value), F.expr(EPOCH_NTZ))
    if isinstance(t, (BinaryType, FixedType)):
        return F.lit(bytes(value))
    if isinstance(t, (FloatType, DoubleType)):
        return F.lit(value).cast("float" if isinstance(t, FloatType) else "double")
    return F.lit(value)
