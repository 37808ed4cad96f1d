"""Partition specs. Transforms are kept as the spec's strings (``"bucket[16]"``); their
behaviour lives in :mod:`lakecat.metadata.partitioning.transforms`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Partition field ids start at 1000 (spec: "Partition Specs").
PARTITION_FIELD_ID_START = 1000
UNPARTITIONED_LAST_PARTITION_ID = PARTITION_FIELD_ID_START - 1


@dataclass(frozen=True, slots=True)
class PartitionField:
    source_id: int
    field_id: int
    transform: str
    name: str

    def to_json(self) -> dict[str, Any]:
        return {
            "source-id": self.source_id,
            "field-id": self.field_id,
            "transform": self.transform,
            "name": self.name,
        }

    @staticmethod
    def from_json(obj: dict[str, Any]) -> PartitionField:
        return PartitionField(obj["source-id"], obj["field-id"], obj["transform"], obj["name"])


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    spec_id: int = 0
    fields: tuple[PartitionField, ...] = ()

    @property
    def is_unpartitioned(self) -> bool:
        return all(f.transform == "void" for f in self.fields)

    @property
    def last_assigned_field_id(self) -> int:
        return max((f.field_id for f in self.fields), default=UNPARTITIONED_LAST_PARTITION_ID)

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Same fields in the same order (spec ids may differ)."""
        return tuple((f.source_id, f.transform, f.name) for f in self.fields) == tuple(
            (f.source_id, f.transform, f.name) for f in other.fields
        )

    def to_json(self) -> dict[str, Any]:
        return {"spec-id": self.spec_id, "fields": [f.to_json() for f in self.fields]}

    @staticmethod
    def from_json(obj: dict[str, Any]) -> PartitionSpec:
        return PartitionSpec(
            obj["spec-id"], tuple(PartitionField.from_json(f) for f in obj["fields"])
        )


UNPARTITIONED = PartitionSpec(0, ())
