"""Tests of the row-filter model, its parser and binding."""

from __future__ import annotations

import datetime as dt
import string
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecat.metadata.errors import UnknownColumn, ValidationError
from lakecat.metadata.expressions.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundReference,
    Col,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Operation,
    Or,
    StartsWith,
    and_,
    bind,
    col,
    is_bound,
    or_,
    quote_name,
    quote_path,
    referenced_columns,
    referenced_field_ids,
    rewrite_not,
)
from lakecat.metadata.expressions.parser import parse
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DateType,
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
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

SCHEMA = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "date", DateType()),
    NestedField(3, "name", StringType()),
    NestedField(4, "price", DecimalType(9, 2)),
    NestedField(5, "score", DoubleType()),
    NestedField(6, "ratio", FloatType()),
    NestedField(7, "count", IntegerType()),
    NestedField(8, "ts", TimestampType()),
    NestedField(9, "tstz", TimestamptzType()),
    NestedField(10, "flag", BooleanType()),
    NestedField(11, "u", UUIDType()),
    NestedField(12, "t", TimeType()),
    NestedField(13, "raw", BinaryType()),
    NestedField(
        14,
        "loc",
        StructType(
            (
                NestedField(15, "lat", DoubleType(), required=True),
                NestedField(16, "city", StringType()),
            )
        ),
    ),
    NestedField(17, "tags", ListType(18, StringType())),
    NestedField(19, "props", MapType(20, StringType(), 21, StringType())),
    NestedField(
        22, "req", StructType((NestedField(23, "code", IntegerType(), required=True),)), True
    ),
)


def ref(name: str) -> BoundReference:
    field = SCHEMA.find_field(name)
    return BoundReference(field.field_id, name, field.field_type, tuple(name.split(".")))


# ---- parsing ------------------------------------------------------------------------------

PARSE_CASES: list[tuple[str, Expression]] = [
    ("id = 5", EqualTo("id", 5)),
    ("id == 5", EqualTo("id", 5)),
    ("id != 5", NotEqualTo("id", 5)),
    ("id <> 5", NotEqualTo("id", 5)),
    ("id < 5", LessThan("id", 5)),
    ("id <= -5", LessThanOrEqual("id", -5)),
    ("id > 5", GreaterThan("id", 5)),
    ("id >= 5", GreaterThanOrEqual("id", 5)),
    ("5 < id", GreaterThan("id", 5)),
    ("5 >= id", LessThanOrEqual("id", 5)),
    ("'a' = name", EqualTo("name", "a")),
    ("price = 1.50", EqualTo("price", Decimal("1.50"))),
    ("score > 1e3", GreaterThan("score", 1000.0)),
    ("score > .5", GreaterThan("score", Decimal("0.5"))),
    ("name = 'it''s'", EqualTo("name", "it's")),
    ("name = ''", EqualTo("name", "")),
    ("flag = true", EqualTo("flag", True)),
    ("flag = FALSE", EqualTo("flag", False)),
    ("date < '2024-01-01'", LessThan("date", "2024-01-01")),
    ("date < DATE '2024-01-01'", LessThan("date", dt.date(2024, 1, 1))),
    (
        "ts >= TIMESTAMP '2024-01-01 10:00:00'",
        GreaterThanOrEqual("ts", dt.datetime(2024, 1, 1, 10)),
    ),
    (
        "tstz >= timestamp '2024-01-01T10:00:00Z'",
        GreaterThanOrEqual("tstz", dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC)),
    ),
    ("t < TIME '10:30:00'", LessThan("t", dt.time(10, 30))),
    ("raw = X'00ff'", EqualTo("raw", b"\x00\xff")),
    ("id IN (1, 2, 3)", In("id", {1, 2, 3})),
    ("id not in (1)", NotIn("id", {1})),
    ("name IS NULL", IsNull("name")),
    ("name is not null", NotNull("name")),
    ("score IS NAN", IsNaN("score")),
    ("score IS NOT NAN", NotNaN("score")),
    ("name LIKE 'ab%'", StartsWith("name", "ab")),
    ("name NOT LIKE 'ab%'", NotStartsWith("name", "ab")),
    ("name LIKE 'a\\%b\\_c%'", StartsWith("name", "a%b_c")),
    ("name LIKE 'exact'", EqualTo("name", "exact")),
    ("name NOT LIKE 'exact'", NotEqualTo("name", "exact")),
    ("loc.lat > 0", GreaterThan("loc.lat", 0)),
    ("`loc`.`lat` > 0", GreaterThan("loc.lat", 0)),
    ('"my col" = 1', EqualTo("my col", 1)),
    ("`we``ird` = 1", EqualTo("we`ird", 1)),
    ("`and` = 1", EqualTo("and", 1)),
    ("id BETWEEN 1 AND 3", And(GreaterThanOrEqual("id", 1), LessThanOrEqual("id", 3))),
    (
        "id NOT BETWEEN 1 AND 3",
        Not(And(GreaterThanOrEqual("id", 1), LessThanOrEqual("id", 3))),
    ),
    ("a = 1 AND b = 2 OR c = 3", Or(And(EqualTo("a", 1), EqualTo("b", 2)), EqualTo("c", 3))),
    ("a = 1 OR b = 2 AND c = 3", Or(EqualTo("a", 1), And(EqualTo("b", 2), EqualTo("c", 3)))),
    ("(a = 1 OR b = 2) AND c = 3", And(Or(EqualTo("a", 1), EqualTo("b", 2)), EqualTo("c", 3))),
    ("NOT a = 1 AND b = 2", And(Not(EqualTo("a", 1)), EqualTo("b", 2))),
    ("NOT NOT a = 1", Not(Not(EqualTo("a", 1)))),
    ("true", AlwaysTrue()),
    ("FALSE OR a = 1", Or(AlwaysFalse(), EqualTo("a", 1))),
    ("  a=1  ", EqualTo("a", 1)),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_builds_the_expected_tree(text: str, expected: Expression) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_str_of_a_parsed_filter_parses_back_equal(text: str, expected: Expression) -> None:
    assert parse(str(parse(text))) == expected


