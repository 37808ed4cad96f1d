"""RowMoves maps deleted positions of a rewrite's input files to the same rows in its outputs.

Checked against a brute-force model: the inputs' live rows concatenated in order and cut into
output files of the given sizes.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecat.catalog.commit.moves import MovedFile, RowMoves


@st.composite
def rewrites(draw: st.DrawFn) -> tuple[list[tuple[int, set[int]]], list[int]]:
    """Input files as (row count, positions deleted at read), and output file sizes."""
    inputs = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(0, 30))
        deleted = draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)) if n else set()
        inputs.append((n, deleted))
    live = sum(n - len(d) for n, d in inputs)
    sizes: list[int] = []
    left = live
    while left > 0:
        size = draw(st.integers(1, left))
        sizes.append(size)
        left -= size
    return inputs, sizes


def layout(inputs: list[tuple[int, set[int]]], sizes: list[int]) -> RowMoves:
    moved, offset = {}, 0
    for i, (n, deleted) in enumerate(inputs):
        moved[f"in{i}"] = MovedFile(0, offset, pa.array(sorted(deleted), pa.int64()))
        offset += n - len(deleted)
    return RowMoves(moved, [[(f"out{k}", size) for k, size in enumerate(sizes)]])


@given(rewrites(), st.data())
def test_each_deleted_input_row_maps_to_where_it_was_written(rewrite, data) -> None:
    inputs, sizes = rewrite
    moves = layout(inputs, sizes)
    # brute force: (input, position) of every output row, in order
    written = [(i, p) for i, (n, d) in enumerate(inputs) for p in range(n) if p not in d]
    where: dict[tuple[int, int], tuple[str, int]] = {}
    row = 0
    for k, size in enumerate(sizes):
        for pos in range(size):
            where[written[row]] = (f"out{k}", pos)
            row += 1
    i = data.draw(st.integers(0, len(inputs) - 1))
    n, _ = inputs[i]
    asked = data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)) if n else set()
    got = moves.moved(f"in{i}", pa.array(sorted(asked), pa.int64()))
    expected: dict[str, list[int]] = {}
    for p in sorted(asked):
        if (i, p) in where:  # not deleted already when read
            name, pos = where[(i, p)]
            expected.setdefault(name, []).append(pos)
    assert {k: v.to_pylist() for k, v in got.items()} == {k: sorted(v) for k, v in expected.items()}


def test_a_position_past_the_written_rows_is_an_error() -> None:
    moves = RowMoves({"a": MovedFile(0, 0, pa.array([], pa.int64()))}, [[("out", 3)]])
    assert moves.moved("a", pa.array([2], pa.int64())) == {"out": pa.array([2], pa.int64())}
    with pytest.raises(ValueError, match="outside"):
        moves.moved("a", pa.array([3], pa.int64()))
