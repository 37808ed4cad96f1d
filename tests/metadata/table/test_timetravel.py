"""Time travel: id, ref and timestamp resolution, the schema to read with, and ancestry."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lakecat.metadata.errors import NoSuchRef, NoSuchSnapshot, ValidationError
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import IntegerType, LongType, NestedField
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.new_table import new_table_metadata
from lakecat.metadata.table.schema_evolution import SchemaUpdate
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.sorting import UNSORTED
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.timetravel import (
    ancestors_between,
    is_ancestor_of,
    schema_for,
    snapshot_as_of,
    snapshot_at,
)
from lakecat.metadata.table.updates import AddSnapshot, RemoveSnapshots, SetSnapshotRef, TableUpdate

T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def _snap(snapshot_id: int, parent: int | None, schema_id: int) -> Snapshot:
    return Snapshot(
        snapshot_id=snapshot_id,
        sequence_number=snapshot_id,
        timestamp_ms=T0 + snapshot_id * 1000,
        manifest_list=f"s3://b/t/metadata/snap-{snapshot_id}.avro",
        operation="append",
        parent_snapshot_id=parent,
        schema_id=schema_id,
    )


def _history() -> TableMetadata:
    """main: 1 <- 2 <- 3 (schema 1 from snapshot 3 on); branch dev: 2 <- 4; tag v1 at 1;
    main was rolled back to 2 at T0 + 10s and moved to 3 again at T0 + 20s."""
    m = new_table_metadata(
        schema=Schema.of(NestedField(1, "id", LongType(), required=True)),
        spec=PartitionSpec(),
        sort_order=UNSORTED,
        location="s3://b/t",
        properties={},
        now_ms=T0,
    )

    def commit(snapshot: Snapshot, ref: str = "main") -> list[TableUpdate]:
        return [AddSnapshot(snapshot), SetSnapshotRef(ref, snapshot.snapshot_id, "branch")]

    m = apply(m, commit(_snap(1, None, 0)), now_ms=T0 + 1000)
    m = apply(m, commit(_snap(2, 1, 0)), now_ms=T0 + 2000)
    m = apply(m, SchemaUpdate(m).add_column("extra", IntegerType()).updates(), now_ms=T0 + 2500)
    m = apply(m, commit(_snap(3, 2, 1)), now_ms=T0 + 3000)
    m = apply(m, commit(_snap(4, 2, 1), "dev"), now_ms=T0 + 4000)
    m = apply(m, [SetSnapshotRef("v1", 1, "tag")], now_ms=T0 + 5000)
    m = apply(m, [SetSnapshotRef("main", 2, "branch")], now_ms=T0 + 10_000)
    return apply(m, [SetSnapshotRef("main", 3, "branch")], now_ms=T0 + 20_000)


def test_no_selector_gives_the_current_snapshot() -> None:
    assert snapshot_at(_history()).snapshot_id == 3  # type: ignore[union-attr]


def test_snapshots_are_chosen_by_id_ref_or_time() -> None:
    m = _history()
    assert snapshot_at(m, snapshot_id=4).snapshot_id == 4  # type: ignore[union-attr]
    assert snapshot_at(m, ref="dev").snapshot_id == 4  # type: ignore[union-attr]
    assert snapshot_at(m, ref="v1").snapshot_id == 1  # type: ignore[union-attr]
    assert snapshot_at(m, as_of_timestamp_ms=T0 + 2500).snapshot_id == 2  # type: ignore[union-attr]


def test_only_one_selector_is_allowed() -> None:
    with pytest.raises(ValidationError, match="one of"):
        snapshot_at(_history(), snapshot_id=1, ref="main")


def test_unknown_ids_and_refs_are_typed_errors() -> None:
    with pytest.raises(NoSuchSnapshot, match="99"):
        snapshot_at(_history(), snapshot_id=99)
    with pytest.raises(NoSuchRef, match="nope"):
        snapshot_at(_history(), ref="nope")


def test_a_table_without_snapshots_has_no_current_snapshot() -> None:
    m = new_table_metadata(
        schema=Schema.of(NestedField(1, "id", LongType())),
        spec=PartitionSpec(),
        sort_order=UNSORTED,
        location="s3://b/t",
        properties={},
    )
    assert snapshot_at(m) is None
    assert snapshot_at(m, ref="main") is None


@pytest.mark.parametrize(
    ("offset_ms", "expected"),
    [
        (1000, 1),  # exactly at the first commit
        (1999, 1),
        (3000, 3),
        (9_999, 3),
        (10_000, 2),  # rolled back: 2 was current again
        (15_000, 2),
        (20_000, 3),
        (10**9, 3),
    ],
)
def test_as_of_a_time_gives_the_snapshot_current_then(offset_ms: int, expected: int) -> None:
    assert snapshot_as_of(_history(), T0 + offset_ms).snapshot_id == expected


def test_a_time_before_the_first_snapshot_names_both_times() -> None:
    with pytest.raises(NoSuchSnapshot) as caught:
        snapshot_as_of(_history(), T0)
    message = str(caught.value)
    assert "no snapshot at or before 2024-01-01T00:00:00.000Z" in message
    assert "the first is at 2024-01-01T00:00:01.000Z" in message
    assert "s3://b/t" in message


def test_a_time_whose_snapshot_was_expired_is_a_clear_error() -> None:
    m = _history()
    # Keep a log entry whose snapshot is gone (as another engine might leave it).
    m = replace(m, snapshots=tuple(s for s in m.snapshots if s.snapshot_id != 1))
    with pytest.raises(NoSuchSnapshot, match="has been expired"):
        snapshot_as_of(m, T0 + 1500)


def test_expiring_history_moves_the_earliest_time_travel_point() -> None:
    m = apply(_history(), [RemoveSnapshots((1,))], now_ms=T0 + 30_000)
    with pytest.raises(NoSuchSnapshot, match="the first is at"):
        snapshot_as_of(m, T0 + 1500)
    assert snapshot_as_of(m, T0 + 2500).snapshot_id == 2


def test_without_a_snapshot_log_the_current_ancestry_is_used() -> None:
    m = replace(_history(), snapshot_log=())
    assert snapshot_as_of(m, T0 + 2500).snapshot_id == 2
    with pytest.raises(NoSuchSnapshot, match="the first is at"):
        snapshot_as_of(m, T0)


def test_tags_and_snapshot_ids_read_with_their_schema_branches_with_the_current() -> None:
    m = _history()
    old = m.snapshot_by_id(1)
    assert schema_for(m, old).schema_id == 0
    assert schema_for(m, old, ref="v1").schema_id == 0
    assert schema_for(m, m.snapshot_by_id(2), ref="main").schema_id == 1
    assert schema_for(m, m.snapshot_by_id(4), ref="dev").schema_id == 1
    assert schema_for(m, None).schema_id == 1
    assert schema_for(m, replace(old, schema_id=None)).schema_id == 1
    with pytest.raises(NoSuchRef):
        schema_for(m, old, ref="nope")


def test_ancestors_between_walks_back_to_the_start_exclusive() -> None:
    m = _history()
    assert [s.snapshot_id for s in ancestors_between(m, start_exclusive=1, end_inclusive=3)] == [
        3,
        2,
    ]
    assert [s.snapshot_id for s in ancestors_between(m, start_exclusive=None, end_inclusive=4)] == [
        4,
        2,
        1,
    ]
    assert ancestors_between(m, start_exclusive=3, end_inclusive=3) == []


def test_is_ancestor_of_follows_parents_including_the_snapshot_itself() -> None:
    m = _history()
    assert is_ancestor_of(m, snapshot_id=4, ancestor_id=1)
    assert is_ancestor_of(m, snapshot_id=3, ancestor_id=3)
    assert not is_ancestor_of(m, snapshot_id=3, ancestor_id=4)
    assert not is_ancestor_of(m, snapshot_id=1, ancestor_id=2)
