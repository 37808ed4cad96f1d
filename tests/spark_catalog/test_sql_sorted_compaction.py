"""``CALL lake.system.rewrite_data_files`` with Iceberg's sort strategy (``strategy =>
'sort'``, ``sort_order``), and ``lk.compact(..., sort_by=...)``: each partition with a file to
rewrite is rewritten whole, its rows sorted by Spark in the group's task, so that every new
file is sorted and the files of a partition do not overlap; the rows and their lineage stay."""

from __future__ import annotations

import itertools
import struct
from typing import Any

import pyarrow.parquet as pq
import pytest
from small_pages import ordinary_file_sizes

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io import local_path
from lakecat.metadata.partitioning.transforms import BucketTransform
from lakecat.metadata.schema.types import LongType
from lakecat.spark_ext import compact, register

pytestmark = pytest.mark.spark

# 2,000 rows over two regions in four INSERTs, each of ids spread over the whole range: small
# files whose id ranges overlap, at least 4 per region
INSERTS = [
    "SELECT id, IF(id DIV 4 % 2 = 0, 'eu', 'us') AS region, id * 1.0 AS amount "
    f"FROM range({k}, 2000, 4, 1)"
    for k in range(4)
]


@pytest.fixture
def lake_t(lake: Any) -> Any:
    lake.sql(
        "CREATE TABLE lake.db.t (id bigint, region string, amount double) "
        "PARTITIONED BY (region) TBLPROPERTIES ('format-version' = '3')"
    )
    for rows in INSERTS:
        lake.sql(f"INSERT INTO lake.db.t {rows}")
    return lake


def file_ids(table: Any) -> dict[str, list[list[int]]]:
    """Each region's files, as their ids in file order."""
    out: dict[str, list[list[int]]] = {}
    for f in table.refresh().scan().plan_files():
        ids = pq.read_table(local_path(f.file_path), columns=["id"]).column("id").to_pylist()
        out.setdefault(f.partition[0], []).append(ids)
    return out


def overlapping(files: list[list[int]]) -> bool:
    ranges = sorted((min(ids), max(ids)) for ids in files)
    return any(a[1] >= b[0] for a, b in itertools.pairwise(ranges))


def lineage(lake: Any) -> list[tuple[int, int]]:
    return sorted(tuple(r) for r in lake.sql("SELECT id, _row_id FROM lake.db.t"))


@ordinary_file_sizes
def test_a_sort_order_sorts_each_partition_s_new_files_without_overlap(lake_t: Any) -> None:
    lake = lake_t
    table = lake.catalog.load_table("db.t")
    assert all(overlapping(files) for files in file_ids(table).values())
    before = lineage(lake)
    # every file is small (under 75% of the target), and a partition's rows fill several
    largest = max(f.file_size_in_bytes for f in table.scan().plan_files())
    target = int(largest * 1.4)

    [row] = lake.sql(
        "CALL lake.system.rewrite_data_files(table => 'db.t', strategy => 'sort', "
        "sort_order => 'id DESC NULLS LAST', "
        f"options => map('target-file-size-bytes', '{target}'))"
    )

    assert row.rewritten_data_files_count == 8 and row.failed_data_files_count == 0
    regions = file_ids(table)
    assert all(len(files) > 1 for files in regions.values())  # several files per partition
    for files in regions.values():
        assert all(ids == sorted(ids, reverse=True) for ids in files)
        assert not overlapping(files)
    assert table.refresh().current_snapshot().operation == "replace"
    assert lineage(lake) == before  # the same rows, with their row ids
    # id DESC is none of the table's sort orders: the files record none
    assert {f.sort_order_id for f in table.scan().plan_files()} == {None}


def test_the_sort_strategy_sorts_by_the_table_s_order_and_records_it(lake_t: Any) -> None:
    lake = lake_t
    lake.sql("ALTER TABLE lake.db.t WRITE LOCALLY ORDERED BY amount")
    table = lake.catalog.load_table("db.t")

    lake.sql("CALL lake.system.rewrite_data_files('db.t', 'sort')")

    for files in file_ids(table).values():
        assert len(files) == 1 and files[0] == sorted(files[0])
    order = table.refresh().sort_order()
    assert {f.sort_order_id for f in table.scan().plan_files()} == {order.order_id}
    # a second run finds every partition sorted in the table's order: nothing to do
    [again] = lake.sql("CALL lake.system.rewrite_data_files('db.t', 'sort')")
    assert again.rewritten_data_files_count == 0


