"""``Table.add_files``: existing Parquet files join the table as they are, checked first.

Files without field ids (any Parquet writer) are read through the table's name mapping, which
the table gets when it has none; files with ids resolve by id. On a partitioned table each file
must hold rows of one partition, computed from its source columns. Bad files are refused with
a typed error before anything is committed, and the files are never deleted by lakecat when
the append does not land (they are not its own).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.catalog import Catalog
from lakecat.metadata.errors import SchemaMismatch, ValidationError
from lakecat.metadata.io.fileio import to_uri
from lakecat.metadata.schema.arrow import FIELD_ID_KEY

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("region", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)
DAY = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    with Catalog.embedded(tmp_path / "lake") as c:
        c.create_namespace("db")
        yield c


def plain_file(folder: Path, name: str, ids: list[int], region: str = "eu", **extra) -> str:
    """A Parquet file as another writer wrote it: no field ids, columns by name."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    columns = {
        "id": pa.array(ids, pa.int64()),
        "region": [region] * len(ids),
        "ts": pa.array([DAY] * len(ids), pa.timestamp("us", tz="UTC")),
        **extra,
    }
    pq.write_table(pa.table(columns), path)
    return str(path)


def ids(table) -> list[int]:
    return sorted(table.refresh().to_arrow().column("id").to_pylist())


def test_files_without_field_ids_are_added_and_read_by_name(catalog, tmp_path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": [100], "region": ["us"], "ts": [DAY]}, SCHEMA))
    paths = [
        plain_file(tmp_path / "src", f"p{k}.parquet", [k * 10 + i for i in range(3)])
        for k in range(2)
    ]

    result = table.add_files(paths)

    snapshot = table.refresh().snapshot(result.snapshot_id)
    assert snapshot.operation == "append"
    assert snapshot.summary["added-data-files"] == "2"
    assert ids(table) == [0, 1, 2, 10, 11, 12, 100]
    mapping = json.loads(table.properties["schema.name-mapping.default"])
    assert [m["names"] for m in mapping] == [["id"], ["region"], ["ts"]]
    # left in place, named by URI as the table's own files are
    assert {f.file_path for f in table.scan().plan_files()} >= {to_uri(p) for p in paths}
    # other engines read it through the same mapping
    from pyiceberg.catalog.sql import SqlCatalog

    py = SqlCatalog(catalog.name, uri=catalog.uri, warehouse=catalog.warehouse)
    try:
        assert py.load_table("db.t").scan().to_arrow().num_rows == 7
    finally:
        py.engine.dispose()
    # and they take part in row-level operations like any other file
    table.delete("id = 11")
    assert ids(table) == [0, 1, 2, 10, 12, 100]


def test_files_with_field_ids_resolve_by_id(catalog, tmp_path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    path = tmp_path / "ids.parquet"
    renamed = pa.schema(
        [
            pa.field("key", pa.int64(), nullable=False, metadata={FIELD_ID_KEY: b"1"}),
            pa.field("where", pa.string(), metadata={FIELD_ID_KEY: b"2"}),
        ]
    )
    pq.write_table(pa.table({"key": [7], "where": ["ap"]}, renamed), path)

    table.add_files([str(path)])

    assert table.to_arrow().to_pylist() == [{"id": 7, "region": "ap", "ts": None}]
    assert "schema.name-mapping.default" not in table.properties  # not needed


def test_a_partitioned_table_gets_each_files_partition_from_its_rows(catalog, tmp_path) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_by=["region", ("ts", "day")])
    eu = plain_file(tmp_path / "src", "eu.parquet", [1, 2], "eu")
    us = plain_file(tmp_path / "src", "us.parquet", [3], "us")

    table.add_files([eu, us])

    parts = {f.file_path: f.partition for f in table.scan().plan_files()}
    day = (DAY.date() - dt.date(1970, 1, 1)).days
    assert parts == {to_uri(eu): ("eu", day), to_uri(us): ("us", day)}
    assert [f.file_path for f in table.scan("region = 'us'").plan_files()] == [to_uri(us)]


def test_bad_files_are_refused_before_anything_is_committed(catalog, tmp_path) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    table.append(pa.table({"id": [1], "region": ["eu"], "ts": [DAY]}, SCHEMA))
    before = table.current_snapshot().snapshot_id
    good = plain_file(tmp_path / "src", "good.parquet", [5])
    mixed = tmp_path / "mixed.parquet"
    pq.write_table(pa.table({"id": [6, 7], "region": ["eu", "us"]}), mixed)
    no_partition = tmp_path / "nopart.parquet"
    pq.write_table(pa.table({"id": [8]}), no_partition)
    unrelated = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1]}), unrelated)
    no_id = tmp_path / "noid.parquet"
    pq.write_table(pa.table({"region": ["eu"]}), no_id)
    wrong_type = tmp_path / "wrongtype.parquet"
    pq.write_table(pa.table({"id": ["nine"], "region": ["eu"]}), wrong_type)
    not_parquet = tmp_path / "text.parquet"
    not_parquet.write_text("hello")
    existing = next(iter(table.scan().plan_files())).file_path

    cases = [
        ([good, str(mixed)], ValidationError, "2 partitions"),
        ([str(no_partition)], SchemaMismatch, "partition source column"),
        ([str(unrelated)], SchemaMismatch, "none of its columns"),
        ([str(no_id)], SchemaMismatch, "required column"),
        ([str(wrong_type)], Exception, "nine|string|id"),
        ([str(not_parquet)], Exception, "footer|Parquet"),
        ([good, good], ValidationError, "already"),
        ([existing], ValidationError, "already"),
        ([], ValidationError, "at least one"),
    ]
    for paths, error, message in cases:
        with pytest.raises(error, match=message):
            table.add_files(paths)
        assert table.refresh().current_snapshot().snapshot_id == before, paths
    assert Path(good).exists()


