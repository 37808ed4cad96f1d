"""RowMoves maps deleted positions of a rewrite's input files to the same rows in its outputs.

Checked against a brute-force model: the inputs' live rows concatenated in order and cut into
output files of the given sizes.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecat.catalog.commit.moves import (
    MovedFile,
    RowMoves,
    observed_moves,
    row_moves_of,
    row_moves_table,
)
from lakecat.metadata.manifests.datafile import DataFile


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


# ---- the layout a rewrite observed (Spark's compaction) ----------------------------------


def data_files(
    prefix: str, counts: list[int], partition: tuple[object, ...] = ()
) -> list[DataFile]:
    return [DataFile(f"{prefix}{i}", "PARQUET", partition, n, 0) for i, n in enumerate(counts)]


def live_blocks(inputs: list[tuple[int, set[int]]]) -> list[tuple[int, int, int]]:
    """The blocks of consecutive live positions, file by file in order, as a writer sees the
    rows of a bin-pack task arrive."""
    blocks: list[tuple[int, int, int]] = []
    for index, (n, deleted) in enumerate(inputs):
        for p in range(n):
            if p in deleted:
                continue
            if blocks and blocks[-1][0] == index and sum(blocks[-1][1:]) == p:
                blocks[-1] = (index, blocks[-1][1], blocks[-1][2] + 1)
            else:
                blocks.append((index, p, 1))
    return blocks


@given(rewrites())
def test_the_observed_layout_of_a_bin_pack_task_is_the_rewrites_row_moves(rewrite) -> None:
    inputs, sizes = rewrite
    files = data_files("in", [n for n, _ in inputs])
    moves = observed_moves([(files, live_blocks(inputs), data_files("out", sizes))])
    expected = layout(inputs, sizes)
    assert moves is not None
    assert moves.runs == tuple(tuple(r) for r in expected.runs)
    for (n, deleted), (path, moved) in zip(inputs, expected.inputs.items(), strict=True):
        got = moves.inputs[path]
        assert got.run == moved.run
        if n > len(deleted):  # where a file without live rows starts means nothing
            assert got.offset == moved.offset
        assert got.deleted.to_pylist() == moved.deleted.to_pylist()


def test_each_run_of_several_is_laid_out_on_its_own() -> None:
    first = ([(3, set()), (2, {0})], [4])
    second = ([(2, set())], [1, 1])
    runs = [
        (data_files(f"r{k}-in", [n for n, _ in ins]), live_blocks(ins), data_files(f"r{k}-out", s))
        for k, (ins, s) in enumerate([first, second])
    ]
    moves = observed_moves(runs)
    assert moves is not None
    assert moves.moved("r0-in1", pa.array([1], pa.int64())) == {
        "r0-out0": pa.array([3], pa.int64())
    }
    assert moves.moved("r1-in0", pa.array([1], pa.int64())) == {
        "r1-out1": pa.array([0], pa.int64())
    }


@pytest.mark.parametrize(
    ("blocks", "outputs", "why"),
    [
        ([(0, 0, 2), (1, 0, 3), (0, 2, 2)], [7], "file 0's rows split by file 1's"),
        ([(0, 2, 2), (0, 0, 2), (1, 0, 3)], [7], "file 0's rows out of position order"),
        ([(0, 0, 4), (1, 0, 3)], [6], "counts disagree with the outputs"),
        ([(0, 0, 4), (1, 0, 4)], [8], "a position past the input's rows"),
        ([(0, 0, 4), (2, 0, 3)], [7], "an input index the run does not have"),
    ],
)
def test_a_layout_a_record_cannot_describe_gives_no_moves(blocks, outputs, why) -> None:
    runs = [(data_files("in", [4, 3]), blocks, data_files("out", outputs))]
    assert observed_moves(runs) is None, why


def test_outputs_in_two_partitions_give_no_moves() -> None:
    outputs = data_files("a", [3], partition=("eu",)) + data_files("b", [4], partition=("us",))
    runs = [(data_files("in", [4, 3]), [(0, 0, 4), (1, 0, 3)], outputs)]
    assert observed_moves(runs) is None


def test_a_record_of_a_run_whose_rows_were_all_deleted_reads_back() -> None:
    # run 0: one input, every row deleted before the rewrite, no output file
    # run 1: one input, two of three rows written
    moves = RowMoves(
        {
            "gone": MovedFile(0, 0, pa.array([0, 1], pa.int64())),
            "kept": MovedFile(1, 0, pa.array([1], pa.int64())),
        },
        ((), (("out", 2),)),
    )
    again = row_moves_of(row_moves_table(moves))
    assert again.runs == ((), (("out", 2),))
    assert again.moved("gone", pa.array([0, 1], pa.int64())) == {}
    assert again.moved("kept", pa.array([2], pa.int64())) == {"out": pa.array([1], pa.int64())}
