"""A table whose data files were imported without field ids (Iceberg's ``add_files``,
``snapshot``, ``migrate``) is read, changed and compacted through its name mapping
(``schema.name-mapping.default``): the mapped old names find the renamed columns everywhere
lakecat reads rows (scans, merge-on-read positions, copy-on-write rewrites, compaction, the
change feed, conflict checks). Iceberg Java's own such table is in the interop fixtures
(``mapped_import``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.engine import Intent, OpKind
from lakecat.catalog.maintenance import rewrite_data_files
from lakecat.catalog.read.incremental import changes
from lakecat.metadata.manifests.datafile import DataFile

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("note", pa.string())])
MAPPING = json.dumps(
    [
        {"field-id": 1, "names": ["id"]},
        {"field-id": 2, "names": ["cat", "category"]},
        {"field-id": 3, "names": ["note"]},
    ]
)


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    with Catalog.embedded(tmp_path / "lake") as c:
        c.create_namespace("db")
        yield c


def imported(catalog: Catalog, tmp_path: Path, properties: dict[str, str]) -> Table:
    """A table with one plain Parquet file (ids 0..9, ``category`` the old name of ``cat``,
    an unmapped ``junk`` column) added as it is, and one file lakecat wrote (ids 10..11)."""
    table = catalog.create_table(
        "db.imported", SCHEMA, properties={"schema.name-mapping.default": MAPPING, **properties}
    )
    path = tmp_path / "import" / "part-0.parquet"
    path.parent.mkdir()
    pq.write_table(
        pa.table(
            {
                "id": pa.array(range(10), pa.int64()),
                "category": [None if i % 3 == 0 else f"c{i % 3}" for i in range(10)],
                "note": [f"n{i}" for i in range(10)],
                "junk": list(range(10)),
            }
        ),
        path,
    )
    plain = DataFile(str(path), "PARQUET", (), 10, path.stat().st_size)
    table.commit_intent(Intent(kind=OpKind.APPEND, added_files=(plain,)))
    table.append(pa.table({"id": [10, 11], "cat": ["c1", "c2"], "note": ["n10", "n11"]}, SCHEMA))
    return table


def rows(table: Table, text: str | None = None) -> list[tuple[object, ...]]:
    got = table.refresh().scan(text).to_arrow()
    return sorted(zip(*(got.column(c).to_pylist() for c in ("id", "cat", "note")), strict=True))


def expected(
    without: frozenset[int] = frozenset(), notes: dict[int, str] | None = None
) -> list[tuple[object, ...]]:
    """The table's rows: ``cat`` is None for ids 0, 3, 6, 9, else c<id % 3>."""
    notes = notes or {}
    return [
        (i, None if i % 3 == 0 else f"c{i % 3}", notes.get(i, f"n{i}"))
        for i in range(12)
        if i not in without
    ]


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_the_mapped_columns_are_read_filtered_and_changed(catalog, tmp_path, mode) -> None:
    modes = {f"write.{op}.mode": mode for op in ("delete", "update", "merge")}
    table = imported(catalog, tmp_path, modes)
    assert rows(table) == expected()
    assert rows(table, "cat = 'c1'") == [r for r in expected() if r[1] == "c1"]

    table.delete("cat IS NULL")  # rows of the imported file, found by the mapped name
    table.update({"note": "u"}, "cat = 'c2'")
    gone = frozenset({0, 3, 6, 9})
    notes = {i: "u" for i in (2, 5, 8, 11)}
    assert rows(table) == expected(gone, notes)

    feed = changes(table, from_snapshot_id=table.snapshots()[1].snapshot_id)
    assert sorted(feed.removed.column("cat").to_pylist(), key=str) == [None] * 4 + ["c2"] * 4

    rewrite_data_files(table)
    assert rows(table) == expected(gone, notes)
