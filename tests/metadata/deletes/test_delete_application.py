"""Applying position deletes, deletion vectors and equality deletes to Arrow data, checked
against straightforward pure-Python versions of the spec's rules."""

from __future__ import annotations

import math
import struct
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap64

from lakecat.metadata.deletes import (
    EqualityDeletes,
    PositionIndex,
    drop_deleted_positions,
    drop_equality_deleted,
    equality_deleted_mask,
    positions_by_file,
    positions_for_file,
)
from lakecat.metadata.errors import CorruptMetadata, UnknownColumn, ValidationError

# -- position deletes -------------------------------------------------------------------------


def numbered(n: int) -> pa.Table:
    return pa.table({"row": pa.array(range(n), pa.int64()), "s": [f"r{i}" for i in range(n)]})


@st.composite
def file_and_batches(draw: st.DrawFn) -> tuple[int, list[int], set[int]]:
    n = draw(st.integers(0, 300))
    sizes = []
    left = n
    while left:
        size = draw(st.integers(1, max(1, left)))
        sizes.append(size)
        left -= size
    deleted = draw(st.sets(st.integers(0, n + 20)))
    return n, sizes, deleted


@settings(max_examples=300, deadline=None)
@given(file_and_batches(), st.sampled_from(["list", "array", "bitmap", "chunked", "index"]))
def test_positions_are_dropped_batch_by_batch(
    case: tuple[int, list[int], set[int]], form: str
) -> None:
    n, sizes, deleted = case
    shuffled = sorted(deleted, key=lambda p: (p * 7919) % 101) + sorted(deleted)[:3]  # dups
    positions: Any = {
        "list": shuffled,
        "array": pa.array(shuffled, pa.int64()),
        "bitmap": BitMap64(deleted),
        "chunked": pa.chunked_array([shuffled[:5], shuffled[5:]], pa.int32()),
        "index": PositionIndex(shuffled),
    }[form]
    index = PositionIndex(positions)
    assert index.positions.to_pylist() == sorted(deleted)
    data = numbered(n)
    start, kept = 0, []
    for batch in data.to_batches(max_chunksize=max(sizes, default=1)):
        kept.append(index.apply(batch, start))
        start += batch.num_rows
    got = pa.Table.from_batches(kept, data.schema) if kept else data.slice(0, 0)
    assert got.column("row").to_pylist() == [i for i in range(n) if i not in deleted]
    # any batch boundaries: one call per slice
    start, rows = 0, []
    for size in sizes:
        part = drop_deleted_positions(data.slice(start, size), positions, start=start)
        rows += part.column("row").to_pylist()
        start += size
    assert rows == [i for i in range(n) if i not in deleted]


def test_untouched_batches_come_back_as_they_are() -> None:
    data = numbered(10)
    index = PositionIndex([100, 200])
    assert index.apply(data, 0) is data
    assert index.kept_indices(0, 10) is None
    kept = index.kept_indices(95, 10)
    assert kept is not None and kept.to_pylist() == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    assert index.in_range(100, 201).to_pylist() == [100, 200]
    assert 200 in index and 201 not in index and "x" not in index
    assert len(index.union([1], BitMap64([200, 300]))) == 4
    assert repr(PositionIndex()) == "PositionIndex(0 positions)"
    batch = data.to_batches()[0]
    assert isinstance(PositionIndex([3]).apply(batch, 0), pa.RecordBatch)


@pytest.mark.parametrize(
    ("positions", "message"),
    [([-1], "negative"), (pa.array([None], pa.int64()), "null"), (["a"], "int64")],
)
def test_bad_positions_are_refused(positions: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        PositionIndex(positions)


def test_bad_batches_are_refused() -> None:
    with pytest.raises(ValidationError, match="invalid batch"):
        PositionIndex([1]).kept_indices(-1, 5)
    with pytest.raises(ValidationError, match="at most"):
        PositionIndex([1]).kept_indices(0, 2**32)
    with pytest.raises(ValidationError, match="integers"):
        PositionIndex(pa.array([1.5]))


def delete_rows(rows: list[tuple[str, int]], *, dictionary: bool = False) -> pa.Table:
    paths = pa.array([r[0] for r in rows], pa.string())
    if dictionary:
        paths = paths.dictionary_encode()
    return pa.table({"file_path": paths, "pos": pa.array([r[1] for r in rows], pa.int64())})


files = st.sampled_from(["file:/a.parquet", "file:/b.parquet", "s3://x/c.parquet", "a.parquet"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.tuples(files, st.integers(0, 50)), max_size=40), max_size=4),
    st.booleans(),
)
def test_position_delete_rows_by_data_file(
    delete_files: list[list[tuple[str, int]]], as_batches: bool
) -> None:
    tables: list[Any] = [
        delete_rows(rows, dictionary=i % 2 == 1) for i, rows in enumerate(delete_files)
    ]
    if as_batches:
        tables = [b for t in tables for b in t.to_batches()]
    expected: dict[str, set[int]] = {}
    for rows in delete_files:
        for path, pos in rows:
            expected.setdefault(path, set()).add(pos)
    for path in ("file:/a.parquet", "file:/b.parquet", "s3://x/c.parquet", "a.parquet"):
        got = positions_for_file(tables, path).positions.to_pylist()
        assert got == sorted(expected.get(path, set()))
    assert {p: i.positions.to_pylist() for p, i in positions_by_file(tables).items()} == {
        p: sorted(v) for p, v in expected.items()
    }


