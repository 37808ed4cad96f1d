"""Applying row-level deletes to Arrow data read from one data file.

Which delete files apply to which data file (sequence numbers, partitions, DVs superseding
position delete files) is scan planning's business; this module only applies them:

Position deletes and deletion vectors
    :func:`positions_for_file` collects the positions one data file loses from position delete
    rows (``file_path``, ``pos``) of any number of position delete files; a delete file may hold
    rows for many data files (``write.delete.granularity=partition``). A DV is already one
    file's positions (:func:`lakecat.metadata.deletes.deletion_vector.deserialize_deletion_vector`).
    :class:`PositionIndex` holds them sorted; :meth:`PositionIndex.apply` (or
    :func:`drop_deleted_positions`) drops them from a batch that starts at a known row position
    of the file, so a file can be filtered batch by batch.

Equality deletes
    :func:`drop_equality_deleted` drops the data rows whose values on an equality delete file's
    delete columns equal one of its rows, per the spec's "Equality Delete Files": each delete row
    is an AND of ``column = value`` predicates, where a ``null`` value matches a null (``col IS
    NULL``). Both sides are cast to the table's type first (the data's type unless ``schema``
    says otherwise). The spec does not allow float/double delete columns; should they occur,
    values compare as Iceberg Java compares them (``Double.compare``): NaN equals NaN (any
    payload), -0.0 differs from 0.0. Columns are named by the caller (who maps ``equality_ids``
    to names): a top-level name, or a tuple path into structs (a null struct makes its fields
    null). The work is one hash-based ``is_in`` (one delete column) or one hash semi-join
    (several), so millions of rows cost a few hash-table builds and probes.

Malformed delete rows (null or negative positions, a delete column missing from a delete file)
raise :class:`CorruptMetadata`; bad arguments :class:`ValidationError`.
"""

from __future__ import annotations

import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeAlias, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import AbstractBitMap64, BitMap

from lakecat.metadata.deletes.deletion_vector import Positions, positions_array
from lakecat.metadata.errors import CorruptMetadata, UnknownColumn, ValidationError

__all__ = [
    "EqualityDeletes",
    "FieldRef",
    "PositionIndex",
    "drop_deleted_positions",
    "drop_equality_deleted",
    "equality_deleted_mask",
    "positions_by_file",
    "positions_for_file",
]

Data = TypeVar("Data", pa.Table, pa.RecordBatch)
FieldRef: TypeAlias = str | tuple[str, ...]
"""A column: a top-level name, or the path of names to a field nested in structs."""
DeleteRows: TypeAlias = pa.Table | pa.RecordBatch
_MAX_BATCH_ROWS = 2**32 - 1


# -- position deletes -------------------------------------------------------------------------


