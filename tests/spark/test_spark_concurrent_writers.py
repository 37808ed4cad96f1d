"""A Spark job and a separate Python process writing the same table: both land."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from lakecat.catalog import Catalog

pytestmark = pytest.mark.spark

APPENDER = textwrap.dedent(
    """
    import sys, time, pathlib
    import pyarrow as pa
    from lakecat.catalog import Catalog
    uri, warehouse, go, done = sys.argv[1:5]
    deadline = time.monotonic() + 120
    while not pathlib.Path(go).exists():  # wait until the Spark job is writing
        if time.monotonic() > deadline:
            sys.exit("the Spark job never started")
        time.sleep(0.05)
    with Catalog(uri, warehouse=warehouse) as catalog:
        table = catalog.load_table("db.t")
        for start in (1000, 2000):
            table.append(pa.table({"id": pa.array(range(start, start + 5), pa.int64())}))
    pathlib.Path(done).touch()
    """
)


def test_a_spark_write_and_a_python_append_at_the_same_time_both_land(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    table = lake.create_table("db.t", pa.schema([("id", pa.int64())]))
    go, done = tmp_path / "go", tmp_path / "done"
    appender = subprocess.Popen(
        [sys.executable, "-c", APPENDER, lake.uri, lake.warehouse, str(go), str(done)]
    )
    go_path, done_path = str(go), str(done)

    @F.udf(LongType(), useArrow=False)
    def hold(value: int) -> int:
        # The first row: the writer is planned; let the other process commit, then go on.
        import pathlib
        import time

        if value == 0:
            pathlib.Path(go_path).touch()
            deadline = time.monotonic() + 120
            while not pathlib.Path(done_path).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return value

    try:
        df = spark.range(0, 100, numPartitions=1).select(hold("id").alias("id"))
        df.write.format("lakecat").mode("append").save("db.t")
    finally:
        assert appender.wait(timeout=120) == 0

    table.refresh()
    ids = sorted(table.to_arrow().column("id").to_pylist())
    assert ids == [*range(100), *range(1000, 1005), *range(2000, 2005)]
    history = [s.operation for s in table.snapshots()]
    assert history == ["append", "append", "append"]
    # The Spark commit came last, on top of the two appends made while it was writing.
    assert table.current_snapshot().parent_snapshot_id == table.snapshots()[1].snapshot_id
