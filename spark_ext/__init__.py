"""lakecat for Apache Spark: a PySpark 4 data source plus row-level operations and compaction.

>>> import lakecat.spark_ext as lk
>>> lk.register(spark, catalog=catalog)
>>> spark.read.format("lakecat").load("db.events").where("region = 'eu'")
>>> df.write.format("lakecat").mode("append").save("db.events")
>>> lk.write(df, "db.events")   # Spark's own Parquet writer when the table qualifies
>>> lk.read(spark, "db.events")  # Spark's own Parquet reader when the read qualifies
>>> lk.delete(spark, "db.events", "ts < '2024-01-01'")
>>> lk.merge(spark, target="db.events", source=updates, on="t.id = s.id",
...          when_matched_update="*", when_not_matched_insert="*")

As a Spark SQL catalog (``spark.sql.catalog.lake``, see ``docs/spark-sql.md``):

>>> spark = lk.session("lake", catalog=catalog).getOrCreate()
>>> spark.sql("INSERT INTO lake.db.events SELECT * FROM staging")
>>> spark.sql("CALL lake.system.ancestors_of('db.events')")

A lakecat error raised under Spark reads ``lakecat <ErrorType>: <message>``;
``lk.lakecat_error(exc)`` (or ``with lk.lakecat_errors(): ...``) gives the typed error back.

The driver plans and commits; executors only read and write data files (see
``docs/spark.md``).
"""

from lakecat.spark_ext.dml.compaction import compact
from lakecat.spark_ext.dml.row_ops import RowLevelResult, delete, merge, update
from lakecat.spark_ext.errors import lakecat_error, lakecat_errors
from lakecat.spark_ext.native.read import native_read_support, read
from lakecat.spark_ext.native.support import NativeSupport
from lakecat.spark_ext.native.write import native_write_support, write
from lakecat.spark_ext.source.datasource import LakecatDataSource, register
from lakecat.spark_ext.sql.bridge import CatalogBridge
from lakecat.spark_ext.sql.jar import (
    CatalogJarBuildFailed,
    JavaCompilerNotFound,
    SparkCatalogError,
    catalog_jar,
)
from lakecat.spark_ext.sql.plugin import CatalogSessionBuilder, attach_catalog, session

__all__ = [
    "CatalogBridge",
    "CatalogJarBuildFailed",
    "CatalogSessionBuilder",
    "JavaCompilerNotFound",
    "LakecatDataSource",
    "NativeSupport",
    "RowLevelResult",
    "SparkCatalogError",
    "attach_catalog",
    "catalog_jar",
    "compact",
    "delete",
    "lakecat_error",
    "lakecat_errors",
    "merge",
    "native_read_support",
    "native_write_support",
    "read",
    "register",
    "session",
    "update",
    "write",
]
