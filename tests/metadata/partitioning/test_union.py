"""The partition type over all of a table's specs (Iceberg's ``Partitioning.partitionType``)."""

from __future__ import annotations

from lakecat.metadata.partitioning import PartitionField, PartitionSpec, union_fields, union_type
from lakecat.metadata.schema import IntegerType, LongType, NestedField, Schema, StringType

SCHEMA = Schema.of(
    NestedField(1, "id", LongType()),
    NestedField(2, "region", StringType()),
)


def spec(spec_id: int, *fields: tuple[int, int, str, str]) -> PartitionSpec:
    return PartitionSpec(
        spec_id,
        tuple(
            PartitionField(source, fid, transform, name) for source, fid, transform, name in fields
        ),
    )


def test_every_specs_fields_by_id_with_the_newest_name() -> None:
    first = spec(0, (2, 1000, "identity", "region"), (1, 1001, "bucket[4]", "id_bucket"))
    renamed = spec(1, (2, 1000, "identity", "area"), (1, 1001, "bucket[4]", "id_bucket"))

    assert [(name, p.field_id) for name, p in union_fields([first, renamed], [SCHEMA])] == [
        ("area", 1000),
        ("id_bucket", 1001),
    ]


def test_a_name_a_newer_spec_gave_another_field_names_the_older_field_by_its_id() -> None:
    # REPLACE PARTITION FIELD bucket(4, id) WITH bucket(8, id) AS id_bucket
    first = spec(0, (2, 1000, "identity", "region"), (1, 1001, "bucket[4]", "id_bucket"))
    second = spec(1, (2, 1000, "identity", "region"), (1, 1002, "bucket[8]", "id_bucket"))

    union = union_type([first, second], [SCHEMA])

    assert [(f.name, f.field_id) for f in union.fields] == [
        ("region", 1000),
        ("id_bucket_1001", 1001),
        ("id_bucket", 1002),
    ]
    assert [f.field_type for f in union.fields] == [StringType(), IntegerType(), IntegerType()]
    # and when that name is taken as well, the id again
    third = spec(2, (2, 1000, "identity", "id_bucket_1001"), (1, 1002, "bucket[8]", "id_bucket"))
    names = [name for name, _ in union_fields([first, second, third], [SCHEMA])]
    assert names == ["id_bucket_1001", "id_bucket_1001_1001", "id_bucket"]
