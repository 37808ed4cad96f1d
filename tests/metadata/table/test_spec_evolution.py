"""Partition spec evolution (format v2 semantics) and the partition checks of new tables."""

from __future__ import annotations

import pytest

from lakecat.metadata.errors import InvalidUpdate, UnknownColumn
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DoubleType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.new_table import new_table_metadata
from lakecat.metadata.table.sorting import UNSORTED, SortField, SortOrder
from lakecat.metadata.table.spec_evolution import SpecUpdate
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import AddPartitionSpec, SetDefaultSpec

T0 = 1_700_000_000_000


def _table(spec: PartitionSpec | None = None) -> TableMetadata:
    schema = Schema.of(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "data", StringType()),
        NestedField(3, "ts", TimestamptzType()),
        NestedField(4, "score", DoubleType()),
        NestedField(5, "user", StructType((NestedField(6, "region", StringType()),))),
    )
    return new_table_metadata(
        schema=schema,
        spec=spec or PartitionSpec(0, (PartitionField(3, 1000, "day", "ts_day"),)),
        sort_order=UNSORTED,
        location="s3://b/t",
        properties={},
        now_ms=T0,
    )


def _evolve(m: TableMetadata, update: SpecUpdate) -> TableMetadata:
    return apply(m, update.updates(), now_ms=T0 + 1)


def _fields(spec: PartitionSpec) -> list[tuple[int, int, str, str]]:
    return [(f.source_id, f.field_id, f.transform, f.name) for f in spec.fields]


def test_added_fields_get_ids_after_last_partition_id_and_java_default_names() -> None:
    base = _table()
    update = (
        SpecUpdate(base)
        .add_field("id", "bucket[16]")
        .add_field("data", "truncate[4]")
        .add_field("user.region")
    )
    spec = update.apply()
    assert _fields(spec) == [
        (3, 1000, "day", "ts_day"),
        (1, 1001, "bucket[16]", "id_bucket_16"),  # Java's UpdatePartitionSpec names
        (2, 1002, "truncate[4]", "data_trunc_4"),
        (6, 1003, "identity", "user.region"),
    ]
    assert update.updates() == [AddPartitionSpec(spec), SetDefaultSpec(-1)]
    new = _evolve(base, update)
    assert new.default_spec_id == 1 and new.spec() == spec
    assert new.last_partition_id == 1003


def test_an_explicit_name_is_used() -> None:
    spec = SpecUpdate(_table()).add_field("id", "bucket[8]", name="shard").apply()
    assert spec.fields[-1] == PartitionField(1, 1001, "bucket[8]", "shard")


def test_removed_fields_are_dropped_in_v2_and_their_ids_are_not_reused() -> None:
    base = _table()
    m1 = _evolve(base, SpecUpdate(base).remove_field("ts_day").add_field("ts", "hour"))
    assert _fields(m1.spec()) == [(3, 1001, "hour", "ts_hour")]
    assert m1.last_partition_id == 1001


def test_re_adding_an_earlier_field_recycles_its_id_and_reuses_the_old_spec() -> None:
    base = _table()
    m1 = _evolve(base, SpecUpdate(base).remove_field("ts_day").add_field("ts", "hour"))
    m2 = _evolve(m1, SpecUpdate(m1).remove_field("ts_hour").add_field("ts", "day"))
    assert _fields(m2.spec()) == [(3, 1000, "day", "ts_day")]
    assert m2.default_spec_id == 0  # the original spec, not a copy
    assert len(m2.partition_specs) == 2
    assert m2.last_partition_id == 1001


def test_removing_and_adding_back_in_one_change_changes_nothing() -> None:
    base = _table()
    assert SpecUpdate(base).remove_field("ts_day").add_field("ts", "day").updates() == []


def test_fields_are_renamed() -> None:
    spec = SpecUpdate(_table()).rename_field("ts_day", "day").apply()
    assert _fields(spec) == [(3, 1000, "day", "day")]


@pytest.mark.parametrize(
    ("column", "transform", "message"),
    [
        ("data", "day", "does not apply to string"),
        ("score", "bucket[4]", "does not apply to double"),
        ("user", "identity", "does not apply"),
        ("id", "bucket[x]", "unknown partition transform"),
        ("ts", "day", "already partitions by it"),
    ],
)
def test_inapplicable_or_duplicate_fields_are_refused(
    column: str, transform: str, message: str
) -> None:
    with pytest.raises(InvalidUpdate, match=message):
        SpecUpdate(_table()).add_field(column, transform)


