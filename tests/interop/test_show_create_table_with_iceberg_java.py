"""``SHOW CREATE TABLE`` shared with Iceberg Java 1.10.2 (Spark 3.5) on one JDBC catalog: the
statement either engine prints for a table makes the same table when the other engine runs it
(columns with their types, nullability and comments, nested fields, partition transforms, format
version, table comment and properties).

The statement is edited as a user copying it would: the new table's name, and no ``LOCATION``
(it names the shown table's own folder). From Spark 4 to Spark 3.5 also without ``COLLATE
UTF8_BINARY``, which Spark 4 prints after each string type and Spark 3.5's parser does not know
(it is Spark's default collation, so leaving it out changes nothing).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from java_session import JavaTables

from lakecat.catalog import Catalog
from lakecat.catalog.table import Table
from lakecat.metadata.properties import CREATE_DEFAULTS
from lakecat.metadata.schema import ListType, MapType, NestedField, StructType, child_fields

pytestmark = pytest.mark.interop

COLUMNS = (
    "id BIGINT NOT NULL COMMENT 'the key', ts TIMESTAMP, region STRING COMMENT 'where', "
    "s STRUCT<a: INT COMMENT 'inner', b: STRING>, amounts ARRAY<DOUBLE>, "
    "tags MAP<STRING, STRING>, price DECIMAL(10,2), day DATE, local TIMESTAMP_NTZ"
)
PARTITIONING = "PARTITIONED BY (days(ts), bucket(4, id), truncate(2, region))"
PROPERTIES = (
    "TBLPROPERTIES ('format-version' = '2', 'write.merge.mode' = 'merge-on-read', 'team' = 'ads')"
)


def for_other_engine(statement: str, shown: str, new: str) -> str:
    """``statement`` (what SHOW CREATE TABLE printed for ``shown``) for the table ``new``: its
    ``LOCATION`` line and Spark 4's ``COLLATE UTF8_BINARY`` left out."""
    assert statement.startswith(f"CREATE TABLE {shown} (")
    statement = statement.replace(f"CREATE TABLE {shown} (", f"CREATE TABLE {new} (", 1)
    statement = re.sub(r"^LOCATION '[^']*'\n", "", statement, flags=re.MULTILINE)
    return statement.replace(" COLLATE UTF8_BINARY", "")


def columns(fields: tuple[NestedField, ...], prefix: str = "") -> list[tuple[Any, ...]]:
    """Each field, nested ones too, as ``(path, type, required, comment)`` without field ids
    (each engine numbers a new table's fields itself): a nested type by its kind."""
    out: list[tuple[Any, ...]] = []
    for f in fields:
        path, t = prefix + f.name, f.field_type
        nested = isinstance(t, (StructType, ListType, MapType))
        out.append((path, type(t).__name__ if nested else str(t), f.required, f.doc))
        out += columns(child_fields(t), path + ".")
    return out


def definition(table: Table) -> dict[str, Any]:
    """What a CREATE TABLE statement sets, as the table's metadata holds it."""
    schema = table.schema()
    return {
        "columns": columns(schema.fields),
        "partitioning": [
            (schema.column_name(f.source_id), str(f.transform), f.name) for f in table.spec().fields
        ],
        "format-version": table.metadata.format_version,
        "properties": {
            k: v for k, v in table.properties.items() if k not in ("owner", "created-at")
        },
    }


def test_the_statement_lakecat_shows_makes_the_same_table_on_iceberg_java(
    shared_java: JavaTables, shared_catalog: Catalog, shared_lake: Any
) -> None:
    shared_lake.sql(
        f"CREATE TABLE peers.db.by_lake ({COLUMNS}) {PARTITIONING} {PROPERTIES} COMMENT 'c'"
    )
    statement = shared_lake.sql("SHOW CREATE TABLE peers.db.by_lake").collect()[0][0]
    assert "USING iceberg" in statement

    shared_java.sql(for_other_engine(statement, "peers.db.by_lake", "peers.db.in_java"))
    shared_lake.sql(for_other_engine(statement, "peers.db.by_lake", "peers.db.in_lake"))

    shown = definition(shared_catalog.load_table("db.by_lake"))
    assert definition(shared_catalog.load_table("db.in_lake")) == shown
    in_java = definition(shared_catalog.load_table("db.in_java"))
    # Iceberg Java keeps the 'format' key the statement shows as a property (it does so with
    # its own statements too, below); everything else is the same table
    assert in_java["properties"].pop("format") == "iceberg/parquet"
    assert in_java == shown
    assert shown["properties"]["team"] == "ads" and shown["properties"]["comment"] == "c"
    # and the tables take the same rows in either engine
    row = (
        "(1, TIMESTAMP '2024-03-01 10:00:00', 'eu', named_struct('a', 2, 'b', 'x'), "
        "array(1.5D), map('k', 'v'), 3.25, DATE '2024-03-01', TIMESTAMP_NTZ '2024-03-01 10:00')"
    )
    shared_lake.sql(f"INSERT INTO peers.db.in_java VALUES {row}")
    shared_java.sql(f"INSERT INTO peers.db.by_lake VALUES {row}")
    query = "SELECT id, region, s.a, amounts[0], tags['k'], price FROM peers.db.{} ORDER BY id"
    expected = [[1, "eu", 2, 1.5, "v", "3.25"]]
    for name in ("by_lake", "in_java"):
        assert shared_java.query(query.format(name)) == expected
        assert [
            [*r[:5], str(r[5])] for r in shared_lake.sql(query.format(name)).collect()
        ] == expected


def test_the_statement_iceberg_java_shows_makes_on_lakecat_the_table_it_makes_on_java(
    shared_java: JavaTables, shared_catalog: Catalog, shared_lake: Any
) -> None:
    shared_java.sql(
        f"CREATE TABLE peers.db.by_java ({COLUMNS.replace(', local TIMESTAMP_NTZ', '')}) "
        f"USING iceberg {PARTITIONING} {PROPERTIES} COMMENT 'c'"
    )
    [[statement]] = shared_java.query("SHOW CREATE TABLE peers.db.by_java")
    # Spark 3.5 shows a bucket transform as CLUSTERED BY, after the other transforms: the
    # statement puts it last in either engine
    assert "PARTITIONED BY (days(ts), truncate(2, region))\nCLUSTERED BY (id)\n" in statement

    shared_java.sql(for_other_engine(statement, "peers.db.by_java", "peers.db.java_again"))
    shared_lake.sql(for_other_engine(statement, "peers.db.by_java", "peers.db.from_java"))

    again = definition(shared_catalog.load_table("db.java_again"))
    made = definition(shared_catalog.load_table("db.from_java"))
    assert again["properties"].pop("format") == "iceberg/parquet"
    # lakecat writes its defaults on every table it creates (lakecat.metadata.properties)
    assert made["properties"] == {**CREATE_DEFAULTS, **again["properties"]}
    assert {**made, "properties": None} == {**again, "properties": None}
    assert made["partitioning"] == [
        ("ts", "day", "ts_day"),
        ("region", "truncate[2]", "region_trunc"),
        ("id", "bucket[4]", "id_bucket"),
    ]
    assert made["columns"] == definition(shared_catalog.load_table("db.by_java"))["columns"]
