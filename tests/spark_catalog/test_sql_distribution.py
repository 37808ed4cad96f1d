"""``write.distribution-mode`` on batch writes through the catalog: when the table sets it,
``hash`` writes the rows of one partition from one task (one file per partition here) and
``range`` gives each task a range of the sort order (files that do not overlap); unset, rows
are written where they are. On Spark's Parquet writer and through the Python data source."""

from __future__ import annotations

import itertools
import struct
from typing import Any

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
# 4,000 rows in 4 Spark partitions, each holding every region and ids spread over the range
ROWS = (
    "SELECT id, element_at(array('eu', 'us', 'ap', 'sa'), int(id % 4) + 1) AS region, "
    "id * 1.0 AS amount FROM range(0, 4000, 1, 4) DISTRIBUTE BY id % 7"
)
WRITERS = {
    "spark": {},
    "data source": {"write.parquet.compression-codec": "lz4"},  # Spark's writer cannot: lz4
}


def files(table: Any) -> list[Any]:
    return table.refresh().scan().plan_files()


def id_range(f: Any) -> tuple[int, int]:
    lower, upper = f.lower_bounds[1], f.upper_bounds[1]
    return struct.unpack("<q", lower)[0], struct.unpack("<q", upper)[0]


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("mode", [None, "hash"])
def test_hash_distribution_writes_each_partition_from_one_task(
    lake: Any, writer: str, mode: str | None
) -> None:
    properties = dict(WRITERS[writer])
    if mode is not None:
        properties["write.distribution-mode"] = mode
    table = lake.catalog.create_table(
        "db.t", SCHEMA, partition_by=["region"], properties=properties
    )

    lake.sql(f"INSERT INTO lake.db.t {ROWS}")

    written = files(table)
    assert sum(f.record_count for f in written) == 4000
    if mode == "hash":
        assert len(written) == 4  # one per region
    else:
        assert len(written) > 4  # each task writes a file for each region it holds


@pytest.mark.parametrize("writer", list(WRITERS))
def test_range_distribution_writes_files_of_disjoint_sort_key_ranges(
    lake: Any, writer: str
) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA, properties=WRITERS[writer])
    lake.sql("ALTER TABLE lake.db.t WRITE ORDERED BY id")  # Iceberg's: range distribution
    assert table.refresh().properties["write.distribution-mode"] == "range"

    lake.sql(f"INSERT INTO lake.db.t {ROWS}")

    ranges = sorted(id_range(f) for f in files(table))
    assert len(ranges) > 1 and sum(f.record_count for f in files(table)) == 4000
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))

    lake.sql("ALTER TABLE lake.db.t WRITE LOCALLY ORDERED BY id")  # none: as the rows come
    lake.sql(f"INSERT OVERWRITE lake.db.t {ROWS}")
    ranges = sorted(id_range(f) for f in files(table))
    assert any(a[1] >= b[0] for a, b in itertools.pairwise(ranges))


def test_an_unknown_distribution_mode_is_refused_before_anything_is_written(lake: Any) -> None:
    table = lake.catalog.create_table(
        "db.t", SCHEMA, properties={"write.distribution-mode": "sideways"}
    )

    with pytest.raises(Exception, match=r"write\.distribution-mode='sideways'"):
        lake.sql(f"INSERT INTO lake.db.t {ROWS}")

    assert table.refresh().current_snapshot() is None
