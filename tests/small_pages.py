"""``LAKECAT_TEST_SMALL_PAGES=1``: the test session's Spark writes put two rows in each Parquet
page and a few in each row group, so that the suites' small tables have files of many pages
and row groups, and every read through Spark's Parquet reader prunes inside files as it would
on big ones. A copy-on-write rewrite that lost the rows of the row groups and pages its
condition skipped hid in the suites' one-page files (fixed 2026-12-01, docs/spark-sql.md).
Not on by default: files of tiny row groups are slower to read, and tests of file sizes do not
hold with them (they skip)."""

from __future__ import annotations

import os

import pytest

SMALL_PAGES = bool(os.environ.get("LAKECAT_TEST_SMALL_PAGES"))

# Hadoop settings of parquet-java's writer (the session's spark.hadoop.* reach every write)
SPARK_CONFS = {
    "spark.hadoop.parquet.page.row.count.limit": "2",
    "spark.hadoop.parquet.page.size.row.check.min": "1",
    "spark.hadoop.parquet.page.size.row.check.max": "1",
    "spark.hadoop.parquet.block.size": "1024",
    "spark.hadoop.parquet.block.size.row.check.min": "1",
    "spark.hadoop.parquet.block.size.row.check.max": "2",
}

ordinary_file_sizes = pytest.mark.skipif(
    SMALL_PAGES, reason="checks file sizes, which files of tiny row groups do not keep"
)
