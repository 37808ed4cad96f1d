"""Dropping deleted row positions from a batch (``drop_positions``): whichever way it drops
them (the batch itself when none is deleted, zero-copy slices between a few, a bit mask
filtered column by column, the kept rows' indices taken when many go), the rows left are
exactly those whose positions are not deleted, in order, with their values, nulls and nested
values intact; and a reader that splits a batch in slices still counts positions and applies
equality deletes right."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecat.catalog.read.deletes import DeleteReader, drop_positions
from lakecat.metadata.deletes import PositionIndex
from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import LongType, NestedField, StringType

WORDS = ["", "a", "bc", "déf", "ghij" * 5]


def batch(n: int, seed: int = 0) -> pa.RecordBatch:
    """``n`` rows of every kind of column: ``pos`` holds each row's position in the batch."""
    rnd = random.Random(seed)

    def maybe(value: Any) -> Any:
        return None if rnd.random() < 0.1 else value

    return pa.RecordBatch.from_pydict(
        {
            "pos": pa.array(range(n), pa.int64()),
            "n": pa.array([maybe(rnd.randrange(100)) for _ in range(n)], pa.int32()),
            "s": pa.array([maybe(rnd.choice(WORDS)) for _ in range(n)], pa.string()),
            "b": pa.array([maybe(rnd.random() < 0.5) for _ in range(n)], pa.bool_()),
            "st": pa.array(
                [maybe({"x": maybe(i), "y": maybe(rnd.choice(WORDS))}) for i in range(n)],
                pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.string())]),
            ),
            "l": pa.array(
                [maybe([rnd.randrange(9) for _ in range(rnd.randrange(3))]) for _ in range(n)],
                pa.list_(pa.int64()),
            ),
            "d": pa.array([rnd.choice(WORDS) for _ in range(n)], pa.string()).dictionary_encode(),
        }
    )


def dropped(
    data: pa.RecordBatch, start: int, deleted: set[int], *, slices: bool = True
) -> pa.Table:
    parts = drop_positions(PositionIndex(sorted(deleted)), data, start, slices=slices)
    assert slices or len(parts) == 1
    assert all(p.schema == data.schema for p in parts)
    return pa.Table.from_batches(list(parts), schema=data.schema)


def expected(data: pa.RecordBatch, start: int, deleted: set[int]) -> list[dict[str, Any]]:
    return [r for i, r in enumerate(data.to_pylist()) if start + i not in deleted]


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(0, 300),
    start=st.integers(0, 1000),
    share=st.sampled_from([0.0, 0.005, 0.02, 0.05, 0.1, 0.5, 0.9, 1.0]),
    few=st.integers(0, 6),
    outside=st.integers(0, 20),
    slice_from=st.integers(0, 5),
    seed=st.integers(0, 2**16),
    slices=st.booleans(),
)
def test_the_rows_left_are_exactly_those_not_deleted(
    n: int,
    start: int,
    share: float,
    few: int,
    outside: int,
    slice_from: int,
    seed: int,
    slices: bool,
) -> None:
    rnd = random.Random(seed)
    # a batch that is itself a slice: its columns start at an offset into their buffers
    data = batch(n + slice_from, seed).slice(slice_from)
    deleted = {start + i for i in range(n) if rnd.random() < share}
    deleted |= {start + rnd.randrange(n) for _ in range(few)} if n else set()
    # positions of the file's other batches, before and after this one
    deleted |= {rnd.randrange(start + n, start + n + 50) for _ in range(outside)}
    deleted |= {rnd.randrange(0, start) for _ in range(outside)} if start else set()
    got = dropped(data, start, deleted, slices=slices)
    assert got.to_pylist() == expected(data, start, deleted)


@pytest.mark.parametrize(
    ("deleted", "parts"),
    [
        (set(), 1),  # nothing deleted: the batch itself
        ({0}, 1),  # first row
        ({999}, 1),  # last row
        ({0, 999}, 1),
        ({5, 6, 7, 8}, 2),  # adjacent: no empty slice between
        ({1, 500, 501, 998}, 4),
        ({10, 20, 30, 40, 50}, 1),  # more than a few: one filtered copy
        (set(range(0, 1000, 100)), 1),  # masked
        (set(range(0, 1000, 3)), 1),  # taken
        (set(range(1000)), 1),  # all: one empty batch
    ],
)
def test_each_way_of_dropping(deleted: set[int], parts: int) -> None:
    data = batch(1000, seed=len(deleted))
    start = 10_000
    shifted = {start + p for p in deleted}
    out = drop_positions(PositionIndex(sorted(shifted)), data, start)
    assert len(out) == parts
    if not deleted:
        assert out[0] is data
    got = pa.Table.from_batches(list(out), schema=data.schema)
    assert got.to_pylist() == expected(data, start, shifted)
    assert got.column("pos").to_pylist() == [i for i in range(1000) if i not in deleted]


