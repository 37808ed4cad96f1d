"""Iceberg views shared with Iceberg Java 1.10.2 (Spark 3.5 with Iceberg's SQL extensions) on
one JDBC catalog: each engine reads, replaces, renames and drops the other's views, and both
answer a view's query with the same rows.

lakecat's catalog is attached to this run's Spark 4 session under Java's catalog name,
``peers``, as engines that share views name their catalog alike (both engines store no default
catalog when a view is created with its own catalog current, so that its query resolves in the
catalog that holds it, whatever its name there).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from java_session import JavaTables

from lakecat.catalog import Catalog

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def java(shared_java: JavaTables) -> JavaTables:
    shared_java.sql("CREATE TABLE peers.db.events (id BIGINT, cat STRING) USING iceberg")
    shared_java.sql("INSERT INTO peers.db.events VALUES (1, 'a'), (2, 'b'), (3, 'a'), (4, 'c')")
    return shared_java


@pytest.fixture(scope="module")
def catalog(shared_catalog: Catalog, java: JavaTables) -> Catalog:
    return shared_catalog


@pytest.fixture(scope="module")
def lake(shared_lake: Any, catalog: Catalog) -> Iterator[Any]:
    """The Spark 4 session with lakecat's catalog attached as ``peers``; the tests' ``USE``
    is undone after them (the session is shared with every other Spark test)."""
    current = shared_lake.catalog.currentCatalog(), shared_lake.catalog.currentDatabase()
    yield shared_lake
    shared_lake.sql(f"USE `{current[0]}`.`{current[1]}`")


def rows(spark: Any, statement: str) -> list[list[Any]]:
    return json.loads(json.dumps([list(r) for r in spark.sql(statement).collect()], default=str))


def test_a_view_iceberg_java_created_reads_in_lakecat_as_in_java(
    java: JavaTables, catalog: Catalog, lake: Any
) -> None:
    java.sql("USE peers.db")  # the query's unqualified names resolve against peers.db
    java.sql(
        "CREATE VIEW peers.db.java_view (ident COMMENT 'the id', cat) COMMENT 'from Java' "
        "TBLPROPERTIES ('team' = 'data') AS SELECT id, cat FROM events WHERE cat = 'a'"
    )
    view = catalog.load_view("db.java_view")
    assert view.sql() == "SELECT id, cat FROM events WHERE cat = 'a'"
    assert view.current_version.default_catalog is None  # the view's own catalog
    assert view.current_version.default_namespace == ("db",)
    assert [(f.name, f.doc) for f in view.schema().fields] == [("ident", "the id"), ("cat", None)]
    assert view.properties["comment"] == "from Java" and view.properties["team"] == "data"
    assert view.metadata_location.endswith(".gz.metadata.json")

    query = "SELECT * FROM peers.db.java_view ORDER BY ident"
    assert rows(lake, query) == java.query(query) == [[1, "a"], [3, "a"]]
    described = rows(lake, "DESCRIBE peers.db.java_view")
    assert described[:2] == [["ident", "bigint", "the id"], ["cat", "string", None]]
    assert ["db", "java_view", False] in rows(lake, "SHOW VIEWS IN peers.db")


def test_a_view_lakecat_created_reads_in_iceberg_java_as_in_lakecat(
    java: JavaTables, lake: Any
) -> None:
    lake.sql("USE peers.db")
    lake.sql(
        "CREATE VIEW peers.db.lake_view (cat, n COMMENT 'events') COMMENT 'from lakecat' "
        "AS SELECT cat, count(*) AS events FROM events GROUP BY cat"
    ).collect()
    query = "SELECT * FROM peers.db.lake_view ORDER BY cat"
    assert java.query(query) == rows(lake, query) == [["a", 2], ["b", 1], ["c", 1]]
    assert ["db", "lake_view", False] in java.query("SHOW VIEWS IN peers.db")
    described = java.query("DESCRIBE peers.db.lake_view")
    assert described[:2] == [["cat", "string", ""], ["n", "bigint", "events"]]
    details = {r[0]: r[1] for r in java.query("DESCRIBE EXTENDED peers.db.lake_view")}
    assert details["Comment"] == "from lakecat"
    assert details["View Catalog and Namespace"] == "peers.db"
    assert details["View Query Output Columns"] == "[cat, events]"
    assert details["Created By"] == "Spark 4.3.0"
    # Spark 4's default schema mode is not stored: Java shows only its own properties
    shown = dict(java.query("SHOW TBLPROPERTIES peers.db.lake_view"))
    assert sorted(shown) == ["format-version", "location", "provider"]


def test_a_view_replaced_by_each_engine_in_turn_keeps_one_history(
    java: JavaTables, catalog: Catalog, lake: Any
) -> None:
    lake.sql("CREATE VIEW peers.db.turns AS SELECT id FROM peers.db.events WHERE id > 1").collect()
    java.sql("CREATE OR REPLACE VIEW peers.db.turns AS SELECT id FROM peers.db.events WHERE id > 2")
    assert rows(lake, "SELECT * FROM peers.db.turns ORDER BY id") == [[3], [4]]
    lake.sql("ALTER VIEW peers.db.turns AS SELECT id FROM peers.db.events WHERE id > 3").collect()
    assert java.query("SELECT * FROM peers.db.turns") == [[4]]
    java.sql("ALTER VIEW peers.db.turns SET TBLPROPERTIES ('owner-team' = 'java')")
    lake.sql("ALTER VIEW peers.db.turns SET TBLPROPERTIES ('reviewed' = 'yes')").collect()

    view = catalog.load_view("db.turns")
    assert [v.version_id for v in view.versions] == [1, 2, 3]
    assert [e.version_id for e in view.history] == [1, 2, 3]
    assert [view.metadata.version(i).summary["engine-name"].lower() for i in (1, 2, 3)] == [
        "spark",
        "spark",
        "spark",
    ]
    assert view.metadata.version(2).summary["engine-version"].startswith("3.5")
    assert view.metadata.version(3).summary["engine-version"].startswith("4.")
    assert view.properties["owner-team"] == "java" and view.properties["reviewed"] == "yes"
    # every change wrote the next metadata file; both engines number them the same way
    folder = Path(view.location.removeprefix("file://"), "metadata")
    names = sorted(p.name[:5] for p in folder.glob("0*.metadata.json"))  # not Hadoop's .crc
    assert names == ["00000", "00001", "00002", "00003", "00004"]
    with gzip.open(view.metadata_location.removeprefix("file://")) as f:
        assert json.load(f)["current-version-id"] == 3


def test_views_renamed_and_dropped_by_one_engine_are_gone_for_the_other(
    java: JavaTables, catalog: Catalog, lake: Any
) -> None:
    java.sql("CREATE VIEW peers.db.to_rename AS SELECT id FROM peers.db.events")
    lake.sql("ALTER VIEW peers.db.to_rename RENAME TO peers.db.renamed").collect()
    assert java.query("SELECT count(*) FROM peers.db.renamed") == [[4]]
    assert java.attempt("SELECT * FROM peers.db.to_rename") is not None

    lake.sql("CREATE VIEW peers.db.to_drop AS SELECT 1 AS one").collect()
    java.sql("DROP VIEW peers.db.to_drop")
    assert not catalog.view_exists("db.to_drop")
    java.sql("DROP VIEW peers.db.renamed")
    assert "renamed" not in {name for _, name in catalog.list_views("db")}
    assert catalog.table_exists("db.events")  # tables are untouched


def test_a_table_and_a_view_never_share_a_name_across_engines(java: JavaTables, lake: Any) -> None:
    error = java.attempt("CREATE VIEW peers.db.events AS SELECT 1 AS one")
    assert error is not None and "already exists" in error
    java.sql("CREATE VIEW peers.db.taken AS SELECT 1 AS one")
    with pytest.raises(Exception, match="already exists"):
        lake.sql("CREATE TABLE peers.db.taken (id BIGINT) USING iceberg").collect()
    assert java.query("SELECT * FROM peers.db.taken") == [[1]]