def test_a_sort_order_with_a_transform_is_computed_by_the_catalog_s_function(
    lake_t: Any,
) -> None:
    lake = lake_t
    table = lake.catalog.load_table("db.t")

    lake.sql(
        "CALL lake.system.rewrite_data_files(table => 'db.t', "
        "sort_order => 'bucket(4, id), id DESC', options => map('min-input-files', '2'))"
    )

    bucket = BucketTransform(4)
    for [ids] in file_ids(table).values():
        keys = [(bucket.apply(LongType(), i), -i) for i in ids]
        assert keys == sorted(keys)
    assert lake.sql("SELECT count(*), sum(id) FROM lake.db.t")[0] == (2000, 1999000)


def test_lk_compact_sorts_by_columns(lake_t: Any) -> None:
    lake = lake_t
    table = lake.catalog.load_table("db.t")

    register(lake.spark, catalog=lake.catalog, format_name="lakecat_sorting")

    result = compact(lake.spark, "db.t", sort_by=["amount desc"], format_name="lakecat_sorting")

    assert result.groups_committed == 2
    for [ids] in file_ids(table).values():
        assert ids == sorted(ids, reverse=True)


def test_lk_compact_takes_the_zorder_sizes_with_a_zorder_only(lake_t: Any) -> None:
    lake = lake_t
    location = lake.catalog.load_table("db.t").metadata_location
    for sizes in ({"zorder_max_output_size": 4}, {"zorder_var_length_contribution": 2}):
        with pytest.raises(ValidationError, match="apply to a zorder sort only"):
            compact(lake.spark, "db.t", **sizes)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="var-length-contribution must be a positive int"):
        compact(lake.spark, "db.t", zorder=["id"], zorder_var_length_contribution=0)
    assert lake.catalog.load_table("db.t").metadata_location == location