def test_an_unknown_source_column_is_an_unknown_column() -> None:
    with pytest.raises(UnknownColumn):
        SpecUpdate(_table()).add_field("nope")


def test_two_time_transforms_of_one_column_are_redundant() -> None:
    with pytest.raises(InvalidUpdate, match="redundant partition field 'ts_hour'"):
        SpecUpdate(_table()).add_field("ts", "hour").apply()


def test_partition_names_must_not_clash() -> None:
    with pytest.raises(InvalidUpdate, match="also a column name"):
        SpecUpdate(_table()).add_field("id", "bucket[4]", name="data").apply()
    with pytest.raises(InvalidUpdate, match="already has a field with that name"):
        SpecUpdate(_table()).add_field("id", "bucket[4]", name="ts_day")
    with pytest.raises(InvalidUpdate, match="duplicate partition field names"):
        SpecUpdate(_table()).add_field("id", "bucket[4]").rename_field(
            "ts_day", "id_bucket_4"
        ).apply()
    # An identity partition may carry its own column's name.
    assert SpecUpdate(_table()).add_field("id").apply().fields[-1].name == "id"


def test_conflicting_operations_on_one_field_are_refused() -> None:
    with pytest.raises(InvalidUpdate, match="twice"):
        SpecUpdate(_table()).add_field("id", "bucket[4]").add_field("id", "bucket[4]")
    with pytest.raises(InvalidUpdate, match="added by this change"):
        SpecUpdate(_table()).add_field("id", "bucket[4]").remove_field("id_bucket_4")
    with pytest.raises(InvalidUpdate, match="being removed"):
        SpecUpdate(_table()).remove_field("ts_day").rename_field("ts_day", "d")
    with pytest.raises(InvalidUpdate, match="being renamed"):
        SpecUpdate(_table()).rename_field("ts_day", "d").remove_field("ts_day")
    with pytest.raises(InvalidUpdate, match="no partition field named 'x'"):
        SpecUpdate(_table()).remove_field("x")


def test_case_insensitive_updates_resolve_source_columns_ignoring_case() -> None:
    spec = SpecUpdate(_table(), case_sensitive=False).add_field("ID", "bucket[2]").apply()
    assert spec.fields[-1].source_id == 1


def test_an_update_without_changes_has_no_records() -> None:
    assert SpecUpdate(_table()).updates() == []


def test_unpartitioning_a_table_keeps_last_partition_id() -> None:
    base = _table()
    new = _evolve(base, SpecUpdate(base).remove_field("ts_day"))
    assert new.spec().is_unpartitioned and new.spec().spec_id == 1
    assert new.last_partition_id == 1000


# ---- new tables ------------------------------------------------------------------------------
def test_a_new_table_renumbers_columns_and_repoints_spec_and_sort_order() -> None:
    schema = Schema.of(
        NestedField(10, "id", LongType(), required=True),
        NestedField(20, "user", StructType((NestedField(21, "region", StringType()),))),
        NestedField(30, "ts", TimestamptzType()),
        identifier_field_ids=(10,),
    )
    m = new_table_metadata(
        schema=schema,
        spec=PartitionSpec(
            7, (PartitionField(30, 5, "day", ""), PartitionField(21, 6, "identity", "r"))
        ),
        sort_order=SortOrder(9, (SortField(10, direction="desc"),)),
        location="s3://b/t/",
        properties={"format-version": "2", "owner": "me", "snapshot-count": "3"},
        table_uuid="9C12D441-03FE-4693-9A96-A0705DDF69C1",
        now_ms=T0,
    )
    assert [(f.field_id, f.name) for f in m.schema().fields] == [(1, "id"), (2, "user"), (3, "ts")]
    assert m.schema().find_field("user.region").field_id == 4
    assert m.schema().identifier_field_ids == (1,)
    assert _fields(m.spec()) == [(3, 1000, "day", "ts_day"), (4, 1001, "identity", "r")]
    assert (m.spec().spec_id, m.last_partition_id, m.last_column_id) == (0, 1001, 4)
    assert m.sort_order() == SortOrder(1, (SortField(1, direction="desc"),))
    assert m.location == "s3://b/t" and m.table_uuid == "9c12d441-03fe-4693-9a96-a0705ddf69c1"
    assert m.properties["owner"] == "me"
    assert "format-version" not in m.properties and "snapshot-count" not in m.properties
    assert m.properties["write.delete.isolation-level"] == "snapshot"  # lakecat's defaults
    assert (m.snapshots, m.refs, m.last_sequence_number, m.last_updated_ms) == ((), {}, 0, T0)


