"""Streaming reads: batches as they are read, bounded read-ahead, materialising only on demand.

``Scan.to_batches`` yields record batches of at most ``batch_size`` rows in planning order,
never a whole file first; at most ``max_read_ahead_bytes`` of batches are read ahead of the
consumer; ``to_arrow`` fails with :class:`ResultTooLarge` (a LakecatError and a MemoryError)
when the rows pass its budget, and ``to_batches`` of the same scan does not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.read.memory import ResultTooLarge, available_memory, materialise_budget
from lakecat.catalog.read.read_ahead import Unit, read_ahead, read_ahead_sized
from lakecat.metadata.errors import LakecatError, ValidationError
from lakecat.metadata.io import local_path, parquet
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.schema.types import LongType


@pytest.fixture
def lake(sqlite_url: str, warehouse: str) -> Iterator[Catalog]:
    catalog = Catalog(sqlite_url, warehouse=warehouse)
    catalog.create_namespace("db")
    yield catalog
    catalog.close()


def ids(n: int, start: int = 0) -> pa.Table:
    values = list(range(start, start + n))
    return pa.table({"id": pa.array(values, pa.int64()), "s": [f"v{i}" for i in values]})


@pytest.fixture
def big_file(lake: Catalog) -> Table:
    """One file of 100,000 rows in 10 row groups, then three small files."""
    t = lake.create_table(
        "db.big", ids(1).schema, properties={"write.parquet.row-group-limit": "10000"}
    )
    t.append(ids(100_000))
    for k in range(3):
        t.append(ids(10, 100_000 + 10 * k))
    return t


def test_batches_hold_at_most_batch_size_rows_and_come_in_planning_order(big_file: Table):
    scan = big_file.scan()
    batches = list(scan.to_batches(batch_size=7_000))
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert max(b.num_rows for b in batches) <= 7_000
    expected = [
        i
        for f in scan.plan().files
        for i in read_data_file(big_file.io, f, projected=big_file.schema())
        .column("id")
        .to_pylist()
    ]
    assert [i for b in batches for i in b.column("id").to_pylist()] == expected


def test_a_large_file_is_yielded_before_it_is_read_whole(
    big_file: Table, monkeypatch: pytest.MonkeyPatch
):
    """The first batch of a 100,000-row file arrives when a few of its 100 batches are read,
    and reading stops with the consumer."""
    pulled = []
    iter_raw = parquet.OpenDataFile.iter_raw

    def counting(self: parquet.OpenDataFile, batch_size: int) -> Iterator[pa.RecordBatch]:
        for raw in iter_raw(self, batch_size):
            pulled.append(raw.num_rows)
            yield raw

    monkeypatch.setattr(parquet.OpenDataFile, "iter_raw", counting)
    batches = big_file.scan().to_batches(batch_size=1_000, max_read_ahead_bytes=1)
    first = next(b for b in batches if b.num_rows == 1_000)
    assert first.column("id").to_pylist() == list(range(1_000))
    assert 1 <= len(pulled) <= 3
    batches.close()
    assert len(pulled) <= 3


def test_read_ahead_never_holds_more_than_the_cap() -> None:
    """Units of 1 MiB batches under a 3 MiB cap: while the consumer sleeps, the bytes read
    and not consumed stay within the cap (plus the one step the head may always take)."""
    mib = 1 << 20
    produced = 0
    consumed = 0
    peak = 0
    lock = threading.Lock()

    def unit(n: int) -> Iterator[pa.RecordBatch]:
        nonlocal produced, peak
        for _ in range(n):
            batch = pa.record_batch({"b": pa.array([b"x" * mib], pa.binary())})
            with lock:
                produced += batch.nbytes
                peak = max(peak, produced - consumed)
            yield batch

    units = [Unit(unit(4), mib) for _ in range(5)]
    for batch in read_ahead(units, threads=4, max_bytes=3 * mib):
        time.sleep(0.005)
        with lock:
            consumed += batch.nbytes
    assert consumed == produced > 0
    assert peak <= 4 * mib + 64, peak


def test_read_ahead_gives_each_batch_with_its_size_in_order() -> None:
    """The sizes the window counted each batch with (measured once, on the reading thread)
    come with the batches, in the units' order."""
    units = [
        Unit(iter([pa.record_batch({"v": pa.array(range(n * k), pa.int64())}) for k in (1, 2)]), 1)
        for n in (3, 5, 7)
    ]
    got = list(read_ahead_sized(units, threads=3, max_bytes=1 << 20))
    assert [b.num_rows for b, _ in got] == [3, 6, 5, 10, 7, 14]
    assert [size for _, size in got] == [b.nbytes for b, _ in got]


