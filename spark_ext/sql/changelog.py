"""``create_changelog_view``: a table's row changes over a range of snapshots as a temp view.

Iceberg's procedure reads the table's changelog (``<table>.changes``) and creates a Spark temp
view of it: the table's columns plus ``_change_type`` (``INSERT``, ``DELETE``, and with
update images ``UPDATE_BEFORE`` / ``UPDATE_AFTER``), ``_change_ordinal`` (the position of the
snapshot among the data-changing snapshots of the range, from 0) and ``_commit_snapshot_id``.
lakecat builds the same rows from its change feed (:func:`lakecat.catalog.engine.changes`):

* by default, one entry per data-changing snapshot of the range: the rows it added
  (``INSERT``) and removed (``DELETE``) compared with its parent, rows a copy-on-write commit
  merely rewrote cancelled out (Iceberg's carry-over removal). ``replace`` snapshots
  (compaction, manifest rewrites) change no row and are skipped, as in Iceberg;
* with ``net_changes``, the net change of the whole range: a row inserted and deleted inside
  it does not appear, each remaining row carries the snapshot that added or removed it;
* with update images (``compute_updates``, the default when ``identifier_columns`` are given),
  a ``DELETE`` and an ``INSERT`` of the same snapshot with equal identifier columns become an
  ``UPDATE_BEFORE`` / ``UPDATE_AFTER`` pair; two ``DELETE`` rows with the same identifier are
  refused, as Iceberg does.

Where lakecat differs: Iceberg's changelog scan refuses snapshots with delete files;
lakecat applies them (a row a position delete or deletion vector removes is a ``DELETE`` of
that snapshot). The rows are computed when the procedure runs and held by the view (a local
relation in the driver), so a query of the view does not see later commits; call the
procedure again. Each data-changing snapshot's parent must still be in the metadata (its
changes are found by comparison with it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import types as st
from pyspark.sql.pandas.types import to_arrow_schema

from lakecat.catalog import Table, engine
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError
from lakecat.metadata.schema import schema_to_arrow
from lakecat.spark_ext.sql.convert import UnsupportedByCatalog
from lakecat.spark_ext.sql.maintenance import int_option
from lakecat.spark_ext.types import spark_schema, to_spark_batch

if TYPE_CHECKING:
    from lakecat.metadata.table import Snapshot
    from lakecat.spark_ext.sql.procedures import ProcedureContext, Row

CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
INSERT, DELETE = "INSERT", "DELETE"
UPDATE_BEFORE, UPDATE_AFTER = "UPDATE_BEFORE", "UPDATE_AFTER"

# Iceberg's read options of a changelog (SparkReadOptions): start exclusive, end inclusive
START_SNAPSHOT_ID = "start-snapshot-id"
END_SNAPSHOT_ID = "end-snapshot-id"
START_TIMESTAMP = "start-timestamp"
END_TIMESTAMP = "end-timestamp"
_OPTIONS = (START_SNAPSHOT_ID, END_SNAPSHOT_ID, START_TIMESTAMP, END_TIMESTAMP)

_CHANGE_ARROW = {
    CHANGE_TYPE: pa.string(),
    CHANGE_ORDINAL: pa.int32(),
    COMMIT_SNAPSHOT_ID: pa.int64(),
}
_CHANGE_FIELDS = (
    st.StructField(CHANGE_TYPE, st.StringType(), nullable=False),
    st.StructField(CHANGE_ORDINAL, st.IntegerType(), nullable=False),
    st.StructField(COMMIT_SNAPSHOT_ID, st.LongType(), nullable=False),
)


def create_changelog_view(
    ctx: ProcedureContext,
    *,
    table: str,
    changelog_view: str | None,
    options: dict[str, str] | None,
    compute_updates: bool | None,
    identifier_columns: list[str] | None,
    net_changes: bool | None,
) -> list[Row]:
    """Create (or replace) the temp view of the table's changes (module docstring); its name
    is the row, by default ```<table>_changes``` as Iceberg names it."""
    if ctx.spark is None:
        raise UnsupportedByCatalog("create_changelog_view needs the catalog's Spark session")
    target = ctx.table(table)
    updates = compute_updates if compute_updates is not None else identifier_columns is not None
    if updates and net_changes:
        raise ValidationError(
            "create_changelog_view: net_changes cannot be combined with update images "
            "(compute_updates, or identifier_columns)"
        )
    identifiers = _identifier_columns(target, identifier_columns) if updates else []
    if updates and not identifiers:
        raise ValidationError(
            "create_changelog_view: update images need identifier_columns (the table has no "
            "identifier fields)"
        )
    start, end = _range(target, options or {})
    rows = changelog(target, start=start, end=end, net=bool(net_changes))
    if updates:
        rows = update_images(rows, identifiers)
    view = (
        changelog_view if changelog_view is not None else f"`{ctx.identifier(table)[-1]}_changes`"
    )
    _spark_frame(ctx.spark, target, rows).createOrReplaceTempView(view)
    return [(view,)]


def changelog(table: Table, *, start: int | None, end: int | None, net: bool) -> pa.Table:
    """The changelog rows of the snapshots after ``start`` (exclusive; ``None``: the table's
    first) up to ``end`` (inclusive; ``None``: an empty range), oldest first."""
    schema = table.metadata.schema()
    parts: list[pa.Table] = []
    if end is not None:
        snapshots = _data_changing(table, start, end)
        ordinals = {s.snapshot_id: i for i, s in enumerate(snapshots)}
        if net:
            parts = _entries(engine.changes(table, from_snapshot_id=start, to_snapshot_id=end))
        else:
            for s in snapshots:
                found = engine.changes(
                    table, from_snapshot_id=s.parent_snapshot_id, to_snapshot_id=s.snapshot_id
                )
                parts.extend(_entries(found))
        parts = [_with_ordinals(p, ordinals) for p in parts]
    names = [*schema.column_names, CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID]
    if not parts:
        return _empty(table).select(names)
    return pa.concat_tables([p.select(names) for p in parts])


def update_images(rows: pa.Table, identifiers: list[str]) -> pa.Table:
    """Iceberg's update images: per snapshot, a ``DELETE`` and an ``INSERT`` with the same
    identifier columns become ``UPDATE_BEFORE`` and ``UPDATE_AFTER``."""
    types = rows.column(CHANGE_TYPE).to_pylist()
    keys = list(
        zip(
            *(rows.column(c).to_pylist() for c in (CHANGE_ORDINAL, *identifiers)),
            strict=True,
        )
    )
    deletes = Counter(k for k, t in zip(keys, types, strict=True) if t == DELETE)
    repeated = [k for k, n in deletes.items() if n > 1]
    if repeated:
        raise ValidationError(
            f"cannot compute updates: snapshot changes delete several rows with the same "
            f"identifier columns ({', '.join(identifiers)}) = {list(repeated[0][1:])}; make "
            "sure the rows are unique"
        )
    inserted = {k for k, t in zip(keys, types, strict=True) if t == INSERT}
    paired: set[Any] = set()
    out: list[str] = []
    for key, kind in zip(keys, types, strict=True):
        if kind == DELETE and key in inserted:
            out.append(UPDATE_BEFORE)
        elif kind == INSERT and key in deletes and key not in paired:
            paired.add(key)  # the first insert pairs; further ones stay inserts
            out.append(UPDATE_AFTER)
        else:
            out.append(kind)
    index = rows.schema.get_field_index(CHANGE_TYPE)
    field = rows.schema.field(index)
    return rows.set_column(index, field, pa.array(out, pa.string()))


# ---- the range ------------------------------------------------------------------------------
def _range(table: Table, options: Mapping[str, str]) -> tuple[int | None, int | None]:
    """The start (exclusive) and end (inclusive) snapshot ids the options choose, as Iceberg's
    changelog scan resolves them; end ``None``: nothing to read."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValidationError(
            f"create_changelog_view does not know the options {unknown} "
            f"(it takes {', '.join(_OPTIONS)})"
        )
    for first, second in ((START_SNAPSHOT_ID, START_TIMESTAMP), (END_SNAPSHOT_ID, END_TIMESTAMP)):
        if first in options and second in options:
            raise ValidationError(f"create_changelog_view: give {first} or {second}, not both")
    start_ms, end_ms = int_option(options, START_TIMESTAMP), int_option(options, END_TIMESTAMP)
    if start_ms is not None and end_ms is not None and start_ms >= end_ms:
        raise ValidationError(
            f"create_changelog_view: {START_TIMESTAMP} must be before {END_TIMESTAMP}"
        )
    metadata = table.metadata
    current = metadata.ancestors(metadata.current_snapshot_id)  # newest first
    start = int_option(options, START_SNAPSHOT_ID)
    if start is not None:
        metadata.snapshot_by_id(start)  # NoSuchSnapshot for an unknown id
    if start_ms is not None:  # after the snapshot that was current then
        start = next((s.snapshot_id for s in current if s.timestamp_ms <= start_ms), None)
    end = int_option(options, END_SNAPSHOT_ID)
    if end is not None:
        metadata.snapshot_by_id(end)
    elif end_ms is not None:
        end = next((s.snapshot_id for s in current if s.timestamp_ms <= end_ms), None)
    else:
        end = metadata.current_snapshot_id
    return start, end