def test_a_few_deletes_leave_zero_copy_slices() -> None:
    data = batch(1000)
    out = drop_positions(PositionIndex([3, 700]), data, 0)
    assert [p.num_rows for p in out] == [3, 696, 299]
    base = data.column("s").buffers()[2]
    assert base is not None
    for part in out:
        values = part.column("s").buffers()[2]
        assert values is not None and values.address == base.address


def test_a_batch_without_columns_keeps_its_row_count() -> None:
    empty = pa.RecordBatch.from_pydict({"x": pa.array(range(200))}).select([])
    assert empty.num_rows == 200
    for deleted in ([5], list(range(0, 200, 20)), list(range(0, 200, 2))):
        out = drop_positions(PositionIndex(deleted), empty, 0)
        assert sum(p.num_rows for p in out) == 200 - len(deleted)


def test_a_reader_counts_positions_across_sliced_batches_and_applies_equality_deletes(
    tmp_path: Path,
) -> None:
    schema = Schema(
        (
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "s", StringType(), required=False),
        ),
        0,
    )
    positions = tmp_path / "pos.parquet"
    deleted = [2, 9, 10, 31, 64, 65, 66, 67, 68, 99]
    pq.write_table(
        pa.table(
            {
                "file_path": ["a"] * len(deleted) + ["b"],
                "pos": pa.array([*deleted, 3], pa.int64()),
            }
        ),
        positions,
    )
    equality = tmp_path / "eq.parquet"
    pq.write_table(pa.table({"id": pa.array([3, 10, 50, 65], pa.int64())}), equality)
    pos_file = DataFile(str(positions), "PARQUET", (), 11, 100, content=Content.POSITION_DELETES)
    eq_file = DataFile(
        str(equality),
        "PARQUET",
        (),
        4,
        100,
        content=Content.EQUALITY_DELETES,
        equality_ids=(1,),
    )
    ids = pa.array(range(100), pa.int64())
    rows = pa.table({"id": ids, "s": pa.array([str(i) for i in range(100)])})
    for size, with_equality in itertools.product((1, 7, 32, 100), (False, True)):
        reader = DeleteReader(LocalFileIO(), schema)
        applied = (pos_file, eq_file) if with_equality else (pos_file,)
        kept = reader.apply(DataFile("a", "PARQUET", (), 100, 100), applied, rows.to_batches(size))
        got = pa.Table.from_batches(list(kept), schema=rows.schema)
        gone = set(deleted) | ({3, 10, 50, 65} if with_equality else set())
        assert got.column("id").to_pylist() == [i for i in range(100) if i not in gone]
        assert got.column("s").to_pylist() == [str(i) for i in range(100) if i not in gone]


@pytest.mark.parametrize(
    "paths",
    [
        ["a"] * 6,  # one data file (file-scoped deletes)
        ["a", "a", "b", "b", "b", "c"],  # many (partition-scoped)
        ["a", "a", "a", "b", "b", "b"],  # one per row group: each chunk one dictionary value
        [],
    ],
)
def test_a_position_delete_file_reads_as_positions_by_data_file(
    tmp_path: Path, paths: list[str]
) -> None:
    path = tmp_path / "deletes.parquet"
    rows = pa.table(
        {"file_path": pa.array(paths, pa.string()), "pos": pa.array(range(len(paths)), pa.int64())}
    )
    pq.write_table(rows, path, row_group_size=3)
    reader = DeleteReader(LocalFileIO(), Schema((), 0))
    found = reader._positions_by_file(
        DataFile(str(path), "PARQUET", (), len(paths), 100, content=Content.POSITION_DELETES)
    )
    assert {k: v.positions.to_pylist() for k, v in found.items()} == {
        p: [i for i, q in enumerate(paths) if q == p] for p in set(paths)
    }


@pytest.mark.parametrize(
    ("file_path", "pos", "error"),
    [
        (pa.array(["a", None]), pa.array([1, 2], pa.int64()), "null"),
        (pa.array(["a", "a"]), pa.array([1, None], pa.int64()), "null"),
        (pa.array(["a", "a"]), pa.array([1, -2], pa.int64()), "negative"),
        (pa.array(["a", "a"]), pa.array(["1", "2"]), "cannot be read"),
    ],
)
def test_a_malformed_position_delete_file_fails_naming_it(
    tmp_path: Path, file_path: pa.Array, pos: pa.Array, error: str
) -> None:
    path = tmp_path / "deletes.parquet"
    pq.write_table(pa.table({"file_path": file_path, "pos": pos}), path)
    reader = DeleteReader(LocalFileIO(), Schema((), 0))
    with pytest.raises(CorruptMetadata, match=str(path)) as raised:
        reader._positions_by_file(
            DataFile(str(path), "PARQUET", (), 2, 100, content=Content.POSITION_DELETES)
        )
    assert error in str(raised.value)
