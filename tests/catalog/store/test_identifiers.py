"""Identifier parsing and validation: what the catalog accepts, and every refusal."""

from __future__ import annotations

import pytest

from lakecat.catalog.identifiers import (
    MAX_ENCODED_LENGTH,
    namespace_from_string,
    namespace_to_string,
    parse_namespace,
    parse_table_identifier,
    table_identifier_to_string,
    validate_name,
)
from lakecat.metadata.errors import InvalidIdentifier, ValidationError

VALID_NAMESPACES = [
    ("db", ("db",)),
    ("a.b", ("a", "b")),
    ("a.b.c", ("a", "b", "c")),
    (("db",), ("db",)),
    (("a", "b"), ("a", "b")),
    (["a", "b"], ("a", "b")),
    ("with space", ("with space",)),
    ("under_score%pct!bang", ("under_score%pct!bang",)),
    ("ünïcødé", ("ünïcødé",)),
]

INVALID_NAMESPACES = [
    ("", "empty string"),
    ((), "no parts"),
    ([], "no parts (list)"),
    ("a..b", "empty middle part"),
    (".a", "empty leading part"),
    ("a.", "empty trailing part"),
    (("a", ""), "empty tuple part"),
    (("a.b",), "dot inside a tuple part"),
    (("a", "."), "dot part"),
    (("a", ".."), "dot-dot part"),
    ("a/b", "slash"),
    ("a\\b", "backslash"),
    (("..", "x"), "dot-dot first"),
    ("a\x00b", "NUL"),
    ("a\nb", "newline"),
    ("a\tb", "tab"),
    ("a\x7fb", "DEL"),
    ("a\x85b", "C1 control"),
    ("a\ud800b", "lone surrogate"),
    (("a", 1), "non-string part"),
    (b"db", "bytes"),
    (42, "not a sequence"),
    ("x" * (MAX_ENCODED_LENGTH + 1), "part too long"),
    (("x" * 200, "y" * 60), "encoding too long"),
]

VALID_TABLE_IDENTIFIERS = [
    ("db.events", (("db",), "events")),
    ("a.b.t", (("a", "b"), "t")),
    (("db", "events"), (("db",), "events")),
    (("a", "b", "t"), (("a", "b"), "t")),
    (["a", "t"], (("a",), "t")),
]

INVALID_TABLE_IDENTIFIERS = [
    ("events", "no namespace"),
    (("events",), "no namespace (tuple)"),
    ("", "empty"),
    ("db.", "empty table name"),
    (".events", "empty namespace"),
    ("db../etc", "path escape"),
    (("db", "../x"), "relative path in name"),
    (("db", "a/b"), "slash in name"),
    (("db", "t.x"), "dot in name part"),
    (("db", ".."), "dot-dot name"),
    (("db", "t\x00"), "NUL in name"),
]


@pytest.mark.parametrize(("given", "parsed"), VALID_NAMESPACES)
def test_parse_namespace_accepts_strings_and_sequences(
    given: object, parsed: tuple[str, ...]
) -> None:
    assert parse_namespace(given) == parsed  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "why"), INVALID_NAMESPACES, ids=[w for _, w in INVALID_NAMESPACES]
)
def test_parse_namespace_refuses_bad_namespaces(given: object, why: str) -> None:
    with pytest.raises(InvalidIdentifier):
        parse_namespace(given)  # type: ignore[arg-type]


@pytest.mark.parametrize(("given", "parsed"), VALID_TABLE_IDENTIFIERS)
def test_parse_table_identifier_splits_namespace_and_name(
    given: object, parsed: tuple[tuple[str, ...], str]
) -> None:
    assert parse_table_identifier(given) == parsed  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "why"), INVALID_TABLE_IDENTIFIERS, ids=[w for _, w in INVALID_TABLE_IDENTIFIERS]
)
def test_parse_table_identifier_refuses_bad_identifiers(given: object, why: str) -> None:
    with pytest.raises(InvalidIdentifier):
        parse_table_identifier(given)  # type: ignore[arg-type]


def test_namespace_to_string_joins_levels_with_dots_like_the_jdbc_catalog() -> None:
    assert namespace_to_string(("a", "b", "c")) == "a.b.c"
    assert namespace_to_string("a.b") == "a.b"
    assert namespace_to_string(["db"]) == "db"


def test_namespace_string_round_trips() -> None:
    for parts in [("a",), ("a", "b"), ("x_y", "%", "!")]:
        assert namespace_from_string(namespace_to_string(parts)) == parts


def test_namespace_from_string_does_not_validate_rows_written_by_others() -> None:
    assert namespace_from_string("") == ("",)
    assert namespace_from_string("a..b") == ("a", "", "b")


def test_table_identifier_to_string_renders_a_dotted_name() -> None:
    assert table_identifier_to_string(("a", "b"), "t") == "a.b.t"
    with pytest.raises(InvalidIdentifier):
        table_identifier_to_string(("a",), "t/x")


def test_validate_name_returns_the_name_and_refuses_dots() -> None:
    assert validate_name("events") == "events"
    with pytest.raises(InvalidIdentifier):
        validate_name("a.b")


def test_invalid_identifier_is_a_validation_error_and_a_value_error() -> None:
    with pytest.raises(ValidationError):
        parse_namespace("a/b")
    with pytest.raises(ValueError):
        parse_namespace("a/b")


def test_longest_allowed_namespace_is_accepted() -> None:
    longest = ("x" * 127, "y" * 127)  # 127 + 1 + 127 = 255 characters when joined
    assert parse_namespace(longest) == longest
