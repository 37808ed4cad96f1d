"""What the ``lakecat`` command prints: JSON records and the rich views built from them.

Every command first builds plain data (dicts, lists, strings, numbers: the ``--json``
document, snake_case keys), then, without ``--json``, a rich view of that same data. Deriving
the view from the record keeps the two outputs from drifting apart.

Values in JSON: times as both ``*_ms`` integers and ISO-8601 strings (UTC), row values as
JSON scalars (timestamps and dates ISO-8601, decimals and UUIDs as strings, binary as hex,
NaN and infinities as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``).

The JSON document is always complete. In the views, a long list inside a command's report
(the snapshots an expiry removed, the orphan files found) shows its first
:data:`PREVIEW_ITEMS` items and how many there are (:func:`some_of`, the ``limit`` of
:func:`records`); ``-v`` shows them all. Listing commands list every row.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from lakecat.metadata.errors import LakecatError
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.partitioning.transforms import parse_transform
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    child_fields,
)
from lakecat.metadata.table.snapshots import Snapshot, SnapshotRef
from lakecat.metadata.table.sorting import SortOrder
from lakecat.metadata.table.table_metadata import TableMetadata

__all__ = [
    "PREVIEW_ITEMS",
    "Column",
    "dump_json",
    "file_record",
    "human_bytes",
    "human_time",
    "iso_time",
    "jsonable",
    "key_values",
    "message",
    "partition_record",
    "records",
    "ref_record",
    "rows_view",
    "schema_record",
    "snapshot_record",
    "some_of",
    "sort_order_record",
    "spec_record",
    "table_view",
]


# ---- JSON -----------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """``value`` with every leaf a JSON scalar (see the module docstring)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return str(value)


def dump_json(data: Any) -> str:
    """One JSON document, indented, keys in the order the records define them."""
    return json.dumps(jsonable(data), indent=2, ensure_ascii=False, allow_nan=False)


# ---- formatting -----------------------------------------------------------------------------


def iso_time(timestamp_ms: int | None) -> str | None:
    """``2024-01-01T10:00:00.123Z`` for milliseconds since the epoch (UTC)."""
    if timestamp_ms is None:
        return None
    try:
        moment = dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return str(timestamp_ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def human_time(timestamp_ms: int | None) -> str:
    """``2024-01-01 10:00:00Z``: to the second, for tables people read."""
    if timestamp_ms is None:
        return ""
    text = iso_time(timestamp_ms - timestamp_ms % 1000) or ""
    return text.replace("T", " ").replace(".000Z", "Z")


def human_bytes(size: int | None) -> str:
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


def _cell(value: Any) -> Text:
    """A table cell that is never read as rich markup (names may contain brackets)."""
    if value is None:
        return Text("null", style="dim")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, Text):
        return value
    jsoned = jsonable(value)
    if isinstance(jsoned, (dict, list)):
        return Text(json.dumps(jsoned, ensure_ascii=False))
    return Text(str(jsoned))


def message(text: str) -> Text:
    return Text(text)


# Items of a long list a report shows without -v.
PREVIEW_ITEMS = 10
_SHOW_ALL = "-v shows all"


def some_of(items: Sequence[Any], *, every: bool = False) -> str:
    """``"a, b, c"``; past :data:`PREVIEW_ITEMS` items (unless ``every``), the first ones and
    the count: ``"a, b, ... (299 in all; -v shows all)"``."""
    if not items:
        return "(none)"
    if every or len(items) <= PREVIEW_ITEMS:
        return ", ".join(str(item) for item in items)
    first = ", ".join(str(item) for item in items[:PREVIEW_ITEMS])
    return f"{first}, ... ({len(items)} in all; {_SHOW_ALL})"


# ---- records: lakecat objects as JSON-able dicts ----------------------------------------------


def _type_name(t: IcebergType) -> str:
    if isinstance(t, StructType):
        return "struct"
    if isinstance(t, ListType):
        return "list"
    if isinstance(t, MapType):
        return "map"
    return str(t)


