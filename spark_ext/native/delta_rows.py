"""The new rows of a merge-on-read SQL statement, written by Spark's Parquet writer in its tasks.

A merge-on-read ``DELETE``/``UPDATE``/``MERGE`` through the catalog plugin hands each Spark
task the statement's new rows (updated and inserted) one at a time (the plugin's
``LakecatDeltaWrite``). When the table qualifies (:func:`plan_delta_rows`), the task writes
them itself with Spark's Parquet writer (the plugin's ``NativeRows``), as :mod:`.write` has
Spark write a DataFrame: the table's columns with their field ids, the session settings of
:data:`~lakecat.spark_ext.native.write.WRITE_CONFS`, the codec and sizes of the table
properties, each file in the ``<hidden column>=<value>`` folders of its partition
(:mod:`.partitions`' names and encodings, computed in the task) under a fresh job folder in
the table's data location; on format v3 each row carries ``_row_id`` and
``_last_updated_sequence_number`` last (an updated row keeps its id, and its sequence number
is null: the commit's applies; an inserted row has neither, so both are inherited), as the
staged write writes them. A task keeps at most 16 files open and buffers the rows of further
partitions (up to 64 MiB, then a file per partition), and rolls to a new file when one reaches
``write.target-file-size-bytes`` (the plugin's ``TargetFileSize``: the size Iceberg's Parquet
writer checks, docs/spark-sql.md, "File sizes").

The commit call then describes the files the tasks reported (:func:`describe_delta_rows`:
partition from the folders, cross-checked against the footer's ranges, metrics from the
footer) and commits them with the position deletes. Files in the job folder that no committed
task reported (a failed or speculative attempt's) are deleted.

What qualifies, otherwise the rows go through the Python data source in staging mode
(:class:`~lakecat.spark_ext.native.support.NotNative` says why):

* a local data location and a codec Spark writes as lakecat does
  (:mod:`.support`);
* no sort order: a task gets its rows one at a time and would have to sort them;
* the rows Spark hands over are the table's columns, in order, with the table's Spark types,
  and no required column is nullable there; no uuid, fixed or time column
  (:func:`~lakecat.spark_ext.native.columns.check_writable`; lists and maps are written with
  their element, key and value ids by the plugin's ``IdParquetFormat``, the tasks' format);
* partition fields that are identity, year, month, day, hour, bucket, truncate or void
  transforms of top-level columns (the task computes bucket of an int, long, date, timestamp,
  string or decimal with the spec's Murmur3 hash, as the catalog's ``bucket`` function does,
  and truncate of an int, long, decimal, string or binary; a truncate past its type's range
  or a decimal's precision fails the statement, as it fails a native write; not bucket of
  binary).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import types as st

from lakecat.catalog.engine import data_dir, delete_quietly
from lakecat.metadata import properties as P
from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.io import FileInfo, FileIO, join, to_uri
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.partitioning import BucketTransform, IdentityTransform, TruncateTransform
from lakecat.metadata.schema import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    ROW_ID,
    BinaryType,
    NestedField,
    with_lineage,
)
from lakecat.metadata.table import TableMetadata
from lakecat.spark_ext.native.columns import check_writable, field_metadata, id_type
from lakecat.spark_ext.native.partitions import HiddenPartition, plan_partitions
from lakecat.spark_ext.native.support import NotNative, parquet_write_options, require_local
from lakecat.spark_ext.native.write import WRITE_CONFS, describe_file, relative
from lakecat.spark_ext.types import spark_type


@dataclass(frozen=True)
class DeltaRowsPlan:
    """What the plugin's tasks need to write a statement's new rows."""

    folder: str  # the job folder, under the table's data location
    schema: st.StructType  # the table's columns with field ids (v3: then the lineage columns)
    partitions: tuple[HiddenPartition, ...]
    writer_options: dict[str, str]
    target_file_size: int

    @property
    def lineage(self) -> bool:
        """Whether the rows carry ``_row_id`` and ``_last_updated_sequence_number`` last."""
        return ROW_ID.name in self.schema.fieldNames()

    def to_json(self) -> dict[str, Any]:
        """The plan as the plugin reads it (``NativeRows.plan``)."""
        ordinals = {f.name: i for i, f in enumerate(self.schema.fields)}
        return {
            "folder": to_uri(self.folder),  # for Spark's writer
            "location": self.folder,  # for the commit call, in the table's form
            "schema": self.schema.json(),
            "options": self.writer_options,
            "confs": dict(WRITE_CONFS),
            "target_file_size": self.target_file_size,
            "lineage": self.lineage,
            "partitions": [
                {
                    "column": p.column,
                    "ordinal": ordinals[p.source_path[0]],
                    "transform": str(p.transform),
                }
                for p in self.partitions
                if p.column is not None
            ],
        }


def plan_delta_rows(metadata: TableMetadata, rows: st.StructType) -> DeltaRowsPlan:
    """How the tasks write the new rows (Spark schema ``rows``) of a merge-on-read statement
    on the table version ``metadata``; :class:`NotNative` when they do not qualify. A
    ``DELETE``, whose tasks write no rows (``rows`` has no columns), always qualifies: it then
    needs no Python data source write at all."""
    location = data_dir(metadata)
    folder = join(location, f"delta-{uuid.uuid4().hex}")
    schema = metadata.schema()
    if not rows.fields:
        fields = [_field(f) for f in schema.fields]
        return DeltaRowsPlan(folder, _written_schema(metadata, fields), (), {}, 0)
    require_local(location, "the table's data location")
    writer_options = parquet_write_options(metadata.properties)
    if not metadata.sort_order().is_unsorted:
        raise NotNative("the table has a sort order (rows reach a task one at a time)")
    check_writable(schema, lists_and_maps=True)  # the tasks write with the plugin's format
    fields = [_written_field(f, rows, i) for i, f in enumerate(schema.fields)]
    if len(rows.fields) != len(schema.fields):
        raise NotNative(f"the statement's rows have {len(rows.fields)} columns, not the table's")
    return DeltaRowsPlan(
        folder=folder,
        schema=_written_schema(metadata, fields),
        partitions=plan_delta_partitions(metadata),
        writer_options=writer_options,
        target_file_size=P.get_int(
            metadata.properties,
            P.WRITE_TARGET_FILE_SIZE_BYTES,
            P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
        ),
    )


def _written_schema(metadata: TableMetadata, fields: list[st.StructField]) -> st.StructType:
    """The columns the tasks write: the table's, then on format v3 the row lineage columns."""
    if metadata.format_version >= 3:
        fields = fields + [_field(f) for f in (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)]
    return st.StructType(fields)


