"""The SQL pointer store: namespaces and table pointers in the tables of Iceberg's JDBC catalog,
and the compare-and-swap whose contract every commit relies on
(:meth:`~lakecat.catalog.store.store.SqlCatalogStore.swap_metadata_location`, written out once
in :mod:`lakecat.catalog.store.store`).

* :mod:`~lakecat.catalog.store.store`: :class:`SqlCatalogStore`, the store's operations;
* :mod:`~lakecat.catalog.store.transactions`: one transaction per operation, failures
  classified by the phase they happened in;
* :mod:`~lakecat.catalog.store.db`: engines and every database-driver error lakecat knows;
* :mod:`~lakecat.catalog.store.tables`, :mod:`~lakecat.catalog.store.namespaces`: the JDBC
  catalog's tables and namespace rows.
"""

from lakecat.catalog.store.store import PropertiesUpdateSummary, SqlCatalogStore, TablePointer

__all__ = ["PropertiesUpdateSummary", "SqlCatalogStore", "TablePointer"]