def _walk(fields: Sequence[NestedField], prefix: str) -> Iterator[tuple[str, NestedField]]:
    for f in fields:
        name = f"{prefix}{f.name}"
        yield name, f
        yield from _walk(child_fields(f.field_type), f"{name}.")


def schema_record(schema: Schema) -> dict[str, Any]:
    """The schema with nested fields flattened to dotted names, in schema order."""
    return {
        "schema_id": schema.schema_id,
        "identifier_field_ids": list(schema.identifier_field_ids),
        "fields": [
            {
                "id": f.field_id,
                "name": name,
                "type": _type_name(f.field_type),
                "required": f.required,
                "doc": f.doc,
            }
            for name, f in _walk(schema.fields, "")
        ],
    }


def _column_name(schema: Schema, field_id: int) -> str | None:
    return schema.column_name(field_id) if schema.has_field(field_id) else None


def spec_record(spec: PartitionSpec, schema: Schema) -> dict[str, Any]:
    return {
        "spec_id": spec.spec_id,
        "fields": [
            {
                "name": f.name,
                "source_column": _column_name(schema, f.source_id),
                "source_id": f.source_id,
                "field_id": f.field_id,
                "transform": f.transform,
            }
            for f in spec.fields
        ],
    }


def sort_order_record(order: SortOrder, schema: Schema) -> dict[str, Any]:
    return {
        "order_id": order.order_id,
        "fields": [
            {
                "column": _column_name(schema, f.source_id),
                "source_id": f.source_id,
                "transform": f.transform,
                "direction": f.direction,
                "null_order": f.null_order,
            }
            for f in order.fields
        ],
    }


def snapshot_record(snapshot: Snapshot, metadata: TableMetadata) -> dict[str, Any]:
    return {
        "snapshot_id": snapshot.snapshot_id,
        "parent_snapshot_id": snapshot.parent_snapshot_id,
        "sequence_number": snapshot.sequence_number,
        "timestamp_ms": snapshot.timestamp_ms,
        "timestamp": iso_time(snapshot.timestamp_ms),
        "operation": snapshot.operation,
        "schema_id": snapshot.schema_id,
        "is_current": snapshot.snapshot_id == metadata.current_snapshot_id,
        "refs": sorted(
            n for n, r in metadata.refs.items() if r.snapshot_id == snapshot.snapshot_id
        ),
        "manifest_list": snapshot.manifest_list,
        "summary": dict(snapshot.summary),
    }


def ref_record(name: str, ref: SnapshotRef) -> dict[str, Any]:
    return {
        "name": name,
        "type": ref.ref_type,
        "snapshot_id": ref.snapshot_id,
        "min_snapshots_to_keep": ref.min_snapshots_to_keep,
        "max_snapshot_age_ms": ref.max_snapshot_age_ms,
        "max_ref_age_ms": ref.max_ref_age_ms,
    }


def partition_record(
    metadata: TableMetadata, spec_id: int, partition: tuple[Any, ...]
) -> dict[str, str | None]:
    """A partition tuple as ``{partition field name: value in human form}``."""
    spec = metadata.specs_by_id().get(spec_id)
    if spec is None:
        return {str(i): jsonable(v) for i, v in enumerate(partition)}
    schema = metadata.schema()
    out: dict[str, str | None] = {}
    for pf, value in zip(spec.fields, partition, strict=False):
        if value is None:
            out[pf.name] = None
            continue
        try:
            transform = parse_transform(pf.transform)
            result_type = transform.result_type(schema.find_type(pf.source_id))
            out[pf.name] = transform.to_human_string(result_type, value)
        except LakecatError:  # the source column was dropped since: show the raw value
            out[pf.name] = str(jsonable(value))
    return out


def file_record(f: DataFile, metadata: TableMetadata) -> dict[str, Any]:
    return {
        "path": f.file_path,
        "format": f.file_format,
        "content": f.content.name.lower(),
        "spec_id": f.spec_id,
        "partition": partition_record(metadata, f.spec_id, f.partition),
        "record_count": f.record_count,
        "file_size_in_bytes": f.file_size_in_bytes,
    }


