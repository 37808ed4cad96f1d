"""The view spec's metadata and Iceberg Java's rules for changing it (``ViewMetadata.Builder``):
versions and schemas reused, ids assigned, history logged and expired, dialects kept."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from lakecat.metadata.errors import (
    CorruptMetadata,
    InvalidUpdate,
    RequirementFailed,
    UnsupportedFeature,
)
from lakecat.metadata.schema import NestedField, Schema
from lakecat.metadata.schema.types import IntegerType, LongType, StringType
from lakecat.metadata.view import (
    REPLACE_DROP_DIALECT_ALLOWED,
    VERSION_HISTORY_SIZE,
    AddViewSchema,
    AddViewVersion,
    AssertViewUUID,
    RemoveViewProperties,
    SetCurrentViewVersion,
    SetViewProperties,
    SqlRepresentation,
    ViewMetadata,
    ViewVersion,
    apply_view,
    define_view,
    new_version_updates,
    parse_view_metadata,
)

IDS = Schema.of(NestedField(1, "id", LongType()))
NAMES = Schema.of(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()))
SPARK = (SqlRepresentation("SELECT id FROM t", "spark"),)


def new_view(*, properties: dict[str, str] | None = None, at: int = 1000) -> ViewMetadata:
    return apply_view(
        None,
        define_view(
            location="file:///wh/db/v/",
            schema=IDS,
            representations=SPARK,
            default_namespace=("db",),
            properties=properties,
            summary={"engine-name": "test"},
            now_ms=at,
            view_uuid="0f0e2c3c-1d51-4c2c-9a4e-4b3c6f1e7d11",
        ),
        now_ms=at,
    )


def replace(
    base: ViewMetadata,
    sql: str,
    *,
    schema: Schema = IDS,
    at: int,
    dialects: tuple[str, ...] = ("spark",),
) -> ViewMetadata:
    updates = new_version_updates(
        base,
        schema=schema,
        representations=[SqlRepresentation(sql, d) for d in dialects],
        default_namespace=("db",),
        summary={"engine-name": "test"},
        now_ms=at,
    )
    return apply_view(base, updates, now_ms=at)


def test_a_new_view_has_version_1_schema_0_and_one_log_entry() -> None:
    view = new_view(properties={"comment": "c"})
    assert view.location == "file:///wh/db/v"
    assert view.current_version_id == 1
    assert view.current_version.schema_id == 0 and view.schema() == IDS
    assert [(e.timestamp_ms, e.version_id) for e in view.version_log] == [(1000, 1)]
    assert view.properties == {"comment": "c"}
    assert view.current_version.sql_for("SPARK") == SPARK[0]


def test_a_replacement_adds_a_version_and_reuses_a_schema_of_the_same_structure() -> None:
    second = replace(new_view(), "SELECT id FROM u", at=2000)
    assert [v.version_id for v in second.versions] == [1, 2]
    assert second.current_version.schema_id == 0 and len(second.schemas) == 1
    third = replace(second, "SELECT id, name FROM u", schema=NAMES, at=3000)
    assert third.current_version.schema_id == 1 and third.schema().column_names == ["id", "name"]
    assert [(e.timestamp_ms, e.version_id) for e in third.version_log] == [
        (1000, 1),
        (2000, 2),
        (3000, 3),
    ]


def test_a_version_of_the_same_definition_is_reused_and_logged_with_now() -> None:
    second = replace(new_view(), "SELECT id FROM u", at=2000)
    back = replace(second, "SELECT id FROM t", at=3000)  # version 1's definition again
    assert [v.version_id for v in back.versions] == [1, 2]
    assert back.current_version_id == 1
    assert back.version_log[-1].version_id == 1 and back.version_log[-1].timestamp_ms == 3000


def test_setting_a_known_version_current_is_a_logged_rollback() -> None:
    second = replace(new_view(), "SELECT id FROM u", at=2000)
    rolled = apply_view(second, [SetCurrentViewVersion(1)], now_ms=5000)
    assert rolled.current_version_id == 1
    assert [(e.timestamp_ms, e.version_id) for e in rolled.version_log][-1] == (5000, 1)
    assert apply_view(rolled, [SetCurrentViewVersion(1)], now_ms=6000) == rolled  # no change
    with pytest.raises(InvalidUpdate, match="unknown 7"):
        apply_view(second, [SetCurrentViewVersion(7)], now_ms=5000)


def test_only_the_newest_versions_are_kept_and_the_log_is_cut_before_a_lost_one() -> None:
    view = new_view(properties={VERSION_HISTORY_SIZE: "2"})
    for i in range(2, 6):
        view = replace(view, f"SELECT id FROM t{i}", at=1000 * i)
    assert [v.version_id for v in view.versions] == [4, 5]
    assert [e.version_id for e in view.version_log] == [4, 5]
    rolled = apply_view(view, [SetCurrentViewVersion(4)], now_ms=9000)
    assert [e.version_id for e in rolled.version_log] == [4, 5, 4]
    again = replace(rolled, "SELECT id FROM t9", at=10_000)
    assert [v.version_id for v in again.versions] == [5, 6]
    assert [e.version_id for e in again.version_log] == [6]  # cut after the lost version 4
    shrunk = apply_view(rolled, [SetViewProperties({VERSION_HISTORY_SIZE: "1"})], now_ms=1)
    assert [v.version_id for v in shrunk.versions] == [4]  # the current one is always kept
    assert [e.version_id for e in shrunk.version_log] == [4]


def test_a_replacement_must_keep_every_dialect_unless_allowed() -> None:
    both = replace(new_view(), "SELECT id FROM t", at=2000, dialects=("spark", "trino"))
    with pytest.raises(InvalidUpdate, match=r"drops the queries of dialect\(s\) \['trino'\]"):
        replace(both, "SELECT id FROM u", at=3000)
    allowed = apply_view(
        both, [SetViewProperties({REPLACE_DROP_DIALECT_ALLOWED: "true"})], now_ms=1
    )
    assert replace(allowed, "SELECT id FROM u", at=3000).current_version.dialects == {"spark"}


def test_bad_updates_are_refused() -> None:
    view = new_view()
    twice = (SqlRepresentation("a", "spark"), SqlRepresentation("b", "Spark"))
    version = ViewVersion(9, 0, 1, twice, ("db",))
    with pytest.raises(InvalidUpdate, match="two queries of one dialect"):
        apply_view(view, [AddViewVersion(version)], now_ms=1)
    with pytest.raises(InvalidUpdate, match="unknown schema 4"):
        apply_view(view, [AddViewVersion(ViewVersion(9, 4, 1, SPARK, ("db",)))], now_ms=1)
    with pytest.raises(InvalidUpdate, match="none was added"):
        apply_view(view, [SetCurrentViewVersion(-1)], now_ms=1)
    for bad in ("0", "-1", "ten"):
        with pytest.raises(InvalidUpdate, match=VERSION_HISTORY_SIZE):
            apply_view(view, [SetViewProperties({VERSION_HISTORY_SIZE: bad})], now_ms=1)


def test_properties_are_set_and_removed() -> None:
    view = apply_view(new_view(), [SetViewProperties({"a": "1", "b": "2"})], now_ms=1)
    view = apply_view(view, [RemoveViewProperties(("a", "missing"))], now_ms=1)
    assert view.properties == {"b": "2"}


def test_the_uuid_requirement_fails_for_another_view() -> None:
    view = new_view()
    AssertViewUUID(view.view_uuid.upper()).validate(view)
    with pytest.raises(RequirementFailed):
        AssertViewUUID("4b1e4f0c-0000-4000-8000-000000000000").validate(view)
    with pytest.raises(RequirementFailed):
        AssertViewUUID(view.view_uuid).validate(None)


def test_a_schema_added_twice_in_one_change_is_added_once() -> None:
    other = Schema.of(NestedField(1, "n", IntegerType()))
    view = apply_view(new_view(), [AddViewSchema(other), AddViewSchema(other)], now_ms=1)
    assert [s.schema_id for s in view.schemas] == [0, 1]


# ---- JSON: the spec's example, as Iceberg Java writes it ------------------------------------
SPEC_EXAMPLE: dict[str, Any] = {
    "view-uuid": "fa6506c3-7681-40c8-86dc-e36561f83385",
    "format-version": 1,
    "location": "s3://bucket/warehouse/default.db/event_agg",
    "current-version-id": 1,
    "properties": {"comment": "Daily event counts"},
    "versions": [
        {
            "version-id": 1,
            "timestamp-ms": 1573518431292,
            "schema-id": 1,
            "default-catalog": "prod",
            "default-namespace": ["default"],
            "summary": {"engine-name": "Spark", "engine-version": "3.3.2"},
            "representations": [
                {
                    "type": "sql",
                    "sql": "SELECT\n    COUNT(1), CAST(event_ts AS DATE)\nFROM events\nGROUP BY 2",
                    "dialect": "spark",
                },
                {"type": "substrait", "plan": "..."},
            ],
        }
    ],
    "schemas": [
        {
            "schema-id": 1,
            "type": "struct",
            "fields": [
                {
                    "id": 1,
                    "name": "event_count",
                    "required": False,
                    "type": "int",
                    "doc": "Count of events",
                },
                {"id": 2, "name": "event_date", "required": False, "type": "date"},
            ],
        }
    ],
    "version-log": [{"timestamp-ms": 1573518431292, "version-id": 1}],
}


def test_the_spec_example_parses_and_writes_back_the_same() -> None:
    view = parse_view_metadata(json.dumps(SPEC_EXAMPLE).encode())
    assert view.current_version.default_catalog == "prod"
    assert view.schema().find_field("event_count").doc == "Count of events"
    assert view.current_version.sql_for("spark") is not None
    assert view.to_json() == SPEC_EXAMPLE  # a representation of another type is kept as read
    assert parse_view_metadata(gzip.compress(json.dumps(SPEC_EXAMPLE).encode())) == view


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda m: m.pop("view-uuid"), CorruptMetadata),
        (lambda m: m.update({"current-version-id": 7}), CorruptMetadata),
        (lambda m: m["versions"][0].update({"schema-id": 9}), CorruptMetadata),
        (lambda m: m.update({"format-version": 2}), UnsupportedFeature),
        (lambda m: m["versions"][0].update({"default-namespace": "default"}), CorruptMetadata),
    ],
)
def test_malformed_view_metadata_is_refused(change: Any, error: type[Exception]) -> None:
    broken = json.loads(json.dumps(SPEC_EXAMPLE))
    change(broken)
    with pytest.raises(error):
        parse_view_metadata(json.dumps(broken).encode())