def ordered_bytes(value: int | float | str | None) -> bytes:
    """A value's Z-order bytes as Iceberg's ZOrderByteUtils makes them (the test's oracle)."""
    if value is None:
        return bytes(8)
    if isinstance(value, str):
        return value.encode()[:8].ljust(8, b"\0")
    if isinstance(value, float):
        (bits,) = struct.unpack(">q", struct.pack(">d", value))
        bits ^= (bits >> 63) | -(2**63)
        return struct.pack(">q", bits)
    return struct.pack(">Q", (value ^ 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF)


def interleaved(
    *values: int | float | str | None, var_length: int = 8, max_size: int | None = None
) -> bytes:
    """Iceberg's ZOrderByteUtils.interleaveBits of the values' bytes (a string's first
    ``var_length``), cut at ``max_size`` bytes; a column out of bytes is skipped."""
    columns = [
        (v or "").encode()[:var_length].ljust(var_length, b"\0")
        if isinstance(v, str) or (v is None and var_length != 8)
        else ordered_bytes(v)
        for v in values
    ]
    longest = max(len(c) for c in columns)
    bits = [
        (c[i // 8] >> (7 - i % 8)) & 1
        for i in range(longest * 8)
        for c in columns
        if i // 8 < len(c)
    ]
    out = bytes(
        sum(bit << (7 - j) for j, bit in enumerate(bits[k : k + 8])) for k in range(0, len(bits), 8)
    )
    return out if max_size is None else out[:max_size]


def test_the_zorder_function_interleaves_iceberg_s_ordered_bytes(lake: Any) -> None:
    cases = [
        (7, -3.5, "abc"),
        (-(2**63), 0.0, "a longer text"),
        (None, float("-inf"), None),
    ]
    for a, b, c in cases:
        literal = ", ".join(
            f"CAST({'NULL' if v is None else repr(v)} AS {t})"
            for v, t in ((a, "bigint"), (b, "double"), (c, "string"))
        ).replace("-inf", "'-Infinity'")
        [[got]] = lake.sql(f"SELECT lake.system.zorder({literal})")
        assert bytes(got) == interleaved(a, b, c), (a, b, c)
    # a NULL literal (void) is a null of any type: zeros
    [[got]] = lake.sql("SELECT lake.system.zorder(NULL, CAST(7 AS bigint))")
    assert bytes(got) == interleaved(None, 7)


def test_zorder_bytes_takes_iceberg_s_two_sizes(lake: Any) -> None:
    """``zorder_bytes(var_length_contribution, max_output_size, ...)``: a string counts with
    that many bytes, and the interleaved value is cut at that many."""
    for var_length, max_size, a, c in (
        (2, 5, 7, "abc"),
        (1, 64, -3, "zz"),
        (12, 10, 2**40, "a longer text"),
        (3, 4, None, None),
    ):
        literal = f"CAST({'NULL' if a is None else a} AS bigint), "
        literal += f"CAST({'NULL' if c is None else repr(c)} AS string)"
        [[got]] = lake.sql(f"SELECT lake.system.zorder_bytes({var_length}, {max_size}, {literal})")
        want = interleaved(a, c, var_length=var_length, max_size=max_size)
        assert bytes(got) == want, (var_length, max_size, a, c)
    [[default]] = lake.sql("SELECT lake.system.zorder_bytes(8, 2147483647, 7L, 'abc')")
    assert bytes(default) == interleaved(7, "abc")
    for bad in ("0, 4", "2, -1", "CAST(NULL AS int), 4"):
        with pytest.raises(Exception, match="must be a positive int"):
            lake.sql(f"SELECT lake.system.zorder_bytes({bad}, 7L)")
    for bad in ("7L, 'abc'", "NULL, 4, 7L", "2, 4"):
        with pytest.raises(Exception, match=r"int values first|at least one column"):
            lake.sql(f"SELECT lake.system.zorder_bytes({bad})")


def test_a_zorder_sorts_each_partition_s_rows_by_their_z_values(lake_t: Any) -> None:
    lake = lake_t
    table = lake.catalog.load_table("db.t")
    before = lineage(lake)

    [row] = lake.sql(
        "CALL lake.system.rewrite_data_files(table => 'db.t', "
        "sort_order => 'zorder(region, id, amount)', "  # region: an identity partition
        "options => map('min-input-files', '2'))"
    )

    assert row.rewritten_data_files_count == 8
    for f in table.refresh().scan().plan_files():
        got = pq.read_table(local_path(f.file_path), columns=["id", "amount"]).to_pylist()
        keys = [interleaved(r["id"], r["amount"]) for r in got]
        assert keys == sorted(keys)
        assert f.sort_order_id is None
    assert lineage(lake) == before


def test_a_zorder_with_iceberg_s_sizes_sorts_by_the_cut_values(lake_t: Any) -> None:
    lake = lake_t
    table = lake.catalog.load_table("db.t")

    [row] = lake.sql(
        "CALL lake.system.rewrite_data_files(table => 'db.t', sort_order => 'zorder(id, amount)', "
        "options => map('min-input-files', '2', 'max-output-size', '15'))"
    )

    assert row.rewritten_data_files_count == 8
    for f in table.refresh().scan().plan_files():
        got = pq.read_table(local_path(f.file_path), columns=["id", "amount"]).to_pylist()
        keys = [interleaved(r["id"], r["amount"], max_size=15) for r in got]
        assert keys == sorted(keys)
    assert lake.sql("SELECT count(*), sum(id) FROM lake.db.t")[0] == (2000, 1999000)


BAD = [
    ("'db.t', strategy => 'sort'", "ValidationError", "the table has none"),
    ("'db.t', strategy => 'shuffle'", "ValidationError", "only binpack or sort"),
    ("'db.t', strategy => 'binpack', sort_order => 'id'", "ValidationError", "does not sort"),
    ("'db.t', sort_order => 'zorder(id), amount'", "ValidationError", "cannot mix"),
    ("'db.t', sort_order => 'zorder(region)'", "ValidationError", "identity partition"),
    ("'db.t', sort_order => 'zorder(nope)'", "UnknownColumn", "nope"),
    ("'db.t', sort_order => 'nope DESC'", "UnknownColumn", "nope"),
    ("'db.t', sort_order => 'days(id)'", "ValidationError", "cannot sort by day"),
    (
        "'db.t', sort_order => 'id', options => map('var-length-contribution', '2')",
        "ValidationError",
        "applies to a zorder",
    ),
    (
        "'db.t', options => map('max-output-size', '2')",
        "ValidationError",
        "applies to a zorder",
    ),
    (
        "'db.t', sort_order => 'zorder(id)', options => map('var-length-contribution', '0')",
        "ValidationError",
        "var-length-contribution must be a positive int",
    ),
    (
        "'db.t', sort_order => 'zorder(id)', options => map('max-output-size', 'many')",
        "ValidationError",
        "max-output-size must be an integer",
    ),
]


@pytest.mark.parametrize(("arguments", "kind", "names"), BAD)
def test_a_bad_sort_is_refused_and_rewrites_nothing(
    lake_t: Any, arguments: str, kind: str, names: str
) -> None:
    lake = lake_t
    location = lake.catalog.load_table("db.t").metadata_location

    with pytest.raises(Exception, match=f"(?s){kind}.*{names}"):
        lake.sql(f"CALL lake.system.rewrite_data_files({arguments})")

    assert lake.catalog.load_table("db.t").metadata_location == location
