"""A catalog registered in the shared Spark session for the Spark tests.

The session (``spark``, in ``tests/conftest.py``) is one for the whole run; each test gets a
fresh SQLite catalog and warehouse and registers the ``lakecat`` format against it (a later
registration replaces an earlier one).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")

from lakecat.catalog import Catalog  # noqa: E402
from lakecat.spark_ext import register  # noqa: E402


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


@pytest.fixture(params=["python", "sql"])
def engine(request: pytest.FixtureRequest, spark: Any, lake: Catalog) -> str:
    """Runs the test twice: ``python`` (lakecat's Python API) and ``sql`` (Spark SQL on the
    test's catalog, attached here as ``lake``; skips when the catalog plugin is not available)."""
    if request.param == "sql":
        from lakecat.spark_ext import SparkCatalogError, attach_catalog

        try:
            attach_catalog(spark, "lake", catalog=lake)
        except SparkCatalogError as exc:
            pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    engine: str = request.param
    return engine


@pytest.fixture
def failing_frame(spark: Any) -> Any:
    """2,000 rows (``id``, ``part`` = the Spark partition) whose task computing row 1,900
    fails with "injected failure" (the other partition's task runs normally)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    @F.udf(LongType(), useArrow=False)
    def explode_at_1900(value: int) -> int:
        if value == 1900:
            raise RuntimeError("injected failure")
        return value

    return spark.range(0, 2000, numPartitions=2).select(
        explode_at_1900("id").alias("id"), F.spark_partition_id().cast("long").alias("part")
    )
