"""The procedures of ``lake.system`` that read or move a table's history and refs:
``ancestors_of``, ``rollback_to_snapshot``, ``rollback_to_timestamp``, ``set_current_snapshot``,
``cherrypick_snapshot``, ``fast_forward``, lakecat's ``create_tag``, ``create_branch`` and
``drop_ref``; and ``register_table``, which adds a table with its history.

Each returns Iceberg's result row; the parameters and result columns are declared with the
others in :mod:`lakecat.spark_ext.sql.procedures`. Snapshot moves go through lakecat's
snapshot management (:mod:`lakecat.catalog.engine`): one commit each, validated against the
table as loaded for the call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakecat.catalog import Table, engine
from lakecat.metadata import properties as P
from lakecat.metadata.errors import NoSuchRef, ValidationError
from lakecat.metadata.schema import Schema
from lakecat.metadata.table import SortField, SortOrder

if TYPE_CHECKING:
    from lakecat.spark_ext.sql.procedures import ProcedureContext, Row


def register_table(ctx: ProcedureContext, *, table: str, metadata_file: str) -> list[Row]:
    """Add a table by its metadata file (:meth:`Catalog.register_table`)."""
    registered = ctx.catalog.register_table(ctx.identifier(table), metadata_file)
    snapshot = registered.current_snapshot()
    if snapshot is None:
        return [(None, 0, 0)]
    return [
        (
            snapshot.snapshot_id,
            snapshot.summary_count("total-records"),
            snapshot.summary_count("total-data-files"),
        )
    ]


def ancestors_of(ctx: ProcedureContext, *, table: str, snapshot_id: int | None) -> list[Row]:
    """The snapshot (default: the current one) and its ancestors, newest first."""
    metadata = ctx.table(table).metadata
    if snapshot_id is not None:
        metadata.snapshot_by_id(snapshot_id)  # NoSuchSnapshot for an unknown id
    start = snapshot_id if snapshot_id is not None else metadata.current_snapshot_id
    return [(s.snapshot_id, s.timestamp_ms) for s in metadata.ancestors(start)]


def create_tag(
    ctx: ProcedureContext,
    *,
    table: str,
    tag: str,
    snapshot_id: int | None,
    max_ref_age_ms: int | None,
    replace: bool | None = None,
    if_not_exists: bool | None = None,
) -> list[Row]:
    """Tag a snapshot (default: the current one): :meth:`Table.create_tag`; ``replace``
    moves an existing tag (``CREATE OR REPLACE TAG``), ``if_not_exists`` keeps it."""
    target = ctx.table(table)
    existing = target.refs().get(tag)
    if existing is not None and existing.ref_type != "tag":
        raise ValidationError(f"{target.name} has a branch named {tag!r}, not a tag")
    if existing is not None and if_not_exists:
        return [_ref_row(target, tag)]
    if existing is not None and replace:
        chosen = snapshot_id if snapshot_id is not None else _current(target)
        target.replace_tag(tag, chosen, max_ref_age_ms=max_ref_age_ms)
    else:
        target.create_tag(tag, snapshot_id, max_ref_age_ms=max_ref_age_ms)
    return [_ref_row(target, tag)]


def create_branch(
    ctx: ProcedureContext,
    *,
    table: str,
    branch: str,
    snapshot_id: int | None,
    max_ref_age_ms: int | None,
    max_snapshot_age_ms: int | None,
    min_snapshots_to_keep: int | None,
    replace: bool | None = None,
    if_not_exists: bool | None = None,
) -> list[Row]:
    """Branch from a snapshot (default: the current one): :meth:`Table.create_branch`;
    ``replace`` moves an existing branch (``CREATE OR REPLACE BRANCH``), ``if_not_exists``
    keeps it."""
    target = ctx.table(table)
    existing = target.refs().get(branch)
    if existing is not None and existing.ref_type != "branch":
        raise ValidationError(f"{target.name} has a tag named {branch!r}, not a branch")
    if existing is not None and if_not_exists:
        return [_ref_row(target, branch)]
    if existing is not None and replace:
        chosen = snapshot_id if snapshot_id is not None else _current(target)
        target.replace_branch(branch, chosen)
    else:
        target.create_branch(
            branch,
            snapshot_id,
            max_ref_age_ms=max_ref_age_ms,
            max_snapshot_age_ms=max_snapshot_age_ms,
            min_snapshots_to_keep=min_snapshots_to_keep,
        )
    return [_ref_row(target, branch)]


def drop_ref(
    ctx: ProcedureContext,
    *,
    table: str,
    ref: str,
    kind: str | None = None,
    if_exists: bool | None = None,
) -> list[Row]:
    """Remove a tag or a branch other than main (:meth:`Table.remove_ref`); the row describes
    the ref as it was. ``kind`` (``branch`` or ``tag``) refuses a ref of the other kind;
    ``if_exists`` makes a missing ref no error (no row)."""
    target = ctx.table(table)
    existing = target.refs().get(ref)
    if existing is None and if_exists:
        return []
    if kind is not None and kind not in ("branch", "tag"):
        raise ValidationError(f"kind must be 'branch' or 'tag', not {kind!r}")
    if existing is not None and kind is not None and existing.ref_type != kind:
        raise ValidationError(f"{target.name}'s {ref!r} is a {existing.ref_type}, not a {kind}")
    row = _ref_row(target, ref)
    target.remove_ref(ref)
    return [row]


def _current(table: Table) -> int:
    snapshot = table.current_snapshot()
    if snapshot is None:
        raise ValidationError(f"{table.name} has no snapshot to point a ref at")
    return snapshot.snapshot_id


def add_partition_field(
    ctx: ProcedureContext, *, table: str, field: str, name: str | None
) -> list[Row]:
    """Partition new data also by ``field``, an Iceberg partition term (``id``,
    ``bucket(16, id)``, ``truncate(name, 4)``, ``days(ts)``, ...; ``ALTER TABLE ... ADD
    PARTITION FIELD``): one spec update; existing files keep their spec."""
    target = ctx.table(table)
    column, transform = parse_partition_term(field)
    with target.update_spec() as update:
        update.add_field(column, transform, name)
    return [_spec_row(target)]


def drop_partition_field(ctx: ProcedureContext, *, table: str, field: str) -> list[Row]:
    """Stop partitioning new data by ``field``: a partition field's name, or the term it was
    added with (``ALTER TABLE ... DROP PARTITION FIELD``)."""
    target = ctx.table(table)
    chosen = _partition_field_named(target, field)
    with target.update_spec() as update:
        update.remove_field(chosen)
    return [_spec_row(target)]


def replace_partition_field(
    ctx: ProcedureContext, *, table: str, field: str, new_field: str, name: str | None
) -> list[Row]:
    """Partition new data by ``new_field`` instead of ``field`` (a partition field's name or
    term), in one spec update (``ALTER TABLE ... REPLACE PARTITION FIELD f WITH g [AS n]``)."""
    target = ctx.table(table)
    chosen = _partition_field_named(target, field)
    column, transform = parse_partition_term(new_field)
    with target.update_spec() as update:
        update.remove_field(chosen)
        update.add_field(column, transform, name)
    return [_spec_row(target)]


def _partition_field_named(target: Table, field: str) -> str:
    """The name of the current spec's field that ``field`` names: by its name, or by the
    partition term it was added with."""
    spec, schema = target.spec(), target.schema()
    names = {f.name for f in spec.fields}
    if field in names:
        return field
    column, transform = parse_partition_term(field)
    source = schema.find_field(column)
    for f in spec.fields:
        if f.source_id == source.field_id and f.transform == transform:
            return f.name
    raise ValidationError(
        f"{target.name} is not partitioned by {field!r} (fields: {', '.join(sorted(names))})"
    )


def set_identifier_fields(
    ctx: ProcedureContext, *, table: str, fields: Sequence[str], drop: bool | None = None
) -> list[Row]:
    """Make ``fields`` the table's identifier fields (``ALTER TABLE ... SET IDENTIFIER FIELDS
    a, b``), or with ``drop`` remove them from its identifier fields (``DROP IDENTIFIER FIELDS
    a``): one schema update; an identifier field must be a required primitive column, as
    Iceberg requires."""
    target = ctx.table(table)
    schema = target.schema()
    current = [schema.find_field(i).name for i in schema.identifier_field_ids]
    if drop:
        unknown = [f for f in fields if f not in current]
        if unknown:
            raise ValidationError(
                f"{target.name}: {', '.join(unknown)} is not an identifier field "
                f"(identifier fields: {', '.join(current) or 'none'})"
            )
        chosen = [f for f in current if f not in fields]
    else:
        chosen = list(fields)
    with target.update_schema() as update:
        update.set_identifier_fields(*chosen)
    schema = target.refresh().schema()
    names = [schema.find_field(i).name for i in schema.identifier_field_ids]
    return [(schema.schema_id, ", ".join(names))]


_TERM = re.compile(r"^\s*(\w+)\s*\(\s*([^,()]+?)\s*(?:,\s*([^,()]+?)\s*)?\)\s*$")
_TIME_TRANSFORMS = {
    "years": "year", "year": "year", "months": "month", "month": "month",
    "days": "day", "day": "day", "date": "day", "hours": "hour", "hour": "hour",
    "date_hour": "hour",
}  # fmt: skip


def parse_partition_term(text: str) -> tuple[str, str]:
    """(column, lakecat transform) of an Iceberg partition term: ``col``, ``identity(col)``,
    ``bucket(N, col)``, ``truncate(col, W)`` or ``truncate(W, col)``, ``years(col)``,
    ``months(col)``, ``days(col)``, ``hours(col)`` (and their singular forms)."""
    plain = text.strip().strip("`")
    match = _TERM.match(text)
    if match is None:
        if not plain or "(" in plain:
            raise ValidationError(f"not a partition term: {text!r}")
        return plain, "identity"
    function, first, second = match.group(1).lower(), match.group(2), match.group(3)
    if function in _TIME_TRANSFORMS and second is None:
        return first.strip("`"), _TIME_TRANSFORMS[function]
    if function == "identity" and second is None:
        return first.strip("`"), "identity"
    if function in ("bucket", "truncate") and second is not None:
        number, column = (first, second) if first.strip().isdigit() else (second, first)
        if not number.strip().isdigit():
            raise ValidationError(f"{function} needs a width: {text!r}")
        return column.strip("`"), f"{function}[{int(number)}]"
    raise ValidationError(f"not a partition term: {text!r}")


def parse_sort_order(schema: Schema, text: str) -> tuple[SortField, ...]:
    """The sort fields of an Iceberg sort order in SQL form (``id ASC NULLS FIRST,
    bucket(16, id) DESC``: a column or partition term, then an optional direction, ascending
    by default, and null order, first when ascending and last when descending by default);
    an empty text is no field."""
    fields = []
    for item in _split_top_level(text):
        words = item.split()
        direction, nulls = "asc", None
        while words and words[-1].upper() in ("ASC", "DESC", "FIRST", "LAST"):
            word = words.pop().upper()
            if word in ("FIRST", "LAST"):
                if not words or words.pop().upper() != "NULLS":
                    raise ValidationError(f"not a sort field: {item!r}")
                nulls = f"nulls-{word.lower()}"
            else:
                direction = word.lower()
        column, transform = parse_partition_term(" ".join(words))
        null_order = nulls or ("nulls-first" if direction == "asc" else "nulls-last")
        source = schema.find_field(column)
        fields.append(
            SortField(
                source.field_id,
                transform,
                "asc" if direction == "asc" else "desc",
                "nulls-first" if null_order == "nulls-first" else "nulls-last",
            )
        )
    return tuple(fields)


_TIME_TERMS = {"year": "years", "month": "months", "day": "days", "hour": "hours"}


def describe_sort_order(schema: Schema, order: SortOrder) -> str:
    """A sort order as Iceberg's runtime describes it in a table's ``sort-order`` property
    (``region ASC NULLS FIRST, bucket(16, id) DESC NULLS LAST``; a truncate is
    ``truncate(name, 4)``, in Iceberg's order)."""
    terms = []
    for field in order.fields:
        column = schema.column_name(field.source_id)
        transform = field.transform
        if transform == "identity":
            term = column
        elif transform.startswith("bucket["):
            term = f"bucket({transform[7:-1]}, {column})"
        elif transform.startswith("truncate["):
            term = f"truncate({column}, {transform[9:-1]})"
        else:
            term = f"{_TIME_TERMS.get(transform, transform)}({column})"
        nulls = "NULLS FIRST" if field.null_order == "nulls-first" else "NULLS LAST"
        terms.append(f"{term} {field.direction.upper()} {nulls}")
    return ", ".join(terms)


def set_write_order(
    ctx: ProcedureContext, *, table: str, order: str | None, distribution_mode: str | None
) -> list[Row]:
    """Sort new data files by ``order`` (``id ASC NULLS FIRST, bucket(16, id) DESC``; empty:
    unsorted; null: keep the current order) and, with ``distribution_mode`` (``none``,
    ``hash``, ``range``), set ``write.distribution-mode`` in the same commit (``ALTER TABLE ...
    WRITE ORDERED BY``, ``WRITE DISTRIBUTED BY PARTITION``, ``WRITE UNORDERED``)."""
    target = ctx.table(table)
    schema = target.schema()
    fields = parse_sort_order(schema, order or "")
    properties = {}
    if distribution_mode is not None:
        if distribution_mode not in ("none", "hash", "range"):
            raise ValidationError(
                f"distribution_mode must be none, hash or range, not {distribution_mode!r}"
            )
        properties[P.WRITE_DISTRIBUTION_MODE] = distribution_mode
    if order is None:
        if properties:
            target.set_properties(properties)
    else:
        target.replace_sort_order(SortOrder(1, fields), properties=properties)
    current = target.refresh().sort_order()
    described = ", ".join(
        f"{schema.find_field(f.source_id).name}:{f.transform} {f.direction} {f.null_order}"
        for f in current.fields
    )
    return [(current.order_id, described)]


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, blank parts dropped."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _spec_row(table: Table) -> Row:
    spec = table.refresh().spec()
    return (spec.spec_id, ", ".join(f"{f.name}={f.transform}" for f in spec.fields))


def _ref_row(table: Table, name: str) -> Row:
    ref = table.refs().get(name)
    if ref is None:
        raise NoSuchRef(f"{table.name} has no branch or tag {name!r}")
    return (name, ref.ref_type, ref.snapshot_id)


def rollback_to_snapshot(ctx: ProcedureContext, *, table: str, snapshot_id: int) -> list[Row]:
    """Make an ancestor of the current snapshot current again."""
    target = ctx.table(table)
    previous = target.metadata.current_snapshot_id
    engine.rollback_to_snapshot(target, snapshot_id)
    return [(previous, snapshot_id)]


def rollback_to_timestamp(ctx: ProcedureContext, *, table: str, timestamp: int) -> list[Row]:
    """Roll back to the newest ancestor of the current snapshot older than ``timestamp``."""
    target = ctx.table(table)
    previous = target.metadata.current_snapshot_id
    engine.rollback_to_timestamp(target, timestamp)
    return [(previous, target.refresh().metadata.current_snapshot_id)]


def set_current_snapshot(
    ctx: ProcedureContext, *, table: str, snapshot_id: int | None, ref: str | None
) -> list[Row]:
    """Make any snapshot, or the head of a branch or tag, the current one."""
    target = ctx.table(table)
    if ref is not None and snapshot_id is None:
        chosen = _ref_head(target, ref)
    elif snapshot_id is not None and ref is None:
        chosen = snapshot_id
    else:
        raise ValidationError("set_current_snapshot: give either snapshot_id or ref, not both")
    previous = target.metadata.current_snapshot_id
    engine.set_current_snapshot(target, chosen)
    return [(previous, chosen)]


def _ref_head(table: Table, name: str) -> int:
    ref = table.refs().get(name)
    if ref is None:
        raise NoSuchRef(f"{table.name} has no branch or tag {name!r}")
    return ref.snapshot_id


def cherrypick_snapshot(ctx: ProcedureContext, *, table: str, snapshot_id: int) -> list[Row]:
    """Apply a snapshot's changes (an append, or any snapshot whose parent is the current
    one) to main: :func:`lakecat.catalog.engine.cherry_pick`."""
    target = ctx.table(table)
    engine.cherry_pick(target, snapshot_id)
    return [(snapshot_id, target.refresh().metadata.current_snapshot_id)]


def publish_changes(ctx: ProcedureContext, *, table: str, wap_id: str) -> list[Row]:
    """Publish the snapshot a write-audit-publish write staged with ``wap_id``: cherry-pick it
    onto main (:func:`lakecat.catalog.engine.publish_changes`)."""
    target = ctx.table(table)
    staged, _ = engine.publish_changes(target, wap_id)
    return [(staged, target.refresh().metadata.current_snapshot_id)]


def fast_forward(ctx: ProcedureContext, *, table: str, branch: str, to: str) -> list[Row]:
    """Move ``branch`` forward to the head of ``to`` (a branch or tag); as in Iceberg, a
    branch that does not exist is created there."""
    target = ctx.table(table)
    head = _ref_head(target, to)
    if branch not in target.refs():
        target.create_branch(branch, head)
        return [(branch, None, head)]
    previous = _ref_head(target, branch)
    engine.fast_forward(target, branch, to)
    return [(branch, previous, _ref_head(target.refresh(), branch))]
