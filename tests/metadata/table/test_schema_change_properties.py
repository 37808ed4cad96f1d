"""A schema change carries the table properties that name columns along, as Iceberg Java's
``SchemaUpdate`` commits them: the name mapping (``schema.name-mapping.default``) learns new
names and new columns (so files imported later, without field ids, are read by them), and the
per-column metrics and bloom filter properties follow a renamed column and go with a deleted
one. Iceberg Java's own results are compared in
``tests/interop/test_schema_changes_keep_mappings.py``."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from lakecat.metadata.partitioning.spec import UNPARTITIONED
from lakecat.metadata.schema import NameMapping, name_mapping_of
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DoubleType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.new_table import new_table_metadata
from lakecat.metadata.table.schema_evolution import SchemaUpdate
from lakecat.metadata.table.sorting import UNSORTED
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import AddSchema, SetCurrentSchema

MAPPING_KEY = "schema.name-mapping.default"
METRICS = "write.metadata.metrics.column."
BLOOM = "write.parquet.bloom-filter-enabled.column."
T0 = 1_700_000_000_000

SCHEMA = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "note", StringType()),
    NestedField(
        4,
        "loc",
        StructType((NestedField(7, "lat", DoubleType()), NestedField(8, "lon", DoubleType()))),
    ),
    NestedField(
        5,
        "points",
        ListType(9, StructType((NestedField(11, "x", LongType()),))),
    ),
    NestedField(
        6,
        "attrs",
        MapType(10, StringType(), 12, StructType((NestedField(13, "m", LongType()),))),
    ),
)


def _table(properties: dict[str, str]) -> TableMetadata:
    return new_table_metadata(
        schema=SCHEMA,
        spec=UNPARTITIONED,
        sort_order=UNSORTED,
        location="file:///w/t",
        properties=properties,
        now_ms=T0,
    )


def _mapped(base: TableMetadata) -> TableMetadata:
    mapping = NameMapping.of_schema(base.schema())
    # the mapping knows an old name of cat, as after an import of files that called it so
    mapping = NameMapping.parse(mapping.to_json().replace('["cat"]', '["category","cat"]'))
    return _table({MAPPING_KEY: mapping.to_json()})


def _names_by_id(mapping: NameMapping | None) -> dict[Any, Any]:
    """The mapping as {field id: (sorted names, children)} (name order carries no meaning)."""
    assert mapping is not None

    def level(fields: Any) -> dict[Any, Any]:
        return {f.field_id: (sorted(f.names), level(f.fields)) for f in fields}

    return level(mapping.fields)


def _commit(base: TableMetadata, update: SchemaUpdate) -> TableMetadata:
    return apply(base, update.updates(), now_ms=T0 + 1)


def test_a_renamed_column_keeps_its_old_names_and_gains_the_new_one() -> None:
    base = _mapped(_table({}))
    after = _commit(base, SchemaUpdate(base).rename_column("cat", "kind"))
    mapped = _names_by_id(name_mapping_of(after.properties))
    assert mapped[2] == (["cat", "category", "kind"], {})
    after = _commit(after, SchemaUpdate(after).rename_column("loc.lat", "latitude"))
    mapped = _names_by_id(name_mapping_of(after.properties))
    assert mapped[4][1][7] == (["lat", "latitude"], {})


def test_added_columns_are_mapped_at_every_level_with_their_nested_fields() -> None:
    base = _mapped(_table({}))
    update = (
        SchemaUpdate(base)
        .add_column("score", DoubleType())
        .add_column("loc.alt", DoubleType())
        .add_column(("points", "y"), LongType())
        .add_column("attrs.n", LongType())
        .add_column("tags", ListType(0, StringType()))
    )
    after = _commit(base, update)
    schema = after.schema()
    mapped = _names_by_id(name_mapping_of(after.properties))
    assert mapped[schema.find_field("score").field_id] == (["score"], {})
    assert mapped[4][1][schema.find_field("loc.alt").field_id] == (["alt"], {})
    element = mapped[5][1][9][1]
    assert element[schema.find_field("points.element.y").field_id] == (["y"], {})
    assert mapped[6][1][12][1][schema.find_field("attrs.value.n").field_id] == (["n"], {})
    tags = schema.find_field("tags")
    assert mapped[tags.field_id] == (
        ["tags"],
        {tags.field_type.element_id: (["element"], {})},  # type: ignore[attr-defined]
    )


def test_a_name_given_to_another_field_is_taken_from_the_old_one() -> None:
    base = _mapped(_table({}))
    # note is dropped and added back: files without ids that have a "note" column now map to
    # the new column, as Iceberg Java maps them
    after = _commit(base, SchemaUpdate(base).delete_column("note"))
    after = _commit(after, SchemaUpdate(after).add_column("note", StringType()))
    mapped = _names_by_id(name_mapping_of(after.properties))
    new_note = after.schema().find_field("note").field_id
    assert mapped[3] == ([], {})
    assert mapped[new_note] == (["note"], {})
    # and a rename onto an alias another field still holds moves the alias
    after = _commit(after, SchemaUpdate(after).rename_column("id", "category"))
    mapped = _names_by_id(name_mapping_of(after.properties))
    assert mapped[1] == (["category", "id"], {})
    assert mapped[2] == (["cat"], {})


def test_files_without_ids_read_new_names_through_the_updated_mapping() -> None:
    base = _mapped(_table({}))
    after = _commit(
        base, SchemaUpdate(base).rename_column("cat", "kind").add_column("score", DoubleType())
    )
    mapping = name_mapping_of(after.properties)
    assert mapping is not None
    file_schema = pa.schema([("id", pa.int64()), ("kind", pa.string()), ("score", pa.float64())])
    ids = [f.metadata[b"PARQUET:field_id"] for f in mapping.with_ids(file_schema)]
    assert ids == [b"1", b"2", str(after.schema().find_field("score").field_id).encode()]


def test_a_table_without_a_mapping_gets_none() -> None:
    base = _table({"owner": "x"})
    update = SchemaUpdate(base).rename_column("cat", "kind").add_column("y", LongType())
    assert [type(u) for u in update.updates()] == [AddSchema, SetCurrentSchema]
    assert MAPPING_KEY not in _commit(base, update).properties


def test_column_properties_follow_a_rename_and_go_with_a_delete() -> None:
    props = {
        METRICS + "cat": "none",
        METRICS + "note": "full",
        METRICS + "loc.lat": "counts",
        BLOOM + "cat": "true",
        BLOOM + "id": "true",
        "write.metadata.metrics.default": "truncate(8)",
    }
    base = _table(props)
    update = (
        SchemaUpdate(base)
        .rename_column("cat", "kind")
        .rename_column("loc.lat", "latitude")
        .delete_column("note")
    )
    after = _commit(base, update)
    assert {k: v for k, v in after.properties.items() if k in props or k.startswith(METRICS)} | {
        k: v for k, v in after.properties.items() if k.startswith(BLOOM)
    } == {
        METRICS + "kind": "none",
        METRICS + "loc.latitude": "counts",
        BLOOM + "kind": "true",
        BLOOM + "id": "true",
        "write.metadata.metrics.default": "truncate(8)",
    }


def test_two_columns_that_swap_names_swap_their_properties() -> None:
    base = _table({METRICS + "cat": "none", METRICS + "note": "full"})
    update = (
        SchemaUpdate(base)
        .rename_column("cat", "tmp")
        .rename_column("note", "cat")
        .rename_column("cat", "note")
    )
    after = _commit(base, update)
    assert after.schema().find_field("note").field_id == 2
    assert after.properties[METRICS + "note"] == "none"
    assert after.properties[METRICS + "cat"] == "full"
    assert METRICS + "tmp" not in after.properties


def test_a_change_that_keeps_the_names_leaves_mapping_and_properties_alone() -> None:
    base = _mapped(_table({}))
    base = _table({**base.properties, METRICS + "cat": "none"})
    after = _commit(base, SchemaUpdate(base).update_column("cat", doc="the category"))
    assert after.schema().find_field("cat").doc == "the category"
    assert json.loads(after.properties[MAPPING_KEY]) == json.loads(base.properties[MAPPING_KEY])
    assert after.properties[METRICS + "cat"] == "none"


def test_a_renamed_field_whose_struct_the_same_change_deletes_has_no_property_to_move() -> None:
    mapped = _mapped(_table({}))
    base = _table({**mapped.properties, METRICS + "loc.lat": "none", METRICS + "cat": "full"})
    update = SchemaUpdate(base).rename_column("loc.lat", "latitude").delete_column("loc")
    after = _commit(base, update)
    assert not after.schema().has_field("loc")
    assert METRICS + "loc.latitude" not in after.properties
    assert after.properties[METRICS + "loc.lat"] == "none"  # only loc's own key would go
    assert after.properties[METRICS + "cat"] == "full"


def test_fields_under_a_mapped_name_without_an_id_are_still_renamed() -> None:
    mapping = [
        {"field-id": 1, "names": ["id"]},
        {"names": ["legacy"], "fields": [{"field-id": 2, "names": ["cat"]}]},
    ]
    base = _table({MAPPING_KEY: json.dumps(mapping)})
    after = _commit(base, SchemaUpdate(base).rename_column("cat", "kind"))
    got = json.loads(after.properties[MAPPING_KEY])
    assert got[1]["fields"][0] == {"field-id": 2, "names": ["cat", "kind"]}
    assert "field-id" not in got[1]


def test_an_unchanged_mapping_keeps_its_text() -> None:
    text = '[ {"names": ["id"], "field-id": 1}, {"field-id": 2, "names": ["cat"]} ]'
    base = _table({MAPPING_KEY: text})
    after = _commit(base, SchemaUpdate(base).update_column("note", doc="free text"))
    assert after.properties[MAPPING_KEY] == text
