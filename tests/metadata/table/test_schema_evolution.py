"""Schema evolution: each operation (top-level and nested), its errors, that ids are never
reused, and agreement with pyiceberg's UpdateSchema on the same sequence of changes."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.schema import Schema as PySchema
from pyiceberg.table.update.schema import UpdateSchema as PyUpdateSchema
from pyiceberg.types import IntegerType as PyIntegerType
from pyiceberg.types import LongType as PyLongType
from pyiceberg.types import StringType as PyStringType

from lakecat.metadata.errors import InvalidUpdate, UnknownColumn
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.new_table import new_table_metadata
from lakecat.metadata.table.schema_evolution import SchemaUpdate
from lakecat.metadata.table.sorting import UNSORTED, SortField, SortOrder
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import AddSchema, SetCurrentSchema

T0 = 1_700_000_000_000


def _table(sort_order: SortOrder = UNSORTED) -> TableMetadata:
    # Fresh ids (Java's order): id=1 ts=2 price=3 ratio=4 loc=5 points=6 attrs=7 code=8,
    # loc.lat=9 loc.lon=10, points.element=11 (x=12 y=13), attrs.key=14 attrs.value=15 (n=16).
    schema = Schema.of(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestamptzType()),
        NestedField(3, "price", DecimalType(9, 2)),
        NestedField(4, "ratio", FloatType()),
        NestedField(
            5,
            "loc",
            StructType(
                (NestedField(6, "lat", DoubleType(), True), NestedField(7, "lon", DoubleType()))
            ),
        ),
        NestedField(
            8,
            "points",
            ListType(
                9,
                StructType(
                    (NestedField(10, "x", IntegerType()), NestedField(11, "y", IntegerType()))
                ),
            ),
        ),
        NestedField(
            12,
            "attrs",
            MapType(13, StringType(), 14, StructType((NestedField(15, "n", IntegerType()),)), True),
        ),
        NestedField(16, "code", IntegerType(), required=True),
        identifier_field_ids=(1,),
    )
    return new_table_metadata(
        schema=schema,
        spec=PartitionSpec(0, (PartitionField(2, 1000, "day", "ts_day"),)),
        sort_order=sort_order,
        location="s3://b/t",
        properties={},
        now_ms=T0,
    )


def _names(schema: Schema) -> list[str]:
    return [f.name for f in schema.fields]


# ---- add -------------------------------------------------------------------------------------
def test_added_column_gets_the_next_id_and_goes_last() -> None:
    base = _table()
    update = SchemaUpdate(base).add_column("note", StringType(), doc="free text")
    schema = update.apply()
    assert schema.fields[-1] == NestedField(17, "note", StringType(), doc="free text")
    assert schema.schema_id == 1
    assert update.updates() == [AddSchema(schema, 17), SetCurrentSchema(-1)]
    new = apply(base, update.updates(), now_ms=T0 + 1)
    assert new.current_schema_id == 1 and new.last_column_id == 17
    assert new.schema().find_field("note").field_id == 17


def _v3() -> TableMetadata:
    base = _table()
    return replace(base, format_version=3)


def test_a_column_added_with_a_default_gets_it_as_initial_and_write_default() -> None:
    schema = (
        SchemaUpdate(_v3())
        .add_column("price2", DecimalType(9, 2), default="14.2")
        .add_column("seen", TimestamptzType(), required=True, default="2024-02-29T10:00:00Z")
        .apply()
    )
    price2, seen = schema.fields[-2:]
    assert (price2.initial_default, price2.write_default) == ("14.20", "14.20")
    assert seen.required
    assert seen.initial_default == seen.write_default == "2024-02-29T10:00:00.000000+00:00"


def test_a_columns_write_default_changes_and_goes_its_initial_default_stays() -> None:
    base = apply(
        _v3(),
        SchemaUpdate(_v3()).add_column("n", IntegerType(), default=3).updates(),
        now_ms=T0 + 1,
    )
    changed = SchemaUpdate(base).update_column_default("n", 5).apply().find_field("n")
    assert (changed.initial_default, changed.write_default) == (3, 5)
    dropped = SchemaUpdate(base).update_column_default("n", None).apply().find_field("n")
    assert (dropped.initial_default, dropped.write_default) == (3, None)


@pytest.mark.parametrize(
    ("metadata", "field_type", "default", "message"),
    [
        (_table, IntegerType(), 1, "need format version 3"),
        (_v3, IntegerType(), "x", "is not a valid int"),
        (_v3, DoubleType(), float("nan"), "not finite"),
        (_v3, StructType((NestedField(99, "a", IntegerType()),)), {}, "it is a struct"),
    ],
)
def test_defaults_are_refused_before_v3_for_nested_types_and_bad_values(
    metadata: object, field_type: object, default: object, message: str
) -> None:
    update = SchemaUpdate(metadata())  # type: ignore[operator]
    with pytest.raises(InvalidUpdate, match=message):
        update.add_column("x", field_type, default=default)  # type: ignore[arg-type]


def test_a_required_column_needs_a_default() -> None:
    with pytest.raises(InvalidUpdate, match="or with a default"):
        SchemaUpdate(_v3()).add_column("x", IntegerType(), required=True)


def test_nested_columns_are_added_to_structs_list_elements_and_map_values() -> None:
    update = (
        SchemaUpdate(_table())
        .add_column("loc.alt", FloatType())
        .add_column(("points", "z"), IntegerType())
        .add_column("attrs.m", StringType())
    )
    schema = update.apply()
    assert schema.find_field("loc.alt").field_id == 17
    assert schema.find_field("points.element.z").field_id == 18
    assert schema.find_field("attrs.value.m").field_id == 19
    assert [f.name for f in schema.find_type("loc").fields] == ["lat", "lon", "alt"]  # type: ignore[attr-defined]


def test_an_added_nested_type_gets_fresh_ids_in_java_order() -> None:
    nested = StructType(
        (
            NestedField(1, "a", ListType(2, IntegerType())),
            NestedField(3, "b", MapType(4, StringType(), 5, LongType())),
        )
    )
    schema = SchemaUpdate(_table()).add_column("s", nested).apply()
    s = schema.find_field("s")
    assert s.field_id == 17
    assert schema.find_field("s.a").field_id == 18
    assert schema.find_field("s.b").field_id == 19
    assert schema.find_field("s.a.element").field_id == 20
    assert (schema.find_field("s.b.key").field_id, schema.find_field("s.b.value").field_id) == (
        21,
        22,
    )


def test_top_level_names_with_dots_are_added_with_a_one_part_tuple() -> None:
    schema = SchemaUpdate(_table()).add_column(("a.b",), IntegerType()).apply()
    assert schema.fields[-1].name == "a.b"


def test_each_part_of_a_tuple_path_is_one_name_dots_and_all() -> None:
    base = SchemaUpdate(_table()).add_column(("s.t",), StructType(())).apply()
    metadata = apply(_table(), [AddSchema(base, 17), SetCurrentSchema(-1)])
    schema = (
        SchemaUpdate(metadata)
        .add_column(("s.t", "u.v"), IntegerType())
        .add_column(("loc", "x.y"), IntegerType())
        .apply()
    )
    assert schema.column_path(schema.find_field("s.t.u.v").field_id) == ("s.t", "u.v")
    assert schema.column_path(schema.find_field("loc.x.y").field_id) == ("loc", "x.y")
    # a string is split on dots: "s.t" is no struct path, and the error says to use a tuple
    with pytest.raises(UnknownColumn, match="tuple"):
        SchemaUpdate(metadata).add_column("s.t.w", IntegerType())


@pytest.mark.parametrize(
    "change",
    [
        lambda u: u.add_column(("loc.lat",), IntegerType()),  # top-level "loc.lat" vs loc.lat
        lambda u: u.add_column(("loc.new",), IntegerType()).add_column(
            ("loc", "new"), IntegerType()
        ),
        lambda u: u.rename_column("ratio", "loc.lon"),
    ],
)
def test_a_change_that_would_give_two_fields_one_full_name_is_refused(change) -> None:
    with pytest.raises(InvalidUpdate, match=r"several fields|already being added"):
        change(SchemaUpdate(_table())).apply()


def test_a_schema_with_a_shared_full_name_is_refused_at_create_and_in_add_schema() -> None:
    clash = Schema.of(
        NestedField(1, "a.b", IntegerType()),
        NestedField(2, "a", StructType((NestedField(3, "b", IntegerType()),))),
    )
    with pytest.raises(InvalidUpdate, match=r"'a\.b' would name several fields"):
        new_table_metadata(
            schema=clash,
            spec=PartitionSpec(0, ()),
            sort_order=UNSORTED,
            location="s3://b/t",
            properties={},
        )
    metadata = _table()
    with pytest.raises(InvalidUpdate, match="several fields"):
        apply(metadata, [AddSchema(replace(clash, schema_id=1), 17)])


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"first": True}, ["new", "id", "ts"]),
        ({"after": "id"}, ["id", "new", "ts"]),
        ({"before": "ts"}, ["id", "new", "ts"]),
    ],
)
def test_added_columns_can_be_placed(kwargs: dict[str, object], expected: list[str]) -> None:
    schema = SchemaUpdate(_table()).add_column("new", IntegerType(), **kwargs).apply()  # type: ignore[arg-type]
    assert _names(schema)[:3] == expected


def test_adding_a_required_column_is_refused() -> None:
    with pytest.raises(InvalidUpdate, match="add it as optional"):
        SchemaUpdate(_table()).add_column("x", IntegerType(), required=True)


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        ("id", InvalidUpdate, "already exists"),
        ("loc.lat", InvalidUpdate, "already exists"),
        ("ts.x", InvalidUpdate, "not a struct"),
        ("nope.x", UnknownColumn, "nope"),
        ("a..b", InvalidUpdate, "invalid column name"),
    ],
)
def test_adding_a_clashing_or_misplaced_column_is_refused(
    path: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        SchemaUpdate(_table()).add_column(path, IntegerType())


def test_adding_the_same_column_twice_is_refused() -> None:
    update = SchemaUpdate(_table()).add_column("x", IntegerType())
    with pytest.raises(InvalidUpdate, match="already being added"):
        update.add_column("x", LongType())


# ---- rename ----------------------------------------------------------------------------------
def test_columns_are_renamed_in_place_keeping_their_ids() -> None:
    schema = (
        SchemaUpdate(_table())
        .rename_column("ts", "event_time")
        .rename_column("loc.lat", "latitude")
        .apply()
    )
    assert schema.find_field("event_time").field_id == 2
    assert schema.find_field("loc.latitude").field_id == 9
    assert _names(schema)[1] == "event_time"


def test_renaming_into_a_clash_or_a_list_element_is_refused() -> None:
    with pytest.raises(InvalidUpdate, match="duplicate column name 'id'"):
        SchemaUpdate(_table()).rename_column("ts", "id").apply()
    with pytest.raises(InvalidUpdate, match="element, key or value"):
        SchemaUpdate(_table()).rename_column("points.element", "item")
    with pytest.raises(UnknownColumn):
        SchemaUpdate(_table()).rename_column("missing", "x")


def test_renaming_an_identifier_field_keeps_it_an_identifier() -> None:
    schema = SchemaUpdate(_table()).rename_column("id", "key").apply()
    assert schema.identifier_field_ids == (1,)
    assert schema.column_name(1) == "key"


# ---- delete ----------------------------------------------------------------------------------
def test_deleted_columns_and_their_children_disappear() -> None:
    schema = SchemaUpdate(_table()).delete_column("loc").delete_column("points.element.y").apply()
    assert not schema.has_field("loc") and not schema.has_field(9)
    assert [f.name for f in schema.find_type("points").element_type.fields] == ["x"]  # type: ignore[attr-defined]


def test_a_deleted_name_can_be_added_back_with_a_new_id() -> None:
    base = _table()
    schema = SchemaUpdate(base).delete_column("price").add_column("price", StringType()).apply()
    assert schema.find_field("price") == NestedField(17, "price", StringType())


def test_deleting_a_partition_source_column_is_refused() -> None:
    with pytest.raises(InvalidUpdate, match="partition field 'ts_day'"):
        SchemaUpdate(_table()).delete_column("ts")


def test_deleting_a_sort_column_is_refused() -> None:
    base = _table(sort_order=SortOrder(1, (SortField(3),)))
    with pytest.raises(InvalidUpdate, match="sort order"):
        SchemaUpdate(base).delete_column("price")


def test_deleting_an_identifier_field_needs_new_identifier_fields_first() -> None:
    with pytest.raises(InvalidUpdate, match="identifier field 'id'"):
        SchemaUpdate(_table()).delete_column("id").apply()
    schema = SchemaUpdate(_table()).set_identifier_fields("code").delete_column("id").apply()
    assert schema.identifier_field_ids == (8,)


def test_deleting_a_column_with_pending_changes_is_refused() -> None:
    with pytest.raises(InvalidUpdate, match="columns are being added"):
        SchemaUpdate(_table()).add_column("loc.alt", FloatType()).delete_column("loc")
    with pytest.raises(InvalidUpdate, match="renamed or updated"):
        SchemaUpdate(_table()).rename_column("price", "cost").delete_column("price")
    with pytest.raises(InvalidUpdate, match="being deleted"):
        SchemaUpdate(_table()).delete_column("price").rename_column("price", "cost")


# ---- update ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("column", "new_type"),
    [("code", LongType()), ("ratio", DoubleType()), ("price", DecimalType(18, 2))],
)
def test_allowed_type_promotions(column: str, new_type: object) -> None:
    schema = SchemaUpdate(_table()).update_column(column, field_type=new_type).apply()  # type: ignore[arg-type]
    assert schema.find_type(column) == new_type


@pytest.mark.parametrize(
    ("column", "new_type", "message"),
    [
        ("id", IntegerType(), "only int -> long"),
        ("price", DecimalType(9, 3), "only int -> long"),
        ("ts", StringType(), "only int -> long"),
        ("loc", StringType(), "only primitive types"),
        ("attrs.key", IntegerType(), "map key"),
    ],
)
def test_other_type_changes_are_refused(column: str, new_type: object, message: str) -> None:
    with pytest.raises(InvalidUpdate, match=message):
        SchemaUpdate(_table()).update_column(column, field_type=new_type)  # type: ignore[arg-type]


def test_required_columns_may_become_optional_but_not_the_reverse() -> None:
    schema = SchemaUpdate(_table()).update_column("loc.lat", required=False).apply()
    assert not schema.find_field("loc.lat").required
    with pytest.raises(InvalidUpdate, match="may hold nulls"):
        SchemaUpdate(_table()).update_column("ts", required=True)


def test_list_elements_can_be_widened_and_docs_set() -> None:
    schema = (
        SchemaUpdate(_table())
        .update_column("points.element.x", field_type=LongType(), doc="x coordinate")
        .update_column("attrs.value", required=False)
        .apply()
    )
    assert schema.find_field("points.element.x") == NestedField(
        12, "x", LongType(), doc="x coordinate"
    )
    assert schema.find_type("attrs").value_required is False  # type: ignore[attr-defined]


def test_a_rename_and_an_update_of_one_column_combine() -> None:
    schema = (
        SchemaUpdate(_table())
        .rename_column("code", "zip")
        .update_column("code", field_type=LongType())
        .apply()
    )
    assert schema.find_field("zip") == NestedField(8, "zip", LongType(), required=True)


# ---- moves -----------------------------------------------------------------------------------
def test_columns_move_first_before_and_after() -> None:
    schema = (
        SchemaUpdate(_table())
        .move_first("code")
        .move_after("id", "price")
        .move_before("loc.lon", "loc.lat")
        .apply()
    )
    assert _names(schema)[:5] == ["code", "ts", "price", "id", "ratio"]
    assert [f.name for f in schema.find_type("loc").fields] == ["lon", "lat"]  # type: ignore[attr-defined]


def test_moves_across_structs_or_relative_to_itself_are_refused() -> None:
    with pytest.raises(InvalidUpdate, match="different structs"):
        SchemaUpdate(_table()).move_after("loc.lat", "id")
    with pytest.raises(InvalidUpdate, match="itself"):
        SchemaUpdate(_table()).move_before("id", "id")


# ---- identifier fields, case, no-ops ---------------------------------------------------------
def test_identifier_fields_must_be_required_primitives_that_are_not_floats() -> None:
    assert SchemaUpdate(_table()).set_identifier_fields(
        "id", "code"
    ).apply().identifier_field_ids == (1, 8)
    with pytest.raises(InvalidUpdate, match="not a required column"):
        SchemaUpdate(_table()).set_identifier_fields("ts").apply()
    with pytest.raises(InvalidUpdate, match="float and double"):
        SchemaUpdate(_table()).set_identifier_fields("loc.lat").apply()
    with pytest.raises(InvalidUpdate, match="not a primitive"):
        SchemaUpdate(_table()).set_identifier_fields("loc").apply()


def test_identifier_fields_must_not_hide_in_optional_structs_or_lists() -> None:
    key = NestedField(3, "k", IntegerType(), required=True)
    schema = Schema.of(
        NestedField(1, "s", StructType((key,))),
        NestedField(2, "l", ListType(4, StructType((replace(key, field_id=5),)), True), True),
    )
    m = new_table_metadata(
        schema=schema,
        spec=PartitionSpec(),
        sort_order=UNSORTED,
        location="s3://b/t",
        properties={},
        now_ms=T0,
    )
    with pytest.raises(InvalidUpdate, match="optional struct 's'"):
        SchemaUpdate(m).set_identifier_fields("s.k").apply()
    with pytest.raises(InvalidUpdate, match="nested in list"):
        SchemaUpdate(m).set_identifier_fields("l.element.k").apply()


def test_case_insensitive_updates_resolve_names_ignoring_case() -> None:
    schema = (
        SchemaUpdate(_table(), case_sensitive=False).rename_column("LOC.LAT", "Latitude").apply()
    )
    assert schema.find_field("loc.Latitude").field_id == 9
    with pytest.raises(UnknownColumn):
        SchemaUpdate(_table()).rename_column("LOC.LAT", "x")


def test_an_update_that_changes_nothing_has_no_records() -> None:
    assert SchemaUpdate(_table()).updates() == []
    assert SchemaUpdate(_table()).update_column("ts", required=False).updates() == []


def test_reverting_to_an_older_schema_reuses_its_id() -> None:
    base = _table()
    m1 = apply(base, SchemaUpdate(base).rename_column("ts", "t").updates(), now_ms=T0 + 1)
    update = SchemaUpdate(m1).rename_column("t", "ts")
    assert update.apply().schema_id == 0
    m2 = apply(m1, update.updates(), now_ms=T0 + 2)
    assert m2.current_schema_id == 0 and len(m2.schemas) == 2


# ---- ids are never reused --------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10)), min_size=1, max_size=12))
def test_new_field_ids_never_reuse_old_ones(steps: list[tuple[bool, int]]) -> None:
    m = _table()
    ever_used = set(m.schema().field_ids())
    for add, pick in steps:
        update = SchemaUpdate(m)
        deletable = [f.name for f in m.schema().fields if f.name not in ("id", "ts")]
        if add or not deletable:
            update.add_column(f"c{m.last_column_id}", IntegerType())
        else:
            update.delete_column(deletable[pick % len(deletable)])
        new = apply(m, update.updates(), now_ms=T0)
        fresh = new.schema().field_ids() - m.schema().field_ids()
        assert all(i > m.last_column_id for i in fresh)
        assert not fresh & ever_used
        ever_used |= fresh
        m = new


# ---- pyiceberg as an oracle ------------------------------------------------------------------
def test_a_sequence_of_changes_gives_the_schema_pyiceberg_gives() -> None:
    base = _table()
    base = replace(base, last_column_id=base.schema().highest_field_id)
    ours = (
        SchemaUpdate(base)
        .add_column("note", StringType(), doc="d")
        .add_column("loc.alt", IntegerType())
        .add_column("points.z", IntegerType())
        .rename_column("price", "cost")
        .delete_column("ratio")
        .update_column("code", field_type=LongType())
        .move_first("note")
        .move_after("code", "id")
        .apply()
    )
    py_schema = PySchema.model_validate_json(json.dumps(base.schema().to_json()))
    # pyiceberg reads the specs and schemas of its transaction's metadata; none are needed here.
    transaction = SimpleNamespace(
        table_metadata=SimpleNamespace(partition_specs=[], schemas=[py_schema])
    )
    theirs = (
        PyUpdateSchema(transaction, schema=py_schema)  # type: ignore[arg-type]
        .add_column("note", PyStringType(), doc="d")
        .add_column(("loc", "alt"), PyIntegerType())
        .add_column(("points", "z"), PyIntegerType())
        .rename_column("price", "cost")
        .delete_column("ratio")
        .update_column("code", field_type=PyLongType())
        .move_first("note")
        .move_after("code", "id")
        ._apply()
    )
    assert Schema.from_json(json.loads(theirs.model_dump_json())).same_structure(ours)


# ---- union by name ---------------------------------------------------------------------------
def test_union_by_name_adds_missing_columns_widens_types_and_relaxes_required() -> None:
    incoming = Schema.of(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "code", LongType()),  # int -> long, required -> optional
        NestedField(3, "ratio", FloatType()),
        NestedField(4, "loc", StructType((NestedField(5, "alt", IntegerType()),))),
        NestedField(6, "points", ListType(7, StructType((NestedField(8, "z", IntegerType()),)))),
        NestedField(9, "note", StringType(), doc="new"),
    )
    schema = SchemaUpdate(_table()).union_by_name(incoming).apply()
    assert schema.find_field("code") == NestedField(8, "code", LongType())
    assert schema.find_field("loc.alt").field_id > 16
    assert schema.find_field("points.element.z").field_id > 16
    assert schema.find_field("note") == NestedField(19, "note", StringType(), doc="new")
    assert schema.find_field("ratio").field_type == FloatType()
    assert schema.has_field("price")  # nothing is deleted


def test_union_by_name_keeps_a_wider_table_type_and_refuses_incompatible_ones() -> None:
    narrower = Schema.of(NestedField(1, "id", IntegerType(), required=True))
    assert SchemaUpdate(_table()).union_by_name(narrower).updates() == []
    with pytest.raises(InvalidUpdate, match="incompatible"):
        SchemaUpdate(_table()).union_by_name(Schema.of(NestedField(1, "id", StringType())))
    with pytest.raises(InvalidUpdate, match="cannot change 'loc'"):
        SchemaUpdate(_table()).union_by_name(Schema.of(NestedField(1, "loc", StringType())))
