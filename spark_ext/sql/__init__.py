"""The Spark SQL catalog plugin: a small Java catalog (``java/``, shipped precompiled as
``lakecat-spark-catalog.jar``, rebuilt by :mod:`.jar` when it does not fit)
forwards every catalog call to :mod:`.bridge` in the driver's Python, which answers through
lakecat's API (:mod:`.convert` for schemas and specs, :mod:`.alter` for ALTER TABLE,
:mod:`.metadata_tables` for ``t.snapshots`` and friends, :mod:`.procedures` for ``CALL
lake.system.*``, run by :mod:`.maintenance`, :mod:`.history` and :mod:`.changelog`);
:mod:`.plugin` registers it."""

from lakecat.spark_ext.sql.bridge import CatalogBridge
from lakecat.spark_ext.sql.jar import SparkCatalogError, catalog_jar
from lakecat.spark_ext.sql.plugin import CatalogSessionBuilder, attach_catalog, session

__all__ = [
    "CatalogBridge",
    "CatalogSessionBuilder",
    "SparkCatalogError",
    "attach_catalog",
    "catalog_jar",
    "session",
]
