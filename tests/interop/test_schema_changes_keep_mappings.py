"""Schema changes move the table properties that name columns exactly as Iceberg Java does.

Iceberg Java (one session, ``java_session.py``) makes a table with a name mapping and
per-column metrics and bloom filter properties, then changes its schema with Spark SQL, one
statement (one ``SchemaUpdate`` commit) at a time. lakecat starts from Java's metadata before
the changes and makes the same changes with its own ``SchemaUpdate``; the name mapping (ids
and their names, at every level) and the per-column properties must come out as Java's.
Then files without field ids imported after lakecat's changes read the same in lakecat,
Iceberg Java, pyiceberg and DuckDB.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from java_session import JavaProcess, JavaTables, java_session, lakecat_on
from peers import local_path, read_rows

from lakecat.catalog import Catalog
from lakecat.metadata.schema import NameMapping, name_mapping_of
from lakecat.metadata.schema.types import DoubleType, LongType, StringType
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.schema_evolution import SchemaUpdate
from lakecat.metadata.table.table_metadata import TableMetadata

pytestmark = pytest.mark.interop

TABLE = "peers.db.mapped_evolution"
MAPPING_KEY = "schema.name-mapping.default"
COLUMN_PREFIXES = ("write.metadata.metrics.column.", "write.parquet.bloom-filter-enabled.column.")

# Each change: Iceberg Java's statement, and the same change on lakecat's SchemaUpdate.
CHANGES: list[tuple[str, Callable[[SchemaUpdate], object]]] = [
    ("RENAME COLUMN cat TO kind", lambda u: u.rename_column("cat", "kind")),
    ("ADD COLUMN score double", lambda u: u.add_column("score", DoubleType())),
    ("ADD COLUMN loc.alt double", lambda u: u.add_column("loc.alt", DoubleType())),
    ("RENAME COLUMN loc.lat TO latitude", lambda u: u.rename_column("loc.lat", "latitude")),
    ("ADD COLUMN points.element.y bigint", lambda u: u.add_column(("points", "y"), LongType())),
    ("DROP COLUMN note", lambda u: u.delete_column("note")),
    ("ADD COLUMN note string", lambda u: u.add_column("note", StringType())),
    ("RENAME COLUMN id TO category", lambda u: u.rename_column("id", "category")),
]


@pytest.fixture(scope="module")
def java(
    java_process: JavaProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JavaTables]:
    yield from java_session(
        java_process, tmp_path_factory.mktemp("java-schema-changes"), create=False
    )


@pytest.fixture(scope="module")
def lake(java: JavaTables) -> Iterator[Catalog]:
    yield from lakecat_on(java)


@pytest.fixture(scope="module")
def evolved(java: JavaTables, lake: Catalog) -> tuple[TableMetadata, TableMetadata]:
    """Java's table before the changes and after them (as lakecat reads both files)."""
    java.sql(
        f"CREATE TABLE {TABLE} (id bigint, cat string, note string, "
        "loc struct<lat: double, lon: double>, points array<struct<x: bigint>>) USING iceberg "
        "TBLPROPERTIES ('format-version' = '2', "
        "'write.metadata.metrics.column.cat' = 'none', "
        "'write.metadata.metrics.column.note' = 'full', "
        "'write.metadata.metrics.column.loc.lat' = 'counts', "
        "'write.parquet.bloom-filter-enabled.column.cat' = 'true')"
    )
    created = lake.load_table(TABLE.split(".", 1)[1])
    # the mapping a table gets when files without ids are first added, plus an old alias of
    # cat: Java's MappingUtil.create, as lakecat's add_files would write it
    mapping = NameMapping.of_schema(created.schema()).to_json()
    mapping = mapping.replace('["cat"]', '["cat","category"]')
    java.sql(f"ALTER TABLE {TABLE} SET TBLPROPERTIES ('{MAPPING_KEY}' = '{mapping}')")
    table = lake.load_table(TABLE.split(".", 1)[1])
    before = table.metadata
    for statement, _ in CHANGES:
        java.sql(f"ALTER TABLE {TABLE} {statement}")
    after = lake.load_table(TABLE.split(".", 1)[1]).metadata
    return before, after