def plan_delta_partitions(metadata: TableMetadata) -> tuple[HiddenPartition, ...]:
    """The hidden partition columns the tasks compute (:class:`NotNative` for a transform
    or source they do not)."""
    schema = metadata.schema()
    partitions = plan_partitions(metadata.spec(), schema, taken=[f.name for f in schema.fields])
    for p in partitions:
        if p.column is None:
            continue
        name = str(p.transform)
        if len(p.source_path) != 1:
            raise NotNative(f"partition field {p.field.name!r} has a nested source column")
        computed = (
            isinstance(p.transform, IdentityTransform)
            or name in _TIME_TRANSFORMS
            or isinstance(p.transform, TruncateTransform)
            or (
                isinstance(p.transform, BucketTransform)
                and not isinstance(p.source_type, BinaryType)
            )
        )
        if not computed:
            raise NotNative(
                f"partition field {p.field.name!r} ({name} of {p.source_type}) is not computed "
                "in tasks"
            )
    return partitions


_TIME_TRANSFORMS = frozenset({"year", "month", "day", "hour"})


def _written_field(f: NestedField, rows: st.StructType, index: int) -> st.StructField:
    if index >= len(rows.fields) or rows.fields[index].name != f.name:
        raise NotNative(f"the statement's rows do not have the table's column {f.name!r} there")
    found = rows.fields[index]
    if not _same_type(found.dataType, spark_type(f.field_type, f.name)):
        raise NotNative(
            f"column {f.name!r} reaches the write as {found.dataType.simpleString()}, not as "
            "the table's type"
        )
    if f.required and found.nullable:
        raise NotNative(f"the required column {f.name!r} is nullable in the statement's rows")
    return _field(f)


def _field(f: NestedField) -> st.StructField:
    """A table column as the tasks write it, with its field id (nested ones too)."""
    return st.StructField(f.name, id_type(f.field_type), not f.required, metadata=field_metadata(f))


def _same_type(a: st.DataType, b: st.DataType) -> bool:
    """Equal Spark types, field names included, nullability and metadata left aside."""
    if isinstance(a, st.StructType) and isinstance(b, st.StructType):
        return len(a.fields) == len(b.fields) and all(
            x.name == y.name and _same_type(x.dataType, y.dataType)
            for x, y in zip(a.fields, b.fields, strict=True)
        )
    if isinstance(a, st.ArrayType) and isinstance(b, st.ArrayType):
        return _same_type(a.elementType, b.elementType)
    if isinstance(a, st.MapType) and isinstance(b, st.MapType):
        return _same_type(a.keyType, b.keyType) and _same_type(a.valueType, b.valueType)
    return not isinstance(a, (st.StructType, st.ArrayType, st.MapType)) and a == b


def describe_delta_rows(
    io: FileIO, metadata: TableMetadata, folder: str, reported: Sequence[str]
) -> list[DataFile]:
    """The data files the statement's committed tasks reported in ``folder``, described; any
    other file there (a failed or speculative task attempt's) is deleted. Raises
    :class:`CorruptMetadata` for a reported file outside the folder or missing."""
    prefix = folder.rstrip("/") + "/"
    listed: dict[str, FileInfo] = {}
    for info in io.list_prefix(folder):
        key = relative(info.location, folder)  # named in the folder's form
        listed[key] = replace(info, location=prefix + key)
    if not listed and not reported:
        return []  # no task wrote a row (a DELETE's tasks never do)
    partitions = plan_delta_partitions(metadata)
    schema = metadata.schema()
    if metadata.format_version >= 3:
        schema = with_lineage(schema)
    wanted = set()
    for path in reported:
        key = relative(path, folder)
        if key not in listed:
            raise CorruptMetadata(f"{path}: a task reported a file its job folder does not hold")
        wanted.add(key)
    delete_quietly(io, [info.location for key, info in listed.items() if key not in wanted])
    described = []
    for key in sorted(wanted):
        f = describe_file(
            io, listed[key], key.split("/")[:-1], metadata, partitions, None, schema=schema
        )
        if f is not None:
            described.append(f)
    return described
