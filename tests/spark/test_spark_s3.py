"""The Spark data source on an S3 warehouse (a real S3 server): executors read and write the
table's files with the catalog's storage properties, which travel inside the pickled data
source, never in the session configuration or a query plan."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from local_s3 import S3Warehouse

import lakecat.spark_ext as lk
from lakecat.catalog import Catalog

pytestmark = [pytest.mark.spark, pytest.mark.s3]


@pytest.fixture
def s3_lake(spark: Any, tmp_path: Path, s3_warehouse: S3Warehouse) -> Iterator[Catalog]:
    catalog = Catalog(
        f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=s3_warehouse.location,
        properties=s3_warehouse.properties,
    )
    catalog.create_namespace("db")
    lk.register(spark, catalog=catalog)
    try:
        yield catalog
    finally:
        catalog.close()


def test_spark_writes_and_reads_an_s3_table_without_secrets_in_its_configuration(
    spark: Any, s3_lake: Catalog, s3_warehouse: S3Warehouse
) -> None:
    secrets = [
        s3_warehouse.properties["s3.secret-access-key"],
        s3_warehouse.properties["s3.access-key-id"],
    ]
    table = s3_lake.create_table("db.events", pa.schema([("id", pa.int64()), ("r", pa.string())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "r": ["eu", "us"]}))
    frame = spark.createDataFrame([(3, "eu"), (4, "us")], "id long, r string")
    frame.write.format("lakecat").mode("append").save("db.events")  # executors write to S3
    read = spark.read.format("lakecat").load("db.events")
    assert sorted(row.id for row in read.collect()) == [1, 2, 3, 4]  # executors read S3

    lk.delete(spark, "db.events", "r = 'us'")  # the helper finds the settings in the session
    assert sorted(s3_lake.load_table("db.events").to_arrow().column("id").to_pylist()) == [1, 3]

    conf = spark.conf.getAll
    assert conf["spark.lakecat.lakecat.property.s3.endpoint"] == s3_warehouse.server.endpoint
    shown = "\n".join([*conf.keys(), *map(str, conf.values())])
    plan = read._jdf.queryExecution().toString()
    for secret in secrets:
        assert secret not in shown
        assert secret not in plan
    assert not any(key.endswith("/") for key in s3_warehouse.stored_keys())


def test_metadata_tables_read_on_s3_by_the_tasks(spark: Any, s3_lake: Catalog) -> None:
    """The tables of files and deleted positions are read by Spark's tasks, a manifest each
    here, with the catalog's FileIO on the S3 warehouse."""
    from lakecat.spark_ext import attach_catalog

    try:
        attach_catalog(spark, "s3lake", catalog=s3_lake)
    except lk.SparkCatalogError as exc:
        pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    table = s3_lake.create_table(
        "db.meta",
        pa.schema([("id", pa.int64()), ("r", pa.string())]),
        properties={"write.delete.mode": "merge-on-read", "read.split.metadata-target-size": "1"},
    )
    for ids in ([1, 2, 3], [4, 5, 6]):
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "r": ["eu", "us", "eu"]}))
    table.refresh().delete("id = 2 OR id = 5")
    files = spark.table("s3lake.db.meta.files")
    assert files.rdd.getNumPartitions() > 1
    paths = {f.file_path for f in table.refresh().scan().plan().files}
    assert {r.file_path for r in files.collect() if r.content == 0} == paths
    deleted = spark.sql("SELECT file_path, pos FROM s3lake.db.meta.position_deletes").collect()
    assert len(deleted) == 2 and {r.file_path for r in deleted} == paths