def test_a_consumer_that_stops_early_leaves_no_reading_thread(big_file: Table):
    before = {t.ident for t in threading.enumerate()}
    batches = big_file.scan().to_batches(batch_size=100)
    next(batches)
    batches.close()
    left = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert left == []


def test_the_batch_reader_streams_the_same_rows(big_file: Table):
    scan = big_file.scan("id >= 99990")
    reader = scan.to_arrow_batch_reader(batch_size=4)
    assert isinstance(reader, pa.RecordBatchReader)
    table = reader.read_all()
    assert sorted(table.column("id").to_pylist()) == list(range(99_990, 100_030))
    assert max(b.num_rows for b in table.to_batches()) <= 4
    assert table.schema == scan.to_arrow().schema


def test_to_arrow_of_too_much_fails_with_a_typed_error_and_streaming_does_not(big_file: Table):
    scan = big_file.scan()
    with pytest.raises(ResultTooLarge) as caught:
        scan.to_arrow(max_bytes=100_000)
    assert isinstance(caught.value, LakecatError) and isinstance(caught.value, MemoryError)
    assert caught.value.read_bytes > caught.value.budget_bytes == 100_000
    assert sum(b.num_rows for b in scan.to_batches(max_read_ahead_bytes=100_000)) == 100_030
    assert scan.to_arrow(max_bytes=100_000, limit=10).num_rows == 10


def test_to_arrow_keeps_the_batches_as_its_chunks(big_file: Table):
    """Materialising does not copy: the table's chunks are the batches read."""
    scan = big_file.scan()
    table = scan.to_arrow()
    assert table.num_rows == 100_030
    assert table.column("id").num_chunks == len(list(scan.to_batches()))


def test_the_materialise_budget_is_a_share_of_the_available_memory() -> None:
    available = available_memory()
    if available is None:
        pytest.skip("this platform says nothing about available memory")
    budget = materialise_budget()
    assert budget is not None and 0 < budget < available


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_batch_size_and_read_ahead_must_be_positive_integers(big_file: Table, bad: object):
    with pytest.raises(ValidationError):
        big_file.scan().to_batches(batch_size=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        big_file.scan().to_batches(max_read_ahead_bytes=bad)  # type: ignore[arg-type]


def test_many_small_files_of_two_schemas_read_in_runs(lake: Catalog):
    """Files before and after a rename and a promotion (two physical schemas) interleaved by
    planning order; every row read once, in the right column."""
    t = lake.create_table("db.small", pa.schema([("id", pa.int32()), ("s", pa.string())]))
    for k in range(30):
        t.append(pa.table({"id": pa.array([k], pa.int32()), "s": [f"a{k}"]}))
    with t.update_schema() as u:
        u.rename_column("s", "t")
        u.update_column("id", field_type=LongType())
    for k in range(30, 60):
        t.append(pa.table({"id": pa.array([k], pa.int64()), "t": [f"a{k}"]}))
    got = t.refresh().scan("id >= 20 AND id < 40").to_arrow()
    assert sorted(zip(got["id"].to_pylist(), got["t"].to_pylist(), strict=True)) == [
        (k, f"a{k}") for k in range(20, 40)
    ]
    assert got.schema.field("id").type == pa.int64()


def test_small_files_lacking_a_partition_column_each_keep_their_own_value(lake: Catalog):
    """Files read in one run whose identity partition column is missing (imported files) are
    resolved per value: each row gets its own file's partition value."""
    t = lake.create_table(
        "db.parts", pa.schema([("id", pa.int64()), ("cat", pa.string())]), partition_by=["cat"]
    )
    cats = ["x", "y", "x", "z", "y"]
    for k, cat in enumerate(cats):
        t.append(pa.table({"id": [2 * k, 2 * k + 1], "cat": [cat, cat]}))
    for f in t.scan().plan_files():
        path = local_path(f.file_path)
        assert path is not None
        pq.write_table(pq.read_table(path).select(["id"]), path)
    got = t.scan().to_arrow()
    assert sorted(zip(got["id"].to_pylist(), got["cat"].to_pylist(), strict=True)) == [
        (i, cats[i // 2]) for i in range(10)
    ]
    assert sorted(t.scan("cat = 'y'").to_arrow()["id"].to_pylist()) == [2, 3, 8, 9]
