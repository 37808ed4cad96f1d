"""Iceberg v2 data types as frozen values.

Primitive types compare by value and print as the spec's type strings (``"decimal(9,2)"``,
``"fixed[16]"``). Nested types carry their field ids, as the spec requires. Values of each type
have one in-memory representation inside lakecat (the spec's "physical" form), used for
partition tuples and bounds:

========================  ======================================
type                      Python value
========================  ======================================
boolean                   bool
int, long                 int
float, double             float
decimal(P,S)              decimal.Decimal
date                      int (days from 1970-01-01)
time                      int (microseconds from midnight)
timestamp, timestamptz    int (microseconds from the epoch, UTC)
string                    str
uuid                      uuid.UUID
fixed[L], binary          bytes
========================  ======================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from lakecat.metadata.errors import CorruptMetadata, UnsupportedFeature


class IcebergType:
    """Base of every type."""

    is_primitive: ClassVar[bool] = False

    def to_json(self) -> Any:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class PrimitiveType(IcebergType):
    is_primitive: ClassVar[bool] = True
    name: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.name

    def to_json(self) -> Any:
        return str(self)


@dataclass(frozen=True, slots=True)
class BooleanType(PrimitiveType):
    name: ClassVar[str] = "boolean"


@dataclass(frozen=True, slots=True)
class IntegerType(PrimitiveType):
    name: ClassVar[str] = "int"


@dataclass(frozen=True, slots=True)
class LongType(PrimitiveType):
    name: ClassVar[str] = "long"


@dataclass(frozen=True, slots=True)
class FloatType(PrimitiveType):
    name: ClassVar[str] = "float"


@dataclass(frozen=True, slots=True)
class DoubleType(PrimitiveType):
    name: ClassVar[str] = "double"


@dataclass(frozen=True, slots=True)
class DateType(PrimitiveType):
    name: ClassVar[str] = "date"


@dataclass(frozen=True, slots=True)
class TimeType(PrimitiveType):
    name: ClassVar[str] = "time"


@dataclass(frozen=True, slots=True)
class TimestampType(PrimitiveType):
    name: ClassVar[str] = "timestamp"


@dataclass(frozen=True, slots=True)
class TimestamptzType(PrimitiveType):
    name: ClassVar[str] = "timestamptz"


@dataclass(frozen=True, slots=True)
class StringType(PrimitiveType):
    name: ClassVar[str] = "string"


@dataclass(frozen=True, slots=True)
class UUIDType(PrimitiveType):
    name: ClassVar[str] = "uuid"


@dataclass(frozen=True, slots=True)
class BinaryType(PrimitiveType):
    name: ClassVar[str] = "binary"


@dataclass(frozen=True, slots=True)
class FixedType(PrimitiveType):
    length: int = 0

    def __str__(self) -> str:
        return f"fixed[{self.length}]"


@dataclass(frozen=True, slots=True)
class DecimalType(PrimitiveType):
    precision: int = 38
    scale: int = 0

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"


@dataclass(frozen=True, slots=True)
class NestedField:
    """A named, id-carrying field of a struct (and the top level of a schema)."""

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.field_id,
            "name": self.name,
            "required": self.required,
            "type": self.field_type.to_json(),
        }
        if self.doc is not None:
            out["doc"] = self.doc
        if self.initial_default is not None:
            out["initial-default"] = self.initial_default
        if self.write_default is not None:
            out["write-default"] = self.write_default
        return out


@dataclass(frozen=True, slots=True)
class StructType(IcebergType):
    fields: tuple[NestedField, ...] = ()

    def __str__(self) -> str:
        inner = ", ".join(f"{f.field_id}: {f.name}: {f.field_type}" for f in self.fields)
        return f"struct<{inner}>"

    def to_json(self) -> Any:
        return {"type": "struct", "fields": [f.to_json() for f in self.fields]}


@dataclass(frozen=True, slots=True)
class ListType(IcebergType):
    element_id: int
    element_type: IcebergType
    element_required: bool = False

    def __str__(self) -> str:
        return f"list<{self.element_type}>"

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    def to_json(self) -> Any:
        return {
            "type": "list",
            "element-id": self.element_id,
            "element": self.element_type.to_json(),
            "element-required": self.element_required,
        }


@dataclass(frozen=True, slots=True)
class MapType(IcebergType):
    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = False

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    def to_json(self) -> Any:
        return {
            "type": "map",
            "key-id": self.key_id,
            "key": self.key_type.to_json(),
            "value-id": self.value_id,
            "value": self.value_type.to_json(),
            "value-required": self.value_required,
        }


_SIMPLE: dict[str, PrimitiveType] = {
    t.name: t
    for t in (
        BooleanType(),
        IntegerType(),
        LongType(),
        FloatType(),
        DoubleType(),
        DateType(),
        TimeType(),
        TimestampType(),
        TimestamptzType(),
        StringType(),
        UUIDType(),
        BinaryType(),
    )
}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_FIXED = re.compile(r"^fixed\[\s*(\d+)\s*\]$")


def child_fields(t: IcebergType) -> tuple[NestedField, ...]:
    """The fields directly inside ``t``: a struct's fields, a list's element, a map's key and
    value (none for a primitive)."""
    if isinstance(t, StructType):
        return tuple(t.fields)
    if isinstance(t, ListType):
        return (t.element_field,)
    if isinstance(t, MapType):
        return (t.key_field, t.value_field)
    return ()


def primitive_from_string(text: str) -> PrimitiveType:
    """Parse a spec type string such as ``"long"``, ``"decimal(9, 2)"`` or ``"fixed[16]"``."""
    simple = _SIMPLE.get(text)
    if simple is not None:
        return simple
    if m := _DECIMAL.match(text):
        return DecimalType(int(m.group(1)), int(m.group(2)))
    if m := _FIXED.match(text):
        return FixedType(int(m.group(1)))
    if _V3_TYPES.match(text):
        raise UnsupportedFeature(
            f"the Iceberg v3 type {text!r} is not supported by lakecat yet",
            feature=f"type {text}",
        )
    raise CorruptMetadata(f"unknown Iceberg type {text!r}")


# Types of format version 3 that lakecat does not read yet: refused by name, never misread.
_V3_TYPES = re.compile(r"^(timestamp_ns|timestamptz_ns|variant|unknown|geometry|geography)\b")


def field_from_json(obj: dict[str, Any]) -> NestedField:
    return NestedField(
        field_id=obj["id"],
        name=obj["name"],
        field_type=type_from_json(obj["type"]),
        required=obj["required"],
        doc=obj.get("doc"),
        initial_default=obj.get("initial-default"),
        write_default=obj.get("write-default"),
    )


def type_from_json(obj: Any) -> IcebergType:
    """Parse a type as it appears in a metadata.json schema."""
    if isinstance(obj, str):
        return primitive_from_string(obj)
    try:
        kind = obj["type"]
        if kind == "struct":
            return StructType(tuple(field_from_json(f) for f in obj["fields"]))
        if kind == "list":
            return ListType(
                element_id=obj["element-id"],
                element_type=type_from_json(obj["element"]),
                element_required=obj["element-required"],
            )
        if kind == "map":
            return MapType(
                key_id=obj["key-id"],
                key_type=type_from_json(obj["key"]),
                value_id=obj["value-id"],
                value_type=type_from_json(obj["value"]),
                value_required=obj["value-required"],
            )
    except (KeyError, TypeError) as exc:
        raise CorruptMetadata(f"malformed type {obj!r}: {exc}") from exc
    raise CorruptMetadata(f"unknown Iceberg type {obj!r}")


# Allowed type promotions (spec: "Schema Evolution"): int -> long, float -> double,
# decimal(P, S) -> decimal(P', S) with P' > P.
def can_promote(source: IcebergType, target: IcebergType) -> bool:
    if source == target:
        return True
    if isinstance(source, IntegerType) and isinstance(target, LongType):
        return True
    if isinstance(source, FloatType) and isinstance(target, DoubleType):
        return True
    return (
        isinstance(source, DecimalType)
        and isinstance(target, DecimalType)
        and source.scale == target.scale
        and target.precision >= source.precision
    )
