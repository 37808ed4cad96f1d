"""The rows of some data files, read by Spark's own Parquet reader where they qualify.

``lk.update`` reads the rows of the files it changes, ``lk.merge`` the rows of its candidate
files, and a copy-on-write ``lk.delete`` the rows of the files it rewrites: whole rows, with
each row's file (``_file``) and position (``_pos``), and on format v3 its row lineage
(``_row_id``, ``_last_updated_sequence_number``), the rows that deletes delete left out. The
Python data source reads them so (``read_files``); when the files qualify (the checks of
:mod:`lakecat.spark_ext.native.read` for the whole schema: names agree with field ids over the
schema history, local Parquet files, ...; no equality delete applies; no column named
``_metadata``), Spark's Parquet reader does, as the SQL catalog's statements read:

* ``_pos`` is Spark's ``_metadata.row_index`` (it numbers every row of a file, as ``_pos``
  does);
* ``_file`` is Spark's ``_metadata.file_path``: the file's URI, which :meth:`FileRows.path`
  turns back into the file's path in the table on the driver (the statements only collect
  it: the files with changes, the positions of changed rows). Turning it back on the
  executors would cost string work on every row; so a statement whose own expressions name
  ``_file`` reads through the data source, where ``_file`` is the path in the table;
* where the rows need a per-file value (the deleted positions of a file with position
  deletes or deletion vectors; a v3 file's ``first_row_id`` and data sequence number), the
  driver predicts each file's ``_metadata.file_path`` from Spark's listing of the files
  (:mod:`lakecat.spark_ext.native.file_keys`) and the rows are joined with a small
  broadcast table keyed by it; a row whose file is not in that table fails the job (never a
  deleted row kept or a row without its lineage);
* row lineage as the spec assigns it where the file does not store it: ``_row_id`` = the
  file's ``first_row_id`` + ``_pos``, ``_last_updated_sequence_number`` = its data sequence
  number (neither for a file without a ``first_row_id``);
* float and double columns are read through ``nanvl(c, c)``, so that no filter on them is
  pushed into the reader, whose row-group statistics leave NaN out.

Otherwise (the reason is logged at INFO), the Python data source reads the files.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as st

from lakecat.metadata.errors import LakecatError
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID
from lakecat.spark_ext.native.columns import quoted
from lakecat.spark_ext.native.file_keys import (
    FIRST_ROW_ID,
    SEQUENCE_NUMBER,
    joined_by_file,
    os_paths,
    spark_file_keys,
    spark_os_path,
    without_deleted,
)
from lakecat.spark_ext.native.read import (
    check_native_rows,
    position_deletes,
    read_located,
)
from lakecat.spark_ext.native.support import NotNative
from lakecat.spark_ext.source.staging import TargetTable, read_files
from lakecat.spark_ext.types import FILE_COLUMN, POS_COLUMN, spark_schema

log = logging.getLogger("lakecat.spark")

_NAMES_FILE = re.compile(r"\b_file\b", re.IGNORECASE)
_LINEAGE = (ROW_ID.name, LAST_UPDATED_SEQUENCE_NUMBER.name)


@dataclass(frozen=True)
class FileRows:
    """The rows of some data files (:func:`file_rows`) and how to turn a ``_file`` value of
    theirs into the file's path in the table."""

    rows: DataFrame
    native: bool
    # native: each file's OS path -> its path in the table
    paths: Mapping[str, str] = field(default_factory=dict)

    def path(self, value: str) -> str:
        """The path in the table of the file whose ``_file`` value is ``value``."""
        if not self.native:
            return value
        path = self.paths.get(spark_os_path(value))
        if path is None:
            raise LakecatError(f"Spark read a file that was not planned: {value}")
        return path


def names_file_column(*expressions: str | None) -> bool:
    """Whether any of a statement's own expressions (conditions, SET values) names the
    ``_file`` metadata column."""
    return any(e is not None and _NAMES_FILE.search(e) for e in expressions)


def file_rows(
    spark: Any,
    target: TargetTable,
    files: Sequence[DataFile],
    *,
    deletes: Mapping[str, Sequence[DataFile]],
    sequence_numbers: Mapping[str, int],
    data_source_only: str | None = None,
    columns: Sequence[str] | None = None,
) -> FileRows:
    """The live rows of ``files`` (planned against ``target``'s metadata; ``deletes``: the
    delete files of each, by path; ``sequence_numbers``: their data sequence numbers, for row
    lineage) with ``_file`` and ``_pos`` and, on a table with row lineage, its columns, read
    by Spark's Parquet reader where they qualify, else by the data source; also there when
    ``data_source_only`` gives a reason. ``columns``: only these table columns, without the
    lineage (the data source gets no column pruning from Spark)."""
    try:
        if data_source_only is not None:
            raise NotNative(data_source_only)
        rows = _native_rows(spark, target, files, deletes, sequence_numbers, columns)
    except NotNative as exc:
        log.info("lakecat: reading the rows of %s through the data source: %s", target.name, exc)
        lineage = target.row_lineage and columns is None
        return FileRows(
            read_files(spark, target, files, row_lineage=lineage, columns=columns), False
        )
    log.debug("lakecat: reading the rows of %s with Spark's Parquet reader", target.name)
    return rows


def _native_rows(
    spark: Any,
    target: TargetTable,
    files: Sequence[DataFile],
    deletes: Mapping[str, Sequence[DataFile]],
    sequence_numbers: Mapping[str, int],
    columns: Sequence[str] | None,
) -> FileRows:
    metadata = target.metadata
    schema = metadata.schema()
    check_native_rows(metadata, schema, files)
    deleted = position_deletes(target.io, metadata, schema, files, deletes)
    lineage = target.row_lineage and columns is None
    read = spark_schema(schema if columns is None else schema.select(list(columns)))
    if lineage:
        read = st.StructType([*read.fields, *(st.StructField(c, st.LongType()) for c in _LINEAGE)])
    df = read_located(spark, files, read, schema, file_column=FILE_COLUMN, pos_column=POS_COLUMN)
    paths = os_paths(files)
    keys = spark_file_keys(df, paths)
    if lineage or deleted:
        numbers = sequence_numbers if lineage else None
        df = joined_by_file(spark, df, FILE_COLUMN, files, keys, numbers)
    if deleted:
        df = without_deleted(spark, df, POS_COLUMN, files, deleted)
    if lineage:
        df = _with_lineage(df)
    columns = [*read.fieldNames(), FILE_COLUMN, POS_COLUMN]
    return FileRows(df.select(*[F.col(quoted(c)) for c in columns]), True, paths)


def _with_lineage(df: DataFrame) -> DataFrame:
    """``df`` with the row lineage the spec assigns where its file does not store it."""
    first = F.col(FIRST_ROW_ID)
    assigned = first.isNotNull()
    row_id, updated = (F.col(quoted(c)) for c in _LINEAGE)
    return df.withColumns(
        {
            ROW_ID.name: F.when(assigned, F.coalesce(row_id, first + F.col(POS_COLUMN))).otherwise(
                row_id
            ),
            LAST_UPDATED_SEQUENCE_NUMBER.name: F.when(
                assigned, F.coalesce(updated, F.col(SEQUENCE_NUMBER))
            ).otherwise(updated),
        }
    )
