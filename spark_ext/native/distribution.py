"""How a Spark write spreads its rows over tasks: the table's ``write.distribution-mode``.

Iceberg's writers redistribute a write's rows before the tasks write them, so that each task
writes fewer, larger files: ``hash`` puts the rows of one partition in one task, ``range``
gives each task a range of (partition, sort order), so that files do not overlap, and ``none``
writes the rows in the tasks they are in. lakecat does the same for the appends and
overwrites it writes from a DataFrame (``lk.write``; SQL ``INSERT`` and ``df.writeTo`` through
the catalog), **when the table sets the mode** (``ALTER TABLE ... WRITE DISTRIBUTED BY
PARTITION``, ``WRITE ORDERED BY``, ``set_write_order``, or the property itself). An unset mode
is ``none``, Spark's own behaviour for files, where Iceberg assumes ``hash`` for a partitioned
table: its shuffle costs an INSERT time that a table asks for explicitly here.

The rows ``lk.delete``/``lk.update``/``lk.merge`` write follow the statement's own property,
``write.delete|update|merge.distribution-mode`` as Iceberg names them, else Iceberg's choice
for the statement when the table sets ``write.distribution-mode`` (:func:`statement_mode`);
compactions keep their rows where they are (they group files themselves). The SQL catalog's
writes other than batch appends and overwrites (row-level statements, dynamic overwrites,
streams) have Spark spread their rows by the same modes, which the bridge hands the plugin
(``WriteRequirements`` in the plugin's Java), so staged rewrites are not spread here again.

The keys are Spark expressions equal for the rows of one partition: the field's value where
Spark computes it exactly (:mod:`.partitions`: identity, truncate, year, month, day, hour),
the source column itself for any other identity field; a ``bucket`` field (or a ``truncate``
of a decimal or binary) by the function of a lakecat SQL catalog of the session
(``<catalog>.system.bucket``), else left out, so that its rows may reach several tasks.
``range`` adds the table's sort order, as far as its fields are identity fields of top-level
columns.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import takewhile

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakecat.metadata import properties as P
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.table import TableMetadata
from lakecat.spark_ext.native.columns import quoted
from lakecat.spark_ext.native.partitions import (
    catalog_transform,
    partition_value,
    plan_partition,
    session_functions,
    source_column,
)
from lakecat.spark_ext.native.support import NotNative

NONE, HASH, RANGE = P.DISTRIBUTION_MODES


# a row-level statement's own property (Iceberg's names), by the statement
STATEMENT_MODES = {
    "delete": P.DELETE_DISTRIBUTION_MODE,
    "update": P.UPDATE_DISTRIBUTION_MODE,
    "merge": P.MERGE_DISTRIBUTION_MODE,
}


def distribution_mode(metadata: TableMetadata, statement: str | None = None) -> str:
    """The table's ``write.distribution-mode``, ``none`` when unset; for the rows of a
    row-level ``statement`` (``delete``, ``update``, ``merge``) see :func:`statement_mode`.
    :class:`ValidationError` for a value that is not a mode (before anything is written)."""
    if statement is not None:
        return statement_mode(metadata, statement)
    return P.get_choice(metadata.properties, P.WRITE_DISTRIBUTION_MODE)


def statement_mode(metadata: TableMetadata, statement: str) -> str:
    """The distribution mode of the rows a row-level ``statement`` writes: its own
    ``write.<statement>.distribution-mode`` when set; else, when the table sets
    ``write.distribution-mode``, what Iceberg's Spark runtime then uses (``hash`` for a
    ``delete`` or ``update`` and for a ``merge`` into a partitioned table, the table's mode for
    a ``merge`` into an unpartitioned one); ``none`` when the table sets neither."""
    own = STATEMENT_MODES.get(statement.lower())
    if own is None:
        raise ValidationError(
            f"row-level statement {statement!r}: use one of {', '.join(STATEMENT_MODES)}"
        )
    if own in metadata.properties:
        return P.get_choice(metadata.properties, own)
    if P.WRITE_DISTRIBUTION_MODE not in metadata.properties:
        return NONE
    if own == P.MERGE_DISTRIBUTION_MODE and metadata.spec().is_unpartitioned:
        return P.get_choice(metadata.properties, P.WRITE_DISTRIBUTION_MODE)
    return HASH


def distributed(frame: DataFrame, metadata: TableMetadata, mode: str) -> DataFrame:
    """``frame``, whose columns are the table's (by name), with its rows spread over tasks as
    ``mode`` asks, by the table's partitions (and, for ``range``, its sort order); ``bucket``
    and other transforms Spark has no expression for by a lakecat SQL catalog's functions
    when the session has one (:func:`partition_keys`)."""
    if mode == NONE:
        return frame
    columns = set(frame.columns)
    keys = partition_keys(metadata, columns, session_functions(frame.sparkSession))
    return distribute(frame, mode, keys, sort_keys(metadata, columns))


def distribute(
    frame: DataFrame, mode: str, partition_keys: Sequence[Column], sort_keys: Sequence[Column]
) -> DataFrame:
    """``frame`` with its rows spread over tasks as ``mode`` asks: ``hash`` by the partition
    keys, ``range`` by them and the sort keys; as it is without keys or with ``none``."""
    if mode == HASH and partition_keys:
        return frame.repartition(*partition_keys)
    if mode == RANGE and (partition_keys or sort_keys):
        return frame.repartitionByRange(*partition_keys, *sort_keys)
    return frame


def partition_keys(
    metadata: TableMetadata, columns: Collection[str], functions: str | None = None
) -> list[Column]:
    """The expressions that cluster the rows of a DataFrame in table form (``columns``: its
    top-level column names) by the table's partitions (see the module docstring); with
    ``functions``, the name of a lakecat SQL catalog of the session, a ``bucket`` or other
    ``truncate`` field by that catalog's function of the transform."""
    schema = metadata.schema()
    keys = []
    for pf in metadata.spec().fields:
        path = schema.column_path(pf.source_id)
        if path[0] not in columns:
            continue
        try:
            hidden = plan_partition(pf, schema, (), functions)
        except NotNative:
            if pf.transform == "identity":
                keys.append(source_column(path))
            elif functions is not None and pf.transform.startswith(("bucket[", "truncate[")):
                keys.append(catalog_transform(functions, pf.transform, source_column(path)))
            continue
        if hidden.column is not None and hidden.computable:
            keys.append(partition_value(hidden))
    return keys


