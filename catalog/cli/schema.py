"""Table definitions on the command line: schemas as JSON, partitioning and sort order as text.

``lakecat tables create`` takes a schema in one of two JSON forms:

* an Iceberg schema, as in a ``metadata.json``::

      {"type": "struct", "fields": [
          {"id": 1, "name": "id", "type": "long", "required": true},
          {"id": 2, "name": "tags", "type": {"type": "list", "element-id": 3,
                                              "element": "string", "element-required": false},
           "required": false}]}

* a mapping of column names to Iceberg type strings, in column order. A column is required
  unless its type ends with ``?``; a nested object is an optional struct; ``list<T>`` and
  ``map<K, V>`` have optional elements and values::

      {"id": "long", "ts": "timestamptz", "name": "string?", "price": "decimal(9, 2)?",
       "tags": "list<string>?", "address": {"city": "string?", "zip": "string?"}}

Field ids in either form are renumbered when the table is created (as Iceberg does).
``--partition-by "ts:day,region,id:bucket[16]"`` and ``--sort-by "id,ts:desc"`` name columns,
each optionally followed by ``:`` and a transform or a direction.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from lakecat.catalog.cli.args import split_list
from lakecat.metadata.errors import CorruptMetadata, ValidationError
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    primitive_from_string,
)

__all__ = ["parse_partition_by", "parse_schema", "parse_sort_by", "read_schema_argument"]

_TYPE_NAMES = (
    "boolean, int, long, float, double, decimal(P, S), date, time, timestamp, timestamptz, "
    "string, uuid, fixed[L], binary, list<T>, map<K, V>"
)


def read_schema_argument(value: str) -> Schema:
    """The schema named by ``--schema``: inline JSON, ``-`` for stdin, or a JSON file."""
    if value == "-":
        text = sys.stdin.read()
    elif value.lstrip().startswith("{"):
        text = value
    else:
        path = Path(value).expanduser()
        if not path.is_file():
            raise ValidationError(f"--schema {value!r} is neither inline JSON nor a file")
        text = path.read_text(encoding="utf-8")
    return parse_schema(text)


def parse_schema(text: str) -> Schema:
    """A schema from either JSON form (see the module docstring)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"the schema is not valid JSON: {exc}") from None
    if not isinstance(document, dict) or not document:
        raise ValidationError("the schema must be a non-empty JSON object")
    if document.get("type") == "struct" and isinstance(document.get("fields"), list):
        try:
            return Schema.from_json(document)
        except (CorruptMetadata, KeyError, TypeError) as exc:
            raise ValidationError(f"invalid Iceberg schema JSON: {exc}") from None
    ids = itertools.count(1)
    return Schema(tuple(_fields(document, ids, "")))


def _fields(mapping: Mapping[str, Any], ids: Iterator[int], prefix: str) -> list[NestedField]:
    out = []
    for name, spec in mapping.items():
        field_id = next(ids)
        where = f"{prefix}{name}"
        if isinstance(spec, dict):
            if not spec:
                raise ValidationError(f"column {where!r}: a struct needs at least one field")
            out.append(
                NestedField(field_id, name, StructType(tuple(_fields(spec, ids, f"{where}."))))
            )
            continue
        if not isinstance(spec, str):
            raise ValidationError(
                f"column {where!r}: the type must be a string or an object, not {spec!r}"
            )
        text = spec.strip()
        required = not text.endswith("?")
        field_type = _type(text.removesuffix("?").strip(), ids, where)
        out.append(NestedField(field_id, name, field_type, required))
    return out


def _type(text: str, ids: Iterator[int], where: str) -> IcebergType:
    lowered = text.lower()
    if lowered.startswith("list<") and lowered.endswith(">"):
        element_id = next(ids)
        return ListType(element_id, _type(text[5:-1].strip(), ids, f"{where}.element"))
    if lowered.startswith("map<") and lowered.endswith(">"):
        parts = _split_top_level(text[4:-1])
        if len(parts) != 2:
            raise ValidationError(f"column {where!r}: write a map as map<K, V>, not {text!r}")
        key_id, value_id = next(ids), next(ids)
        key = _type(parts[0], ids, f"{where}.key")
        value = _type(parts[1], ids, f"{where}.value")
        return MapType(key_id, key, value_id, value)
    try:
        return primitive_from_string(lowered)
    except CorruptMetadata:
        raise ValidationError(
            f"column {where!r}: unknown type {text!r} (types: {_TYPE_NAMES})"
        ) from None


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside ``<>`` or ``()``."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return parts


def parse_partition_by(text: str | None) -> list[str | tuple[str, str]]:
    """``"ts:day,region,id:bucket[16]"`` -> ``[("ts", "day"), "region", ("id", "bucket[16]")]``."""
    return [_column_and_option(part) for part in split_list(text)]


def parse_sort_by(text: str | None) -> list[str | tuple[str, str]]:
    """``"id,ts:desc"`` -> ``["id", ("ts", "desc")]``."""
    return [_column_and_option(part) for part in split_list(text)]


def _column_and_option(part: str) -> str | tuple[str, str]:
    column, sep, option = part.rpartition(":")
    if not sep:
        return part
    if not column.strip() or not option.strip():
        raise ValidationError(f"expected COLUMN or COLUMN:OPTION, got {part!r}")
    return column.strip(), option.strip().lower()
