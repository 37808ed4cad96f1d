"""Metrics of Parquet files another writer wrote, from their footers alone."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.io.metrics import (
    NAN_COUNTS_KEY,
    ColumnRange,
    file_metrics,
    footer_metrics,
    footer_ranges,
)
from lakecat.metadata.io.parquet_footer import data_file_from_footer, read_footer
from lakecat.metadata.partitioning.spec import UNPARTITIONED
from lakecat.metadata.schema.arrow import conform_to_schema
from lakecat.metadata.schema.conversions import from_bytes
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    StructType,
)

SCHEMA = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "value", DoubleType()),
    NestedField(4, "price", DecimalType(10, 2)),
    NestedField(5, "day", DateType()),
    NestedField(6, "point", StructType((NestedField(7, "x", DoubleType()),))),
)


def data() -> pa.Table:
    table = pa.table(
        {
            "id": pa.array([3, 1, 2], pa.int64()),
            "name": ["b", None, "a" * 40],
            "value": [1.5, None, -2.0],
            "price": pa.array([Decimal("1.25"), None, Decimal("-3.00")], pa.decimal128(10, 2)),
            "day": [dt.date(2024, 1, 2), None, dt.date(1000, 1, 1)],
            "point": [{"x": 1.0}, None, {"x": None}],
        }
    )
    return conform_to_schema(table, SCHEMA)


def write(path: Path, table: pa.Table, **options: object) -> pq.FileMetaData:
    pq.write_table(table, path, **options)  # type: ignore[arg-type]
    return pq.read_metadata(path)


def test_footer_metrics_equal_the_writers_metrics_without_nan_counts(tmp_path: Path) -> None:
    table = data()
    footer = write(tmp_path / "f.parquet", table)
    full = file_metrics(footer, table, SCHEMA, {})
    alone = footer_metrics(footer, SCHEMA, {})
    assert alone.nan_value_counts == {}
    assert full.nan_value_counts == {3: 0, 7: 0}
    for name in ("record_count", "column_sizes", "value_counts", "null_value_counts"):
        assert getattr(alone, name) == getattr(full, name)
    assert alone.lower_bounds == full.lower_bounds and alone.upper_bounds == full.upper_bounds
    assert from_bytes(StringType(), alone.lower_bounds[2]) == "a" * 16  # truncate(16)


def with_nan_counts(table: pa.Table, text: bytes) -> pa.Table:
    """``table`` whose Parquet footer will hold ``lakecat.nan.counts = text``."""
    return table.replace_schema_metadata({**(table.schema.metadata or {}), NAN_COUNTS_KEY: text})


def test_nan_counts_a_writer_recorded_in_the_footer_are_taken(tmp_path: Path) -> None:
    """Columns by their index (value is column 2, point.x column 5); other columns' entries
    and an entry in mode none are not metrics."""
    footer = write(tmp_path / "f.parquet", with_nan_counts(data(), b"2:1,5:0,0:2"))
    assert footer_metrics(footer, SCHEMA, {}).nan_value_counts == {3: 1, 7: 0}
    none = {"write.metadata.metrics.column.value": "none"}
    assert footer_metrics(footer, SCHEMA, none).nan_value_counts == {7: 0}


@pytest.mark.parametrize("text", [b"2:x", b"2-1", b"2:4"])
def test_nan_counts_that_are_not_counts_of_the_column_are_refused(
    tmp_path: Path, text: bytes
) -> None:
    footer = write(tmp_path / "f.parquet", with_nan_counts(data(), text))
    with pytest.raises(CorruptMetadata, match=r"NaN|column:count"):
        footer_metrics(footer, SCHEMA, {})


def test_footer_metrics_leave_out_what_the_footer_lacks(tmp_path: Path) -> None:
    table = data()
    footer = write(tmp_path / "f.parquet", table, write_statistics=["id", "value"])
    alone = footer_metrics(footer, SCHEMA, {})
    full = file_metrics(footer, table, SCHEMA, {})
    assert set(alone.lower_bounds) == {1, 3} and set(alone.null_value_counts) == {1, 3}
    assert set(full.lower_bounds) == {1, 2, 3, 4, 5, 7}  # computed from the data instead
    assert alone.value_counts == full.value_counts


def test_footer_ranges_are_untruncated_and_in_memory_form(tmp_path: Path) -> None:
    footer = write(tmp_path / "f.parquet", data())
    ranges = footer_ranges(footer, SCHEMA, [1, 2, 4, 5, 7])
    assert ranges[1] == ColumnRange(3, 0, 1, 3)
    assert ranges[2] == ColumnRange(3, 1, "a" * 40, "b")
    assert ranges[4] == ColumnRange(3, 1, Decimal("-3.00"), Decimal("1.25"))
    assert ranges[5] == ColumnRange(3, 1, -354285, 19724)  # days
    assert ranges[7] == ColumnRange(3, 2, 1.0, 1.0)
    nulls = write(tmp_path / "n.parquet", data().slice(1, 1))
    assert footer_ranges(nulls, SCHEMA, [2])[2] == ColumnRange(1, 1, None, None)


def test_a_file_whose_columns_do_not_follow_the_schema_is_refused(tmp_path: Path) -> None:
    footer = write(tmp_path / "f.parquet", data().select(["id", "value"]))
    with pytest.raises(CorruptMetadata, match="columns"):
        footer_metrics(footer, SCHEMA, {})


def test_a_data_file_from_a_footer_read_through_the_file_io(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    write(path, data())
    io = LocalFileIO()
    footer = read_footer(io, str(path))
    f = data_file_from_footer(
        footer,
        location=str(path),
        size=path.stat().st_size,
        schema=SCHEMA,
        spec=UNPARTITIONED,
        partition=(),
        properties={},
    )
    assert (f.record_count, f.file_format, f.partition) == (3, "PARQUET", ())
    assert f.file_size_in_bytes == path.stat().st_size and f.split_offsets
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(CorruptMetadata, match="footer"):
        read_footer(io, str(tmp_path / "bad.parquet"))
