"""pyiceberg's SqlCatalog and lakecat's store on the same database see the same namespaces.

Tables (metadata files and all) are cross-checked with the high-level catalog; here only the
rows: namespaces both ways, namespace properties, and table rows in listings.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError, NamespaceNotEmptyError

from lakecat.catalog.store.store import SqlCatalogStore
from lakecat.metadata.errors import NamespaceAlreadyExists, NamespaceNotEmpty

CATALOG_NAME = "lakecat"
METADATA = "file:///nowhere/metadata/00000-x.metadata.json"


@pytest.fixture
def store(catalog_url: str) -> Iterator[SqlCatalogStore]:
    with SqlCatalogStore(catalog_url, catalog_name=CATALOG_NAME) as opened:
        yield opened


def open_pyiceberg(catalog_url: str, warehouse: str) -> SqlCatalog:
    return SqlCatalog(CATALOG_NAME, uri=catalog_url, warehouse=f"file://{warehouse}")


@pytest.fixture
def pyiceberg_catalog(catalog_url: str, warehouse: str) -> Iterator[SqlCatalog]:
    catalog = open_pyiceberg(catalog_url, warehouse)
    yield catalog
    catalog.close()


def test_pyiceberg_sees_namespaces_the_store_created(
    store: SqlCatalogStore, catalog_url: str, warehouse: str
) -> None:
    store.create_namespace("lake", {"owner": "data-eng"})
    store.create_namespace("lake.raw")
    store.create_namespace("empty")
    catalog = open_pyiceberg(catalog_url, warehouse)  # opened second: the store made the tables
    try:
        assert sorted(catalog.list_namespaces()) == [("empty",), ("lake",)]
        assert catalog.list_namespaces("lake") == [("lake", "raw")]
        assert catalog.namespace_exists("lake.raw")
        assert catalog.load_namespace_properties("lake")["owner"] == "data-eng"
        with pytest.raises(NamespaceAlreadyExistsError):
            catalog.create_namespace("empty")
        catalog.drop_namespace("empty")
    finally:
        catalog.close()
    assert store.list_namespaces() == [("lake",)]


def test_store_sees_namespaces_pyiceberg_created(
    pyiceberg_catalog: SqlCatalog, store: SqlCatalogStore
) -> None:
    pyiceberg_catalog.create_namespace("plain")
    pyiceberg_catalog.create_namespace("with_props", {"k": "v"})
    pyiceberg_catalog.create_namespace("with_props.child")
    assert store.list_namespaces() == [("plain",), ("with_props",)]
    assert store.list_namespaces("with_props") == [("with_props", "child")]
    assert store.load_namespace_properties("plain") == {}
    assert store.load_namespace_properties("with_props") == {"k": "v"}
    with pytest.raises(NamespaceAlreadyExists):
        store.create_namespace("plain")
    with pytest.raises(NamespaceNotEmpty):
        store.drop_namespace("with_props")
    store.drop_namespace("plain")
    assert not pyiceberg_catalog.namespace_exists("plain")


def test_property_updates_are_visible_both_ways(
    pyiceberg_catalog: SqlCatalog, store: SqlCatalogStore
) -> None:
    pyiceberg_catalog.create_namespace("ns", {"a": "1"})
    store.update_namespace_properties("ns", removals=["a"], updates={"b": "2"})
    # The store keeps pyiceberg's namespace alive after its only property goes.
    assert pyiceberg_catalog.load_namespace_properties("ns") == {"b": "2", "exists": "true"}
    pyiceberg_catalog.update_namespace_properties("ns", updates={"c": "3"})
    assert store.load_namespace_properties("ns") == {"b": "2", "c": "3"}


def test_table_rows_the_store_created_are_listed_by_pyiceberg(
    pyiceberg_catalog: SqlCatalog, store: SqlCatalogStore
) -> None:
    store.create_namespace("db")
    store.create_table_row("db", "events", METADATA)
    assert pyiceberg_catalog.list_tables("db") == [("db", "events")]
    with pytest.raises(NamespaceNotEmptyError):
        pyiceberg_catalog.drop_namespace("db")
    store.drop_table_row("db", "events")
    assert pyiceberg_catalog.list_tables("db") == []