BAD_FILTERS = [
    ("", 0, "a filter expression"),
    ("id", 2, "comparison operator"),
    ("id = ", 5, "literal"),
    ("id = 1 AND", 10, "column name"),
    ("id = 1 id = 2", 7, "AND, OR or end of input"),
    ("id = null", 5, "IS NULL"),
    ("id = other", 5, "literal"),
    ("1 = 2", 4, "column name"),
    ("id IN (1, 2", 11, "')'"),
    ("id IN ()", 7, "literal"),
    ("name = 'open", 7, "unterminated"),
    ("name LIKE '%ab'", 10, "prefix patterns"),
    ("name LIKE 'a_b%'", 10, "'_'"),
    ("name LIKE 'a%b'", 10, "'%' must come last"),
    ("id IS 5", 6, "NULL or NAN"),
    ("id NOT = 5", 7, "IN, LIKE or BETWEEN"),
    ("date = DATE 'yesterday'", 12, "DATE literal"),
    ("id = 1 # 2", 7, "unexpected character"),
    ("(id = 1", 7, "')'"),
    ("id = 12abc", 5, "malformed number"),
    ("and = 1", 0, "column name"),
    ("raw = X'zz'", 6, "hex"),
]


@pytest.mark.parametrize(
    ("text", "position", "expected"), BAD_FILTERS, ids=[b[0] for b in BAD_FILTERS]
)
def test_parse_rejects_malformed_filters_with_the_position(
    text: str, position: int, expected: str
) -> None:
    with pytest.raises(ValidationError) as info:
        parse(text)
    message = str(info.value)
    assert f"position {position}" in message
    assert expected in message


def test_parse_error_message_points_at_the_problem() -> None:
    with pytest.raises(ValidationError) as info:
        parse("id = 1 AND name LIKE '%x'")
    lines = str(info.value).splitlines()
    assert lines[-2].strip() == "id = 1 AND name LIKE '%x'"
    assert lines[-1].index("^") - lines[-2].index("i") == 21


def test_keywords_are_case_insensitive_and_date_is_a_usable_column_name() -> None:
    assert parse("date In (1) aNd NOT name iS nOt NuLl") == And(
        In("date", {1}), Not(NotNull("name"))
    )
    assert parse("date = DATE '2024-01-01'") == EqualTo("date", dt.date(2024, 1, 1))


# ---- round trip over generated expressions ------------------------------------------------

_names = st.sampled_from(["a", "b_1", "loc.lat", "date", "my col", "and", "x`y", "Ünï"])
_literals = st.one_of(
    st.integers(-(2**70), 2**70),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.text(max_size=6),
    st.booleans(),
    st.dates(),
    st.datetimes(),
    st.times(),
    st.binary(max_size=4),
    st.floats(allow_nan=False, allow_infinity=False).map(
        lambda f: f if "e" in repr(f) else 1.5e300
    ),
)


