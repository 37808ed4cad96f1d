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

from typing import TYPE_CHECKING

from lakecat.catalog import Table, engine
from lakecat.metadata.errors import NoSuchRef, ValidationError

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
) -> list[Row]:
    """Tag a snapshot (default: the current one): :meth:`Table.create_tag`."""
    target = ctx.table(table)
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
) -> list[Row]:
    """Branch from a snapshot (default: the current one): :meth:`Table.create_branch`."""
    target = ctx.table(table)
    target.create_branch(
        branch,
        snapshot_id,
        max_ref_age_ms=max_ref_age_ms,
        max_snapshot_age_ms=max_snapshot_age_ms,
        min_snapshots_to_keep=min_snapshots_to_keep,
    )
    return [_ref_row(target, branch)]


def drop_ref(ctx: ProcedureContext, *, table: str, ref: str) -> list[Row]:
    """Remove a tag or a branch other than main (:meth:`Table.remove_ref`); the row describes
    the ref as it was."""
    target = ctx.table(table)
    row = _ref_row(target, ref)
    target.remove_ref(ref)
    return [row]


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