def test_one_table_or_batch_of_position_deletes() -> None:
    table = delete_rows([("f", 3), ("g", 1), ("f", 1), ("f", 3)])
    assert positions_for_file(table, "f").positions.to_pylist() == [1, 3]
    assert positions_for_file(table.to_batches()[0], "g").positions.to_pylist() == [1]
    assert positions_for_file([], "f").positions.to_pylist() == []
    assert positions_by_file([]) == {}
    extra = table.append_column("row", pa.array([None] * 4, pa.struct([("id", pa.int64())])))
    assert positions_for_file(extra, "f").positions.to_pylist() == [1, 3]  # the row column


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (pa.table({"file_path": ["f"]}), "no 'pos' column"),
        (pa.table({"pos": [1]}), "no 'file_path' column"),
        (pa.table({"file_path": ["f", None], "pos": [1, 2]}), "null file_path or pos"),
        (pa.table({"file_path": ["f", "g"], "pos": [1, None]}), "null file_path or pos"),
        (pa.table({"file_path": ["f"], "pos": [-3]}), "negative pos -3"),
        (pa.table({"file_path": ["f"], "pos": [[1]]}), "wrong type"),
    ],
)
def test_malformed_position_delete_rows(table: pa.Table, message: str) -> None:
    with pytest.raises(CorruptMetadata, match=message):
        positions_for_file(table, "f")
    with pytest.raises(CorruptMetadata, match=message):
        positions_by_file(table)


# -- equality deletes -------------------------------------------------------------------------

REFS: list[Any] = ["a", "s", "f", ("st", "x")]
VALUES: dict[Any, Any] = {
    "a": st.one_of(st.none(), st.integers(-3, 3)),
    "s": st.one_of(st.none(), st.sampled_from(["", "x", "y", "é"])),
    "f": st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, math.nan, -math.nan, math.inf])),
    ("st", "x"): st.one_of(st.none(), st.integers(0, 2)),
}
STRUCT_NULL = st.booleans()


def bits(value: float) -> bytes:
    """Double.compare equality: NaNs equal each other, -0.0 differs from 0.0."""
    return b"nan" if math.isnan(value) else struct.pack(">d", value)


def java_equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None  # a null delete value matches a null: col IS NULL
    if isinstance(a, float):
        return bits(a) == bits(b)
    return bool(a == b)


def value_of(row: dict[Any, Any], ref: Any) -> Any:
    if isinstance(ref, tuple):
        return None if row["st"] is None else row["st"]["x"]
    return row[ref]


@st.composite
def rows_for(draw: st.DrawFn, refs: list[Any], max_size: int) -> list[dict[Any, Any]]:
    out = []
    for _ in range(draw(st.integers(0, max_size))):
        row: dict[Any, Any] = {r: draw(VALUES[r]) for r in refs if not isinstance(r, tuple)}
        if ("st", "x") in refs:
            row["st"] = (
                None
                if draw(STRUCT_NULL) and draw(STRUCT_NULL)
                else {"x": draw(VALUES[("st", "x")])}
            )
        out.append(row)
    return out


def arrow(rows: list[dict[Any, Any]], refs: list[Any], *, variant: int) -> pa.Table:
    """Rows as Arrow; ``variant`` picks other physical types, which are cast to the table's."""
    columns: dict[str, pa.Array] = {}
    for ref in refs:
        if ref == "a":
            columns["a"] = pa.array(
                [r["a"] for r in rows],
                [pa.int64(), pa.int32(), pa.int8()][variant % 3] if variant else pa.int64(),
            )
        elif ref == "s":
            arr = pa.array(
                [r["s"] for r in rows], pa.large_string() if variant % 2 else pa.string()
            )
            columns["s"] = arr.dictionary_encode() if variant == 2 else arr
        elif ref == "f":
            columns["f"] = pa.array([r["f"] for r in rows], pa.float64())
        else:
            columns["st"] = pa.array([r["st"] for r in rows], pa.struct([("x", pa.int64())]))
    return pa.table(columns)