# ---- views ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column of a records view: the record key, a header and how to show the value."""

    key: str
    header: str
    show: Callable[[Any], Any] | None = None
    justify: str = "left"
    fold: bool = False  # long values without spaces (paths): break anywhere, not at words
    keep: bool = False  # never shorten or wrap (ids): other columns give way on narrow screens


def records(
    title: str | None,
    items: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    *,
    limit: int | None = None,
) -> RenderableType:
    """A table with one row per record; an empty list prints ``(none)`` under the title.
    With ``limit``, at most that many rows, and a caption counting the ones left out."""
    if not items:
        return Text(f"{title}: (none)" if title else "(none)")
    caption = None
    if limit is not None and len(items) > limit:
        caption = f"first {limit} of {len(items)}; {_SHOW_ALL}"
        items = items[:limit]
    cells = [
        [_cell(c.show(item.get(c.key)) if c.show else item.get(c.key)) for c in columns]
        for item in items
    ]
    view = RichTable(title=title, title_justify="left", caption=caption, caption_justify="left")
    for i, c in enumerate(columns):
        view.add_column(
            c.header,
            justify=c.justify,  # type: ignore[arg-type]
            overflow="fold" if c.fold else "ellipsis",
            no_wrap=c.keep,
            min_width=max(len(row[i]) for row in cells) if c.keep else None,
        )
    for row in cells:
        view.add_row(*row)
    return view


def key_values(title: str | None, pairs: Mapping[str, Any]) -> RenderableType:
    """A two-column table of ``key: value`` lines."""
    view = RichTable(title=title, title_justify="left", show_header=False, box=None)
    view.add_column(style="bold", no_wrap=True)
    view.add_column(overflow="fold")
    for key, value in pairs.items():
        view.add_row(Text(key), _cell(value))
    if not pairs:
        view.add_row(Text("(none)"), Text(""))
    return view


def table_view(data: Mapping[str, Any]) -> RenderableType:
    """The view of ``tables describe``."""
    snapshot = data["current_snapshot"]
    counts = data["counts"]
    overview = key_values(
        data["table"],
        {
            "location": data["location"],
            "metadata": data["metadata_location"],
            "uuid": data["table_uuid"],
            "format version": data["format_version"],
            "last updated": human_time(data["last_updated_ms"]),
            "current snapshot": None if snapshot is None else snapshot["snapshot_id"],
            "snapshots": counts["snapshots"],
            "refs": counts["refs"],
            "data files": counts["data_files"],
            "records": counts["records"],
            "size": human_bytes(counts["total_size_bytes"]),
        },
    )
    identifiers = set(data["schema"]["identifier_field_ids"])
    schema = records(
        f"schema {data['schema']['schema_id']}",
        [{**f, "identifier": f["id"] in identifiers} for f in data["schema"]["fields"]],
        [
            Column("id", "id", justify="right"),
            Column("name", "name"),
            Column("type", "type"),
            Column("required", "required"),
            Column("identifier", "identifier"),
            Column("doc", "doc", lambda v: v or ""),
        ],
    )
    spec = records(
        f"partition spec {data['partition_spec']['spec_id']}",
        data["partition_spec"]["fields"],
        [
            Column("name", "name"),
            Column("source_column", "source"),
            Column("transform", "transform"),
        ],
    )
    order = records(
        f"sort order {data['sort_order']['order_id']}",
        data["sort_order"]["fields"],
        [
            Column("column", "column"),
            Column("transform", "transform"),
            Column("direction", "direction"),
            Column("null_order", "nulls"),
        ],
    )
    return Group(
        overview, Text(""), schema, spec, order, key_values("properties", data["properties"])
    )


def rows_view(
    columns: Sequence[str], rows: Sequence[Mapping[str, Any]], footer: str
) -> RenderableType:
    """Table rows under their column names, then a footer line (counts, truncation)."""
    if not columns:
        return Text(footer)
    view = RichTable()
    for name in columns:
        view.add_column(Text(name), overflow="fold")
    for row in rows:
        view.add_row(*(_cell(row.get(name)) for name in columns))
    return Group(view, Text(footer, style="dim"))
