"""Page-level pruning of the position search: files with a page index decode only the pages
that may hold a match, and find exactly the rows the whole-row-group read finds."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from counting_io import CountingIO
from hypothesis import given, settings
from hypothesis import strategies as st
from test_matching_positions import FILTERS, SCHEMA, expected, positions, rows

from lakecat.metadata.expressions import InclusiveMetricsEvaluator, bind, parse, to_arrow_filter
from lakecat.metadata.io import page_index
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.io.matching import matching_positions
from lakecat.metadata.io.parquet import write_data_file
from lakecat.metadata.io.thrift_compact import (
    BINARY,
    BOOL,
    I32,
    I64,
    LIST,
    STRUCT,
    ThriftError,
    TList,
    decode_struct,
    encode_struct,
)
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import UNPARTITIONED
from lakecat.metadata.schema.arrow import conform_to_schema, schema_to_arrow
from lakecat.metadata.schema.name_mapping import NameMapping
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import LongType, NestedField, StringType

PAGE_ROWS = 16


@pytest.fixture
def always_paged(monkeypatch):
    """The page index used for files of any size (the tests' files are small)."""
    monkeypatch.setattr(page_index, "worth_reading", lambda footer_bytes, rows: True)


@pytest.fixture
def paged_file(tmp_path) -> DataFile:
    # 1,000 rows in row groups of 128, pages of 16 rows: a page index of 8 pages per chunk
    return write_data_file(
        LocalFileIO(),
        str(tmp_path / "paged.parquet"),
        conform_to_schema(rows(), SCHEMA),
        schema=SCHEMA,
        spec=UNPARTITIONED,
        partition=(),
        properties={
            "write.parquet.row-group-limit": "128",
            "write.parquet.page-row-limit": str(PAGE_ROWS),
        },
    )


def footer_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    length = int.from_bytes(data[-8:-4], "little")
    return data[-8 - length : -8]


# -- the compact protocol ---------------------------------------------------------------------


def test_a_footer_pyarrow_wrote_decodes_and_encodes_to_the_same_bytes(paged_file):
    raw = footer_bytes(paged_file.file_path)
    decoded, end = decode_struct(raw)
    assert end == len(raw)
    assert encode_struct(decoded) == raw
    assert decoded[3] == (I64, 1000)  # num_rows
    names = [e[4][1] for e in decoded[2][1].items]
    assert names[1:3] == [b"id", b"name"]


_SCALARS = st.one_of(
    st.tuples(st.just(I32), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just(I64), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(BINARY), st.binary(max_size=40)),
    st.tuples(st.just(BOOL), st.booleans()),
)


def _structs(children):  # type: ignore[no-untyped-def]
    values = st.one_of(
        _SCALARS,
        st.tuples(st.just(STRUCT), children),
        st.builds(
            lambda items: (LIST, TList(I64, items)),
            st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20),
        ),
        st.builds(lambda items: (LIST, TList(BOOL, items)), st.lists(st.booleans(), max_size=20)),
        st.builds(lambda items: (LIST, TList(STRUCT, items)), st.lists(children, max_size=3)),
    )
    return st.dictionaries(st.integers(1, 300), values, max_size=6)


STRUCTS = st.recursive(st.dictionaries(st.integers(1, 300), _SCALARS, max_size=6), _structs)


@settings(max_examples=200, deadline=None)
@given(STRUCTS)
def test_any_struct_survives_an_encode_and_decode(value):
    encoded = encode_struct(value)
    assert decode_struct(encoded) == (value, len(encoded))


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_truncated_bytes_are_a_typed_error(paged_file, cut):
    raw = footer_bytes(paged_file.file_path)
    with pytest.raises(ThriftError):
        decode_struct(raw[:-cut])


# -- the rows found ---------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("text", FILTERS)
def test_positions_read_by_pages_are_those_of_the_matching_rows(
    always_paged, paged_file, text, threads
):
    got = positions(LocalFileIO(), paged_file, SCHEMA, text, threads=threads)
    assert got == expected(SCHEMA, text)


def test_only_the_pages_that_may_hold_a_key_are_read(always_paged, paged_file, monkeypatch):
    io = CountingIO()
    assert positions(io, paged_file, SCHEMA, "id IN (600, 601)") == [600, 601]
    paged = io.counter[0]
    monkeypatch.setattr(page_index, "worth_reading", lambda footer_bytes, rows: False)
    io = CountingIO()
    assert positions(io, paged_file, SCHEMA, "id IN (600, 601)") == [600, 601]
    whole_row_group = io.counter[0]
    decoded: list[int] = []
    real = page_index._frame

    def counting_frame(element, meta, dictionary, pages, rows):  # type: ignore[no-untyped-def]
        decoded.append(rows)
        return real(element, meta, dictionary, pages, rows)

    monkeypatch.setattr(page_index, "worth_reading", lambda footer_bytes, rows: True)
    monkeypatch.setattr(page_index, "_frame", counting_frame)
    assert positions(LocalFileIO(), paged_file, SCHEMA, "id IN (600, 601)") == [600, 601]
    assert decoded == [PAGE_ROWS]  # one page of one row group
    assert paged < whole_row_group * 3  # the footer and the index read again: small


