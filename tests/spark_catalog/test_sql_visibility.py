"""One catalog, three front doors: tables made in Spark SQL are lakecat tables (Python API,
``lakecat`` CLI, pyiceberg), and tables made in Python show up in Spark SQL."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark


def cli(lake, *args: str) -> dict:
    # the console script beside this interpreter (a venv's, even when it is not on PATH)
    beside = os.path.join(os.path.dirname(sys.executable), "lakecat")
    command = beside if os.path.isfile(beside) else shutil.which("lakecat") or ""
    entry = [command] if command else [sys.executable, "-m", "lakecat.catalog.cli"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_")}
    env.update(LAKECAT_CATALOG_URL=lake.url, LAKECAT_WAREHOUSE=lake.catalog.warehouse)
    done = subprocess.run(
        [*entry, "--json", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_table_created_in_sql_is_a_lakecat_table_for_python_and_the_cli(lake) -> None:
    lake.sql("CREATE TABLE lake.db.clicks (id bigint, page string) PARTITIONED BY (page)")
    lake.sql("INSERT INTO lake.db.clicks VALUES (1, 'home'), (2, 'cart'), (3, 'home')")

    assert lake.catalog.list_tables("db") == [(("db",), "clicks")]
    assert lake.rows("db.clicks", "id", "page") == [(1, "home"), (2, "cart"), (3, "home")]
    assert lake.iceberg_rows("db.clicks", "id", "page") == lake.rows("db.clicks", "id", "page")

    assert cli(lake, "tables", "list", "db")["tables"] == ["db.clicks"]
    shown = cli(lake, "show", "db.clicks")
    assert (
        shown["snapshot_id"] == lake.catalog.load_table("db.clicks").current_snapshot().snapshot_id
    )
    assert sorted((r["id"], r["page"]) for r in shown["rows"]) == [
        (1, "home"),
        (2, "cart"),
        (3, "home"),
    ]


def test_a_table_created_in_python_shows_in_spark_sql(lake) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = lake.catalog.create_table("db.people", schema, partition_by=[("id", "bucket[4]")])
    table.append(pa.table({"id": [1, 2], "name": ["ada", "bob"]}, schema=schema))
    py = lake.pyiceberg()
    try:
        py.create_table("db.from_pyiceberg", schema)
    finally:
        py.engine.dispose()

    tables = sorted(r.tableName for r in lake.sql("SHOW TABLES IN lake.db"))
    assert tables == ["from_pyiceberg", "people"]
    rows = lake.sql("SELECT id, name FROM lake.db.people ORDER BY id")
    assert [tuple(r) for r in rows] == [(1, "ada"), (2, "bob")]
    described = {r.col_name: r.data_type for r in lake.sql("DESCRIBE TABLE lake.db.people")}
    assert described["Part 0"] == "bucket(4, id)"
