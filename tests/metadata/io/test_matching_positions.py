"""Finding the positions of the rows a filter matches (a merge-on-read delete's work) reads only
the filter's columns of the row groups that may match, and numbers rows as the file does."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from counting_io import CountingIO

from lakecat.metadata.expressions import InclusiveMetricsEvaluator, bind, parse, to_arrow_filter
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.io.matching import matching_positions
from lakecat.metadata.io.parquet import write_data_file
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import UNPARTITIONED
from lakecat.metadata.schema.arrow import conform_to_schema
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
)

ROWS = 1000
GROUP_ROWS = 128  # eight row groups, the last one short

SCHEMA = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "st", StructType((NestedField(4, "x", LongType()),))),
    NestedField(5, "small", IntegerType()),
)
# the table's schema later: "name" renamed, "small" promoted to long, a column added
EVOLVED = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "label", StringType()),
    NestedField(3, "st", StructType((NestedField(4, "x", LongType()),))),
    NestedField(5, "small", LongType()),
    NestedField(6, "added", StringType()),
    schema_id=1,
)


def rows() -> pa.Table:
    ids = list(range(ROWS))
    return pa.table(
        {
            "id": ids,
            "name": [None if i % 7 == 0 else f"n{i % 50}" for i in ids],
            "st": [{"x": (i * 37) % ROWS} for i in ids],
            "small": pa.array([i % 10 for i in ids], pa.int32()),
        }
    )


@pytest.fixture
def data_file(tmp_path) -> DataFile:
    return write_data_file(
        LocalFileIO(),
        str(tmp_path / "f.parquet"),
        conform_to_schema(rows(), SCHEMA),
        schema=SCHEMA,
        spec=UNPARTITIONED,
        partition=(),
        properties={"write.parquet.row-group-limit": str(GROUP_ROWS)},
    )


def expected(schema: Schema, text: str) -> list[int]:
    """The reference: every row of the file in the schema's form, numbered, then filtered."""
    data = rows().rename_columns([f.name for f in schema.fields[:4]])
    if schema is EVOLVED:
        data = data.set_column(3, "small", pc.cast(data.column("small"), pa.int64()))
        data = data.append_column("added", pa.nulls(ROWS, pa.string()))
    numbered = data.append_column("pos", pa.array(range(ROWS), pa.int64()))
    bound = bind(schema, parse(text))
    return numbered.filter(to_arrow_filter(bound)).column("pos").to_pylist()


def positions(
    io, data_file: DataFile, schema: Schema, text: str, *, threads: int = 1, prune: bool = True
) -> list[int]:
    bound = bind(schema, parse(text))
    found = matching_positions(
        io,
        data_file,
        filter_schema=schema,
        row_filter=to_arrow_filter(bound),
        row_group_filter=InclusiveMetricsEvaluator(schema, bound) if prune else None,
        threads=threads,
    )
    assert found.type == pa.int64()
    return found.to_pylist()


FILTERS = [
    "id >= 900",
    "id IN (3, 130, 131, 999, 5000)",
    "id < 10 OR id > 990",
    "st.x < 100",
    "name = 'n7'",
    "name IS NULL",
    "name LIKE 'n1%'",
    "small = 4 AND id > 500",
    "id > 5000",
    "true",
]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("text", FILTERS)
def test_positions_are_those_of_the_matching_rows_ascending(data_file, text, threads):
    got = positions(LocalFileIO(), data_file, SCHEMA, text, threads=threads)
    assert got == expected(SCHEMA, text)


@pytest.mark.parametrize(
    "text",
    ["label = 'n7'", "label IS NULL", "small >= 8", "added IS NULL", "added = 'x'"],
)
def test_columns_resolve_by_field_id_as_the_table_schema_has_them_now(data_file, text):
    # renamed, promoted and added columns: the filter names them as the table does now
    got = positions(LocalFileIO(), data_file, EVOLVED, text, threads=2)
    assert got == expected(EVOLVED, text)


def test_only_the_filter_columns_of_row_groups_that_may_match_are_read(data_file):
    io = CountingIO()
    assert positions(io, data_file, SCHEMA, "id > 5000") == []
    footer = io.counter[0]
    io = CountingIO()
    assert positions(io, data_file, SCHEMA, "id = 600") == [600]
    one_group = io.counter[0] - footer
    io = CountingIO()
    assert positions(io, data_file, SCHEMA, "id = 600", prune=False) == [600]
    every_group = io.counter[0] - footer
    io = CountingIO()
    assert positions(io, data_file, SCHEMA, "name = 'n0'", prune=False) == expected(
        SCHEMA, "name = 'n0'"
    )
    other_column = io.counter[0] - footer
    assert 0 < one_group < every_group / 4
    # the id column of every row group is not the name column of every row group
    assert every_group != other_column


def test_a_file_with_no_matching_row_group_reads_no_column(data_file):
    io = CountingIO()
    assert positions(io, data_file, SCHEMA, "id > 5000", threads=4) == []
    nothing = io.counter[0]
    io = CountingIO()
    assert positions(io, data_file, SCHEMA, "id = 600") == [600]
    assert nothing < io.counter[0]