@st.composite
def _predicates(draw: st.DrawFn) -> Expression:
    name = draw(_names)
    kind = draw(st.sampled_from(["cmp", "set", "unary", "like"]))
    if kind == "cmp":
        cls = draw(
            st.sampled_from(
                [EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual]
            )
        )
        return cls(name, draw(_literals))
    if kind == "set":
        cls = draw(st.sampled_from([In, NotIn]))
        return cls(
            name,
            draw(
                st.frozensets(st.integers(-100, 100) | st.text(max_size=3), min_size=1, max_size=4)
            ),
        )
    if kind == "unary":
        return draw(st.sampled_from([IsNull, NotNull, IsNaN, NotNaN]))(name)
    cls = draw(st.sampled_from([StartsWith, NotStartsWith]))
    return cls(name, draw(st.text(alphabet=string.ascii_letters + "%_\\'", max_size=5)))


_expressions = st.recursive(
    _predicates() | st.sampled_from([AlwaysTrue(), AlwaysFalse()]),
    lambda children: st.one_of(
        st.builds(And, children, children),
        st.builds(Or, children, children),
        st.builds(Not, children),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(_expressions)
def test_str_round_trips_through_the_parser(expr: Expression) -> None:
    assert parse(str(expr)) == expr


# ---- building -----------------------------------------------------------------------------


def test_col_builder_and_operators_build_plain_expressions() -> None:
    expr = (Col("a").lt(5) & col("b").isin([1, 2])) | ~col("c").is_null()
    assert expr == Or(And(LessThan("a", 5), In("b", {1, 2})), Not(IsNull("c")))
    assert col("s").starts_with("x") == StartsWith("s", "x")
    assert col("x").between(1, 2) == And(GreaterThanOrEqual("x", 1), LessThanOrEqual("x", 2))
    assert and_() == AlwaysTrue() and or_() == AlwaysFalse()
    assert and_(EqualTo("a", 1), EqualTo("b", 2), EqualTo("c", 3)) == And(
        And(EqualTo("a", 1), EqualTo("b", 2)), EqualTo("c", 3)
    )


def test_expressions_are_hashable_values() -> None:
    assert In("a", [1, 2]) == In("a", (2, 1))
    assert len({EqualTo("a", 1), EqualTo("a", 1), NotEqualTo("a", 1)}) == 2


def test_str_is_readable_sql() -> None:
    expr = And(LessThan("date", "2024-01-01"), In("id", {2, 1}))
    assert str(expr) == "date < '2024-01-01' AND id IN (1, 2)"
    assert str(Not(Or(IsNull("a"), StartsWith("b", "50%")))) == "NOT (a IS NULL OR b LIKE '50\\%%')"


def test_a_set_predicate_needs_a_collection() -> None:
    with pytest.raises(ValidationError):
        In("a", "abc")


def test_rewrite_not_pushes_negation_to_the_leaves() -> None:
    expr = Not(And(LessThan("a", 1), Or(IsNull("b"), Not(StartsWith("c", "x")))))
    assert rewrite_not(expr) == Or(
        GreaterThanOrEqual("a", 1), And(NotNull("b"), StartsWith("c", "x"))
    )
    assert rewrite_not(Not(AlwaysTrue())) == AlwaysFalse()


# ---- binding ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "literal"),
    [
        (EqualTo("date", "2024-01-01"), 19723),
        (EqualTo("date", dt.date(1969, 12, 31)), -1),
        (EqualTo("id", 5), 5),
        (EqualTo("price", 1.5), Decimal("1.50")),
        (EqualTo("price", Decimal("2")), Decimal("2.00")),
        (EqualTo("score", Decimal("0.1")), 0.1),
        (EqualTo("score", 3), 3.0),
        (EqualTo("ratio", 0.1), 0.10000000149011612),
        (EqualTo("ts", "2024-01-01T00:00:01"), 1704067201000000),
        (EqualTo("tstz", "2024-01-01T01:00:00+01:00"), 1704067200000000),
        (EqualTo("flag", "true"), True),
        (
            EqualTo("u", "12345678-1234-5678-1234-567812345678"),
            uuid.UUID(int=0x12345678123456781234567812345678),
        ),
        (EqualTo("t", "00:00:01"), 1_000_000),
        (EqualTo("raw", b"\x01"), b"\x01"),
        (EqualTo("loc.city", "x"), "x"),
    ],
    ids=lambda v: str(v),
)
def test_bind_converts_literals_to_the_columns_in_memory_form(
    expr: Expression, literal: Any
) -> None:
    bound = bind(SCHEMA, expr)
    assert isinstance(bound, BoundPredicate)
    assert bound.literal == literal
    assert type(bound.literal) is type(literal)


def test_bind_resolves_names_to_field_ids_and_paths() -> None:
    bound = bind(SCHEMA, LessThan("loc.city", "m"))
    assert bound == BoundPredicate(
        Operation.LT, BoundReference(16, "loc.city", StringType(), ("loc", "city")), "m"
    )
    assert not bound.ref.is_top_level  # type: ignore[attr-defined]


def test_bind_case_insensitive_uses_the_schema_names() -> None:
    bound = bind(SCHEMA, EqualTo("LOC.City", "x"), case_sensitive=False)
    assert isinstance(bound, BoundPredicate)
    assert bound.ref.name == "loc.city" and bound.ref.field_id == 16
    with pytest.raises(UnknownColumn):
        bind(SCHEMA, EqualTo("LOC.City", "x"))


def test_unknown_column_error_names_it_and_lists_the_columns() -> None:
    with pytest.raises(UnknownColumn) as info:
        bind(SCHEMA, And(EqualTo("id", 1), GreaterThan("nope", 2)))
    message = str(info.value)
    assert "'nope'" in message and "nope > 2" in message
    assert "id, date, name" in message


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        (EqualTo("id", "abc"), "not a valid long"),
        (EqualTo("count", 2**40), "out of range"),
        (EqualTo("price", Decimal("1.234")), "fractional digits"),
        (EqualTo("date", "2024-13-01"), "not a valid date"),
        (EqualTo("id", None), "IS NULL"),
        (In("id", {1, None}), "IS NULL"),
        (EqualTo("score", float("nan")), "IS NAN"),
        (EqualTo("id", True), "not a valid long"),
        (EqualTo("flag", 1), "not a valid boolean"),
        (StartsWith("id", "1"), "string column"),
        (EqualTo("loc", 1), "cannot compare"),
        (EqualTo("tags.element", "x"), "inside the list"),
        (EqualTo("props.key", "x"), "inside the map"),
    ],
    ids=lambda v: str(v),
)
def test_bind_rejects_literals_that_do_not_fit(expr: Expression, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        bind(SCHEMA, expr)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (In("id", {7}), BoundPredicate(Operation.EQ, ref("id"), 7)),
        (NotIn("id", {7}), BoundPredicate(Operation.NOT_EQ, ref("id"), 7)),
        (In("id", set()), AlwaysFalse()),
        (NotIn("id", set()), AlwaysTrue()),
        (NotIn("count", set()), BoundPredicate(Operation.NOT_NULL, ref("count"))),
        (In("id", [1, Decimal(1)]), BoundPredicate(Operation.EQ, ref("id"), 1)),
        (IsNull("id"), AlwaysFalse()),
        (NotNull("id"), AlwaysTrue()),
        (IsNull("count"), BoundPredicate(Operation.IS_NULL, ref("count"))),
        (IsNaN("count"), AlwaysFalse()),
        (NotNaN("count"), BoundPredicate(Operation.NOT_NULL, ref("count"))),
        (NotNaN("id"), AlwaysTrue()),
        (IsNaN("score"), BoundPredicate(Operation.IS_NAN, ref("score"))),
        # A required field in an optional struct is null when the struct is.
        (IsNull("loc.lat"), BoundPredicate(Operation.IS_NULL, ref("loc.lat"))),
        (IsNull("req.code"), AlwaysFalse()),
        (And(IsNull("id"), EqualTo("count", 1)), AlwaysFalse()),
        (Or(NotNull("id"), EqualTo("count", 1)), AlwaysTrue()),
        (And(NotNull("id"), EqualTo("count", 1)), BoundPredicate(Operation.EQ, ref("count"), 1)),
        (Or(IsNull("id"), EqualTo("count", 1)), BoundPredicate(Operation.EQ, ref("count"), 1)),
        (Not(LessThan("count", 3)), BoundPredicate(Operation.GT_EQ, ref("count"), 3)),
        (
            Not(Not(In("count", {1, 2}))),
            BoundPredicate(Operation.IN, ref("count"), None, frozenset({1, 2})),
        ),
        (Not(AlwaysFalse()), AlwaysTrue()),
    ],
    ids=lambda v: str(v),
)
def test_bind_simplifies(expr: Expression, expected: Expression) -> None:
    assert bind(SCHEMA, expr) == expected


