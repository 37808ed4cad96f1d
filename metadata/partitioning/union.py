"""A table's partition type over all its specs (Iceberg's ``Partitioning.partitionType``): what
metadata tables and partition statistics files key partitions by, whatever spec wrote them."""

from __future__ import annotations

from collections.abc import Iterable

from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.partitioning.transforms import parse_transform
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import IcebergType, NestedField, StructType


def union_fields(
    specs: Iterable[PartitionSpec], schemas: Iterable[Schema]
) -> list[tuple[str, PartitionField]]:
    """The fields of the partition type over all ``specs``, by field id: those whose source
    column the current (newest) schema has, each with the newest spec's name and a non-void
    use of the field (a field one spec dropped as ``void`` keeps its transform).

    Names are unique: where a newer spec gave a dropped field's name to another field
    (``REPLACE PARTITION FIELD bucket(4, id) WITH bucket(8, id) AS id_bucket``), the older
    field is named ``<name>_<field id>``, as format v1 renames the fields it drops (Iceberg
    Java builds a struct with the name twice, whose metadata tables then fail)."""
    current = max(schemas, key=lambda s: s.schema_id)
    chosen: dict[int, tuple[str, PartitionField]] = {}
    taken: set[str] = set()
    for spec in sorted(specs, key=lambda s: s.spec_id, reverse=True):
        for p in spec.fields:
            if not current.has_field(p.source_id):
                continue
            known = chosen.get(p.field_id)
            if known is None:
                name = p.name
                while name in taken:
                    name = f"{name}_{p.field_id}"
                taken.add(name)
                chosen[p.field_id] = (name, p)
            elif known[1].transform == "void" and p.transform != "void":
                chosen[p.field_id] = (known[0], p)
    return [chosen[field_id] for field_id in sorted(chosen)]


def union_type(specs: Iterable[PartitionSpec], schemas: Iterable[Schema]) -> StructType:
    """:func:`union_fields` as a struct of optional fields with their result types."""
    schemas = tuple(schemas)
    return StructType(
        tuple(
            NestedField(
                p.field_id,
                name,
                parse_transform(p.transform, strict=False).result_type(
                    source_type(schemas, p.source_id)
                ),
                required=False,
            )
            for name, p in union_fields(specs, schemas)
        )
    )


def source_type(schemas: Iterable[Schema], source_id: int) -> IcebergType:
    """The type of a partition source column, in the newest schema that has it."""
    for s in sorted(schemas, key=lambda s: s.schema_id, reverse=True):
        if s.has_field(source_id):
            return s.find_type(source_id)
    raise CorruptMetadata(f"no schema has the partition source column {source_id}")
