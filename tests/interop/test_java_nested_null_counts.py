"""A ``struct.field IS NULL`` filter on Iceberg Java's files finds the rows whose struct is null.

Iceberg Java 1.10.2 writes no value and no null count for a double nested in a struct in the
rows where the struct itself is null, so its metrics say "no null" of a file that holds such a
row, and its own reader prunes the file (it reads no row for ``info.extra IS NULL``). lakecat
trusts a nested field's null count of 0 only when its value count covers every row.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from java_session import JavaProcess, JavaTables, java_session, lakecat_on

from lakecat.catalog import Catalog

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def java(
    java_process: JavaProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JavaTables]:
    yield from java_session(
        java_process, tmp_path_factory.mktemp("java-nested-nulls"), create=False
    )


@pytest.fixture(scope="module")
def lake(java: JavaTables) -> Iterator[Catalog]:
    yield from lakecat_on(java)


def test_a_null_struct_makes_its_double_field_null_despite_java_counting_no_null(
    java: JavaTables, lake: Catalog
) -> None:
    java.sql("CREATE TABLE peers.db.nested_nulls (id bigint, info struct<qty: int, extra: double>)")
    java.sql(
        "INSERT INTO peers.db.nested_nulls SELECT /*+ COALESCE(1) */ * FROM VALUES "
        "(1L, NULL), (2L, named_struct('qty', 1, 'extra', 2.0D)) AS v(id, info)"
    )
    table = lake.load_table("db.nested_nulls")
    [data_file] = [f for f in table.scan().plan_files()]
    extra = table.schema().find_field("info.extra").field_id
    # what the file says of info.extra: a value of one row of two, and no null
    assert data_file.record_count == 2
    assert data_file.value_counts[extra] == 1
    assert data_file.null_value_counts[extra] == 0
    assert table.to_arrow("info.extra IS NULL").column("id").to_pylist() == [1]
    assert table.to_arrow("info.qty IS NULL").column("id").to_pylist() == [1]
    # Iceberg Java's own reader prunes the file by that count
    assert java.query("SELECT id FROM peers.db.nested_nulls WHERE info.extra IS NULL") == []
