"""Per-file values on the rows of a native read: each row's file, by Spark's name of it.

Spark's Parquet reader names a row's file in ``_metadata.file_path``: the file's URI,
URI-encoded (``file:/w/t/data/region=a%2520b/0.parquet`` for the folder ``region=a%20b``).
Turning that back into a path on every row (``url_decode``, a regular expression) costs
string work per row: as much as the read itself. So the driver goes the other way once per
file: it predicts the name Spark gives each planned file's rows from Spark's own listing of
the files (``DataFrame.inputFiles``: the same encoded path, spelled ``file:///...``), and
the rows are joined with a small broadcast table keyed by it that carries the per-file values
(a file's deleted positions, its ``first_row_id`` and data sequence number). Every row must
find its file there: a row whose file the table does not name fails the job
(:func:`joined_by_file`), so a misnamed file can never bring back a deleted row or lose a
row's lineage.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakecat.metadata.io import local_path
from lakecat.metadata.manifests import DataFile
from lakecat.spark_ext.native.support import NotNative

# the columns of the per-file tables the rows are joined with
FILE_INDEX = "__lakecat_file_index"
FIRST_ROW_ID = "__lakecat_first_row_id"
SEQUENCE_NUMBER = "__lakecat_sequence_number"
_KEY = "__lakecat_file_key"
_DELETED_FILE = "__lakecat_deleted_file"
_DELETED_POS = "__lakecat_deleted_pos"


def native_os_path(location: str) -> str:
    """The OS path of a data file Spark's reader reads as it is; :class:`NotNative` for a
    file that is not local, or that an older lakecat wrote under the unescaped form of its
    name (its FileIO finds those, Spark would not)."""
    path = local_path(location)
    if path is None:
        raise NotNative(f"{location} is not a local file")
    if "%" in path and not os.path.lexists(path):
        raise NotNative(f"{location} is stored under another form of its name")
    return path


def os_paths(files: Sequence[DataFile]) -> dict[str, str]:
    """The path in the table of each of ``files``, by its absolute OS path
    (:func:`native_os_path`)."""
    return {os.path.abspath(native_os_path(f.file_path)): f.file_path for f in files}


def spark_os_path(uri: str) -> str:
    """The OS path of the local file Spark names by ``uri`` (URI-encoded, as in
    ``_metadata.file_path`` and ``DataFrame.inputFiles``)."""
    return unquote(urlsplit(uri).path)


def spark_file_keys(df: DataFrame, by_os_path: Mapping[str, str]) -> dict[str, str]:
    """The ``_metadata.file_path`` Spark gives the rows of each data file ``df`` reads (a
    ``spark.read.parquet`` of their :func:`~lakecat.metadata.io.to_uri` forms; ``by_os_path``:
    their paths in the table by OS path, :func:`os_paths`), by path in the table, from
    Spark's listing of them (``inputFiles``: the same URI-encoded path, spelled
    ``file:///...`` where the rows' column spells ``file:/...``); :class:`NotNative` unless
    the listing names each of the files once."""
    keys: dict[str, str] = {}
    for uri in df.inputFiles():
        parts = urlsplit(uri)
        path = by_os_path.get(unquote(parts.path)) if parts.scheme == "file" else None
        if path is None or path in keys:
            raise NotNative(f"Spark lists {uri}, which is not one of the planned files")
        keys[path] = f"file:{parts.path}"
    if len(keys) != len(by_os_path):
        missing = sorted(set(by_os_path.values()) - set(keys))
        raise NotNative(f"Spark does not list {missing[0]}")
    return keys


def joined_by_file(
    spark: Any,
    df: DataFrame,
    file_column: str,
    files: Sequence[DataFile],
    keys: Mapping[str, str],
    sequence_numbers: Mapping[str, int] | None = None,
) -> DataFrame:
    """``df`` (rows whose ``file_column`` is Spark's ``_metadata.file_path``) joined with its
    files: each row gets its file's index in ``files`` in :data:`FILE_INDEX` and, with
    ``sequence_numbers`` (by path; row lineage), the file's ``first_row_id`` and data
    sequence number in :data:`FIRST_ROW_ID` and :data:`SEQUENCE_NUMBER`. A row whose file
    ``keys`` (by path in the table, from :func:`spark_file_keys`) does not name fails the
    job."""
    columns: dict[str, pa.Array] = {
        _KEY: pa.array([keys[f.file_path] for f in files], pa.string()),
        FILE_INDEX: pa.array(range(len(files)), pa.int32()),
    }
    if sequence_numbers is not None:
        columns[FIRST_ROW_ID] = pa.array([f.first_row_id for f in files], pa.int64())
        columns[SEQUENCE_NUMBER] = pa.array(
            [sequence_numbers.get(f.file_path) for f in files], pa.int64()
        )
    per_file = F.broadcast(spark.createDataFrame(pa.table(columns)))
    joined = df.join(per_file, df[file_column] == per_file[_KEY], "left")
    unknown = F.concat(F.lit("lakecat: Spark read a file that was not planned: "), df[file_column])
    known = F.when(F.col(FILE_INDEX).isNull(), F.raise_error(unknown)).otherwise(F.lit(True))
    out: DataFrame = joined.where(known).drop(_KEY)
    return out


def without_deleted(
    spark: Any,
    df: DataFrame,
    pos_column: str,
    files: Sequence[DataFile],
    deleted: Mapping[str, pa.Int64Array],
) -> DataFrame:
    """``df`` (rows with their file's :data:`FILE_INDEX` in ``files``, from
    :func:`joined_by_file`, and their ``_metadata.row_index`` in ``pos_column``) without the
    rows at the ``deleted`` positions (by path in the table) of their files: an anti join on
    two numbers, no string per row."""
    index = {f.file_path: i for i, f in enumerate(files)}
    numbers = [pa.repeat(pa.scalar(index[path], pa.int32()), len(p)) for path, p in deleted.items()]
    rows = pa.table(
        {
            _DELETED_FILE: pa.chunked_array(numbers, type=pa.int32()),
            _DELETED_POS: pa.chunked_array(list(deleted.values()), type=pa.int64()),
        }
    )
    gone = spark.createDataFrame(rows)
    on = (df[FILE_INDEX] == gone[_DELETED_FILE]) & (df[pos_column] == gone[_DELETED_POS])
    kept: DataFrame = df.join(gone, on, "left_anti")
    return kept
