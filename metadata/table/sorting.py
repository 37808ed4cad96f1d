"""Sort orders."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Direction = Literal["asc", "desc"]
NullOrder = Literal["nulls-first", "nulls-last"]


@dataclass(frozen=True, slots=True)
class SortField:
    source_id: int
    transform: str = "identity"
    direction: Direction = "asc"
    null_order: NullOrder = "nulls-first"

    def to_json(self) -> dict[str, Any]:
        return {
            "transform": self.transform,
            "source-id": self.source_id,
            "direction": self.direction,
            "null-order": self.null_order,
        }

    @staticmethod
    def from_json(obj: dict[str, Any]) -> SortField:
        return SortField(obj["source-id"], obj["transform"], obj["direction"], obj["null-order"])


@dataclass(frozen=True, slots=True)
class SortOrder:
    order_id: int = 0
    fields: tuple[SortField, ...] = ()

    @property
    def is_unsorted(self) -> bool:
        return not self.fields

    def to_json(self) -> dict[str, Any]:
        return {"order-id": self.order_id, "fields": [f.to_json() for f in self.fields]}

    @staticmethod
    def from_json(obj: dict[str, Any]) -> SortOrder:
        return SortOrder(obj["order-id"], tuple(SortField.from_json(f) for f in obj["fields"]))


UNSORTED = SortOrder(0, ())
