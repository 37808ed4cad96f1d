"""The plugin's classes that Spark's tasks run reach executors that are JVMs of their own.

A ``local`` master runs its tasks in the driver's JVM, which has the plugin's jar on its
classpath: a jar missing on a cluster's executors shows only on a cluster. ``local-cluster``
starts a worker and an executor JVM of their own (``cluster_session.py``), where the reads
through Spark's Parquet reader (row ids, deletes applied, row lineage) and the writes of
merge-on-read and row-lineage statements run as they would on a cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lakecat.catalog import Catalog
from lakecat.metadata.io import local_path
from lakecat.metadata.partitioning import parse_transform
from lakecat.metadata.schema import LongType
from lakecat.spark_ext import catalog_jar

pytestmark = pytest.mark.spark

SESSION = Path(__file__).with_name("cluster_session.py")


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list]]:
    root = tmp_path_factory.mktemp("cluster") / "lake"
    out = root.parent / "result.json"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(SESSION.parent)}
    done = subprocess.run(
        [sys.executable, str(SESSION), str(root), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 or not out.exists():
        errors = [
            line for line in done.stderr.splitlines() if "Exception" in line or "Error" in line
        ]
        pytest.fail(
            "the cluster session failed:\n" + "\n".join(errors[:20] or [done.stderr[-3000:]])
        )
    return root, json.loads(out.read_text())


def test_row_ids_are_read_on_an_executor_of_its_own(cluster_run) -> None:
    root, results = cluster_run
    with Catalog.embedded(root) as catalog:
        first = catalog.load_table("db.mor").history()[0][1]  # the INSERT's snapshot
        files = catalog.load_table("db.mor").scan(snapshot_id=first).plan_files()
        where = {}
        for data_file in files:
            path = local_path(data_file.file_path)
            assert path is not None
            for pos, id_ in enumerate(pq.read_table(path, columns=["id"])["id"].to_pylist()):
                where[id_] = (pos, data_file.file_path)
    assert results["row_ids"] == [[where[i][0], i, where[i][1]] for i in range(6)]


def test_merge_on_read_statements_run_on_an_executor_of_their_own(cluster_run) -> None:
    root, results = cluster_run
    expected = {}
    for i in range(40):
        if i % 10 == 0:
            continue
        expected[i] = ["updated" if i % 10 == 1 else f"n{i}", i % 2]
    expected[2] = ["merged", 0]
    expected[100] = ["inserted", 0]
    rows = [[i, *expected[i]] for i in sorted(expected)]
    assert results["mor"] == rows
    with Catalog.embedded(root) as catalog:
        table = catalog.load_table("db.mor")
        snapshot = table.current_snapshot()
        assert snapshot is not None
        assert int(snapshot.summary["total-delete-files"]) > 0  # merge-on-read it was
        # the new rows were written by the executor's tasks (NativeRows), not staged
        assert any("/data/delta-" in f.file_path for f in table.scan().plan_files())
        arrow = table.to_arrow(columns=["id", "name", "part"]).sort_by("id")
    assert [list(r.values()) for r in arrow.to_pylist()] == rows


def test_row_lineage_is_kept_and_read_on_an_executor_of_its_own(cluster_run) -> None:
    root, results = cluster_run
    columns = ["id", "name", "_row_id", "_last_updated_sequence_number"]
    with Catalog.embedded(root) as catalog:
        arrow = catalog.load_table("db.v3").to_arrow(columns=columns).sort_by("id")
    lakecat_rows = [list(r.values()) for r in arrow.select(columns).to_pylist()]
    assert results["v3"] == lakecat_rows
    # the copy-on-write UPDATE (sequence number 2) kept every row's id and gave the updated
    # row its sequence number; the INSERT's rows keep theirs (1)
    assert [r[1] for r in lakecat_rows] == ["updated" if i == 3 else f"n{i}" for i in range(10)]
    assert sorted(r[2] for r in lakecat_rows) == list(range(10))
    assert [r[3] for r in lakecat_rows] == [2 if i == 3 else 1 for i in range(10)]


def test_attaching_a_catalog_ships_the_plugins_jar_once(lake) -> None:
    from lakecat.spark_ext.sql.plugin import attach_catalog

    def shipped() -> list[str]:
        jars = str(lake.spark.sparkContext._jsc.sc().listJars().mkString("\n")).split("\n")
        return [jar for jar in jars if jar.endswith("/" + Path(catalog_jar()).name)]

    assert len(shipped()) == 1  # the fixture attached the catalog
    attach_catalog(lake.spark, "lake", catalog=lake.catalog)
    attach_catalog(lake.spark, "lake_again", catalog=lake.catalog)
    assert len(shipped()) == 1


def test_deletion_vectors_are_written_and_applied_on_an_executor_of_its_own(cluster_run) -> None:
    root, results = cluster_run
    assert results["dv"] == [[i] for i in range(20) if i % 3]
    with Catalog.embedded(root) as catalog:
        arrow = catalog.load_table("db.dv").to_arrow(columns=["id"]).sort_by("id")
    assert arrow["id"].to_pylist() == [i for i in range(20) if i % 3]


def test_copy_on_write_overwrite_and_compaction_run_on_a_cluster(cluster_run) -> None:
    root, results = cluster_run
    # the MERGE deleted id 4; the dynamic overwrite replaced partition 1 (odd ids) only
    rows = [[i, 0] for i in range(0, 20, 2) if i != 4] + [[i, 1] for i in range(100, 103)]
    assert results["cow"] == rows
    assert results["cow_after"] == rows
    [[rewritten, added, _, failed, _]] = results["compacted"]
    assert (added, failed) == (2, 0) and rewritten > added
    with Catalog.embedded(root) as catalog:
        table = catalog.load_table("db.cow")
        files = sorted((f.file_path, f.record_count) for f in table.scan().plan_files())
        arrow = table.to_arrow(columns=["id", "part"]).sort_by("id")
    assert [list(r) for r in files] == results["files"]
    assert [list(r.values()) for r in arrow.to_pylist()] == rows


def test_a_stream_writes_and_reads_a_table_on_a_cluster(cluster_run) -> None:
    root, results = cluster_run
    assert results["streamed"] == [[i] for i in range(5)]
    with Catalog.embedded(root) as catalog:
        table = catalog.load_table("db.streamed")
        assert sorted(table.to_arrow(columns=["id"])["id"].to_pylist()) == list(range(5))
        assert len(table.snapshots()) == 1  # one micro-batch, one commit


def test_writes_on_a_cluster_go_through_lakecats_local_file_system(cluster_run) -> None:
    """The executors load ``LocalFiles`` from the shipped jar: every write above (native
    INSERTs, the tasks' merge-on-read rows) passed it as the write's local file system."""
    _, results = cluster_run
    assert ["fs.file.impl", "lakecat.spark.LocalFiles"] in results["local_files"]


def test_bucket_partitions_are_computed_on_an_executor_of_its_own(cluster_run) -> None:
    """The catalog's bucket function runs in the executor's JVM (a native INSERT), and so does
    the merge-on-read UPDATE's bucket of its new rows: each file in the bucket lakecat's
    Python transform gives its rows."""
    root, results = cluster_run
    assert results["functions"] == [["lake"]]
    expected = [[i, "updated" if i % 5 == 0 else f"n{i}"] for i in range(20)]
    assert results["buckets"] == expected
    bucket = parse_transform("bucket[4]")
    with Catalog.embedded(root) as catalog:
        files = catalog.load_table("db.buckets").scan().plan_files()
    data = [f for f in files if f.content == 0]
    assert len(data) > 4  # the INSERT's files and the UPDATE's new rows
    for f in data:
        path = local_path(f.file_path)
        assert path is not None
        parquet = pq.ParquetFile(path)
        assert parquet.metadata.created_by.startswith("parquet-mr")  # Spark's writer
        ids = parquet.read(columns=["id"]).column("id").to_pylist()
        assert {bucket.apply(LongType(), i) for i in ids} == {f.partition[0]}
