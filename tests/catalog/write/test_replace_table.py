"""Replacing a table's definition and rows in one commit (``Catalog.replace_table``), on every
catalog backend: the table keeps its identity and history, a failure changes nothing, and a
concurrent commit is kept or, when it changed the ids the replace drew from, fails it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.metadata.errors import MetadataChanged, NoSuchTable, SchemaMismatch
from lakecat.metadata.schema.types import StringType
from lakecat.metadata.table.replace import replaced

OLD = pa.schema([("id", pa.int64()), ("region", pa.string())])
NEW = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("day", pa.string())])


def old_rows() -> pa.Table:
    return pa.table({"id": [1, 2, 3], "region": ["eu", "eu", "us"]}, OLD)


def new_rows() -> pa.Table:
    return pa.table({"id": [10, 11], "amount": [1.5, 2.5], "day": ["mon", "tue"]}, NEW)


@pytest.fixture
def events(catalog: Catalog):
    table = catalog.create_table("db.events", OLD, partition_by=["region"])
    table.append(old_rows())
    return table


def test_replace_gives_new_schema_partitioning_and_rows_and_keeps_the_history(
    catalog: Catalog, events
) -> None:
    old_snapshot = events.current_snapshot()
    old_id_field = events.schema().find_field("id").field_id

    table = catalog.replace_table(
        "db.events", NEW, partition_by=["day"], properties={"owner": "etl"}, data=new_rows()
    )

    assert table.to_arrow().sort_by("id").to_pylist() == new_rows().to_pylist()
    assert table.schema().column_names == ["id", "amount", "day"]
    assert table.schema().find_field("id").field_id == old_id_field  # same name and type
    assert [f.name for f in table.spec().fields] == ["day"]
    assert table.properties["owner"] == "etl"
    snapshot = table.current_snapshot()
    assert snapshot.parent_snapshot_id is None
    assert snapshot.operation == "overwrite"
    assert [s.snapshot_id for s in table.snapshots()] == [
        old_snapshot.snapshot_id,
        snapshot.snapshot_id,
    ]
    # time travel still reads the old rows with the old schema
    assert table.to_arrow(snapshot_id=old_snapshot.snapshot_id).sort_by("id").to_pylist() == (
        old_rows().to_pylist()
    )
    reloaded = catalog.load_table("db.events")
    assert reloaded.metadata.table_uuid == events.metadata.table_uuid


def test_pyiceberg_reads_the_replaced_table(catalog: Catalog, events, warehouse: str) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog.replace_table("db.events", NEW, partition_by=["day"], data=new_rows())

    py = SqlCatalog(catalog.name, uri=catalog.uri, warehouse=catalog.warehouse)
    try:
        got = py.load_table("db.events").scan().to_arrow().sort_by("id")
    finally:
        py.engine.dispose()
    assert got.to_pylist() == new_rows().to_pylist()


def test_a_replace_without_rows_leaves_an_empty_table(catalog: Catalog, events) -> None:
    table = catalog.replace_table("db.events", NEW)

    assert table.current_snapshot() is None
    assert table.to_arrow().num_rows == 0
    assert len(table.snapshots()) == 1  # the old one, for time travel


def test_bad_rows_change_nothing(catalog: Catalog, events) -> None:
    before = events.metadata_location

    with pytest.raises(SchemaMismatch):
        catalog.replace_table("db.events", NEW, data=old_rows())

    assert catalog.load_table("db.events").metadata_location == before


def test_a_concurrent_append_stays_in_the_history(catalog: Catalog, events) -> None:
    replacement = catalog.plan_replace(events, NEW)
    target = replaced(events.metadata, replacement)
    other = catalog.load_table("db.events")
    appended = other.append(pa.table({"id": [4], "region": ["ap"]}, OLD)).snapshot_id
    from lakecat.catalog.write.writer import conform, write_files

    files = write_files(events.io, target, conform(target, new_rows()))
    events.commit_replace(replacement, files)

    table = catalog.load_table("db.events")
    assert table.to_arrow().num_rows == 2
    assert appended in {s.snapshot_id for s in table.snapshots()}


def test_a_concurrent_schema_change_fails_the_replace_and_deletes_its_files(
    catalog: Catalog, events
) -> None:
    replacement = catalog.plan_replace(events, NEW)
    target = replaced(events.metadata, replacement)
    from lakecat.catalog.write.writer import conform, write_files

    files = write_files(events.io, target, conform(target, new_rows()))
    other = catalog.load_table("db.events")
    with other.update_schema() as update:
        update.add_column("note", StringType())
    changed = other.metadata_location

    with pytest.raises(MetadataChanged):
        events.commit_replace(replacement, files)

    assert catalog.load_table("db.events").metadata_location == changed
    assert not any(events.io.exists(f.file_path) for f in files)


def test_create_or_replace_creates_a_missing_table(catalog: Catalog) -> None:
    with pytest.raises(NoSuchTable):
        catalog.replace_table("db.fresh", NEW)

    table = catalog.create_or_replace_table("db.fresh", NEW, data=new_rows())

    assert table.to_arrow().num_rows == 2


NESTED = pa.schema(
    [
        ("id", pa.int64()),
        ("info", pa.struct([("qty", pa.int32()), ("label", pa.string())])),
        ("tags", pa.list_(pa.string())),
        ("region", pa.string()),
    ]
)
NESTED_AGAIN = pa.schema(
    [
        ("id", pa.int64()),
        ("extra", pa.string()),
        ("info", pa.struct([("qty", pa.int64()), ("label", pa.string()), ("more", pa.float64())])),
        ("tags", pa.list_(pa.string())),
        ("props", pa.map_(pa.string(), pa.int32())),
        ("region", pa.int32()),  # a string before: cannot read the old values
    ]
)


def test_a_replace_keeps_the_ids_of_fields_at_the_same_place_at_any_depth_as_iceberg_java(
    catalog: Catalog,
) -> None:
    table = catalog.create_table("db.nested", NESTED)
    rows = pa.table(
        {"id": [1], "info": [{"qty": 3, "label": "a"}], "tags": [["x"]], "region": ["eu"]},
        NESTED,
    )
    table.append(rows)
    table.create_branch("before")
    ids = {table.schema().column_name(i): i for i in table.schema().field_ids()}
    assert ids == {
        "id": 1, "info": 2, "tags": 3, "region": 4,
        "info.qty": 5, "info.label": 6, "tags.element": 7,
    }  # fmt: skip

    table = catalog.replace_table("db.nested", NESTED_AGAIN)

    # TypeUtil.assignFreshIds(new, current, next): a struct's fields first, then their
    # types; a field at a known place keeps its id (qty's int promotes to long)
    ids = {table.schema().column_name(i): i for i in table.schema().field_ids()}
    assert ids == {
        "id": 1, "extra": 8, "info": 2, "tags": 3, "props": 9, "region": 10,
        "info.qty": 5, "info.label": 6, "info.more": 11, "tags.element": 7,
        "props.key": 12, "props.value": 13,
    }  # fmt: skip
    # the branch still at the old snapshot reads under the new schema: the nested values
    # are found by their ids; the old string region is not read as an int
    assert table.to_arrow(ref="before").to_pylist() == [
        {
            "id": 1,
            "extra": None,
            "info": {"qty": 3, "label": "a", "more": None},
            "tags": ["x"],
            "props": None,
            "region": None,
        }
    ]
