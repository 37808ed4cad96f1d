"""The rows of some data files that match a condition, found by Spark's own Parquet reader.

Before it changes anything, ``lk.delete`` or ``lk.update`` runs one Spark job over the
candidate files: which of them hold a row matching the condition (copy-on-write rewrites
those), or the positions of those rows (merge-on-read deletes them by position). The job
needs the condition's columns and each row's file and position. When the files qualify
(the checks of :mod:`lakecat.spark_ext.native.read` for those columns: names agree with field
ids over the schema history, local Parquet files, ...; no equality delete applies), Spark's
Parquet reader reads them, as the SQL catalog's ``DELETE`` and ``UPDATE`` do:

* a row's position is Spark's ``_metadata.row_index`` (it numbers every row of a file, as
  ``_pos`` does), its file Spark's ``_metadata.file_path``, a URI read back on the driver
  once per file, never per row;
* the condition is applied to the rows as read: no filter on a float column is pushed into
  the reader, whose row-group statistics leave NaN out
  (:func:`~lakecat.spark_ext.native.read.unpruned_floats`);
* the rows that position deletes and deletion vectors already delete are taken out on the
  driver from the positions found (so a file whose only matching rows are deleted is not
  touched).

Otherwise (the reason is logged), or when the condition names anything but table columns
(the ``_file`` and ``_pos`` metadata columns, a subquery), the Python data source reads them,
with the deletes applied in its tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakecat.metadata.errors import LakecatError
from lakecat.metadata.manifests import DataFile
from lakecat.spark_ext.dml.conditions import spark_columns
from lakecat.spark_ext.dml.positions import file_positions
from lakecat.spark_ext.native.file_keys import os_paths, spark_os_path
from lakecat.spark_ext.native.read import (
    check_native_rows,
    position_deletes,
    read_located,
)
from lakecat.spark_ext.native.support import NotNative
from lakecat.spark_ext.source.staging import TargetTable
from lakecat.spark_ext.types import spark_schema

log = logging.getLogger("lakecat.spark")

# the columns of a row's file (Spark's URI of it) and position
_FILE = "__lakecat_match_file"
_POS = "__lakecat_match_pos"


@dataclass(frozen=True)
class NativeMatches:
    """The rows of some data files that match a condition, as Spark's Parquet reader reads
    them (:func:`native_matches`)."""

    rows: DataFrame  # the matching rows: Spark's URI of their file, and their position
    paths: Mapping[str, str]  # each file's OS path: its path in the table
    deleted: Mapping[str, pa.Int64Array]  # the positions deletes delete, by path in the table

    def files(self) -> set[str]:
        """The files (their paths in the table) with at least one live matching row."""
        if self.deleted:
            return set(self.positions())
        found = self.rows.select(_FILE).distinct().collect()
        return {self._path(r[0]) for r in found}

    def positions(self) -> dict[str, pa.Int64Array]:
        """The positions of the live matching rows of each file with any, sorted and
        distinct, by the file's path in the table."""
        out: dict[str, pa.Int64Array] = {}
        for uri, found in file_positions(self.rows, F.col(_FILE), F.col(_POS)).items():
            path = self._path(uri)
            deleted = self.deleted.get(path)
            if deleted is not None:
                found = found.filter(pc.invert(pc.is_in(found, value_set=deleted)))
            if len(found):
                out[path] = found
        return out

    def _path(self, uri: str) -> str:
        path = self.paths.get(spark_os_path(uri))
        if path is None:
            raise LakecatError(f"Spark read a file that was not planned: {uri}")
        return path


def native_matches(
    spark: Any,
    target: TargetTable,
    files: Sequence[DataFile],
    condition: str,
    deletes: Mapping[str, Sequence[DataFile]],
) -> NativeMatches | None:
    """The rows of ``files`` matching the Spark SQL ``condition``, read by Spark's Parquet
    reader (``deletes``: the delete files of each, by path); ``None`` when the files or the
    condition do not qualify (the reason is logged)."""
    try:
        found = _native_matches(spark, target, files, condition, deletes)
    except NotNative as exc:
        log.info("lakecat: finding the rows of %s through the data source: %s", target.name, exc)
        return None
    log.debug("lakecat: finding the rows of %s with Spark's Parquet reader", target.name)
    return found


def _native_matches(
    spark: Any,
    target: TargetTable,
    files: Sequence[DataFile],
    condition: str,
    deletes: Mapping[str, Sequence[DataFile]],
) -> NativeMatches:
    metadata = target.metadata
    schema = metadata.schema()
    columns = spark_columns(spark, condition, schema.column_names)
    if columns is None:
        raise NotNative("the condition names more than table columns, or has a subquery")
    read = schema.select(columns)
    check_native_rows(metadata, read, files)
    paths = os_paths(files)
    deleted = position_deletes(target.io, metadata, schema, files, deletes)
    located = read_located(
        spark, files, spark_schema(read), read, file_column=_FILE, pos_column=_POS
    )
    rows = located.where(F.expr(condition)).select(_FILE, _POS)
    return NativeMatches(rows, paths, deleted)