def _lakecat_changes(before: TableMetadata) -> TableMetadata:
    metadata = before
    for _, change in CHANGES:
        update = SchemaUpdate(metadata)
        change(update)
        metadata = apply(metadata, update.updates(), now_ms=metadata.last_updated_ms + 1)
    return metadata


def _mapping_tree(metadata: TableMetadata) -> dict[Any, Any]:
    mapping = name_mapping_of(metadata.properties)
    assert mapping is not None

    def level(fields: Any) -> dict[Any, Any]:
        return {f.field_id: (sorted(f.names), level(f.fields)) for f in fields}

    return level(mapping.fields)


def _column_properties(metadata: TableMetadata) -> dict[str, str]:
    return {k: v for k, v in metadata.properties.items() if k.startswith(COLUMN_PREFIXES)}


def test_the_schema_changes_give_lakecat_the_schema_java_has(
    evolved: tuple[TableMetadata, TableMetadata],
) -> None:
    before, java_after = evolved
    ours = _lakecat_changes(before)
    assert ours.schema().same_structure(java_after.schema())
    assert ours.last_column_id == java_after.last_column_id


def test_the_name_mapping_gains_what_iceberg_java_adds_to_it(
    evolved: tuple[TableMetadata, TableMetadata],
) -> None:
    before, java_after = evolved
    assert _mapping_tree(before) != _mapping_tree(java_after)  # Java did change it
    assert _mapping_tree(_lakecat_changes(before)) == _mapping_tree(java_after)


def test_per_column_properties_move_as_iceberg_java_moves_them(
    evolved: tuple[TableMetadata, TableMetadata],
) -> None:
    before, java_after = evolved
    assert _column_properties(java_after) == {
        "write.metadata.metrics.column.kind": "none",
        "write.metadata.metrics.column.loc.latitude": "counts",
        "write.parquet.bloom-filter-enabled.column.kind": "true",
    }
    assert _column_properties(_lakecat_changes(before)) == _column_properties(java_after)


def test_files_imported_after_the_changes_read_by_their_new_names_in_both_engines(
    java: JavaTables, lake: Catalog, evolved: tuple[TableMetadata, TableMetadata], tmp_path: Path
) -> None:
    # lakecat makes the same changes to a table of its own that has a name mapping; Iceberg
    # Java then reads files without ids, which use the new names, through lakecat's mapping
    name = "db.lakecat_evolution"
    table = lake.create_table(name, evolved[0].schema(), properties={"format-version": "2"})
    table.set_properties({MAPPING_KEY: NameMapping.of_schema(table.schema()).to_json()})
    for _, change in CHANGES:
        with table.update_schema() as update:
            change(update)
    path = tmp_path / "plain.parquet"
    pq.write_table(
        pa.table(
            {
                "category": pa.array([1, 2], pa.int64()),  # id's new name
                "kind": ["a", "b"],  # cat's new name
                "score": [0.5, 1.5],
                "note": ["x", "y"],  # the column added back
            }
        ),
        path,
    )
    table.add_files([str(path)])
    columns = ["category", "kind", "score", "note"]
    ours = table.scan(columns=columns).to_arrow().sort_by("category").to_pylist()
    assert [[r[c] for c in columns] for r in ours] == [[1, "a", 0.5, "x"], [2, "b", 1.5, "y"]]
    got = java.query(f"SELECT {', '.join(columns)} FROM peers.{name} ORDER BY category")
    assert got == [[1, "a", 0.5, "x"], [2, "b", 1.5, "y"]]
    job = {"key": name, "metadata": local_path(table.metadata_location), "columns": columns}
    for peer in ("pyiceberg", "duckdb"):
        (answer,) = read_rows(peer, [{**job, "snapshot": None}])
        assert answer.get("rows") == [[1, "a", 0.5, "x"], [2, "b", 1.5, "y"]], (peer, answer)
