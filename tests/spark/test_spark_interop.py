"""Tables written through Spark read identically with pyiceberg."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from lakecat.catalog import Catalog
from lakecat.spark_ext import delete

pytestmark = pytest.mark.spark


def test_a_table_written_by_spark_reads_the_same_in_pyiceberg(spark: Any, lake: Catalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("region", pa.string()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("price", pa.decimal128(12, 3)),
            ("tags", pa.list_(pa.string())),
        ]
    )
    lake.create_table("db.t", schema, partition_by=["region", ("ts", "day")])
    df = spark.createDataFrame(
        [
            (
                i,
                ["eu", "us", None][i % 3],
                dt.datetime(2024, 3, 1 + i % 4, 5, tzinfo=dt.UTC),
                Decimal(i) / 8,
                [str(i)] * (i % 3),
            )
            for i in range(40)
        ],
        "id long, region string, ts timestamp, price decimal(12,3), tags array<string>",
    )
    df.write.format("lakecat").mode("append").save("db.t")
    delete(spark, "db.t", "id % 5 = 0")

    ours = lake.load_table("db.t").to_arrow().sort_by("id")
    pyiceberg = SqlCatalog(lake.name, uri=lake.uri, warehouse=lake.warehouse)
    theirs = pyiceberg.load_table("db.t").scan().to_arrow().sort_by("id")
    assert theirs.num_rows == ours.num_rows == 32
    assert theirs.to_pylist() == ours.to_pylist()
    assert [f.name for f in pyiceberg.load_table("db.t").spec().fields] == ["region", "ts_day"]