def test_a_known_footer_length_reads_the_footer_in_one_request(paged_file):
    path = paged_file.file_path
    size = os.path.getsize(path)
    reads: list[tuple[int, int]] = []

    def read(offset: int, length: int) -> bytes:
        reads.append((offset, length))
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    two_reads = page_index.read_file_index(read, size)
    assert len(reads) == 2
    reads.clear()
    length = pq.ParquetFile(path).metadata.serialized_size
    one_read = page_index.read_file_index(read, size, length)

    assert reads == [(size - 8 - length, length + 8)]
    assert one_read == two_reads and one_read is not None
    assert page_index.read_file_index(read, size, length - 1) is None  # not this file's footer


def test_a_file_without_a_page_index_reads_its_row_groups_whole(always_paged, tmp_path):
    data = conform_to_schema(rows(), SCHEMA)
    path = str(tmp_path / "no-index.parquet")
    pq.write_table(data, path, row_group_size=128, write_page_index=False)
    f = DataFile(path, "PARQUET", (), data.num_rows, 0)
    for text in FILTERS:
        assert positions(LocalFileIO(), f, SCHEMA, text) == expected(SCHEMA, text), text


NULLABLE = Schema.of(
    NestedField(1, "k", LongType()),
    NestedField(2, "s", StringType()),
)


def _nullable_rows(n: int) -> pa.Table:
    # long runs of nulls (whole pages of them), a string column whose dictionary overflows
    # into plain pages, keys out of order so that page bounds overlap
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 400, n)
    k = [None if (i // 40) % 3 == 1 else int(v) for i, v in enumerate(keys)]
    s = [None if i % 97 < 30 else f"v{i:05d}-{'x' * (i % 13)}" for i in range(n)]
    return pa.table({"k": pa.array(k, pa.int64()), "s": pa.array(s, pa.string())})


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize(
    "text",
    [
        "k = 17",
        "k IN (3, 250, 399)",
        "k IS NULL",
        "k IS NOT NULL AND k < 5",
        "s = 'v00500-xx'",
        "s IS NULL",
        "s > 'v01990'",
        "k = 17 OR s = 'v00031-xxxxx'",
        "k < 0",
    ],
)
def test_nulls_dictionaries_and_data_page_versions_read_by_pages(
    always_paged, tmp_path, version, text
):
    n = 2000
    data = conform_to_schema(_nullable_rows(n), NULLABLE)
    path = str(tmp_path / f"v{version}.parquet")
    pq.write_table(
        data.cast(schema_to_arrow(NULLABLE)),
        path,
        row_group_size=700,
        max_rows_per_page=50,
        data_page_version=version,
        dictionary_pagesize_limit=400,  # the string dictionary overflows: plain pages follow
        write_page_index=True,
        compression="zstd",
    )
    f = DataFile(path, "PARQUET", (), n, 0)
    got = positions(LocalFileIO(), f, NULLABLE, text, threads=2)
    numbered = data.append_column("pos", pa.array(range(n), pa.int64()))
    want = numbered.filter(to_arrow_filter(bind(NULLABLE, parse(text)))).column("pos")
    assert got == want.to_pylist()


def test_the_page_index_is_read_only_where_the_rows_repay_the_footer(tmp_path, monkeypatch):
    assert page_index.worth_reading(6_000, 10_000_000)  # a big file, a small footer
    assert not page_index.worth_reading(2_000, 1_000)  # a small file
    assert not page_index.worth_reading(264_000, 200_000)  # 100 columns in 20 row groups
    # a wide file of small row groups: its footer is never decoded again
    n = 200_000
    wide = pa.table({f"c{i}": pa.array(range(i, n + i), pa.int64()) for i in range(100)})
    path = str(tmp_path / "wide.parquet")
    pq.write_table(wide, path, row_group_size=10_000, write_page_index=True)
    schema = Schema.of(*(NestedField(i + 1, f"c{i}", LongType()) for i in range(100)))
    f = DataFile(path, "PARQUET", (), n, 0)

    def never(*args):  # type: ignore[no-untyped-def]
        raise AssertionError("the footer was decoded")

    monkeypatch.setattr(page_index, "read_file_index", never)
    monkeypatch.setattr("lakecat.metadata.io.parquet.read_file_index", never)
    bound = bind(schema, parse("c0 = 123456"))
    found = matching_positions(
        LocalFileIO(),
        f,
        filter_schema=schema,
        row_filter=to_arrow_filter(bound),
        row_group_filter=InclusiveMetricsEvaluator(schema, bound),
        name_mapping=NameMapping.of_schema(schema),
    )
    assert found.to_pylist() == [123456]
