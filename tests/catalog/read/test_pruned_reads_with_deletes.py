"""A filtered read of files with deletes to apply skips the row groups, and the pages, that the
filter rules out, and still numbers every row by its position in the file: the rows (and on a
v3 table their row ids) are those of a read of every row, deletes applied, then filtered."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.read.deletes import DeleteReader
from lakecat.metadata.expressions import bind, parse, to_arrow_filter
from lakecat.metadata.io import page_index

ROWS = 5_000
FILTERS = [
    "id = 1234",
    "id BETWEEN 100 AND 180",
    "id IN (3, 2500, 4999, 7000)",
    "k = 7",
    "id < 0",
    "s IS NULL AND id > 4000",
    "id >= 4990 OR id < 5",
    "s = 'x17' AND id < 2000",
]
COLUMNS = ["id", "k", "s", "_row_id"]


@pytest.fixture
def always_paged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page_index, "worth_reading", lambda footer_bytes, rows: True)


@pytest.fixture
def framed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row count of each run of pages decoded on its own (framed as a file)."""
    counts: list[int] = []
    real = page_index._frame

    def counting(*args):  # type: ignore[no-untyped-def]
        counts.append(args[-1])
        return real(*args)

    monkeypatch.setattr(page_index, "_frame", counting)
    return counts


@pytest.fixture(params=["2", "3"])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    lake = Catalog.embedded(tmp_path / "lake")
    lake.create_namespace("db")
    ids = list(range(ROWS))
    t = lake.create_table(
        "db.t",
        pa.schema([("id", pa.int64()), ("k", pa.int32()), ("s", pa.string())]),
        properties={
            "format-version": request.param,
            "write.delete.mode": "merge-on-read",
            "write.update.mode": "merge-on-read",
            "write.parquet.row-group-limit": "1000",  # five row groups
            "write.parquet.page-row-limit": "50",  # of twenty pages each
        },
    )
    t.append(
        pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "k": pa.array([(i * 37) % 100 for i in ids], pa.int32()),
                "s": [None if i % 9 == 0 else f"x{i % 50}" for i in ids],
            }
        )
    )
    t.delete("id IN (1234, 101, 150, 4999, 4995, 2)")  # v2: a position delete file; v3: a DV
    spread = ", ".join(str(i) for i in range(7, ROWS, 43))
    t.delete(f"id IN ({spread})")  # another, deleting from most pages
    t.update({"k": 999}, "id IN (120, 121)")  # merge-on-read: deleted, written again
    return t


def reference(t: Table, text: str) -> list[dict[str, object]]:
    """Every row read (deletes applied, nothing pruned), then filtered."""
    columns = COLUMNS if t.metadata.format_version >= 3 else COLUMNS[:3]
    everything = t.scan(columns=columns).to_arrow()
    bound = bind(t.schema(), parse(text))
    rows = everything.filter(to_arrow_filter(bound)).to_pylist()
    return sorted(rows, key=lambda r: (r["id"], r["k"]))


@pytest.mark.parametrize("text", FILTERS)
def test_a_filtered_read_of_files_with_deletes_gives_the_rows_a_whole_read_gives(
    always_paged: None, table: Table, text: str
) -> None:
    columns = COLUMNS if table.metadata.format_version >= 3 else COLUMNS[:3]
    got = table.scan(text, columns=columns).to_arrow().to_pylist()
    assert sorted(got, key=lambda r: (r["id"], r["k"])) == reference(table, text)


def test_a_lookup_decodes_one_page_of_one_row_group(
    always_paged: None, table: Table, framed: list[int]
) -> None:
    assert table.scan("id = 3333").to_arrow().column("id").to_pylist() == [3333]
    # the data file's one page of 50 rows, per column read (id, k, s)
    assert framed and set(framed) == {50} and len(framed) == 3


def test_positions_of_a_pruned_read_are_the_rows_positions_in_the_file(
    always_paged: None, table: Table
) -> None:
    scan = table.scan()
    plan = scan.plan()
    [data] = [f for f in plan.files if f.record_count == ROWS]
    reader = DeleteReader(table.io, table.schema())
    bound = bind(table.schema(), parse("id BETWEEN 2000 AND 2100 OR id = 4321"))
    batches = reader.read(
        data,
        plan.deletes[data.file_path],
        projected=table.schema(),
        row_filter=bound,
        position_column="pos",
    )
    got = pa.Table.from_batches(list(batches))
    # the file holds id i at position i
    assert got.column("id").to_pylist() == got.column("pos").to_pylist()
    assert 2028 not in got.column("id").to_pylist() and 2000 in got.column("id").to_pylist()
    assert pc.max(got.column("id")).as_py() == 4321


@pytest.mark.parametrize("text", FILTERS)
def test_a_streamed_file_without_deletes_reads_only_the_pages_that_may_match(
    always_paged: None, tmp_path: Path, text: str, framed: list[int]
) -> None:
    lake = Catalog.embedded(tmp_path / "lake")
    lake.create_namespace("db")
    t = lake.create_table(
        "db.t",
        pa.schema([("id", pa.int64()), ("k", pa.int32()), ("s", pa.string())]),
        properties={"write.parquet.row-group-limit": "1000", "write.parquet.page-row-limit": "50"},
    )
    ids = list(range(ROWS))
    t.append(
        pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "k": pa.array([(i * 37) % 100 for i in ids], pa.int32()),
                "s": [None if i % 9 == 0 else f"x{i % 50}" for i in ids],
            }
        )
    )
    # batches of 200 rows: the 5,000-row file is streamed, not read whole with others
    got = t.scan(text).to_arrow_batch_reader(batch_size=200).read_all()
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == reference(t, text)
    if text in ("id = 1234", "id BETWEEN 100 AND 180"):
        assert framed and sum(framed) <= 3 * 200
