"""Schema lookups: full names matched whole (never split), paths walked by field, ids exact,
and a name two fields share refused as ambiguous rather than resolved by guessing."""

from __future__ import annotations

import pytest

from lakecat.metadata.errors import UnknownColumn, ValidationError
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

# full names: a.b (1), s (2), s.x.y (3), s.n (4), s.x (5), l (6), l.element (7),
# l.element.k.v (8), m (9), m.key (10), m.value (11), 日本 (12), with space (13)
SCHEMA = Schema.of(
    NestedField(1, "a.b", StringType()),
    NestedField(
        2,
        "s",
        StructType((NestedField(3, "x.y", StringType()), NestedField(4, "n", LongType()))),
    ),
    NestedField(5, "s.x", StringType()),
    NestedField(6, "l", ListType(7, StructType((NestedField(8, "k.v", LongType()),)))),
    NestedField(9, "m", MapType(10, StringType(), 11, LongType())),
    NestedField(12, "日本", StringType()),
    NestedField(13, "with space", StringType()),
)


@pytest.mark.parametrize(
    ("field_id", "path"),
    [
        (1, ("a.b",)),
        (3, ("s", "x.y")),
        (4, ("s", "n")),
        (5, ("s.x",)),
        (8, ("l", "element", "k.v")),
        (10, ("m", "key")),
        (11, ("m", "value")),
        (12, ("日本",)),
        (13, ("with space",)),
    ],
)
def test_column_path_names_each_level_and_find_path_walks_it_back(
    field_id: int, path: tuple[str, ...]
) -> None:
    assert SCHEMA.column_path(field_id) == path
    assert SCHEMA.find_path(path).field_id == field_id
    assert SCHEMA.column_name(field_id) == ".".join(path)
    assert SCHEMA.find_field(".".join(path)).field_id == field_id  # unique full names


def test_a_full_name_is_matched_whole_never_split() -> None:
    assert SCHEMA.find_field("a.b").field_id == 1
    assert SCHEMA.find_field("s.x.y").field_id == 3
    assert SCHEMA.find_field("s.x").field_id == 5  # the top-level column, not a prefix of s.x.y
    for unknown in ("a", "b", "x.y", "s.x.y.z", "k.v"):
        assert not SCHEMA.has_field(unknown)
        with pytest.raises(UnknownColumn):
            SCHEMA.find_field(unknown)
    with pytest.raises(UnknownColumn):
        SCHEMA.find_path(("a", "b"))  # no struct a
    with pytest.raises(UnknownColumn):
        SCHEMA.find_path(("s", "x", "y"))
    with pytest.raises(UnknownColumn):
        SCHEMA.column_path(99)
    with pytest.raises(UnknownColumn):
        SCHEMA.find_path(())


def test_case_insensitive_lookups_prefer_an_exact_match_and_refuse_ambiguity() -> None:
    schema = Schema.of(
        NestedField(1, "Id", LongType()),
        NestedField(2, "ID", LongType()),
        NestedField(3, "Name.First", StringType()),
    )
    assert schema.find_field("ID", case_sensitive=False).field_id == 2
    assert schema.find_field("name.first", case_sensitive=False).field_id == 3
    assert schema.find_path(("name.FIRST",), case_sensitive=False).field_id == 3
    with pytest.raises(UnknownColumn, match="ambiguous"):
        schema.find_field("id", case_sensitive=False)
    with pytest.raises(ValidationError, match="ambiguous"):
        schema.find_path(("id",), case_sensitive=False)
    assert [f.field_id for f in schema.fields_named("id", case_sensitive=False)] == [1, 2]
    assert schema.fields_named("id") == []


def test_a_name_two_fields_share_is_ambiguous_while_their_paths_and_ids_stay_exact() -> None:
    """Iceberg forbids such a schema (lakecat never writes one); one read from elsewhere
    still loads, and only the shared name is refused."""
    schema = Schema.of(
        NestedField(1, "a.b", StringType()),
        NestedField(2, "a", StructType((NestedField(3, "b", StringType()),))),
        NestedField(4, "c", LongType()),
    )
    assert schema.ambiguous_names() == {"a.b": (1, 3)}
    assert SCHEMA.ambiguous_names() == {}
    with pytest.raises(UnknownColumn, match=r"'a\.b' is ambiguous.*'a'\.'b' \(id 3\)"):
        schema.find_field("a.b")
    assert not schema.has_field("a.b")
    assert schema.find_field("c").field_id == 4
    assert schema.find_path(("a.b",)).field_id == 1
    assert schema.find_path(("a", "b")).field_id == 3
    assert (schema.column_path(1), schema.column_path(3)) == (("a.b",), ("a", "b"))


def test_in_list_or_map_tells_fields_below_a_list_or_map_from_struct_fields() -> None:
    # struct fields (top-level or nested in structs) have a value per row; anything below a
    # list's element or a map's key or value does not
    below = {7, 8, 10, 11}
    for field_id in SCHEMA.field_ids():
        assert SCHEMA.in_list_or_map(field_id) is (field_id in below), field_id
