"""Rows in a sort order's order: how every writer lays out the rows of a sorted table's files.

A table's default sort order (``ALTER TABLE ... WRITE ORDERED BY``, ``Table.replace_sort_order``)
says how the rows of each data file are ordered. :func:`sort_rows` orders rows by a list of
sort fields, each a source column (top-level or inside structs) through its transform
(identity, bucket, truncate, year/month/day/hour), ascending or descending, with its own null
placement, as the Iceberg spec defines the order.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.io.parquet import source_column
from lakecat.metadata.partitioning.transforms import parse_transform
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import PrimitiveType
from lakecat.metadata.table.sorting import SortField

__all__ = ["sort_rows"]


def sort_rows(rows: pa.Table, schema: Schema, fields: Sequence[SortField]) -> pa.Table:
    """``rows`` (in ``schema``'s Arrow form) ordered by ``fields``; a stable sort, so rows
    equal on every field keep their order. No fields: ``rows`` as they are."""
    if not fields or rows.num_rows < 2:
        return rows
    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    keys: list[tuple[str, str, str]] = []
    for i, f in enumerate(fields):
        source = schema.find_field(f.source_id)
        values = source_column(
            rows,
            schema,
            f.source_id,
            refusal="cannot sort by {path!r}: it is inside a list or map",
        )
        transform = parse_transform(f.transform)
        if not transform.is_identity:
            assert isinstance(source.field_type, PrimitiveType)
            values = transform.apply_arrow(source.field_type, values)
        name = f"k{i}"
        columns[name] = values
        keys.append(
            (
                name,
                "ascending" if f.direction == "asc" else "descending",
                "at_start" if f.null_order == "nulls-first" else "at_end",
            )
        )
    indices = pc.sort_indices(pa.table(columns), options=pc.SortOptions(keys))
    return rows.take(indices)
