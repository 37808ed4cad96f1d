"""Time ``bench_spark_sql.py``'s MERGE on Iceberg Java (run by the peers' spark35 python).

    python java_merge.py OUT_DIR ROWS REPEATS MERGE_MODE FORMAT_VERSION

The reference implementation's own figures for the statements ``bench_spark_sql.py`` times
on lakecat, on the same data (``id`` long, ``part`` int = ``id % 8``, ``name``, ``value``;
the updates are 1% of partition 3's rows) and a ``local[2]`` session: an ``INSERT`` of all
rows into a fresh table ``PARTITIONED BY (part)`` (a HadoopCatalog in ``OUT_DIR``), the MERGE
(``ON t.id = upd.id``), the same MERGE with ``AND t.part = 3`` on a second fresh table, and
an ``INSERT`` of the updated rows into an empty table; and, as ``bench_spark_sql.py`` compares
lakecat with plain Parquet, the same rows written with ``df.write.partitionBy("part").parquet``
and the full scan and one-partition aggregate on both, in the same session (Spark 3.5's plain
Parquet, so the ratios compare within one engine). A first round warms up and is not counted.
Prints one JSON object: each measurement's seconds per counted round.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

PEERS = os.environ.get("PEERS_SCRIPTS") or str(
    Path(__file__).resolve().parents[2] / "shared" / "peers"
)


def source_views(spark: Any, rows: int, partitions: int) -> tuple[Any, int]:
    """The temporary views ``src`` (``rows`` rows: ``id`` long, ``part`` int = ``id % 8``,
    ``name``, ``value``) and ``upd`` (1% of partition 3's rows, ``value`` negated), cached, as
    both engines' runs make them; ``src``'s DataFrame and the number of rows in ``upd``."""
    src = spark.range(rows, numPartitions=partitions).selectExpr(
        "id",
        "cast(id % 8 as int) AS part",
        "concat('name-', cast(id % 1000 as string)) AS name",
        "cast(id as double) * 0.5 AS value",
    )
    src = src.persist()
    src.count()
    src.createOrReplaceTempView("src")
    upd = src.where("part = 3 AND id % 800 = 3").selectExpr("id", "part", "name", "-value AS value")
    upd = upd.persist()
    upd.createOrReplaceTempView("upd")
    return src, upd.count()


def main() -> None:
    out, rows, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    mode, version = sys.argv[4], sys.argv[5]
    sys.path.insert(0, PEERS)
    import peer_spark

    p = "spark.sql.catalog.ice"
    spark = peer_spark.session(
        {
            p: "org.apache.iceberg.spark.SparkCatalog",
            f"{p}.type": "hadoop",
            f"{p}.warehouse": f"file://{os.path.join(out, 'warehouse')}",
            "spark.driver.memory": "4g",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.parquet.compression.codec": "zstd",
        }
    )
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.bench")
    src, updated = source_views(spark, rows, 2)
    props = (
        f"'write.merge.mode' = '{mode}', 'write.update.mode' = '{mode}', "
        f"'write.delete.mode' = '{mode}', 'format-version' = '{version}'"
    )

    def create(name: str) -> str:
        spark.sql(
            f"CREATE TABLE ice.bench.{name} (id bigint, part int, name string, value double) "
            f"USING iceberg PARTITIONED BY (part) TBLPROPERTIES ({props})"
        )
        return f"ice.bench.{name}"

    def timed(sql: str) -> float:
        """Seconds to run a statement (DML runs in spark.sql; a query in its collect)."""
        start = time.perf_counter()
        spark.sql(sql).collect()
        return time.perf_counter() - start

    aggregate = "SELECT sum(id) AS ids, count(name) AS names, sum(value) AS total FROM {}"

    times: dict[str, list[float]] = {
        "write": [],
        "merge": [],
        "merge_part": [],
        "insert": [],
        "write_plain": [],
        "scan": [],
        "scan_plain": [],
        "part": [],
        "part_plain": [],
    }
    for r in range(repeats + 1):
        table, keyed, same_rows = create(f"t_{r}"), create(f"k_{r}"), create(f"i_{r}")
        plain = os.path.join(out, f"plain_{r}")
        start = time.perf_counter()
        src.write.partitionBy("part").parquet(plain)
        t = {"write_plain": time.perf_counter() - start}
        t["write"] = timed(f"INSERT INTO {table} SELECT * FROM src")
        spark.read.parquet(plain).createOrReplaceTempView("plain")
        for key, source in (("scan", table), ("scan_plain", "plain")):
            t[key] = timed(aggregate.format(source))
        for key, source in (("part", table), ("part_plain", "plain")):
            t[key] = timed(aggregate.format(source) + " WHERE part = 3")
        spark.sql(f"INSERT INTO {keyed} SELECT * FROM src")
        t["merge"] = timed(
            f"MERGE INTO {table} t USING upd ON t.id = upd.id "
            "WHEN MATCHED THEN UPDATE SET value = upd.value"
        )
        t["insert"] = timed(f"INSERT INTO {same_rows} SELECT * FROM upd")
        t["merge_part"] = timed(
            f"MERGE INTO {keyed} t USING upd ON t.id = upd.id AND t.part = 3 "
            "WHEN MATCHED THEN UPDATE SET value = upd.value"
        )
        changed = spark.sql(f"SELECT count(*) FROM {table} WHERE value < 0").collect()[0][0]
        if changed != updated:
            raise SystemExit(f"Iceberg Java's MERGE updated {changed} rows")
        if r:  # round 0 warms up
            for key, seconds in t.items():
                times[key].append(seconds)
    print(json.dumps(times))


if __name__ == "__main__":
    main()