def test_an_add_that_does_not_land_leaves_the_files_in_place(catalog, tmp_path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    path = plain_file(tmp_path / "src", "a.parquet", [1])
    table.add_files([path], app_id="import-1", app_version=1)
    # the same application commit again: already committed, nothing to do, nothing deleted
    table.add_files(
        [path], app_id="import-1", app_version=1, check_duplicates=False, skip_if_committed=True
    )
    assert Path(path).exists()
    assert ids(table) == [1]


def test_hive_style_folders_give_identity_partition_values_the_files_lack(
    catalog, tmp_path
) -> None:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("region", pa.string()),
            pa.field("day", pa.date32(), nullable=False),  # required: only in the folders
        ]
    )
    table = catalog.create_table("db.hive", schema, partition_by=["region", "day"])
    paths = []
    for region, day, ids_ in (
        ("eu", "2024-05-01", [1, 2]),
        ("__HIVE_DEFAULT_PARTITION__", "2024-05-02", [3]),
    ):
        folder = tmp_path / "src" / f"region={region}" / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array(ids_, pa.int64())}), folder / "part-0.parquet")
        paths.append(str(folder / "part-0.parquet"))

    table.add_files(paths)

    got = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"id": 1, "region": "eu", "day": dt.date(2024, 5, 1)},
        {"id": 2, "region": "eu", "day": dt.date(2024, 5, 1)},
        {"id": 3, "region": None, "day": dt.date(2024, 5, 2)},
    ]
    assert [f.record_count for f in table.scan("region = 'eu'").plan_files()] == [2]

    # a transform cannot come from a folder; a folder value the table does not hold is refused
    bucketed = catalog.create_table("db.bucketed", schema, partition_by=[("region", "bucket[4]")])
    with pytest.raises(SchemaMismatch, match=r"lacks the partition source column .region."):
        bucketed.add_files([paths[0]])
    flat = catalog.create_table("db.flat", schema)
    with pytest.raises(SchemaMismatch, match=r"lacks the required column\(s\) day"):
        flat.add_files([paths[0]])
    nullable = catalog.create_table(
        "db.nullable", pa.schema([f.with_nullable(True) for f in schema])
    )
    with pytest.raises(SchemaMismatch, match="folder names a value of column 'region'"):
        nullable.add_files([paths[0]])


# ---- column metrics from the footers ---------------------------------------------------


