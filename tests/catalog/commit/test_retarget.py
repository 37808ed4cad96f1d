"""Finding rows again by row id in a compaction's output files (format v3)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecat.catalog.commit.retarget import RowVersions, retarget


def ids(*values: int) -> pa.Int64Array:
    return pa.array(values, pa.int64())


def rows(*values: int, seq: int = 1) -> RowVersions:
    """Rows of those ids, each last updated at sequence number ``seq``."""
    return RowVersions(ids(*values), ids(*[seq] * len(values)))


def test_deleted_rows_are_found_at_their_new_positions_in_every_output() -> None:
    found = retarget(
        [(rows(10, 11, 12, 13), ids(1, 3)), (rows(20, 21), ids(0))],
        [("out-a", rows(20, 10, 11)), ("out-b", rows(12, 13, 21))],
    )
    assert {p: v.to_pylist() for p, v in found.positions.items()} == {
        "out-a": [0, 2],
        "out-b": [1],
    }
    assert found.missing.to_pylist() == []


def test_rows_no_output_holds_are_reported_missing() -> None:
    found = retarget([(rows(1, 2, 3), ids(0, 2))], [("out", rows(2, 3))])
    assert {p: v.to_pylist() for p, v in found.positions.items()} == {"out": [1]}
    assert found.missing.to_pylist() == [1]


def test_a_newer_version_of_a_row_is_not_the_row_the_change_deleted() -> None:
    # row 7 was updated meanwhile (same id, sequence number 5): the output holds that version
    old = RowVersions(ids(6, 7, 8), ids(1, 1, 1))
    output = RowVersions(ids(6, 8, 7), ids(1, 1, 5))
    found = retarget([(old, ids(1, 2))], [("out", output)])
    assert {p: v.to_pylist() for p, v in found.positions.items()} == {"out": [1]}
    assert found.missing.to_pylist() == [7]


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_any_shuffle_of_rows_into_outputs_maps_every_deleted_row_back(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 60))
    row_ids = data.draw(st.lists(st.integers(0, 10**9), min_size=n, max_size=n, unique=True))
    deleted = sorted(data.draw(st.sets(st.integers(0, n - 1))))
    order = data.draw(st.permutations(row_ids))
    cut = data.draw(st.integers(0, n))
    outputs = [("a", rows(*order[:cut])), ("b", rows(*order[cut:]))]
    found = retarget([(rows(*row_ids), ids(*deleted))], outputs)
    got = {
        dict(outputs)[path].ids[p].as_py()
        for path, where in found.positions.items()
        for p in where.to_pylist()
    }
    assert got == {row_ids[p] for p in deleted}
    assert found.missing.to_pylist() == []