def test_a_new_table_repoints_sources_by_place_whatever_the_names_hold() -> None:
    schema = Schema.of(
        NestedField(
            50,
            "s",
            StructType((NestedField(51, "x.y", StringType(), required=True),)),
            required=True,
        ),
        NestedField(40, "a.b", StringType()),
        NestedField(30, "s.x", LongType(), required=True),
        identifier_field_ids=(51, 30),
    )
    m = new_table_metadata(
        schema=schema,
        spec=PartitionSpec(
            0, (PartitionField(51, 1, "identity", ""), PartitionField(40, 2, "bucket[4]", ""))
        ),
        sort_order=SortOrder(3, (SortField(30), SortField(40, direction="desc"))),
        location="s3://b/t",
        properties={},
    )
    fresh = m.schema()
    # fresh ids: s=1, a.b=2, s.x=3, s.x.y=4
    assert [fresh.column_path(i) for i in (1, 2, 3, 4)] == [
        ("s",),
        ("a.b",),
        ("s.x",),
        ("s", "x.y"),
    ]
    assert _fields(m.spec()) == [
        (4, 1000, "identity", "s.x.y"),
        (2, 1001, "bucket[4]", "a.b_bucket"),
    ]
    assert [f.source_id for f in m.sort_order().fields] == [3, 2]
    assert fresh.identifier_field_ids == (4, 3)


def test_a_new_table_refuses_a_source_id_that_several_fields_have() -> None:
    schema = Schema.of(NestedField(1, "a", LongType()), NestedField(1, "b", LongType()))
    with pytest.raises(InvalidUpdate, match="column id 1, which several fields have"):
        new_table_metadata(
            schema=schema,
            spec=PartitionSpec(0, (PartitionField(1, 1, "identity", "p"),)),
            sort_order=UNSORTED,
            location="x",
            properties={},
        )


def test_an_unpartitioned_unsorted_new_table_uses_ids_999_and_0() -> None:
    m = _table(PartitionSpec())
    assert m.last_partition_id == 999 and m.default_sort_order_id == 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (PartitionSpec(0, (PartitionField(2, 1, "day", "d"),)), "cannot be applied"),
        (PartitionSpec(0, (PartitionField(9, 1, "identity", "x"),)), "column id 9"),
        (
            PartitionSpec(
                0, (PartitionField(1, 1, "identity", "p"), PartitionField(2, 2, "identity", "p"))
            ),
            "duplicate partition field names",
        ),
        (PartitionSpec(0, (PartitionField(1, 1, "bucket[2]", "data"),)), "also a column name"),
        (PartitionSpec(0, (PartitionField(1, 1, "lolz", "x"),)), "unknown partition transform"),
    ],
)
def test_a_new_table_with_an_invalid_spec_is_refused(spec: PartitionSpec, message: str) -> None:
    with pytest.raises(InvalidUpdate, match=message):
        _table(spec)


def test_a_new_table_refuses_other_format_versions_and_bad_identifiers() -> None:
    schema = Schema.of(NestedField(1, "id", LongType()), identifier_field_ids=(1,))
    with pytest.raises(InvalidUpdate, match="not a required column"):
        new_table_metadata(
            schema=schema, spec=PartitionSpec(), sort_order=UNSORTED, location="x", properties={}
        )
    for bad in ("4", "1", "three", " "):
        with pytest.raises(InvalidUpdate, match=f"format-version={bad!r}"):
            new_table_metadata(
                schema=Schema.of(NestedField(1, "id", LongType())),
                spec=PartitionSpec(),
                sort_order=UNSORTED,
                location="x",
                properties={"format-version": bad},
            )
    for version in ("2", "3", " 3"):
        created = new_table_metadata(
            schema=Schema.of(NestedField(1, "id", LongType())),
            spec=PartitionSpec(),
            sort_order=UNSORTED,
            location="x",
            properties={"format-version": version},
        )
        assert created.format_version == int(version)
        assert created.next_row_id == (0 if version.strip() == "3" else None)
        assert "format-version" not in created.properties  # part of the format, not stored
