"""The columns of each metadata table (Iceberg 1.10's names, types and order).

Some of them depend on the table (:class:`Shape`): the ``partition`` struct, the
``readable_metrics`` struct and ``position_deletes.row``; :func:`schema` puts them in.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import types as st
from pyspark.sql.types import StructType

METADATA_TABLE = "metadata-table"  # read option: which metadata table

_TEXT, _LONG, _INT = st.StringType(), st.LongType(), st.IntegerType()
_TIME, _BOOL, _BYTES = st.TimestampType(), st.BooleanType(), st.BinaryType()


def _fields(*columns: tuple[str, st.DataType]) -> list[st.StructField]:
    return [st.StructField(name, t) for name, t in columns]


def _schema(*columns: tuple[str, st.DataType]) -> StructType:
    return StructType(_fields(*columns))


@dataclass(frozen=True)
class Shape:
    """What of a metadata table's columns depends on the table: Iceberg's partition type
    over all its specs (``Partitioning.partitionType``; without fields, the ``partition``
    columns are left out, and ``partitions.spec_id`` with them), the ``readable_metrics``
    struct (a struct of metrics per primitive column, by qualified name), the table's row
    (``position_deletes.row``) and the format version (``position_deletes`` has
    ``content_offset`` and ``content_size_in_bytes`` from v3 on)."""

    partition: StructType
    readable_metrics: StructType
    row: StructType
    format_version: int

    @property
    def partitioned(self) -> bool:
        return bool(self.partition.fields)

    def partition_column(self) -> list[st.StructField]:
        return _fields(("partition", self.partition)) if self.partitioned else []


# Iceberg's DataFile struct (api/.../DataFile.java getType), partition after spec_id
_FILE_HEAD = _fields(
    ("content", _INT),
    ("file_path", _TEXT),
    ("file_format", _TEXT),
    ("spec_id", _INT),
)
_FILE_TAIL = _fields(
    ("record_count", _LONG),
    ("file_size_in_bytes", _LONG),
    ("column_sizes", st.MapType(_INT, _LONG)),
    ("value_counts", st.MapType(_INT, _LONG)),
    ("null_value_counts", st.MapType(_INT, _LONG)),
    ("nan_value_counts", st.MapType(_INT, _LONG)),
    ("lower_bounds", st.MapType(_INT, _BYTES)),
    ("upper_bounds", st.MapType(_INT, _BYTES)),
    ("key_metadata", _BYTES),
    ("split_offsets", st.ArrayType(_LONG)),
    ("equality_ids", st.ArrayType(_INT)),
    ("sort_order_id", _INT),
    ("first_row_id", _LONG),
    ("referenced_data_file", _TEXT),
    ("content_offset", _LONG),
    ("content_size_in_bytes", _LONG),
)
_ENTRY_HEAD = _fields(
    ("status", _INT),
    ("snapshot_id", _LONG),
    ("sequence_number", _LONG),
    ("file_sequence_number", _LONG),
)
_SUMMARIES = st.ArrayType(
    _schema(
        ("contains_null", _BOOL),
        ("contains_nan", _BOOL),
        ("lower_bound", _TEXT),
        ("upper_bound", _TEXT),
    )
)
_MANIFEST = _fields(
    ("content", _INT),
    ("path", _TEXT),
    ("length", _LONG),
    ("partition_spec_id", _INT),
    ("added_snapshot_id", _LONG),
    ("added_data_files_count", _INT),
    ("existing_data_files_count", _INT),
    ("deleted_data_files_count", _INT),
    ("added_delete_files_count", _INT),
    ("existing_delete_files_count", _INT),
    ("deleted_delete_files_count", _INT),
    ("partition_summaries", _SUMMARIES),
)

_FIXED: dict[str, StructType] = {
    "snapshots": _schema(
        ("committed_at", _TIME),
        ("snapshot_id", _LONG),
        ("parent_id", _LONG),
        ("operation", _TEXT),
        ("manifest_list", _TEXT),
        ("summary", st.MapType(_TEXT, _TEXT)),
    ),
    "history": _schema(
        ("made_current_at", _TIME),
        ("snapshot_id", _LONG),
        ("parent_id", _LONG),
        ("is_current_ancestor", _BOOL),
    ),
    "refs": _schema(
        ("name", _TEXT),
        ("type", _TEXT),
        ("snapshot_id", _LONG),
        ("max_reference_age_in_ms", _LONG),
        ("min_snapshots_to_keep", _INT),
        ("max_snapshot_age_in_ms", _LONG),
    ),
    "metadata_log_entries": _schema(
        ("timestamp", _TIME),
        ("file", _TEXT),
        ("latest_snapshot_id", _LONG),
        ("latest_schema_id", _INT),
        ("latest_sequence_number", _LONG),
    ),
    "manifests": StructType(_MANIFEST),
    "all_manifests": StructType(
        [*_MANIFEST, *_fields(("reference_snapshot_id", _LONG), ("key_metadata", _BYTES))]
    ),
}
_PARTITION_COUNTS = _fields(
    ("record_count", _LONG),
    ("file_count", _INT),
    ("total_data_file_size_in_bytes", _LONG),
    ("position_delete_record_count", _LONG),
    ("position_delete_file_count", _INT),
    ("equality_delete_record_count", _LONG),
    ("equality_delete_file_count", _INT),
    ("last_updated_at", _TIME),
    ("last_updated_snapshot_id", _LONG),
)
_FILE_TABLES = (
    "files",
    "data_files",
    "delete_files",
    "all_files",
    "all_data_files",
    "all_delete_files",
)
METADATA_TABLES = (
    *_FIXED,
    "entries",
    "all_entries",
    *_FILE_TABLES,
    "partitions",
    "position_deletes",
)


def content_file(shape: Shape) -> StructType:
    """Iceberg's DataFile struct of the table: the ``data_file`` of entries tables, and the
    files tables' columns before ``readable_metrics``."""
    return StructType([*_FILE_HEAD, *shape.partition_column(), *_FILE_TAIL])


def schema(kind: str, shape: Shape) -> StructType:
    """The columns of the metadata table ``kind`` of a table of this shape."""
    fixed = _FIXED.get(kind)
    if fixed is not None:
        return fixed
    metrics = _fields(("readable_metrics", shape.readable_metrics))
    if kind in _FILE_TABLES:
        return StructType([*content_file(shape).fields, *metrics])
    if kind in ("entries", "all_entries"):
        return StructType([*_ENTRY_HEAD, *_fields(("data_file", content_file(shape))), *metrics])
    if kind == "partitions":
        head = [*shape.partition_column(), *_fields(("spec_id", _INT))] if shape.partitioned else []
        return StructType([*head, *_PARTITION_COUNTS])
    if kind == "position_deletes":
        blob = _fields(("content_offset", _LONG), ("content_size_in_bytes", _LONG))
        return StructType(
            [
                *_fields(("file_path", _TEXT), ("pos", _LONG), ("row", shape.row)),
                *shape.partition_column(),
                *_fields(("spec_id", _INT), ("delete_file_path", _TEXT)),
                *(blob if shape.format_version >= 3 else []),
            ]
        )
    raise KeyError(kind)
