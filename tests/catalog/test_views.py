"""Iceberg views through the Python API, on each catalog backend: create, load, replace, roll
back, rename, drop; concurrent changes re-applied on the newest view; bad input changing
nothing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, View
from lakecat.metadata.errors import (
    InvalidUpdate,
    NamespaceNotEmpty,
    NoSuchTable,
    NoSuchView,
    RequirementFailed,
    TableAlreadyExists,
    ValidationError,
    ViewAlreadyExists,
)
from lakecat.metadata.view import REPLACE_DROP_DIALECT_ALLOWED

COLUMNS = pa.schema([pa.field("id", pa.int64(), metadata={"doc": "the id"}), ("name", pa.string())])


def metadata_files(view: View) -> list[str]:
    return sorted(p.name for p in Path(view.location.removeprefix("file://"), "metadata").iterdir())


def create(catalog: Catalog, name: str = "db.v", sql: str = "SELECT id, name FROM t") -> View:
    return catalog.create_view(name, sql, COLUMNS, properties={"comment": "people"})


def test_a_created_view_is_listed_and_loads_as_written(catalog: Catalog) -> None:
    catalog.create_table("db.t", COLUMNS)
    created = create(catalog)
    assert catalog.list_views("db") == [(("db",), "v")]
    assert catalog.list_tables("db") == [(("db",), "t")]
    assert catalog.view_exists("db.v") and not catalog.table_exists("db.v")
    view = catalog.load_view("db.v")
    assert view.sql() == "SELECT id, name FROM t" and view.sql("trino") is None
    assert view.current_version.default_namespace == ("db",)
    assert view.current_version.default_catalog is None
    assert view.current_version.summary["engine-name"] == "lakecat"
    assert [(f.name, f.doc) for f in view.schema().fields] == [("id", "the id"), ("name", None)]
    assert view.properties == {"comment": "people"}
    assert view.location == f"{catalog.warehouse}/db/v"
    assert view.metadata == created.metadata and view.uuid == created.uuid
    [name] = metadata_files(view)
    assert name.startswith("00000-") and name.endswith(".gz.metadata.json")
    with gzip.open(view.metadata_location.removeprefix("file://")) as f:
        assert json.load(f)["view-uuid"] == view.uuid


def test_replacing_adds_a_version_and_rolling_back_logs_it(catalog: Catalog) -> None:
    view = create(catalog)
    view.replace("SELECT id FROM t", view.schema().select(["id"]), properties={"owner": "data"})
    again = catalog.load_view("db.v")
    assert again.current_version.version_id == 2 and again.sql() == "SELECT id FROM t"
    assert again.schema().column_names == ["id"]
    assert again.properties == {"comment": "people", "owner": "data"}
    assert again.uuid == view.uuid
    again.set_current_version(1)
    assert catalog.load_view("db.v").sql() == "SELECT id, name FROM t"
    assert [e.version_id for e in catalog.load_view("db.v").history] == [1, 2, 1]
    assert [n[:5] for n in metadata_files(view)] == ["00000", "00001", "00002"]


def test_create_or_replace_creates_then_replaces(catalog: Catalog) -> None:
    first = catalog.create_or_replace_view(
        "db.v", "SELECT 1 AS id", pa.schema([("id", pa.int32())])
    )
    second = catalog.create_or_replace_view(
        "db.v", "SELECT 2 AS id", pa.schema([("id", pa.int32())])
    )
    assert first.uuid == second.uuid and second.current_version.version_id == 2
    catalog.create_table("db.t", COLUMNS)
    with pytest.raises(ViewAlreadyExists, match="table"):
        catalog.create_or_replace_view("db.t", "SELECT 1 AS id", pa.schema([("id", pa.int32())]))


def test_properties_change_without_a_new_version(catalog: Catalog) -> None:
    view = create(catalog)
    view.update_properties({"a": "1"}, removals=["comment"])
    loaded = catalog.load_view("db.v")
    assert loaded.properties == {"a": "1"} and len(loaded.versions) == 1
    view.update_properties()  # nothing to change: nothing written
    assert len(metadata_files(view)) == 2


def test_two_writers_replacing_one_view_both_land_in_order(catalog: Catalog) -> None:
    create(catalog)
    first, second = catalog.load_view("db.v"), catalog.load_view("db.v")
    first.replace("SELECT id FROM a", first.schema())
    second.replace("SELECT id FROM b", second.schema())  # lost the swap once, re-applied
    view = catalog.load_view("db.v")
    assert view.sql() == "SELECT id FROM b"
    assert [(v.version_id, v.representations[0].sql) for v in view.versions] == [
        (1, "SELECT id, name FROM t"),
        (2, "SELECT id FROM a"),
        (3, "SELECT id FROM b"),
    ]
    assert [e.version_id for e in view.history] == [1, 2, 3]
    assert len(metadata_files(view)) == 3  # the lost attempt's file was deleted


def test_concurrent_property_changes_are_merged(catalog: Catalog) -> None:
    create(catalog)
    first, second = catalog.load_view("db.v"), catalog.load_view("db.v")
    first.update_properties({"a": "1"})
    second.update_properties({"b": "2"})
    assert catalog.load_view("db.v").properties == {"comment": "people", "a": "1", "b": "2"}


def test_a_view_dropped_or_recreated_meanwhile_fails_the_change(catalog: Catalog) -> None:
    stale = create(catalog)
    catalog.drop_view("db.v")
    with pytest.raises(NoSuchView):
        stale.replace("SELECT 1", stale.schema())
    create(catalog, sql="SELECT 2 AS id, 'x' AS name")
    with pytest.raises(RequirementFailed):
        stale.replace("SELECT 1", stale.schema())
    with pytest.raises(NoSuchView, match="another view took its name"):
        stale.refresh()
    assert catalog.load_view("db.v").sql() == "SELECT 2 AS id, 'x' AS name"


def test_bad_changes_are_refused_and_write_nothing(catalog: Catalog) -> None:
    view = create(catalog)
    both = {"spark": "SELECT id, name FROM t", "trino": "SELECT id, name FROM db.t"}
    view.replace(both, view.schema())
    assert catalog.load_view("db.v").sql("Trino") == "SELECT id, name FROM db.t"
    with pytest.raises(InvalidUpdate, match=REPLACE_DROP_DIALECT_ALLOWED):
        view.replace("SELECT id, name FROM u", view.schema())
    for sql in ("", "  ", {}, {"": "SELECT 1"}):
        with pytest.raises(ValidationError):
            view.replace(sql, view.schema())
    with pytest.raises(ValidationError):
        catalog.create_view("db.w", "", COLUMNS)
    with pytest.raises(InvalidUpdate):
        view.update_properties({"version.history.num-entries": "0"})
    assert not catalog.view_exists("db.w")
    assert catalog.load_view("db.v").metadata == view.metadata
    assert len(metadata_files(view)) == 2


def test_tables_and_views_keep_to_their_own_names(catalog: Catalog) -> None:
    catalog.create_table("db.t", COLUMNS)
    create(catalog)
    with pytest.raises(ViewAlreadyExists):
        create(catalog, "db.t")
    with pytest.raises(ViewAlreadyExists):
        create(catalog)
    with pytest.raises(TableAlreadyExists, match="view"):
        catalog.create_table("db.v", COLUMNS)
    with pytest.raises(NoSuchTable):
        catalog.load_table("db.v")
    with pytest.raises(NoSuchTable):
        catalog.drop_table("db.v")
    with pytest.raises(NoSuchView):
        catalog.load_view("db.t")
    catalog.drop_table("db.t")
    with pytest.raises(NamespaceNotEmpty, match="tables or views"):
        catalog.drop_namespace("db")


def test_renamed_and_dropped_views(catalog: Catalog) -> None:
    view = create(catalog)
    catalog.create_namespace("other")
    catalog.rename_view("db.v", "other.w")
    assert catalog.load_view("other.w").uuid == view.uuid
    assert not catalog.view_exists("db.v")
    catalog.drop_view("other.w")
    assert not catalog.view_exists("other.w")
    assert not Path(view.metadata_location.removeprefix("file://")).exists()  # as Java does
    with pytest.raises(NoSuchView):
        catalog.drop_view("other.w")
    with pytest.raises(NoSuchView):
        catalog.rename_view("other.w", "db.v")


def test_a_view_s_repr_is_one_short_line_after_many_versions(catalog: Catalog) -> None:
    view = create(catalog)
    for i in range(30):
        view.replace(f"SELECT id, name FROM t WHERE id > {i}", view.schema())
    assert repr(view) == "View('db.v', version=31)"
    assert len(view.versions) == 10  # version.history.num-entries, Iceberg's default