def test_bound_expressions_print_typed_literals() -> None:
    bound = bind(
        SCHEMA,
        parse(
            "date < '2024-01-01' AND ts >= '2024-01-01 10:00:00' AND tstz = 0 "
            "AND name LIKE 'a%' AND id IN (2, 1) AND price = 1.5"
        ),
    )
    assert str(bound) == (
        "date < DATE '2024-01-01' AND ts >= TIMESTAMP '2024-01-01T10:00:00.000000' "
        "AND tstz = TIMESTAMP '1970-01-01T00:00:00.000000+00:00' AND name LIKE 'a%' "
        "AND id IN (1, 2) AND price = 1.50"
    )
    # and the printed form binds back to the same expression
    assert bind(SCHEMA, parse(str(bound))) == bound


def test_bind_is_idempotent_and_is_bound_detects_the_result() -> None:
    bound = bind(SCHEMA, parse("NOT (id = 1 OR name IS NULL)"))
    assert is_bound(bound)
    assert not is_bound(parse("id = 1"))
    assert bind(SCHEMA, bound) == bound


def test_referenced_columns_and_field_ids() -> None:
    expr = parse("id = 1 OR (loc.city LIKE 'a%' AND NOT score IS NAN)")
    assert referenced_columns(expr) == {"id", "loc.city", "score"}
    assert referenced_field_ids(bind(SCHEMA, expr)) == {1, 16, 5}