class PositionIndex:
    """The deleted row positions of one data file: sorted, distinct, int64.

    Build it once per data file (from position delete rows, a DV's bitmap, or any positions)
    and apply it to each batch read from the file with the batch's first row position.
    """

    __slots__ = ("_positions", "_view")

    def __init__(self, positions: PositionIndex | Positions = ()) -> None:
        if isinstance(positions, PositionIndex):
            self._positions: pa.Int64Array = positions._positions
        elif isinstance(positions, AbstractBitMap64):
            self._positions = positions_array(positions)
        else:
            self._positions = _sorted_distinct(_as_int64(positions))
        buffer = self._positions.buffers()[1]
        start = self._positions.offset * 8
        raw = memoryview(buffer)[start : start + 8 * len(self._positions)] if buffer else None
        self._view: Sequence[int] = raw.cast("q") if raw is not None else ()

    @property
    def positions(self) -> pa.Int64Array:
        """The positions, ascending."""
        return self._positions

    def __len__(self) -> int:
        return len(self._positions)

    def __contains__(self, position: object) -> bool:
        if not isinstance(position, int):
            return False
        i = bisect_left(self._view, position)
        return i < len(self._view) and self._view[i] == position

    def __repr__(self) -> str:
        return f"PositionIndex({len(self)} positions)"

    def union(self, *others: PositionIndex | Positions) -> PositionIndex:
        """The positions of this index and of ``others``."""
        arrays = [self._positions] + [PositionIndex(o)._positions for o in others]
        return PositionIndex(pa.chunked_array(arrays, type=pa.int64()))

    def in_range(self, start: int, stop: int) -> pa.Int64Array:
        """The deleted positions ``p`` with ``start <= p < stop`` (a zero-copy slice)."""
        lo = bisect_left(self._view, start)
        hi = bisect_left(self._view, stop, lo)
        result: pa.Int64Array = self._positions.slice(lo, hi - lo)
        return result

    def kept_indices(self, start: int, num_rows: int) -> pa.UInt32Array | None:
        """Indices (0-based, within the batch) of the rows a batch of ``num_rows`` rows that
        starts at row position ``start`` keeps; ``None`` when it keeps them all."""
        if start < 0 or num_rows < 0:
            raise ValidationError(f"invalid batch: start {start}, {num_rows} rows")
        if num_rows > _MAX_BATCH_ROWS:
            raise ValidationError(f"batch of {num_rows} rows; at most {_MAX_BATCH_ROWS}")
        deleted = self.in_range(start, start + num_rows)
        if not len(deleted):
            return None
        relative = pc.subtract(deleted, pa.scalar(start, pa.int64())).cast(pa.uint32())
        raw = array.array("I")
        buffer = relative.buffers()[1]
        raw.frombytes(
            memoryview(buffer)[relative.offset * 4 : (relative.offset + len(relative)) * 4]
        )
        keep = BitMap(raw)
        keep.flip_inplace(0, num_rows)
        kept = keep.to_array()
        result: pa.UInt32Array = pa.Array.from_buffers(
            pa.uint32(), len(kept), [None, pa.py_buffer(kept)]
        )
        return result

    def apply(self, data: Data, start: int = 0) -> Data:
        """``data`` (rows ``start``, ``start + 1``, ... of the file) without the deleted rows.

        Returns ``data`` itself when none of its rows is deleted.
        """
        kept = self.kept_indices(start, data.num_rows)
        return data if kept is None else data.take(kept)


def drop_deleted_positions(
    data: Data, deleted: PositionIndex | Positions, *, start: int = 0
) -> Data:
    """``data``, whose first row is row ``start`` of its file, without the deleted positions.

    For many batches of one file, build a :class:`PositionIndex` once and pass it each time.
    """
    index = deleted if isinstance(deleted, PositionIndex) else PositionIndex(deleted)
    return index.apply(data, start)


def positions_for_file(
    position_deletes: DeleteRows | Iterable[DeleteRows], data_file_path: str
) -> PositionIndex:
    """The positions of ``data_file_path`` that these position delete rows delete.

    ``position_deletes``: the rows (at least the columns ``file_path`` and ``pos``) of one or
    more position delete files, which may name other data files too. Paths compare exactly, as
    the spec requires (``file_path`` equals the data file's ``file_path`` in its manifest).
    """
    selected = []
    for rows in _tables(position_deletes):
        file_path, pos = _position_columns(rows)
        selected.append(pos.filter(pc.equal(file_path, pa.scalar(data_file_path, pa.string()))))
    if not selected:
        return PositionIndex()
    return PositionIndex(pa.chunked_array([c for s in selected for c in s.chunks], pa.int64()))


def positions_by_file(
    position_deletes: DeleteRows | Iterable[DeleteRows],
) -> dict[str, PositionIndex]:
    """The deleted positions of every data file these position delete rows name."""
    parts = [
        pa.table(dict(zip(("file_path", "pos"), _position_columns(t), strict=True)))
        for t in _tables(position_deletes)
    ]
    parts = [p for p in parts if p.num_rows]
    if not parts:
        return {}
    rows = pa.concat_tables(parts)
    grouped = rows.group_by("file_path").aggregate([("pos", "list")])
    paths = grouped.column("file_path").to_pylist()
    lists = grouped.column("pos_list")
    return {path: PositionIndex(lists[i].values) for i, path in enumerate(paths)}


