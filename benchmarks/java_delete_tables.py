"""Build the tables of ``bench_deletes.py`` with Iceberg Java (run by the peers' spark35 python).

    python java_delete_tables.py OUT_DIR ROWS

In a JdbcCatalog ``peers`` on ``OUT_DIR/catalog.db`` (namespace ``db``), from the same ROWS rows
(``id`` long, ``cat`` string, ``value`` double; 10 data files):

* ``pos``: format v2, merge-on-read, then ``DELETE WHERE id % 100 = 7`` (1% of the rows) as
  position delete files;
* ``dv``: format v3, the same delete as deletion vectors;
* ``compacted``: the rows that remain, written without deletes (what compaction makes).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PEERS = os.environ.get("PEERS_SCRIPTS") or str(
    Path(__file__).resolve().parents[2] / "shared" / "peers"
)


def main() -> None:
    out, rows = sys.argv[1], int(sys.argv[2])
    sys.path.insert(0, PEERS)
    import peer_spark

    p = "spark.sql.catalog.peers"
    spark = peer_spark.session(
        {
            p: "org.apache.iceberg.spark.SparkCatalog",
            f"{p}.type": "jdbc",
            f"{p}.uri": f"jdbc:sqlite:{os.path.join(out, 'catalog.db')}",
            f"{p}.warehouse": f"file://{os.path.join(out, 'warehouse')}",
            f"{p}.jdbc.schema-version": "V1",
            "spark.driver.memory": "3g",
        }
    )
    spark.sql("CREATE NAMESPACE IF NOT EXISTS peers.db")
    source = (
        spark.range(rows)
        .selectExpr(
            "id", "concat('c', cast(id % 16 as string)) AS cat", "cast(id as double) * 0.5 AS value"
        )
        .repartition(10)
    )
    mor = {
        "write.delete.mode": "merge-on-read",
        "write.update.mode": "merge-on-read",
        "write.merge.mode": "merge-on-read",
    }
    for name, version in (("pos", "2"), ("dv", "3")):
        props = ", ".join(f"'{k}'='{v}'" for k, v in {**mor, "format-version": version}.items())
        spark.sql(
            f"CREATE TABLE peers.db.{name} (id bigint, cat string, value double) USING iceberg "
            f"TBLPROPERTIES ({props})"
        )
        source.writeTo(f"peers.db.{name}").append()
        spark.sql(f"DELETE FROM peers.db.{name} WHERE id % 100 = 7")
    spark.sql(
        "CREATE TABLE peers.db.compacted (id bigint, cat string, value double) USING iceberg "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.table("peers.db.pos").repartition(10).writeTo("peers.db.compacted").append()
    for name in ("pos", "dv", "compacted"):
        n = spark.table(f"peers.db.{name}").count()
        print(f"{name} rows={n}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
