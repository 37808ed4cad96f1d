"""The pure ``apply`` and the update/requirement records: one test per update kind, the
requirements, the JSON shapes, and hypothesis invariants over random change sequences."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from pyiceberg.table.update import TableRequirement as PyTableRequirement
from pyiceberg.table.update import TableUpdate as PyTableUpdate

from lakecat.metadata.errors import InvalidUpdate, RequirementFailed
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)
from lakecat.metadata.table.apply import apply, check_invariants
from lakecat.metadata.table.new_table import new_table_metadata
from lakecat.metadata.table.schema_evolution import SchemaUpdate
from lakecat.metadata.table.snapshots import (
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
)
from lakecat.metadata.table.sorting import UNSORTED, SortField, SortOrder
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    AssignUUID,
    RemoveProperties,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    StatisticsBlob,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersion,
    requirements_for,
    requirements_from_json,
    updates_from_json,
    validate_requirements,
)

UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"
T0 = 1_700_000_000_000


def _table(**overrides: object) -> TableMetadata:
    schema = Schema.of(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "data", StringType()),
        NestedField(3, "ts", TimestamptzType()),
        identifier_field_ids=(1,),
    )
    metadata = new_table_metadata(
        schema=schema,
        spec=PartitionSpec(0, (PartitionField(3, 1000, "day", "ts_day"),)),
        sort_order=UNSORTED,
        location="s3://bucket/db/t",
        properties={},
        table_uuid=UUID,
        now_ms=T0,
    )
    return replace(metadata, **overrides)  # type: ignore[arg-type]


def _snap(snapshot_id: int, seq: int, parent: int | None = None, ts: int | None = None) -> Snapshot:
    return Snapshot(
        snapshot_id=snapshot_id,
        sequence_number=seq,
        timestamp_ms=T0 + seq * 1000 if ts is None else ts,
        manifest_list=f"s3://bucket/db/t/metadata/snap-{snapshot_id}.avro",
        operation="append",
        summary={"added-records": "1"},
        parent_snapshot_id=parent,
        schema_id=0,
    )


def _commit(m: TableMetadata, snap: Snapshot, branch: str = "main", now: int = T0) -> TableMetadata:
    return apply(
        m, [AddSnapshot(snap), SetSnapshotRef(branch, snap.snapshot_id, "branch")], now_ms=now
    )


def _with_history(n: int) -> TableMetadata:
    m = _table()
    parent = None
    for i in range(1, n + 1):
        m = _commit(m, _snap(i, i, parent), now=T0 + i * 1000)
        parent = i
    return m


# ---- no-ops --------------------------------------------------------------------------------
def test_empty_change_returns_base_itself() -> None:
    base = _table()
    assert apply(base, [], now_ms=T0 + 5) is base


def test_updates_that_change_nothing_return_base_itself() -> None:
    base = _with_history(2)
    noops: list[TableUpdate] = [
        AssignUUID(UUID.upper()),
        UpgradeFormatVersion(2),
        AddSchema(base.schema(), base.last_column_id),
        SetCurrentSchema(base.current_schema_id),
        SetCurrentSchema(-1),  # resolves to the reused schema, which is current
        AddPartitionSpec(base.spec()),
        SetDefaultSpec(-1),
        AddSortOrder(UNSORTED),
        SetDefaultSortOrder(-1),
        SetSnapshotRef("main", 2, "branch"),
        RemoveSnapshots((999,)),
        RemoveSnapshotRef("no-such-branch"),
        SetLocation("s3://bucket/db/t/"),
        SetProperties({"write.parquet.compression-codec": "zstd"}),
        RemoveProperties(("not-set",)),
    ]
    assert apply(base, noops, now_ms=T0 + 99_000, base_location="s3://x/m.json") is base


def test_changes_that_cancel_out_return_base_itself() -> None:
    base = _table()
    updates: list[TableUpdate] = [SetProperties({"k": "v"}), RemoveProperties(("k",))]
    assert apply(base, updates, now_ms=T0 + 1) is base


# ---- one test per update kind ----------------------------------------------------------------
def test_assign_uuid_replaces_the_table_uuid_and_refuses_garbage() -> None:
    new = "00000000-0000-4000-8000-000000000001"
    assert apply(_table(), [AssignUUID(new)], now_ms=T0).table_uuid == new
    with pytest.raises(InvalidUpdate, match="not a UUID"):
        apply(_table(), [AssignUUID("nope")], now_ms=T0)


def test_upgrade_format_version_refuses_downgrade_and_unsupported_versions() -> None:
    with pytest.raises(InvalidUpdate, match="downgrade"):
        apply(_table(), [UpgradeFormatVersion(1)])
    with pytest.raises(InvalidUpdate, match="format version 4"):
        apply(_table(), [UpgradeFormatVersion(4)])
    v3 = apply(_table(), [UpgradeFormatVersion(3)], now_ms=T0)
    with pytest.raises(InvalidUpdate, match="downgrade a v3 table to v2"):
        apply(v3, [UpgradeFormatVersion(2)])
    assert apply(v3, [UpgradeFormatVersion(3)], now_ms=T0) is v3


def test_upgrading_to_v3_starts_row_ids_at_zero_and_leaves_older_snapshots_alone() -> None:
    base = _commit(_table(), _snap(1, 1))
    v3 = apply(base, [UpgradeFormatVersion(3)], now_ms=T0 + 1)
    assert (v3.format_version, v3.next_row_id) == (3, 0)
    assert v3.snapshots == base.snapshots  # no first-row-id: their rows have no row ids
    assert v3.to_json()["next-row-id"] == 0


def test_a_v3_snapshot_moves_next_row_id_past_the_row_ids_it_assigned() -> None:
    v3 = apply(_table(), [UpgradeFormatVersion(3)], now_ms=T0)
    first = apply(v3, [AddSnapshot(replace(_snap(1, 1), first_row_id=0, added_rows=10))])
    assert first.next_row_id == 10
    # a snapshot on another branch assigns ids too: they are the table's, not the branch's
    side = replace(_snap(2, 2, 1), first_row_id=10, added_rows=5)
    assert apply(first, [AddSnapshot(side)]).next_row_id == 15


def test_a_v3_snapshot_without_lineage_or_behind_next_row_id_is_refused() -> None:
    v3 = apply(_table(), [UpgradeFormatVersion(3)], now_ms=T0)
    first = apply(v3, [AddSnapshot(replace(_snap(1, 1), first_row_id=0, added_rows=10))])
    with pytest.raises(InvalidUpdate, match="first-row-id and added-rows"):
        apply(first, [AddSnapshot(_snap(2, 2, 1))])
    with pytest.raises(InvalidUpdate, match="below the table's next-row-id 10"):
        apply(first, [AddSnapshot(replace(_snap(2, 2, 1), first_row_id=9, added_rows=1))])
    with pytest.raises(InvalidUpdate, match="negative added-rows"):
        apply(first, [AddSnapshot(replace(_snap(2, 2, 1), first_row_id=10, added_rows=-1))])


def test_add_schema_gets_the_next_id_and_raises_last_column_id() -> None:
    base = _table()
    schema = Schema.of(*base.schema().fields, NestedField(4, "extra", IntegerType()))
    new = apply(base, [AddSchema(schema, 4), SetCurrentSchema(-1)], now_ms=T0 + 1)
    assert [s.schema_id for s in new.schemas] == [0, 1]
    assert new.current_schema_id == 1
    assert new.schema().find_field("extra").field_id == 4
    assert new.last_column_id == 4


def test_add_schema_reuses_an_existing_schema_with_the_same_structure() -> None:
    base = _table()
    wider = Schema.of(*base.schema().fields, NestedField(4, "extra", IntegerType()))
    m1 = apply(base, [AddSchema(wider, 4), SetCurrentSchema(-1)], now_ms=T0 + 1)
    # Going back to the first schema reuses schema 0 instead of adding a copy.
    back = replace(base.schema(), schema_id=77)
    m2 = apply(m1, [AddSchema(back, 4), SetCurrentSchema(-1)], now_ms=T0 + 2)
    assert [s.schema_id for s in m2.schemas] == [0, 1]
    assert m2.current_schema_id == 0
    assert m2.last_column_id == 4  # never goes down


def test_set_current_schema_needs_a_known_or_added_schema() -> None:
    with pytest.raises(InvalidUpdate, match="no schema was added"):
        apply(_table(), [SetCurrentSchema(-1)])
    with pytest.raises(InvalidUpdate, match="unknown schema id 9"):
        apply(_table(), [SetCurrentSchema(9)])


def test_add_schema_refuses_invalid_identifier_fields_and_duplicate_ids() -> None:
    base = _table()
    optional_identifier = Schema.of(*base.schema().fields, identifier_field_ids=(2,))
    with pytest.raises(InvalidUpdate, match="not a required column"):
        apply(base, [AddSchema(optional_identifier, 3)])
    float_identifier = Schema.of(
        *base.schema().fields, NestedField(4, "f", DoubleType(), True), identifier_field_ids=(4,)
    )
    with pytest.raises(InvalidUpdate, match="float and double"):
        apply(base, [AddSchema(float_identifier, 4)])
    duplicate = Schema.of(*base.schema().fields, NestedField(3, "again", StringType()))
    with pytest.raises(InvalidUpdate, match="duplicate field id 3"):
        apply(base, [AddSchema(duplicate, 3)])


def test_add_spec_gets_the_next_id_and_last_partition_id() -> None:
    base = _table()
    spec = PartitionSpec(0, (PartitionField(1, 1001, "bucket[8]", "id_bucket"),))
    new = apply(base, [AddPartitionSpec(spec), SetDefaultSpec(-1)], now_ms=T0 + 1)
    assert [s.spec_id for s in new.partition_specs] == [0, 1]
    assert new.default_spec_id == 1
    assert new.last_partition_id == 1001
    # An equivalent spec (same fields, other spec id) is reused.
    again = apply(new, [AddPartitionSpec(replace(base.spec(), spec_id=5)), SetDefaultSpec(-1)])
    assert again.default_spec_id == 0
    assert len(again.partition_specs) == 2


def test_add_spec_refuses_unknown_source_and_inapplicable_transform() -> None:
    base = _table()
    with pytest.raises(InvalidUpdate, match="column id 42"):
        apply(
            base, [AddPartitionSpec(PartitionSpec(0, (PartitionField(42, 1001, "identity", "x"),)))]
        )
    with pytest.raises(InvalidUpdate, match="cannot be applied"):
        apply(base, [AddPartitionSpec(PartitionSpec(0, (PartitionField(2, 1001, "day", "d"),)))])


def test_set_default_spec_refuses_unknown_ids() -> None:
    with pytest.raises(InvalidUpdate, match="unknown spec id 3"):
        apply(_table(), [SetDefaultSpec(3)])
    with pytest.raises(InvalidUpdate, match="no partition spec was added"):
        apply(_table(), [SetDefaultSpec(-1)])


def test_sort_orders_get_ids_from_one_and_are_reused() -> None:
    base = _table()
    by_id = SortOrder(0, (SortField(1),))
    m1 = apply(base, [AddSortOrder(by_id), SetDefaultSortOrder(-1)], now_ms=T0 + 1)
    assert m1.default_sort_order_id == 1
    assert m1.sort_order().fields == by_id.fields
    m2 = apply(m1, [AddSortOrder(replace(by_id, order_id=9)), SetDefaultSortOrder(-1)])
    assert m2 is m1
    m3 = apply(m1, [AddSortOrder(UNSORTED), SetDefaultSortOrder(-1)], now_ms=T0 + 2)
    assert m3.default_sort_order_id == 0
    with pytest.raises(InvalidUpdate, match="column id 9"):
        apply(base, [AddSortOrder(SortOrder(0, (SortField(9),)))])
    with pytest.raises(InvalidUpdate, match="unknown order id 4"):
        apply(base, [SetDefaultSortOrder(4)])


def test_add_snapshot_appends_it_and_raises_the_last_sequence_number() -> None:
    new = apply(_table(), [AddSnapshot(_snap(1, 1))], now_ms=T0)
    assert [s.snapshot_id for s in new.snapshots] == [1]
    assert new.last_sequence_number == 1
    assert new.current_snapshot_id is None  # only a ref makes it current


def test_add_snapshot_refuses_duplicate_ids_and_stale_sequence_numbers() -> None:
    base = _with_history(2)
    with pytest.raises(InvalidUpdate, match="already exists"):
        apply(base, [AddSnapshot(_snap(2, 3, 1))])
    with pytest.raises(InvalidUpdate, match="sequence number 2"):
        apply(base, [AddSnapshot(_snap(3, 2, 2))])
    # A snapshot without parent may reuse a sequence number (Java allows it).
    assert apply(base, [AddSnapshot(_snap(3, 2, None))], now_ms=T0).has_snapshot(3)
    with pytest.raises(InvalidUpdate, match="unknown schema id 5"):
        apply(base, [AddSnapshot(replace(_snap(3, 3, 2), schema_id=5))])
    with pytest.raises(InvalidUpdate, match="unknown operation"):
        apply(base, [AddSnapshot(replace(_snap(3, 3, 2), operation="merge"))])


def test_setting_main_moves_the_current_snapshot_and_logs_the_snapshot_time() -> None:
    snap = _snap(1, 1, ts=T0 + 500)
    new = _commit(_table(), snap, now=T0 + 9_000)
    assert new.current_snapshot_id == 1
    assert new.refs["main"] == SnapshotRef(1, "branch")
    assert new.snapshot_log == (SnapshotLogEntry(T0 + 500, 1),)
    assert new.last_updated_ms == T0 + 9_000


def test_rollback_logs_the_time_of_the_change() -> None:
    base = _with_history(2)
    new = apply(base, [SetSnapshotRef("main", 1, "branch")], now_ms=T0 + 60_000)
    assert new.current_snapshot_id == 1
    assert new.snapshot_log[-1] == SnapshotLogEntry(T0 + 60_000, 1)


def test_last_updated_ms_is_never_before_an_added_snapshot() -> None:
    new = _commit(_table(), _snap(1, 1, ts=T0 + 50_000), now=T0 + 10)
    assert new.last_updated_ms == T0 + 50_000


def test_time_never_runs_backwards_in_the_metadata() -> None:
    base = _with_history(2)
    late_clock = base.last_updated_ms - 3_600_000
    new = apply(base, [SetSnapshotRef("main", 1, "branch")], now_ms=late_clock)
    assert new.last_updated_ms == base.last_updated_ms
    assert new.snapshot_log[-1].timestamp_ms == base.last_updated_ms


def test_branches_and_tags_do_not_move_the_current_snapshot() -> None:
    base = _with_history(2)
    new = apply(
        base,
        [
            SetSnapshotRef("v1", 1, "tag", max_ref_age_ms=1000),
            SetSnapshotRef("dev", 1, "branch", min_snapshots_to_keep=2),
        ],
        now_ms=T0 + 10_000,
    )
    assert new.current_snapshot_id == 2
    assert new.refs["v1"] == SnapshotRef(1, "tag", max_ref_age_ms=1000)
    assert new.refs["dev"] == SnapshotRef(1, "branch", min_snapshots_to_keep=2)
    assert new.snapshot_log == base.snapshot_log


def test_set_ref_refuses_unknown_snapshots_and_main_as_a_tag() -> None:
    base = _with_history(1)
    with pytest.raises(InvalidUpdate, match="unknown snapshot 7"):
        apply(base, [SetSnapshotRef("dev", 7, "branch")])
    with pytest.raises(InvalidUpdate, match="must be a branch"):
        apply(base, [SetSnapshotRef("main", 1, "tag")])
    with pytest.raises(InvalidUpdate, match="'branch' or 'tag'"):
        apply(base, [SetSnapshotRef("x", 1, "label")])  # type: ignore[arg-type]


def test_tags_refuse_branch_retention_and_retention_must_be_positive() -> None:
    base = _with_history(1)
    with pytest.raises(InvalidUpdate, match="for branches"):
        apply(base, [SetSnapshotRef("v1", 1, "tag", min_snapshots_to_keep=1)])
    with pytest.raises(InvalidUpdate, match="must be positive"):
        apply(base, [SetSnapshotRef("dev", 1, "branch", max_ref_age_ms=0)])


def test_intermediate_snapshots_of_one_change_leave_no_log_entry() -> None:
    base = _with_history(1)
    new = apply(
        base,
        [
            AddSnapshot(_snap(2, 2, 1)),
            SetSnapshotRef("main", 2, "branch"),
            AddSnapshot(_snap(3, 3, 2)),
            SetSnapshotRef("main", 3, "branch"),
        ],
        now_ms=T0 + 10_000,
    )
    assert [e.snapshot_id for e in new.snapshot_log] == [1, 3]


def test_remove_snapshots_drops_their_refs_and_the_history_before_a_gap() -> None:
    base = apply(_with_history(4), [SetSnapshotRef("old", 2, "tag")], now_ms=T0 + 10_000)
    new = apply(base, [RemoveSnapshots((2,))], now_ms=T0 + 20_000)
    assert [s.snapshot_id for s in new.snapshots] == [1, 3, 4]
    assert "old" not in new.refs
    # [(t1, 1), (t2, 2), (t3, 3), (t4, 4)] without 2: (t1, 1) would claim 1 was current until t3.
    assert [e.snapshot_id for e in new.snapshot_log] == [3, 4]
    assert new.snapshots[1].parent_snapshot_id == 2  # lineage is kept, as in Java


def test_removing_the_current_snapshot_clears_main() -> None:
    new = apply(_with_history(2), [RemoveSnapshots((2, 12345))], now_ms=T0 + 20_000)
    assert new.current_snapshot_id is None
    assert "main" not in new.refs
    assert new.snapshot_log == ()


def test_remove_snapshots_drops_their_statistics() -> None:
    stats = {"snapshot-id": 1, "statistics-path": "s3://x/1.puffin", "file-size-in-bytes": 1}
    base = replace(_with_history(2), statistics=(stats,), partition_statistics=(stats,))
    new = apply(base, [RemoveSnapshots((1,))], now_ms=T0 + 20_000)
    assert new.statistics == () and new.partition_statistics == ()


def test_partition_statistics_are_registered_once_per_known_snapshot() -> None:
    base = _with_history(2)
    first = SetPartitionStatistics(1, "s3://x/metadata/partition-stats-1-a.parquet", 10)
    again = SetPartitionStatistics(1, "s3://x/metadata/partition-stats-1-b.parquet", 20)
    new = apply(base, [first, SetPartitionStatistics(2, "s3://x/2.parquet", 5), again])
    assert [(s["snapshot-id"], s["file-size-in-bytes"]) for s in new.partition_statistics] == [
        (2, 5),
        (1, 20),
    ]
    assert TableMetadata.from_json(new.to_json()).partition_statistics == new.partition_statistics
    with pytest.raises(InvalidUpdate, match="unknown snapshot 99"):
        apply(base, [SetPartitionStatistics(99, "s3://x/99.parquet", 1)])


def test_table_statistics_are_registered_once_per_known_snapshot_and_removed() -> None:
    base = _with_history(2)
    blob = StatisticsBlob("apache-datasketches-theta-v1", 1, 1, (1,), {"ndv": "9"})
    first = SetStatistics(1, "s3://x/metadata/1-a.stats", 10, 5, (blob,))
    again = SetStatistics(1, "s3://x/metadata/1-b.stats", 20, 6, (blob,))
    new = apply(base, [first, SetStatistics(2, "s3://x/metadata/2.stats", 5, 4), again])
    assert [(s["snapshot-id"], s["statistics-path"]) for s in new.statistics] == [
        (2, "s3://x/metadata/2.stats"),
        (1, "s3://x/metadata/1-b.stats"),
    ]
    assert new.statistics[1] == {
        "snapshot-id": 1,
        "statistics-path": "s3://x/metadata/1-b.stats",
        "file-size-in-bytes": 20,
        "file-footer-size-in-bytes": 6,
        "blob-metadata": [
            {
                "type": "apache-datasketches-theta-v1",
                "snapshot-id": 1,
                "sequence-number": 1,
                "fields": [1],
                "properties": {"ndv": "9"},
            }
        ],
    }
    assert TableMetadata.from_json(new.to_json()).statistics == new.statistics
    removed = apply(new, [RemoveStatistics(1), RemoveStatistics(77)])
    assert [s["snapshot-id"] for s in removed.statistics] == [2]
    assert apply(removed, [RemoveStatistics(1)]) is removed  # nothing to remove: no change
    with pytest.raises(InvalidUpdate, match="unknown snapshot 99"):
        apply(base, [SetStatistics(99, "s3://x/99.stats", 1, 1)])


def test_remove_main_clears_the_current_snapshot() -> None:
    new = apply(_with_history(1), [RemoveSnapshotRef("main")], now_ms=T0 + 5_000)
    assert new.current_snapshot_id is None
    assert new.refs == {}
    assert new.has_snapshot(1)


def test_set_location_strips_the_trailing_slash() -> None:
    assert apply(_table(), [SetLocation("s3://other/t/")], now_ms=T0).location == "s3://other/t"
    with pytest.raises(InvalidUpdate):
        apply(_table(), [SetLocation("/")])


def test_properties_are_set_and_removed_but_reserved_keys_are_refused() -> None:
    base = _table()
    new = apply(base, [SetProperties({"a": "1", "b": "2"}), RemoveProperties(("b",))], now_ms=T0)
    assert new.properties["a"] == "1" and "b" not in new.properties
    with pytest.raises(InvalidUpdate, match="format-version"):
        apply(base, [SetProperties({"format-version": "3"})])
    with pytest.raises(InvalidUpdate, match="reserved"):
        apply(base, [RemoveProperties(("uuid",))])
    with pytest.raises(InvalidUpdate, match="strings"):
        apply(base, [SetProperties({"a": 1})])  # type: ignore[dict-item]


def test_set_properties_keeps_a_private_copy_of_its_mapping() -> None:
    values = {"a": "1"}
    update = SetProperties(values)
    values["a"] = "2"
    assert update.updates == {"a": "1"}


def test_unknown_update_kinds_are_refused() -> None:
    with pytest.raises(InvalidUpdate, match="unknown table update"):
        apply(_table(), ["drop everything"])  # type: ignore[list-item]


# ---- metadata log ----------------------------------------------------------------------------
def test_a_change_appends_the_previous_metadata_file_to_the_log() -> None:
    base = _table()
    new = apply(base, [SetProperties({"a": "1"})], now_ms=T0 + 5, base_location="s3://m/0.json")
    assert new.metadata_log == (MetadataLogEntry(base.last_updated_ms, "s3://m/0.json"),)
    assert new.last_updated_ms == T0 + 5


def test_the_metadata_log_is_trimmed_to_the_newest_entries() -> None:
    m = _table(properties={"write.metadata.previous-versions-max": "3"})
    for i in range(6):
        m = apply(m, [SetProperties({"i": str(i)})], now_ms=T0 + i + 1, base_location=f"m{i}")
    assert [e.metadata_file for e in m.metadata_log] == ["m3", "m4", "m5"]
    m = apply(
        m, [SetProperties({"i": "x"})], now_ms=T0 + 10, base_location="m6", max_previous_versions=1
    )
    assert [e.metadata_file for e in m.metadata_log] == ["m6"]


def test_a_noop_adds_no_metadata_log_entry() -> None:
    base = _table()
    assert apply(base, [SetProperties({})], base_location="s3://m/0.json") is base


# ---- invariants ------------------------------------------------------------------------------
def test_check_invariants_rejects_a_current_snapshot_that_main_does_not_point_at() -> None:
    bad = replace(_with_history(2), current_snapshot_id=1)
    with pytest.raises(InvalidUpdate, match="differs from branch main"):
        check_invariants(bad)


def _assert_invariants(m: TableMetadata) -> None:
    check_invariants(m)
    ids = {s.snapshot_id for s in m.snapshots}
    assert all(ref.snapshot_id in ids for ref in m.refs.values())
    assert all(s.sequence_number <= m.last_sequence_number for s in m.snapshots)
    main = m.refs.get("main")
    assert m.current_snapshot_id == (main.snapshot_id if main else None)
    assert all(m.last_column_id >= s.highest_field_id for s in m.schemas)
    assert all(e.snapshot_id in ids for e in m.snapshot_log)
    if m.current_snapshot_id is not None and m.snapshot_log:
        assert m.snapshot_log[-1].snapshot_id == m.current_snapshot_id


@st.composite
def _change(draw: st.DrawFn, m: TableMetadata) -> list[TableUpdate]:
    """One random valid change against ``m``."""
    ids = [s.snapshot_id for s in m.snapshots]
    kind = draw(
        st.sampled_from(
            ["commit", "branch", "tag", "expire", "drop-ref", "props", "schema", "rollback"]
        )
    )
    next_id = max(ids, default=0) + 1
    if kind == "commit" or not ids:
        branch = draw(st.sampled_from(["main", "dev"]))
        parent = m.refs[branch].snapshot_id if branch in m.refs else None
        snap = _snap(next_id, m.last_sequence_number + 1, parent)
        return [AddSnapshot(snap), SetSnapshotRef(branch, next_id, "branch")]
    if kind in ("branch", "tag", "rollback"):
        target = draw(st.sampled_from(ids))
        name = "main" if kind == "rollback" else draw(st.sampled_from(["dev", "v1", "v2"]))
        ref_type = "branch" if kind != "tag" else "tag"
        if name in m.refs and m.refs[name].ref_type != ref_type and name != "main":
            return [RemoveSnapshotRef(name), SetSnapshotRef(name, target, ref_type)]
        return [SetSnapshotRef(name, target, ref_type)]
    if kind == "expire":
        doomed = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True))
        return [RemoveSnapshots(tuple(doomed))]
    if kind == "drop-ref":
        return [RemoveSnapshotRef(draw(st.sampled_from(["main", "dev", "v1", "nope"])))]
    if kind == "props":
        return [SetProperties({"k": str(draw(st.integers(0, 3)))}), RemoveProperties(("j",))]
    column = f"c{m.last_column_id}"
    return SchemaUpdate(m).add_column(column, IntegerType()).updates()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_change_sequences_keep_the_invariants(data: st.DataObject) -> None:
    m = _table()
    now = T0
    for _ in range(data.draw(st.integers(1, 25))):
        now += data.draw(st.integers(0, 5_000))
        new = apply(m, data.draw(_change(m)), now_ms=now, base_location=f"s3://m/{now}.json")
        _assert_invariants(new)
        assert len(new.metadata_log) <= 100
        m = new


# ---- requirements ----------------------------------------------------------------------------
_PASSING: list[TableRequirement] = [
    AssertTableUUID(UUID),
    AssertRefSnapshotId("main", 2),
    AssertRefSnapshotId("dev", None),
    AssertLastAssignedFieldId(3),
    AssertCurrentSchemaId(0),
    AssertLastAssignedPartitionId(1000),
    AssertDefaultSpecId(0),
    AssertDefaultSortOrderId(0),
]
_FAILING: list[tuple[TableRequirement, str]] = [
    (AssertCreate(), "expected not to exist"),
    (AssertTableUUID("00000000-0000-4000-8000-000000000001"), "uuid changed"),
    (AssertRefSnapshotId("main", 1), "expected snapshot 1, found 2"),
    (AssertRefSnapshotId("main", None), "created concurrently"),
    (AssertRefSnapshotId("dev", 1), "is missing"),
    (AssertLastAssignedFieldId(4), "last assigned field id has changed"),
    (AssertCurrentSchemaId(1), "current schema id has changed"),
    (AssertLastAssignedPartitionId(999), "last assigned partition id has changed"),
    (AssertDefaultSpecId(1), "default partition spec id has changed"),
    (AssertDefaultSortOrderId(1), "default sort order id has changed"),
]


@pytest.mark.parametrize("requirement", _PASSING, ids=lambda r: r.type)
def test_requirement_holds_against_a_matching_base(requirement: TableRequirement) -> None:
    requirement.validate(_with_history(2))


@pytest.mark.parametrize(("requirement", "message"), _FAILING, ids=lambda r: getattr(r, "type", ""))
def test_requirement_fails_against_a_changed_base(
    requirement: TableRequirement, message: str
) -> None:
    with pytest.raises(RequirementFailed, match=message):
        requirement.validate(_with_history(2))


@pytest.mark.parametrize("requirement", _PASSING, ids=lambda r: r.type)
def test_requirements_other_than_create_fail_when_the_table_is_missing(
    requirement: TableRequirement,
) -> None:
    with pytest.raises(RequirementFailed, match="does not exist"):
        requirement.validate(None)


def test_assert_create_holds_when_the_table_is_missing() -> None:
    validate_requirements([AssertCreate()], None)


def test_requirements_for_guard_the_refs_and_ids_a_change_touches() -> None:
    base = _with_history(2)
    updates = [
        AddSnapshot(_snap(3, 3, 2)),
        SetSnapshotRef("main", 3, "branch"),
        SetSnapshotRef("dev", 3, "branch"),
        *SchemaUpdate(base).add_column("x", IntegerType()).updates(),
    ]
    assert requirements_for(base, updates) == [
        AssertTableUUID(UUID),
        AssertRefSnapshotId("main", 2),
        AssertRefSnapshotId("dev", None),
        AssertLastAssignedFieldId(3),
        AssertCurrentSchemaId(0),
    ]


# ---- JSON shapes -----------------------------------------------------------------------------
def _all_updates() -> list[TableUpdate]:
    base = _table()
    return [
        AssignUUID(UUID),
        UpgradeFormatVersion(2),
        AddSchema(base.schema(), 3),
        SetCurrentSchema(-1),
        AddPartitionSpec(base.spec()),
        SetDefaultSpec(-1),
        AddSortOrder(SortOrder(1, (SortField(1, "bucket[4]", "desc", "nulls-last"),))),
        SetDefaultSortOrder(1),
        AddSnapshot(_snap(5, 1, 4)),
        SetSnapshotRef(
            "dev", 5, "branch", max_ref_age_ms=1, max_snapshot_age_ms=2, min_snapshots_to_keep=3
        ),
        RemoveSnapshots((1, 2)),
        RemoveSnapshotRef("dev"),
        SetLocation("s3://x"),
        SetProperties({"a": "b"}),
        RemoveProperties(("a",)),
        SetPartitionStatistics(5, "s3://x/metadata/partition-stats-5.parquet", 123),
        SetStatistics(
            5,
            "s3://x/metadata/5-a.stats",
            456,
            78,
            (
                StatisticsBlob("apache-datasketches-theta-v1", 5, 4, (1,), {"ndv": "3"}),
                StatisticsBlob("apache-datasketches-theta-v1", 5, 4, (2,)),
            ),
        ),
        RemoveStatistics(5),
    ]


def test_updates_round_trip_through_their_rest_json() -> None:
    updates = _all_updates()
    assert updates_from_json([u.to_json() for u in updates]) == updates


def test_requirements_round_trip_through_their_rest_json() -> None:
    requirements = [*_PASSING, AssertCreate()]
    assert requirements_from_json([r.to_json() for r in requirements]) == requirements


def test_pyiceberg_reads_our_update_and_requirement_json() -> None:
    py_updates = TypeAdapter(list[PyTableUpdate]).validate_python(
        [u.to_json() for u in _all_updates()]
    )
    assert [u.action for u in py_updates] == [u.action for u in _all_updates()]
    py_requirements = TypeAdapter(list[PyTableRequirement]).validate_python(
        [r.to_json() for r in _PASSING]
    )
    assert [r.type for r in py_requirements] == [r.type for r in _PASSING]
    assert py_requirements[1].snapshot_id == 2


def test_unknown_json_records_are_corrupt() -> None:
    from lakecat.metadata.errors import CorruptMetadata

    with pytest.raises(CorruptMetadata, match="unknown table update"):
        updates_from_json([{"action": "explode"}])
    with pytest.raises(CorruptMetadata, match="malformed table requirement"):
        requirements_from_json([{"type": "assert-current-schema-id"}])