def test_added_files_carry_column_metrics_and_scans_prune_them(catalog, tmp_path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    low = plain_file(tmp_path / "src", "low.parquet", list(range(0, 100)), "eu")
    high = plain_file(tmp_path / "src", "high.parquet", list(range(1000, 1100)), "us")
    table.add_files([low, high])

    by_path = {f.file_path: f for f in table.scan().plan_files()}
    f = by_path[to_uri(low)]
    assert (f.value_counts[1], f.null_value_counts[1]) == (100, 0)
    assert (f.lower_bounds[1], f.upper_bounds[1]) == (
        (0).to_bytes(8, "little"),
        (99).to_bytes(8, "little"),
    )
    assert f.lower_bounds[2] == b"eu" and f.column_sizes[1] > 0
    assert [f.file_path for f in table.scan("id >= 1000").plan_files()] == [to_uri(high)]
    assert [f.file_path for f in table.scan("region = 'eu'").plan_files()] == [to_uri(low)]
    assert table.scan("id = 1050").to_arrow().column("id").to_pylist() == [1050]


def test_string_bounds_follow_the_tables_metrics_modes(catalog, tmp_path) -> None:
    table = catalog.create_table(
        "db.t", SCHEMA, properties={"write.metadata.metrics.column.ts": "none"}
    )
    long_region = "r" * 40
    path = plain_file(tmp_path / "src", "f.parquet", [1, 2], long_region)
    table.add_files([path])
    [f] = table.scan().plan_files()
    assert f.lower_bounds[2] == b"r" * 16  # truncate(16), the default
    assert f.upper_bounds[2] == b"r" * 15 + b"s"
    assert 3 not in f.lower_bounds and 3 not in f.value_counts  # mode "none"
    assert table.scan(f"region = '{long_region}'").to_arrow().num_rows == 2


def test_columns_without_statistics_or_read_with_a_promotion_have_no_bounds(
    catalog, tmp_path
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    promoted = tmp_path / "src" / "int32.parquet"
    promoted.parent.mkdir(parents=True)
    # id stored as int32: a read promotes it to long, so its int32 statistics are not bounds
    pq.write_table(pa.table({"id": pa.array([5, 6], pa.int32()), "region": ["eu", "eu"]}), promoted)
    bare = tmp_path / "src" / "nostats.parquet"
    pq.write_table(
        pa.table({"id": pa.array([7, 8], pa.int64()), "region": ["us", "us"]}),
        bare,
        write_statistics=False,
    )
    table.add_files([str(promoted), str(bare)])
    by_path = {f.file_path: f for f in table.scan().plan_files()}
    p, b = by_path[to_uri(str(promoted))], by_path[to_uri(str(bare))]
    assert 1 not in p.lower_bounds and p.lower_bounds[2] == b"eu"
    assert 1 not in b.lower_bounds and 2 not in b.lower_bounds
    assert 1 not in b.null_value_counts and b.value_counts[1] == 2
    # nothing is pruned wrongly: every filter finds the rows a full read filters to
    everything = table.to_arrow()
    for text, want in [("id = 5", [5]), ("id > 6", [7, 8]), ("region = 'us'", [7, 8])]:
        got = sorted(table.scan(text).to_arrow().column("id").to_pylist())
        assert got == want, text
    assert everything.num_rows == 4


def test_nested_columns_get_metrics_by_field_id_as_a_read_finds_them(catalog, tmp_path) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("loc", pa.struct([("lat", pa.float64()), ("city", pa.string())])),
            pa.field("tags", pa.list_(pa.string())),
        ]
    )
    table = catalog.create_table("db.t", schema)
    path = tmp_path / "nested.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "loc": [{"lat": 1.5, "city": "Oslo"}, {"lat": -3.0, "city": "Lima"}],
                "tags": [["a"], ["b", "c"]],
            }
        ),
        path,
    )
    table.add_files([str(path)])
    [f] = table.scan().plan_files()
    city = table.schema().find_field("loc.city").field_id
    tags = table.schema().find_field("tags.element").field_id
    assert (f.lower_bounds[city], f.upper_bounds[city]) == (b"Lima", b"Oslo")
    assert tags not in f.lower_bounds  # inside a list: no bounds
    assert table.scan("loc.city = 'Oslo'").to_arrow().column("id").to_pylist() == [1]
    assert table.scan("loc.city = 'Rome'").plan_files() == []