@st.composite
def equality_case(
    draw: st.DrawFn,
) -> tuple[list[dict[Any, Any]], list[tuple[list[Any], list[dict[Any, Any]]]]]:
    data = draw(rows_for(REFS, 60))
    groups = []
    for _ in range(draw(st.integers(0, 3))):
        refs = draw(st.lists(st.sampled_from(REFS), min_size=1, max_size=4, unique=True))
        # delete rows: some copied from the data (to match), some fresh
        copies = draw(st.lists(st.sampled_from(data), max_size=5)) if data else []
        fresh = draw(rows_for(refs, 8))
        deletes = [
            {k: v for k, v in r.items() if k in refs or (k == "st" and ("st", "x") in refs)}
            for r in copies
        ] + fresh
        groups.append((refs, deletes))
    return data, groups


@settings(max_examples=400, deadline=None)
@given(equality_case(), st.integers(0, 2), st.booleans())
def test_equality_deletes_match_the_reference(
    case: tuple[list[dict[Any, Any]], list[tuple[list[Any], list[dict[Any, Any]]]]],
    variant: int,
    as_batch: bool,
) -> None:
    data_rows, groups = case
    data = arrow(data_rows, REFS, variant=0)
    deletes = [
        EqualityDeletes(arrow(rows, refs, variant=variant), tuple(refs)) for refs, rows in groups
    ]
    expected = [
        any(
            any(all(java_equal(value_of(row, r), value_of(d, r)) for r in refs) for d in rows)
            for refs, rows in groups
        )
        for row in data_rows
    ]
    assert equality_deleted_mask(data, deletes).to_pylist() == expected
    source: Any = data.combine_chunks().to_batches()[0] if as_batch and data.num_rows else data
    kept = drop_equality_deleted(source, deletes)
    assert type(kept) is type(source)
    assert kept.num_rows == expected.count(False)
    if not any(expected):
        assert kept is source


def test_null_matches_null_and_nothing_else() -> None:
    data = pa.table({"id": [1, 2, None, 4], "cat": ["a", None, None, "b"]})
    gone = equality_deleted_mask(data, [(pa.table({"cat": [None]}), ["cat"])]).to_pylist()
    assert gone == [False, True, True, False]
    both = (pa.table({"id": [None, 2], "cat": [None, "a"]}), ["id", "cat"])
    assert equality_deleted_mask(data, [both]).to_pylist() == [False, False, True, False]


def test_types_are_compared_after_casting_to_the_table_type() -> None:
    data = pa.table(
        {"id": pa.array([1, 2, 3], pa.int32()), "ts": pa.array([1, 2, 3], pa.timestamp("ms"))}
    )
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))])
    deletes = pa.table(
        {"id": pa.array([2, 3], pa.int64()), "ts": pa.array([2000, 4000], pa.timestamp("us"))}
    )
    mask = equality_deleted_mask(data, [(deletes, ["id", "ts"])], schema=schema)
    assert mask.to_pylist() == [False, True, False]
    # without a schema, the data's type rules: an int64 delete value fits int32 or fails loudly
    assert equality_deleted_mask(data, [(deletes.select(["id"]), ["id"])]).to_pylist() == [
        False,
        True,
        True,
    ]
    too_big = pa.table({"id": pa.array([2**40], pa.int64())})
    with pytest.raises(ValidationError, match="cannot compare delete column id as int32"):
        equality_deleted_mask(data, [(too_big, ["id"])])