def _tables(rows: DeleteRows | Iterable[DeleteRows]) -> list[pa.Table]:
    if isinstance(rows, pa.Table):
        return [rows]
    if isinstance(rows, pa.RecordBatch):
        return [pa.Table.from_batches([rows])]
    return [r if isinstance(r, pa.Table) else pa.Table.from_batches([r]) for r in rows]


def _position_columns(rows: pa.Table) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """``file_path`` as string and ``pos`` as int64, checked: no nulls, no negative position."""
    for name in ("file_path", "pos"):
        if name not in rows.column_names:
            raise CorruptMetadata(f"position delete rows have no '{name}' column")
    file_path, pos = rows.column("file_path"), rows.column("pos")
    try:
        file_path = _plain(file_path).cast(pa.string())
        pos = _plain(pos).cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptMetadata(f"position delete rows of the wrong type: {exc}") from exc
    if file_path.null_count or pos.null_count:
        raise CorruptMetadata("position delete rows with a null file_path or pos")
    if len(pos) and pc.min(pos).as_py() < 0:
        raise CorruptMetadata(f"position delete row with negative pos {pc.min(pos).as_py()}")
    return file_path, pos


def _as_int64(positions: Positions) -> pa.ChunkedArray:
    try:
        if isinstance(positions, pa.Array | pa.ChunkedArray):
            values = pa.chunked_array([positions]) if isinstance(positions, pa.Array) else positions
            if not pa.types.is_integer(values.type):
                raise ValidationError(f"positions must be integers, not {values.type}")
            values = values.cast(pa.int64())
        else:
            values = pa.chunked_array([pa.array(list(positions), pa.int64())], pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
        raise ValidationError(f"positions must be int64 integers: {exc}") from exc
    if values.null_count:
        raise ValidationError(f"{values.null_count} null row position(s)")
    if len(values) and pc.min(values).as_py() < 0:
        raise ValidationError(f"negative row position {pc.min(values).as_py()}")
    return values


def _sorted_distinct(values: pa.ChunkedArray) -> pa.Int64Array:
    distinct = pc.unique(values)
    result: pa.Int64Array = distinct.take(pc.array_sort_indices(distinct))
    return result


# -- equality deletes -------------------------------------------------------------------------


@dataclass(frozen=True)
class EqualityDeletes:
    """The rows of one or more equality delete files with the same delete columns."""

    rows: pa.Table | pa.RecordBatch
    columns: tuple[FieldRef, ...]


def drop_equality_deleted(
    data: Data,
    deletes: Iterable[EqualityDeletes | tuple[DeleteRows, Sequence[FieldRef]]],
    *,
    schema: pa.Schema | None = None,
) -> Data:
    """``data`` without the rows that an equality delete matches.

    ``deletes``: the equality delete files that apply to ``data``'s file, each with its delete
    columns. ``schema``: the table's Arrow schema; key columns of both sides are cast to its
    types (default: the types of ``data``). Returns ``data`` itself when nothing matches.
    """
    mask = equality_deleted_mask(data, deletes, schema=schema)
    if not pc.any(mask).as_py():
        return data
    return data.filter(pc.invert(mask))


def equality_deleted_mask(
    data: pa.Table | pa.RecordBatch,
    deletes: Iterable[EqualityDeletes | tuple[DeleteRows, Sequence[FieldRef]]],
    *,
    schema: pa.Schema | None = None,
) -> pa.BooleanArray:
    """For each row of ``data``: does an equality delete match it? (no nulls)"""
    table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
    groups: dict[tuple[tuple[str, ...], ...], list[pa.Table]] = {}
    for item in deletes:
        rows, columns = (item.rows, item.columns) if isinstance(item, EqualityDeletes) else item
        refs = tuple(_path(c) for c in columns)
        if not refs:
            raise ValidationError("an equality delete needs at least one delete column")
        if len(set(refs)) != len(refs):
            raise ValidationError(f"repeated delete column in {columns!r}")
        rows_table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
        if rows_table.num_rows:
            groups.setdefault(refs, []).append(rows_table)
    mask = None
    for refs, tables in groups.items():
        hit = _matches(table, refs, tables, schema)
        mask = hit if mask is None else pc.or_(mask, hit)
    if mask is None:
        return _all_false(table)
    result: pa.BooleanArray = mask
    return result


def _matches(
    data: pa.Table,
    refs: tuple[tuple[str, ...], ...],
    deletes: list[pa.Table],
    schema: pa.Schema | None,
) -> pa.BooleanArray:
    data_keys, delete_keys = [], []
    for ref in refs:
        data_column = _extract(data, ref, side="data")
        target = _plain_type(_field_type(schema, ref) if schema is not None else data_column.type)
        data_keys.append(_key(data_column, target, ref))
        delete_chunks = []
        for rows in deletes:
            delete_chunks += _key(_extract(rows, ref, side="delete"), target, ref).chunks
        delete_keys.append(pa.chunked_array(delete_chunks, data_keys[-1].type))
    if len(refs) == 1:
        values = delete_keys[0].combine_chunks()
        single: pa.BooleanArray = pc.is_in(data_keys[0], value_set=values, skip_nulls=False)
        return _combine(single)
    # several columns: a hash semi-join; a null matches a null, so each nullable key becomes
    # (is-valid flag, value with nulls filled in), neither of which is null
    left: dict[str, pa.ChunkedArray] = {}
    right: dict[str, pa.ChunkedArray] = {}
    for i, (dk, ek) in enumerate(zip(data_keys, delete_keys, strict=True)):
        if dk.null_count or ek.null_count:
            zero = _zero(dk.type)
            left[f"v{i}"], right[f"v{i}"] = pc.is_valid(dk), pc.is_valid(ek)
            dk, ek = pc.fill_null(dk, zero), pc.fill_null(ek, zero)
        left[f"k{i}"], right[f"k{i}"] = dk, ek
    keys = list(left)
    left["row"] = pa.chunked_array([_arange(data.num_rows)])
    hits = pa.table(left).join(pa.table(right), keys=keys, join_type="left semi")
    matched: pa.BooleanArray = pc.is_in(left["row"], value_set=hits.column("row").combine_chunks())
    return _combine(matched)


def _path(ref: FieldRef) -> tuple[str, ...]:
    path = (ref,) if isinstance(ref, str) else tuple(ref)
    if not path or not all(isinstance(p, str) and p for p in path):
        raise ValidationError(f"invalid column reference {ref!r}")
    return path


def _extract(table: pa.Table, ref: tuple[str, ...], *, side: str) -> pa.ChunkedArray:
    def missing(what: str) -> Exception:
        if side == "data":
            return UnknownColumn(f"the data has no column {what}")
        return CorruptMetadata(f"equality delete rows have no delete column {what}")

    if ref[0] not in table.column_names:
        raise missing(repr(ref[0]))
    column = table.column(ref[0])
    for depth, name in enumerate(ref[1:], start=1):
        if not pa.types.is_struct(column.type) or column.type.get_field_index(name) < 0:
            raise missing(".".join(ref[: depth + 1]))
        child = pc.struct_field(column, [column.type.get_field_index(name)])
        if column.null_count:  # a null struct makes its fields null
            child = pc.if_else(pc.is_valid(column), child, pa.scalar(None, child.type))
        column = child
    return column


def _field_type(schema: pa.Schema, ref: tuple[str, ...]) -> pa.DataType:
    if schema.get_field_index(ref[0]) < 0:
        raise UnknownColumn(f"the schema has no column {ref[0]!r}")
    type_ = schema.field(ref[0]).type
    for depth, name in enumerate(ref[1:], start=1):
        if not pa.types.is_struct(type_) or type_.get_field_index(name) < 0:
            raise UnknownColumn(f"the schema has no column {'.'.join(ref[: depth + 1])!r}")
        type_ = type_.field(name).type
    return type_


def _plain_type(type_: pa.DataType) -> pa.DataType:
    if isinstance(type_, pa.BaseExtensionType):
        type_ = type_.storage_type
    if pa.types.is_dictionary(type_):
        type_ = type_.value_type
    return type_


def _plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Extension arrays as their storage, dictionary arrays decoded."""
    if isinstance(column.type, pa.BaseExtensionType):
        column = pa.chunked_array([c.storage for c in column.chunks], column.type.storage_type)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column


_VIEW_AS = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}


def _key(column: pa.ChunkedArray, target: pa.DataType, ref: tuple[str, ...]) -> pa.ChunkedArray:
    """``column`` cast to ``target``, in a form whose hash equality is Iceberg's equality."""
    column = _plain(column)
    if pa.types.is_nested(target):
        raise ValidationError(f"delete column {'.'.join(ref)} has nested type {target}")
    try:
        column = column.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise ValidationError(
            f"cannot compare delete column {'.'.join(ref)} as {target}: {exc}"
        ) from exc
    if pa.types.is_floating(target):
        # Double.compare: every NaN equal (canonical bits), -0.0 != 0.0 (bits differ)
        nan = pa.scalar(float("nan"), target)
        column = pc.if_else(pc.is_nan(column), nan, column)
        return _view(column, _VIEW_AS[target.bit_width])
    if pa.types.is_temporal(target) and target.bit_width in _VIEW_AS:
        return _view(column, _VIEW_AS[target.bit_width])
    if pa.types.is_null(target):
        return column.cast(pa.int8())
    if _is_view(target, "string_view"):  # hash joins do not take view types
        return column.cast(pa.large_string())
    if _is_view(target, "binary_view"):
        return column.cast(pa.large_binary())
    return column


def _is_view(type_: pa.DataType, name: str) -> bool:
    factory = getattr(pa, name, None)  # string_view / binary_view: pyarrow 16 and later
    return factory is not None and bool(type_ == factory())


def _view(column: pa.ChunkedArray, type_: pa.DataType) -> pa.ChunkedArray:
    return pa.chunked_array([c.view(type_) for c in column.chunks], type_)


def _zero(type_: pa.DataType) -> pa.Scalar:
    """A non-null filler of ``type_`` (for null keys, whose validity flag tells them apart)."""
    if pa.types.is_boolean(type_):
        return pa.scalar(False, type_)
    if pa.types.is_integer(type_):
        return pa.scalar(0, type_)
    if pa.types.is_decimal(type_):
        return pa.scalar(Decimal(0), type_)
    if pa.types.is_fixed_size_binary(type_):
        return pa.scalar(b"\0" * type_.byte_width, type_)
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return pa.scalar("", type_)
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
        return pa.scalar(b"", type_)
    raise ValidationError(f"equality deletes on {type_} columns are not supported")


def _arange(n: int) -> pa.Int64Array:
    return row_positions(0, n)


def row_positions(start: int, n: int) -> pa.Int64Array:
    """``start, start + 1, ..., start + n - 1`` as int64, computed in Arrow (a Python range
    would cost ~0.1 s per million rows)."""
    if n == 0:
        return pa.array([], pa.int64())
    ones = pa.repeat(pa.scalar(1, pa.int64()), n)
    result: pa.Int64Array = pc.add(pc.cumulative_sum(ones), pa.scalar(start - 1, pa.int64()))
    return result


def _all_false(table: pa.Table) -> pa.BooleanArray:
    result: pa.BooleanArray = pa.repeat(pa.scalar(False), table.num_rows)
    return result


def _combine(mask: pa.BooleanArray | pa.ChunkedArray) -> pa.BooleanArray:
    if isinstance(mask, pa.ChunkedArray):
        combined: pa.BooleanArray = (
            mask.combine_chunks() if mask.num_chunks else pa.array([], pa.bool_())
        )
        return combined
    return mask
