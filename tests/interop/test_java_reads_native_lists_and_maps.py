"""List and map columns written by Spark's own Parquet writer through lakecat's SQL catalog
(the plugin's ``IdParquetFormat`` adds the field ids of list elements and map keys and values,
which Spark's writer cannot express) read the same in Iceberg Java 1.10.2, on a shared JDBC
catalog: an INSERT, a merge-on-read UPDATE (new rows written in the statement's tasks,
``NativeRows``) and a copy-on-write MERGE (the rewritten files), on format v2 and v3.

Every data file of the tables is Spark's (named ``*.zstd.parquet``; lakecat's own writer names
its files ``*-NNNNN.parquet``), so the rows each engine reads are the rows those files hold.
"""

from __future__ import annotations

from typing import Any

import pytest
from java_session import JavaTables

from lakecat.catalog import Catalog

pytestmark = [pytest.mark.interop, pytest.mark.spark]

COLUMNS = (
    "id BIGINT, tags ARRAY<STRING>, m MAP<STRING, ARRAY<INT>>, "
    "s STRUCT<a: INT, l: ARRAY<STRUCT<x: DOUBLE, y: MAP<INT, STRING>>>>, ll ARRAY<ARRAY<BIGINT>>"
)
ROWS = (
    "(1, array('a', NULL), map('k', array(1, NULL)), "
    "named_struct('a', 3, 'l', array(named_struct('x', 1.5D, 'y', map(7, 'z')), NULL)), "
    "array(array(5L), NULL, array())), "
    "(2, NULL, NULL, NULL, NULL), "
    "(3, array(), map(), named_struct('a', NULL, 'l', array()), array(array())), "
    "(4, array('d'), map('j', array(9), 'i', NULL), named_struct('a', 4, 'l', NULL), NULL)"
)


def as_json(rows: list[Any]) -> list[list[Any]]:
    return [[r[0], r[1]] for r in rows]


@pytest.mark.parametrize("version", [2, 3])
def test_iceberg_java_reads_the_lists_and_maps_spark_wrote_natively(
    shared_java: JavaTables, shared_catalog: Catalog, shared_lake: Any, version: int
) -> None:
    table = f"peers.db.nested_v{version}"
    shared_lake.sql(
        f"CREATE TABLE {table} ({COLUMNS}) PARTITIONED BY (bucket(2, id)) "
        f"TBLPROPERTIES ('format-version' = '{version}', 'write.update.mode' = 'merge-on-read', "
        "'write.merge.mode' = 'copy-on-write')"
    )
    shared_lake.sql(f"INSERT INTO {table} VALUES {ROWS}")
    shared_lake.sql(
        f"UPDATE {table} SET tags = array('u', NULL), m = map('u', array(0)) WHERE id < 3"
    )
    shared_lake.sql(
        f"MERGE INTO {table} t USING (SELECT 4L AS id UNION ALL SELECT 5L) u ON t.id = u.id "
        "WHEN MATCHED THEN UPDATE SET ll = array(array(4L, 4L)), s.l = array(named_struct("
        "'x', 2.5D, 'y', map(1, 'one', 2, NULL))) "
        "WHEN NOT MATCHED THEN INSERT (id, tags, m, s, ll) VALUES (u.id, array('new'), "
        "map('n', array(5)), named_struct('a', 5, 'l', array()), array(array(5L)))"
    )

    files = shared_catalog.load_table(table.removeprefix("peers.")).scan().plan_files()
    assert files and all(f.file_path.endswith(".zstd.parquet") for f in files)
    query = f"SELECT id, to_json(struct(tags, m, s, ll)) FROM {table} ORDER BY id"
    ours = as_json(shared_lake.sql(query).collect())
    assert [r[0] for r in ours] == [1, 2, 3, 4, 5]
    assert ours[0][1] == (
        '{"tags":["u",null],"m":{"u":[0]},"s":{"a":3,"l":[{"x":1.5,"y":{"7":"z"}},null]},'
        '"ll":[[5],null,[]]}'
    )
    assert ours[3][1] == (
        '{"tags":["d"],"m":{"j":[9],"i":null},"s":{"a":4,"l":[{"x":2.5,"y":{"1":"one","2":null}}]},'
        '"ll":[[4,4]]}'
    )
    assert shared_java.query(query) == ours