def _data_changing(table: Table, start: int | None, end: int) -> list[Snapshot]:
    """The data-changing snapshots after ``start`` up to ``end``, oldest first."""
    chain = table.metadata.ancestors(end)  # newest first
    ids = [s.snapshot_id for s in chain]
    if start is not None:
        if start not in ids:
            raise ValidationError(
                f"snapshot {start} is not an ancestor of snapshot {end}: a changelog follows "
                "one line of history"
            )
        chain = chain[: ids.index(start)]
    elif chain and chain[-1].parent_snapshot_id is not None:
        raise NoSuchSnapshot(
            f"the history before snapshot {chain[-1].snapshot_id} has been expired: give a "
            f"later {START_SNAPSHOT_ID}"
        )
    return [s for s in reversed(chain) if s.operation != "replace"]


# ---- rows -----------------------------------------------------------------------------------
def _entries(found: engine.ChangeSet) -> list[pa.Table]:
    """A change set's rows with their change type and snapshot (the ordinal comes later)."""
    out = []
    for rows, kind in ((found.added, INSERT), (found.removed, DELETE)):
        if rows.num_rows:
            snapshot_ids = rows.column(engine.CHANGE_SNAPSHOT_ID)
            rows = rows.drop_columns([engine.CHANGE_SNAPSHOT_ID])
            rows = rows.append_column(CHANGE_TYPE, pa.array([kind] * rows.num_rows, pa.string()))
            out.append(rows.append_column(COMMIT_SNAPSHOT_ID, snapshot_ids))
    return out