def sort_keys(metadata: TableMetadata, columns: Collection[str]) -> list[Column]:
    """The table's sort order as Spark sort expressions, as far as its fields are identity
    fields of top-level columns of the DataFrame."""
    return sort_columns(tuple(takewhile(lambda s: s[0] in columns, column_sort(metadata))))


def column_sort(metadata: TableMetadata) -> tuple[tuple[str, str, str], ...]:
    """The table's sort order as (top-level column, ``asc``/``desc``, null order), as far as
    its fields are identity fields of top-level columns."""
    top_level = {f.field_id: f.name for f in metadata.schema().fields}
    out = []
    for f in metadata.sort_order().fields:
        if f.transform != "identity" or f.source_id not in top_level:
            break
        out.append((top_level[f.source_id], f.direction, f.null_order))
    return tuple(out)


def sort_columns(sort: Sequence[tuple[str, str, str]]) -> list[Column]:
    """Spark sort expressions of (column, direction, null order) triples."""
    return [ordered(F.col(quoted(name)), direction, nulls) for name, direction, nulls in sort]


def ordered(value: Column, direction: str, null_order: str) -> Column:
    """``value`` as a Spark sort expression: ``asc``/``desc``, ``nulls-first``/``nulls-last``."""
    first = null_order == "nulls-first"
    if direction == "asc":
        return value.asc_nulls_first() if first else value.asc_nulls_last()
    return value.desc_nulls_first() if first else value.desc_nulls_last()
