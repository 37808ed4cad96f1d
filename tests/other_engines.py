"""Changes made to lakecat's tables by another engine, for tests of what lakecat then does."""

from __future__ import annotations

from collections.abc import Mapping

from lakecat.catalog import Catalog


def set_properties_with_pyiceberg(
    catalog: Catalog, identifier: str, properties: Mapping[str, str]
) -> None:
    """Set table properties through pyiceberg on the same SQL catalog, as another engine would:
    without lakecat's check of the values (Iceberg Java does not check them either)."""
    from pyiceberg.catalog.sql import SqlCatalog

    py = SqlCatalog(catalog.name, uri=catalog.uri, warehouse=catalog.warehouse)
    try:
        with py.load_table(identifier).transaction() as transaction:
            transaction.set_properties(dict(properties))
    finally:
        py.engine.dispose()