def _with_ordinals(rows: pa.Table, ordinals: Mapping[int, int]) -> pa.Table:
    snapshot_ids = rows.column(COMMIT_SNAPSHOT_ID).to_pylist()
    return rows.append_column(
        CHANGE_ORDINAL, pa.array([ordinals[i] for i in snapshot_ids], pa.int32())
    )


def _empty(table: Table) -> pa.Table:
    rows = schema_to_arrow(table.metadata.schema()).empty_table()
    for name, kind in _CHANGE_ARROW.items():
        rows = rows.append_column(name, pa.array([], kind))
    return rows


def _identifier_columns(table: Table, given: list[str] | None) -> list[str]:
    schema = table.metadata.schema()
    names = (
        given if given is not None else [schema.column_name(i) for i in schema.identifier_field_ids]
    )
    primitive = {f.name for f in schema.fields if f.field_type.is_primitive}
    wrong = [n for n in names if n not in primitive]
    if wrong:
        raise ValidationError(
            f"create_changelog_view: identifier_columns {wrong} are not top-level columns of "
            f"{table.name} with a primitive type (its columns: {', '.join(schema.column_names)})"
        )
    return names


def _spark_frame(spark: Any, table: Table, rows: pa.Table) -> Any:
    """The rows as a Spark DataFrame, in the types the table's columns have in Spark."""
    schema = st.StructType([*spark_schema(table.metadata.schema()).fields, *_CHANGE_FIELDS])
    target = to_arrow_schema(schema, timezone="UTC")
    batches = [to_spark_batch(b, target) for b in rows.to_batches()]
    return spark.createDataFrame(pa.Table.from_batches(batches, schema=target), schema=schema)
