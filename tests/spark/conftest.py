"""A shared local Spark session for the Spark tests, and a catalog registered in it.

One session for the whole run (``local[2]``, two shuffle partitions, no UI, small memory,
bound to 127.0.0.1); each test gets a fresh SQLite catalog and warehouse and registers the
``lakecat`` format against it (a later registration replaces an earlier one). Python workers
run this interpreter, so they import the same lakecat and pyarrow.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")

from lakecat.catalog import Catalog  # noqa: E402
from lakecat.spark_ext import register  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17+ (java on PATH or JAVA_HOME)")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("lakecat-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    c = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "warehouse"))
    c.create_namespace("db")
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def lake(spark: Any, catalog: Catalog) -> Catalog:
    """The test's catalog, registered as the ``lakecat`` format in the shared session, with
    filter pushdown on (most tests check the files a read prunes)."""
    register(spark, catalog=catalog, filter_pushdown=True)
    return catalog
