"""The columns of each metadata table (Iceberg 1.10's names, types and order)."""

from __future__ import annotations

from pyspark.sql import types as st
from pyspark.sql.types import StructType

METADATA_TABLE = "metadata-table"  # read option: which metadata table

_TEXT, _LONG, _INT = st.StringType(), st.LongType(), st.IntegerType()
_TIME, _BOOL, _BYTES = st.TimestampType(), st.BooleanType(), st.BinaryType()
_PARTITION = st.MapType(_TEXT, _TEXT)


def _fields(*columns: tuple[str, st.DataType]) -> list[st.StructField]:
    return [st.StructField(name, t) for name, t in columns]


def _schema(*columns: tuple[str, st.DataType]) -> StructType:
    return StructType(_fields(*columns))


# Iceberg's DataFile struct (api/.../DataFile.java getType), readable_metrics left out
_CONTENT_FILE = _fields(
    ("content", _INT),
    ("file_path", _TEXT),
    ("file_format", _TEXT),
    ("spec_id", _INT),
    ("partition", _PARTITION),
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
_FILES = StructType(_CONTENT_FILE)
_ENTRIES = _schema(
    ("status", _INT),
    ("snapshot_id", _LONG),
    ("sequence_number", _LONG),
    ("file_sequence_number", _LONG),
    ("data_file", StructType(_CONTENT_FILE)),
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

SCHEMAS: dict[str, StructType] = {
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
    "entries": _ENTRIES,
    "all_entries": _ENTRIES,
    "files": _FILES,
    "data_files": _FILES,
    "delete_files": _FILES,
    "all_files": _FILES,
    "all_data_files": _FILES,
    "all_delete_files": _FILES,
    "partitions": _schema(
        ("partition", _PARTITION),
        ("spec_id", _INT),
        ("record_count", _LONG),
        ("file_count", _INT),
        ("total_data_file_size_in_bytes", _LONG),
        ("position_delete_record_count", _LONG),
        ("position_delete_file_count", _INT),
        ("equality_delete_record_count", _LONG),
        ("equality_delete_file_count", _INT),
        ("last_updated_at", _TIME),
        ("last_updated_snapshot_id", _LONG),
    ),
    "position_deletes": _schema(
        ("file_path", _TEXT),
        ("pos", _LONG),
        ("row", st.MapType(_TEXT, _TEXT)),
        ("partition", _PARTITION),
        ("spec_id", _INT),
        ("delete_file_path", _TEXT),
        ("content_offset", _LONG),
        ("content_size_in_bytes", _LONG),
    ),
}
METADATA_TABLES = tuple(SCHEMAS)
