"""lakecat for Apache Spark: a PySpark 4 data source plus row-level operations and compaction.

>>> import lakecat.spark_ext as lk
>>> lk.register(spark, catalog=catalog)
>>> spark.read.format("lakecat").load("db.events").where("region = 'eu'")
>>> df.write.format("lakecat").mode("append").save("db.events")
>>> lk.delete(spark, "db.events", "ts < '2024-01-01'")
>>> lk.merge(spark, target="db.events", source=updates, on="t.id = s.id",
...          when_matched_update="*", when_not_matched_insert="*")

The driver plans and commits; executors only read and write data files (see
``docs/spark.md``).
"""

from lakecat.spark_ext.compaction import compact
from lakecat.spark_ext.row_ops import RowLevelResult, delete, merge, update
from lakecat.spark_ext.source import LakecatDataSource, register

__all__ = [
    "LakecatDataSource",
    "RowLevelResult",
    "compact",
    "delete",
    "merge",
    "register",
    "update",
]
