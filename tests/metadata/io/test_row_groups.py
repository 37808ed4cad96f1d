"""Reading skips the row groups whose Parquet statistics rule the filter out, by field id."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from counting_io import CountingIO

from lakecat.metadata.expressions import InclusiveMetricsEvaluator, bind, parse, to_arrow_filter
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.io.parquet import read_data_file, write_data_file
from lakecat.metadata.io.row_groups import StatsColumn, row_group_metrics
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import UNPARTITIONED
from lakecat.metadata.schema.arrow import conform_to_schema
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
)

ROWS = 1000
GROUP_ROWS = 250  # four row groups, ids ascending

SCHEMA = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "st", StructType((NestedField(4, "x", LongType()),))),
)


def write(tmp_path, data: pa.Table, schema: Schema) -> DataFile:
    return write_data_file(
        LocalFileIO(),
        str(tmp_path / "f.parquet"),
        conform_to_schema(data, schema),
        schema=schema,
        spec=UNPARTITIONED,
        partition=(),
        properties={"write.parquet.row-group-limit": str(GROUP_ROWS)},
    )


def rows() -> pa.Table:
    ids = list(range(ROWS))
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "st": [{"x": i} for i in ids]})


def read(data_file: DataFile, schema: Schema, text: str, *, prune: bool) -> tuple[pa.Table, int]:
    """The rows matching ``text`` and the bytes read for them (the footer included)."""
    bound = bind(schema, parse(text))
    counting = CountingIO()
    out = read_data_file(
        counting,
        data_file,
        projected=schema,
        row_filter=to_arrow_filter(bound),
        row_group_filter=InclusiveMetricsEvaluator(schema, bound) if prune else None,
    )
    return out, counting.counter[0]


@pytest.fixture
def data_file(tmp_path) -> DataFile:
    f = write(tmp_path, rows(), SCHEMA)
    assert pq.read_metadata(f.file_path).num_row_groups == ROWS // GROUP_ROWS
    return f


@pytest.mark.parametrize("text", ["id >= 900", "st.x < 100", "id = 600"])
def test_a_filter_reads_only_the_row_groups_whose_statistics_may_match(data_file, text):
    pruned, pruned_bytes = read(data_file, SCHEMA, text, prune=True)
    whole, whole_bytes = read(data_file, SCHEMA, text, prune=False)
    _, footer_bytes = read(data_file, SCHEMA, "id > 5000", prune=True)  # no row group
    assert pruned.equals(whole)
    assert pruned.num_rows in (1, 100)
    # one row group of four
    assert (pruned_bytes - footer_bytes) * 3 < whole_bytes - footer_bytes


def test_a_filter_no_row_group_can_match_reads_none(data_file):
    out, _ = read(data_file, SCHEMA, "id > 5000 OR name IS NULL", prune=True)
    assert out.num_rows == 0
    assert out.schema.names == ["id", "name", "st"]


def test_a_renamed_column_prunes_row_groups_by_its_field_id(data_file):
    renamed = Schema.of(NestedField(1, "key", LongType(), required=True), *SCHEMA.fields[1:])
    pruned, pruned_bytes = read(data_file, renamed, "key >= 900", prune=True)
    _, whole_bytes = read(data_file, renamed, "key >= 900", prune=False)
    _, footer_bytes = read(data_file, renamed, "key > 5000", prune=True)
    assert pruned.column("key").to_pylist() == list(range(900, ROWS))
    assert (pruned_bytes - footer_bytes) * 3 < whole_bytes - footer_bytes


def test_a_promoted_column_reads_every_row_group_and_filters_exactly(tmp_path):
    narrow = Schema.of(NestedField(1, "id", IntegerType(), required=True))
    f = write(tmp_path, pa.table({"id": pa.array(range(ROWS), pa.int32())}), narrow)
    wide = Schema.of(NestedField(1, "id", LongType(), required=True))
    pruned, pruned_bytes = read(f, wide, "id >= 900", prune=True)
    _, whole_bytes = read(f, wide, "id >= 900", prune=False)
    assert pruned.column("id").to_pylist() == list(range(900, ROWS))
    assert pruned_bytes == whole_bytes  # int statistics are not trusted for a long column


def test_a_file_without_statistics_reads_every_row_group(tmp_path):
    path = tmp_path / "plain.parquet"
    table = pa.table({"id": pa.array(range(ROWS), pa.int64())})
    pq.write_table(table, path, row_group_size=GROUP_ROWS, write_statistics=False)
    plain = DataFile(str(path), "PARQUET", (), ROWS, path.stat().st_size)
    schema = Schema.of(NestedField(1, "id", LongType()))
    out, _ = read(plain, schema, "id >= 900", prune=True)
    assert out.column("id").to_pylist() == list(range(900, ROWS))


def test_row_group_metrics_leave_out_nan_bounds_and_missing_statistics(tmp_path):
    path = tmp_path / "nan.parquet"
    table = pa.table({"d": [1.0, float("nan"), 3.0], "s": ["a", None, "c"]})
    pq.write_table(table, path, write_statistics=["d"])
    row_group = pq.read_metadata(path).row_group(0)
    columns = {1: StatsColumn(0, DoubleType()), 2: StatsColumn(1, StringType())}
    metrics = row_group_metrics(row_group, columns, path=str(path))
    assert metrics.record_count == 3
    assert metrics.value_counts == {1: 3, 2: 3}
    assert set(metrics.null_value_counts or {}) == {1}  # no statistics at all for "s"
    assert set(metrics.lower_bounds or {}) == {1}  # pyarrow leaves NaN out of the bounds
