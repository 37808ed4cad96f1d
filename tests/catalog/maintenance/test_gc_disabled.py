"""``gc.enabled=false`` (Iceberg's flag for a table whose files may belong to other tables, such
as a snapshot made with add_files): nothing deletes its files. Snapshot expiry, orphan removal
and a purging drop refuse with a typed error and change nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.maintenance import expire_snapshots, remove_orphan_files
from lakecat.metadata.errors import ValidationError

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    with Catalog.embedded(tmp_path / "lake") as c:
        c.create_namespace("db")
        yield c


def test_nothing_deletes_the_files_of_a_table_without_gc(catalog: Catalog) -> None:
    table = catalog.create_table("db.shared", SCHEMA, properties={"gc.enabled": "false"})
    for i in range(3):
        table.append(pa.table({"id": [i]}, SCHEMA))
    table.delete("id = 0")
    files = sorted(info.location for info in table.io.list_prefix(table.location))

    with pytest.raises(ValidationError, match=r"gc\.enabled is false"):
        expire_snapshots(table, older_than="2999-01-01T00:00:00Z", retain_last=1)
    with pytest.raises(ValidationError, match=r"gc\.enabled is false"):
        remove_orphan_files(table, older_than="2999-01-01T00:00:00Z")
    with pytest.raises(ValidationError, match=r"gc\.enabled is false"):
        catalog.drop_table("db.shared", purge=True)

    assert len(table.refresh().snapshots()) == 4
    assert sorted(info.location for info in table.io.list_prefix(table.location)) == files
    catalog.drop_table("db.shared")  # dropping without purge leaves the files: allowed
    assert sorted(info.location for info in table.io.list_prefix(table.location)) == files


def test_gc_can_be_turned_back_on(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"gc.enabled": "false"})
    table.append(pa.table({"id": [1]}, SCHEMA))
    table.append(pa.table({"id": [2]}, SCHEMA))
    table.set_properties({"gc.enabled": "true"})
    result = expire_snapshots(table, older_than="2999-01-01T00:00:00Z", retain_last=1)
    assert len(result.expired_snapshot_ids) == 1
