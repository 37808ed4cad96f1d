"""lakecat registered as the Spark catalog ``lake`` in the shared Spark session.

The session (``spark``, in ``tests/conftest.py``) starts with the catalog plugin's jar on the
driver's classpath. Each test gets a fresh embedded catalog (SQLite file and warehouse in its
temp folder) with a namespace ``db``, attached as ``lake`` (attaching again replaces the
catalog behind the name), and can open the same database with pyiceberg's ``SqlCatalog``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from sql_lake import Lake
from sql_workers import Worker

from lakecat.catalog import Catalog
from lakecat.spark_ext import SparkCatalogError, attach_catalog


@pytest.fixture
def lake(spark: Any, tmp_path: Path) -> Iterator[Lake]:
    catalog = Catalog.embedded(tmp_path / "lake")
    catalog.create_namespace("db")
    try:
        bridge = attach_catalog(spark, "lake", catalog=catalog)
    except SparkCatalogError as exc:
        catalog.close()
        pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    try:
        yield Lake(tmp_path / "lake", catalog, spark, bridge)
    finally:
        catalog.close()


@pytest.fixture(scope="session")
def worker_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded catalog (with a namespace ``db``) the two ``workers`` attach as ``lake``."""
    root = tmp_path_factory.mktemp("concurrent") / "lake"
    with Catalog.embedded(root) as catalog:
        catalog.create_namespace("db")
    return root


@pytest.fixture(scope="session")
def workers(spark_java: None, worker_root: Path) -> Iterator[tuple[Worker, Worker]]:
    """Two Spark SQL sessions in processes of their own (``sql_workers.py``), ready, for the
    run; skips without Java (``spark_java``, as ``spark`` does). Tests name their own tables."""
    logs = [worker_root.parent / f"worker-{i}.stderr" for i in (1, 2)]
    pair = (Worker(worker_root, logs[0]), Worker(worker_root, logs[1]))  # both start at once
    try:
        for worker in pair:
            assert worker.answer() == {"ready": True}
        yield pair
    finally:
        for worker in pair:
            worker.close()


@pytest.fixture
def worker_catalog(worker_root: Path) -> Iterator[Catalog]:
    """The ``workers``' catalog, opened by the test."""
    with Catalog.embedded(worker_root) as c:
        yield c
