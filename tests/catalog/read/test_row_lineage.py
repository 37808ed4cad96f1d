"""Row lineage columns (``_row_id``, ``_last_updated_sequence_number``) on a table without
lineage, and first-row-id inheritance from a manifest (Iceberg Java's v3 tables are checked in
``tests/interop/test_writes_on_tables_with_deletes.py``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.metadata.manifests import ManifestContent, Status
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.schema.lineage import fill_lineage


@pytest.fixture
def catalog(sqlite_url: str, warehouse: str) -> Catalog:
    lake = Catalog(sqlite_url, warehouse=warehouse)
    lake.create_namespace("db")
    return lake


def test_a_v2_table_reads_its_lineage_columns_as_nulls_after_the_others(
    catalog: Catalog,
) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    table.append(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}))
    got = table.scan(
        "id >= 2", columns=["_last_updated_sequence_number", "id", "_row_id"]
    ).to_arrow()
    assert got.column_names == ["id", "_last_updated_sequence_number", "_row_id"]
    assert got.column("id").to_pylist() == [2, 3]
    assert got.column("_row_id").null_count == 2
    assert got.column("_last_updated_sequence_number").null_count == 2


def test_data_files_without_a_first_row_id_inherit_one_from_their_manifest(
    catalog: Catalog,
) -> None:
    """The spec's example: files without an id get the manifest's first_row_id plus the
    record counts of the earlier such files; files with one keep it; deleted ones are skipped."""
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    for n in (3, 5, 2):
        table.append(pa.table({"id": list(range(n))}))
    table.set_properties({"commit.manifest.min-count-to-merge": "2"})
    table.append(pa.table({"id": [9]}))  # merges the manifests into one
    listing = read_manifest_list(table.io, table.current_snapshot().manifest_list)  # type: ignore[union-attr]
    data = [m for m in listing if m.content is ManifestContent.DATA]
    assert len(data) == 1
    manifest = data[0]
    specs, schema = table.metadata.specs_by_id(), table.schema()
    plain = read_manifest(table.io, manifest, specs=specs, schema=schema)
    assert all(e.data_file.first_row_id is None for e in plain)

    from dataclasses import replace

    with_ids = replace(manifest, first_row_id=1000)
    inherited = read_manifest(table.io, with_ids, specs=specs, schema=schema)
    live = [e for e in inherited if e.status is not Status.DELETED]
    expected, next_id = [], 1000
    for e in live:
        expected.append(next_id)
        next_id += e.data_file.record_count
    assert [e.data_file.first_row_id for e in live] == expected
    cached = ManifestCache().read(table.io, with_ids, specs=specs, schema=schema)
    assert [e.data_file.first_row_id for e in cached if e.status is not Status.DELETED] == expected


def test_stored_lineage_values_win_and_nulls_are_assigned() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "_row_id": pa.array([None, 77, None], pa.int64()),
            "_last_updated_sequence_number": pa.array([5, None, None], pa.int64()),
        }
    )
    filled = fill_lineage(
        batch, pa.array([4, 5, 6], pa.int64()), first_row_id=100, sequence_number=9
    )
    assert filled.column(0).to_pylist() == [104, 77, 106]
    assert filled.column(1).to_pylist() == [5, 9, 9]