# ---- names that need quoting ------------------------------------------------------------


HOSTILE_NAMES = [
    "a.b",
    "with space",
    'quote"d',
    "back`tick",
    "``",
    "naïve_ünïcode",
    "日本",
    "x.and.y",
    "a..b",
    " padded ",
    "in",
    "1st",
    "semi;colon='x'",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_quote_name_prints_a_name_the_parser_reads_back_unchanged(name: str) -> None:
    for expr in (EqualTo(name, 1), In(name, frozenset({1, 2})), IsNull(name)):
        assert parse(str(expr)) == expr
    assert parse(f"{quote_name(name)} = 1").term == name
    assert parse(f"{quote_path((name, name))} = 1").term == f"{name}.{name}"


@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3))
@settings(max_examples=300, deadline=None)
def test_any_column_path_prints_and_parses_back_to_its_full_name(path: list[str]) -> None:
    full = ".".join(path)
    assert parse(f"{quote_path(tuple(path))} IS NULL").term == full
    assert parse(f"{quote_name(full)} IS NULL").term == full


def test_a_bound_filter_on_hostile_columns_prints_each_level_and_binds_back() -> None:
    schema = Schema.of(
        NestedField(1, "a.b", StringType()),
        NestedField(2, "s", StructType((NestedField(3, "x y", LongType()),))),
        NestedField(4, "s.x", LongType()),
    )
    bound = bind(schema, parse("`a.b` = 'v' AND s.`x y` > 1 AND `s.x` < 2"))
    assert str(bound) == "`a.b` = 'v' AND s.`x y` > 1 AND `s.x` < 2"
    assert bind(schema, parse(str(bound))) == bound
    assert referenced_field_ids(bound) == {1, 3, 4}


def test_a_filter_on_a_name_two_fields_share_is_refused_as_ambiguous() -> None:
    schema = Schema.of(
        NestedField(1, "a.b", StringType()),
        NestedField(2, "a", StructType((NestedField(3, "b", StringType()),))),
    )
    with pytest.raises(UnknownColumn, match="ambiguous"):
        bind(schema, parse("a.b = 'x'"))


def test_a_negative_decimal_longer_than_the_decimal_context_parses_exactly() -> None:
    # unary minus on a Decimal rounds to the context's 28 digits; the parser must not
    value = Decimal("-10000000000000000000000000.001")
    assert parse(f"a = {value}") == EqualTo("a", value)


def test_double_quotes_make_a_string_as_in_spark_sql_when_asked() -> None:
    assert parse('name = "foo"', double_quoted_strings=True) == parse("name = 'foo'")
    assert parse('`na""me` = "a""b"', double_quoted_strings=True) == parse('`na""me` = \'a"b\'')
    assert parse("\"name\" = 'foo'") == parse("name = 'foo'")  # standard SQL: a column
    with pytest.raises(ValidationError, match="expected"):
        parse("\"name\" = 'foo'", double_quoted_strings=True)  # no column to compare