@pytest.mark.parametrize(
    ("values", "delete"),
    [
        (pa.array([b"ab", b"cd", None], pa.binary(2)), pa.array([b"cd", None], pa.binary(2))),
        (pa.array([True, False, None]), pa.array([False, None])),
        (pa.array([1, 2, None], pa.decimal128(5, 2)), pa.array([2, None], pa.decimal128(7, 3))),
        (pa.array([1, 2, None], pa.date32()), pa.array([2, None], pa.date32())),
        (pa.array([1, 2, None], pa.time64("us")), pa.array([2, None], pa.time64("us"))),
        (pa.array(["a", "b", None], pa.string_view()), pa.array(["b", None], pa.string())),
        (pa.array([b"a", b"b", None], pa.binary_view()), pa.array([b"b", None], pa.binary())),
        (pa.array([1.0, 2.0, None], pa.float32()), pa.array([2.0, None], pa.float32())),
        (
            pa.array([b"0" * 16, b"1" * 16, None], pa.binary(16)).cast(pa.uuid()),
            pa.array([b"1" * 16, None], pa.binary(16)).cast(pa.uuid()),
        ),
    ],
)
def test_key_types(values: pa.Array, delete: pa.Array) -> None:
    data = pa.table({"k": values, "other": [1, 2, 3]})
    for columns, table in (
        (["k"], pa.table({"k": delete})),
        (["k", "other"], pa.table({"k": delete, "other": [2, 3]})),
    ):
        assert equality_deleted_mask(data, [(table, columns)]).to_pylist() == [False, True, True]


def test_nested_fields_and_null_structs() -> None:
    struct_type = pa.struct([("x", pa.int64()), ("y", pa.string())])
    data = pa.table(
        {"st": pa.array([{"x": 1, "y": "a"}, None, {"x": None, "y": "b"}], struct_type)}
    )
    deletes = pa.table({"st": pa.array([{"x": None, "y": None}], struct_type)})
    # a null struct makes its fields null: row 1 matches x IS NULL, as does row 2
    assert equality_deleted_mask(data, [(deletes, [("st", "x")])]).to_pylist() == [
        False,
        True,
        True,
    ]
    assert equality_deleted_mask(data, [(deletes, [("st", "x"), ("st", "y")])]).to_pylist() == [
        False,
        True,
        False,
    ]


def test_column_errors() -> None:
    data = pa.table({"id": [1], "st": pa.array([{"x": 1}])})
    with pytest.raises(UnknownColumn, match="the data has no column 'nope'"):
        equality_deleted_mask(data, [(pa.table({"nope": [1]}), ["nope"])])
    with pytest.raises(UnknownColumn, match=r"st\.z"):
        equality_deleted_mask(data, [(pa.table({"st": pa.array([{"z": 1}])}), [("st", "z")])])
    with pytest.raises(UnknownColumn, match="the schema has no column 'id'"):
        equality_deleted_mask(data, [(pa.table({"id": [1]}), ["id"])], schema=pa.schema([]))
    with pytest.raises(CorruptMetadata, match="equality delete rows have no delete column 'id'"):
        equality_deleted_mask(data, [(pa.table({"other": [1]}), ["id"])])
    with pytest.raises(ValidationError, match="at least one delete column"):
        equality_deleted_mask(data, [(pa.table({"id": [1]}), [])])
    with pytest.raises(ValidationError, match="repeated delete column"):
        equality_deleted_mask(data, [(pa.table({"id": [1]}), ["id", "id"])])
    with pytest.raises(ValidationError, match="invalid column reference"):
        equality_deleted_mask(data, [(pa.table({"id": [1]}), [("id", "")])])
    with pytest.raises(ValidationError, match="nested type"):
        equality_deleted_mask(data, [(pa.table({"st": pa.array([{"x": 1}])}), ["st"])])


def test_empty_inputs() -> None:
    data = pa.table({"id": pa.array([], pa.int64())})
    assert equality_deleted_mask(data, [(pa.table({"id": [1]}), ["id"])]).to_pylist() == []
    full = pa.table({"id": [1, 2]})
    assert equality_deleted_mask(full, []).to_pylist() == [False, False]
    nothing = pa.table({"id": pa.array([], pa.int64())})
    assert drop_equality_deleted(full, [(nothing, ["id"])]) is full


def test_millions_of_rows() -> None:
    n = 2_000_000
    ids = pc.cast(pa.array(range(n)), pa.int64())
    data = pa.table({"id": ids, "part": pc.cast(pc.bit_wise_and(ids, 7), pa.string())})
    deletes = pa.table(
        {
            "id": pa.array(range(0, n, 3), pa.int64()),
            "part": pc.cast(pc.bit_wise_and(pa.array(range(0, n, 3)), 7), pa.string()),
        }
    )
    single = drop_equality_deleted(data, [(deletes.select(["id"]), ["id"])])
    assert single.num_rows == n - len(range(0, n, 3))
    double = drop_equality_deleted(data, [(deletes, ["id", "part"])])
    assert double.num_rows == single.num_rows
    index = PositionIndex(pa.array(range(0, n, 2), pa.int64()))
    assert index.apply(data, 0).num_rows == n // 2
