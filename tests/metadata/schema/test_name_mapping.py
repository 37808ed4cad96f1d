"""Files without field ids are read through the table's name mapping
(``schema.name-mapping.default``), as the spec's "Column Projection" says: each column takes the
id its name maps to (old names included), a column the mapping does not name is not read."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions import bind, parse, to_arrow_filter
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.io.matching import matching_positions
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema import NameMapping, name_mapping_of
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

# the table now: "name" renamed to "label", "point.y" renamed to "point.z", "extra" added
TABLE = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "label", StringType()),
    NestedField(
        3,
        "point",
        StructType((NestedField(4, "x", IntegerType()), NestedField(5, "z", IntegerType()))),
    ),
    NestedField(6, "tags", ListType(7, StringType())),
    NestedField(8, "attrs", MapType(9, StringType(), 10, LongType())),
    NestedField(11, "extra", StringType()),
)
MAPPING = [
    {"field-id": 1, "names": ["id"]},
    {"field-id": 2, "names": ["name", "label"]},
    {
        "field-id": 3,
        "names": ["point"],
        "fields": [{"field-id": 4, "names": ["x"]}, {"field-id": 5, "names": ["y", "z"]}],
    },
    {"field-id": 6, "names": ["tags"], "fields": [{"field-id": 7, "names": ["element"]}]},
    {
        "field-id": 8,
        "names": ["attrs"],
        "fields": [{"field-id": 9, "names": ["key"]}, {"field-id": 10, "names": ["value"]}],
    },
    {"field-id": 11, "names": ["extra"]},
]


@pytest.fixture
def plain_file(tmp_path) -> DataFile:
    """A Parquet file as a plain writer (Hive, Spark without ids) wrote it, with the old names
    and a column ("label") that is not the renamed one."""
    path = tmp_path / "plain.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "name": ["a", None],
                "point": [{"x": 1, "y": 10}, {"x": 2, "y": None}],
                "tags": [["t1"], []],
                "attrs": pa.array([[("k", 5)], None], pa.map_(pa.string(), pa.int64())),
                "unmapped": ["u", "v"],
            }
        ),
        path,
    )
    return DataFile(str(path), "PARQUET", (), 2, path.stat().st_size)


def test_columns_take_the_ids_their_names_map_to_at_every_level(plain_file) -> None:
    mapping = NameMapping.parse(json.dumps(MAPPING))
    rows = read_data_file(LocalFileIO(), plain_file, projected=TABLE, name_mapping=mapping)
    assert rows.to_pylist() == [
        {
            "id": 1,
            "label": "a",
            "point": {"x": 1, "z": 10},
            "tags": ["t1"],
            "attrs": [("k", 5)],
            "extra": None,
        },
        {
            "id": 2,
            "label": None,
            "point": {"x": 2, "z": None},
            "tags": [],
            "attrs": None,
            "extra": None,
        },
    ]


def test_without_the_mapping_renamed_columns_would_read_as_nulls(plain_file) -> None:
    rows = read_data_file(LocalFileIO(), plain_file, projected=TABLE.select(["id", "label"]))
    assert rows.column("label").to_pylist() == [None, None]


def test_a_column_the_mapping_does_not_name_is_not_read(plain_file) -> None:
    # "extra" is mapped, but only as "extra": the file's "unmapped" column is never it
    mapping = NameMapping.parse(
        json.dumps([*MAPPING[:5], {"field-id": 11, "names": ["unmapped2"]}])
    )
    rows = read_data_file(
        LocalFileIO(), plain_file, projected=TABLE.select(["id", "extra"]), name_mapping=mapping
    )
    assert rows.column("extra").to_pylist() == [None, None]


def test_filters_and_positions_use_the_mapped_columns(plain_file) -> None:
    mapping = NameMapping.parse(json.dumps(MAPPING))
    bound = bind(TABLE, parse("label = 'a' OR point.z IS NULL"))
    rows = read_data_file(
        LocalFileIO(),
        plain_file,
        projected=TABLE.select(["id"]),
        row_filter=to_arrow_filter(bound),
        filter_schema=TABLE,
        name_mapping=mapping,
    )
    assert rows.column("id").to_pylist() == [1, 2]
    found = matching_positions(
        LocalFileIO(),
        plain_file,
        filter_schema=TABLE,
        row_filter=to_arrow_filter(bind(TABLE, parse("label = 'a'"))),
        name_mapping=mapping,
    )
    assert found.to_pylist() == [0]


def test_a_schema_maps_by_its_current_names_and_round_trips_as_json() -> None:
    mapping = NameMapping.of_schema(TABLE)
    assert NameMapping.parse(mapping.to_json()) == mapping
    assert json.loads(mapping.to_json())[5] == {"names": ["extra"], "field-id": 11}
    tags = mapping.field("tags")
    assert tags is not None and tags.child("element") is not None
    assert name_mapping_of({"schema.name-mapping.default": mapping.to_json()}) == mapping
    assert name_mapping_of({}) is None


@pytest.mark.parametrize(
    "text", ["{", '{"a": 1}', '[{"names": "id"}]', '[{"field-id": "x", "names": []}]']
)
def test_a_malformed_mapping_is_a_typed_error(text) -> None:
    with pytest.raises(ValidationError):
        NameMapping.parse(text)


def test_a_mapping_that_names_none_of_a_files_columns_reads_nothing_by_name(tmp_path) -> None:
    # the file's "label" has the table's current name, but the mapping knows field 2 only as
    # "other": the column is not read, not even by its name
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"label": ["x", "y"]}), path)
    plain = DataFile(str(path), "PARQUET", (), 2, path.stat().st_size)
    mapping = NameMapping.parse(json.dumps([{"field-id": 2, "names": ["other"]}]))
    rows = read_data_file(
        LocalFileIO(), plain, projected=TABLE.select(["label"]), name_mapping=mapping
    )
    assert rows.column("label").to_pylist() == [None, None]
    # without a mapping, a file without ids is read by name
    by_name = read_data_file(LocalFileIO(), plain, projected=TABLE.select(["label"]))
    assert by_name.column("label").to_pylist() == ["x", "y"]


def test_the_same_mapping_text_is_parsed_once() -> None:
    props = {"schema.name-mapping.default": json.dumps(MAPPING)}
    first = name_mapping_of(props)
    assert first is not None and name_mapping_of(dict(props)) is first
    other = name_mapping_of({"schema.name-mapping.default": json.dumps(MAPPING[:1])})
    assert other is not None and other is not first and len(other.fields) == 1
