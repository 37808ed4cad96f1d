"""lakecat as a Spark SQL catalog, end to end, on an embedded catalog in a temp folder.

Registers the catalog as ``lake``, then works in SQL only: namespaces, a partitioned table,
inserts, an overwrite of one partition, a delete, time travel by snapshot id, tag and
timestamp, metadata tables, schema and property changes, CTAS, an Iceberg view, and a drop.
Finally it reads the table (and the view's definition) through lakecat's Python API to show
they are an ordinary lakecat table and view. Needs PySpark
4.1+ and a Java 17+ runtime (the catalog plugin's jar ships precompiled for the PySpark it
was built against; with another PySpark a JDK rebuilds it on first use). Run it with::

    python examples/spark_sql.py
"""

from __future__ import annotations

import os
import sys
import tempfile

import lakecat.spark_ext as lk
from lakecat.catalog import Catalog


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="lakecat-spark-sql-") as folder:
        catalog = Catalog.embedded(folder)
        spark = (
            lk.session("lake", catalog=catalog)
            .master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        try:
            run(spark, catalog)
        finally:
            spark.stop()
            catalog.close()


def sql(spark, statement: str, *, show: bool = False) -> list:
    print(f"lake> {' '.join(statement.split())}")
    rows = spark.sql(statement).collect()
    if show:
        for row in rows:
            print("      ", tuple(row))
    return rows


def run(spark, catalog: Catalog) -> None:
    sql(spark, "CREATE NAMESPACE lake.shop")
    sql(
        spark,
        """CREATE TABLE lake.shop.events (id bigint, ts timestamp, region string, amount double)
           PARTITIONED BY (days(ts), region)
           TBLPROPERTIES ('write.delete.isolation-level' = 'serializable')""",
    )
    sql(spark, "SHOW TABLES IN lake.shop", show=True)
    sql(
        spark,
        """INSERT INTO lake.shop.events VALUES
           (1, timestamp'2024-06-01 10:00:00', 'eu', 10.0),
           (2, timestamp'2024-06-01 11:00:00', 'us', 20.0),
           (3, timestamp'2024-06-02 09:30:00', 'eu', 30.0)""",
    )
    first = catalog.load_table("shop.events").current_snapshot().snapshot_id
    catalog.load_table("shop.events").create_tag("launch")
    sql(
        spark,
        """INSERT OVERWRITE lake.shop.events PARTITION (region = 'us')
           SELECT 4, timestamp'2024-06-02 12:00:00', 40.0""",
    )
    sql(spark, "DELETE FROM lake.shop.events WHERE id = 3")
    sql(spark, "SELECT id, region, amount FROM lake.shop.events ORDER BY id", show=True)
    sql(spark, f"SELECT count(*) FROM lake.shop.events VERSION AS OF {first}", show=True)
    sql(spark, "SELECT id FROM lake.shop.events VERSION AS OF 'launch' ORDER BY id", show=True)
    sql(spark, "SELECT snapshot_id, operation FROM lake.shop.events.snapshots", show=True)
    sql(spark, "SELECT file_path, record_count FROM lake.shop.events.files", show=True)

    sql(spark, "ALTER TABLE lake.shop.events ADD COLUMN channel string")
    sql(spark, "ALTER TABLE lake.shop.events RENAME COLUMN amount TO total")
    sql(spark, "ALTER TABLE lake.shop.events SET TBLPROPERTIES ('owner.team' = 'growth')")
    sql(spark, "DESCRIBE TABLE lake.shop.events", show=True)
    sql(
        spark,
        """CREATE TABLE lake.shop.big_orders PARTITIONED BY (region)
           AS SELECT id, region, total FROM lake.shop.events WHERE total > 15""",
    )
    sql(spark, "SELECT * FROM lake.shop.big_orders ORDER BY id", show=True)
    sql(spark, "DROP TABLE lake.shop.big_orders PURGE")
    sql(
        spark,
        """CREATE VIEW lake.shop.totals (region, total COMMENT 'sum of totals')
           COMMENT 'per region' AS
           SELECT region, sum(total) AS total FROM lake.shop.events GROUP BY region""",
    )
    sql(spark, "SELECT * FROM lake.shop.totals ORDER BY region", show=True)

    table = catalog.load_table("shop.events")
    print("Python API:", table, [f.name for f in table.schema().fields])
    print("           ", sorted(table.to_arrow().column("id").to_pylist()))
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 4]
    assert not catalog.table_exists("shop.big_orders")
    view = catalog.load_view("shop.totals")
    print("           ", view, view.sql())
    assert view.schema().column_names == ["region", "total"]


if __name__ == "__main__":
    main()
