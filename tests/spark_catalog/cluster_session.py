"""SQL statements through the lakecat catalog on a Spark cluster whose executors are JVMs of
their own (``local-cluster``: one worker, one executor, started by Spark), so that every class
of the plugin's the tasks run must reach the executor as a cluster's would (a ``local`` master
shares the driver's classpath and would hide a missing jar).

``python cluster_session.py <embedded catalog folder> <result.json>`` runs the statements and
writes the rows of each query into ``result.json`` (a JSON object, query name -> rows as
lists). Everything binds to 127.0.0.1 (``SPARK_LOCAL_IP``, set by the test).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MOR = ", ".join(f"'write.{kind}.mode' = 'merge-on-read'" for kind in ("delete", "update", "merge"))


def main(root: str, out: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from sql_worker import small_session  # beside this file (PYTHONPATH, set by the test)

    spark = small_session(root, master="local-cluster[1,1,1024]", driver_memory="1g")
    spark.sparkContext.setLogLevel("ERROR")
    results: dict[str, list[list[Any]]] = {}

    def query(name: str, sql: str) -> None:
        results[name] = [list(row) for row in spark.sql(sql).collect()]

    sql = spark.sql
    sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
    # merge-on-read, format v2: position delete files, and rows read through them
    sql(
        "CREATE TABLE lake.db.mor (id bigint, name string, part int) PARTITIONED BY (part) "
        f"TBLPROPERTIES ({MOR})"
    )
    sql("INSERT INTO lake.db.mor SELECT id, concat('n', id), cast(id % 2 AS int) FROM range(0, 40)")
    query("row_ids", "SELECT _pos, id, _file FROM lake.db.mor WHERE id < 6 ORDER BY id")
    sql("DELETE FROM lake.db.mor WHERE id % 10 = 0")
    sql("UPDATE lake.db.mor SET name = 'updated' WHERE id % 10 = 1")
    spark.createDataFrame(
        [(2, "merged", 0), (100, "inserted", 0)], "id bigint, name string, part int"
    ).createOrReplaceTempView("changes")
    sql(
        "MERGE INTO lake.db.mor t USING changes c ON t.id = c.id "
        "WHEN MATCHED THEN UPDATE SET name = c.name WHEN NOT MATCHED THEN INSERT *"
    )
    query("mor", "SELECT id, name, part FROM lake.db.mor ORDER BY id")
    # format v3, copy-on-write: rows rewritten with their lineage, lineage columns read
    sql("CREATE TABLE lake.db.v3 (id bigint, name string) TBLPROPERTIES ('format-version' = '3')")
    sql("INSERT INTO lake.db.v3 SELECT id, concat('n', id) FROM range(0, 10)")
    sql("UPDATE lake.db.v3 SET name = 'updated' WHERE id = 3")
    query(
        "v3",
        "SELECT id, name, _row_id, _last_updated_sequence_number FROM lake.db.v3 ORDER BY id",
    )
    # format v3, merge-on-read: deletion vectors
    sql(f"CREATE TABLE lake.db.dv (id bigint) TBLPROPERTIES ('format-version' = '3', {MOR})")
    sql("INSERT INTO lake.db.dv SELECT id FROM range(0, 20)")
    sql("DELETE FROM lake.db.dv WHERE id % 3 = 0")
    query("dv", "SELECT id FROM lake.db.dv ORDER BY id")
    # copy-on-write MERGE (Spark's writer), a dynamic overwrite (the Python data source's
    # writer), compaction by procedure, a metadata table read by tasks, time travel
    sql("CREATE TABLE lake.db.cow (id bigint, part int) PARTITIONED BY (part)")
    sql("INSERT INTO lake.db.cow SELECT id, cast(id % 2 AS int) FROM range(0, 10)")
    sql("INSERT INTO lake.db.cow SELECT id, cast(id % 2 AS int) FROM range(10, 20)")
    sql(
        "MERGE INTO lake.db.cow t USING (SELECT 4L AS id, 0 AS part) s ON t.id = s.id "
        "WHEN MATCHED THEN DELETE"
    )
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    sql("INSERT OVERWRITE lake.db.cow SELECT id, 1 FROM range(100, 103)")
    query("cow", "SELECT id, part FROM lake.db.cow ORDER BY id")
    query(
        "compacted",
        "CALL lake.system.rewrite_data_files(table => 'db.cow', "
        "options => map('min-input-files', '1'))",
    )
    query("files", "SELECT file_path, record_count FROM lake.db.cow.files ORDER BY file_path")
    query("cow_after", "SELECT id, part FROM lake.db.cow ORDER BY id")
    # a bucket partition: computed by the catalog's function in the executor (INSERT), and by
    # the tasks of a merge-on-read UPDATE
    sql(
        "CREATE TABLE lake.db.buckets (id bigint, name string) PARTITIONED BY (bucket(4, id)) "
        f"TBLPROPERTIES ({MOR})"
    )
    sql("INSERT INTO lake.db.buckets SELECT id, concat('n', id) FROM range(0, 20)")
    sql("UPDATE lake.db.buckets SET name = 'updated' WHERE id % 5 = 0")
    query("buckets", "SELECT id, name FROM lake.db.buckets ORDER BY id")
    # a streaming write into a table (exactly once per batch), then a streaming read of it
    stream_rows = spark.createDataFrame([(i,) for i in range(5)], "id bigint")
    folder = os.path.join(os.path.dirname(out), "stream-source")
    stream_rows.write.parquet(folder)
    sql("CREATE TABLE lake.db.streamed (id bigint)")
    written = (
        spark.readStream.schema("id long")
        .parquet(folder)
        .writeStream.option("checkpointLocation", folder + "-checkpoint")
        .trigger(availableNow=True)
        .toTable("lake.db.streamed")
    )
    written.awaitTermination(300)
    read: list[int] = []
    stream = (
        spark.readStream.table("lake.db.streamed")
        .writeStream.option("checkpointLocation", folder + "-read-checkpoint")
        .foreachBatch(lambda batch, _: read.extend(r.id for r in batch.collect()))
        .trigger(availableNow=True)
        .start()
    )
    stream.awaitTermination(300)
    results["streamed"] = [[i] for i in sorted(read)]
    # the file system the writes above used (decided per write, the same way every time)
    from lakecat.spark_ext.native.local_files import local_write_options

    results["local_files"] = [list(kv) for kv in sorted(local_write_options(spark, root).items())]
    from lakecat.spark_ext.native.partitions import session_functions

    results["functions"] = [[session_functions(spark)]]
    spark.stop()
    with open(out, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
