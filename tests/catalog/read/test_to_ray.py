"""A scan as a Ray Dataset (``Scan.to_ray``; Ray is an optional dependency the ``test`` extra
installs): the same rows as ``to_arrow`` however the read is cut into tasks.

Ray runs as one small local node for the whole module (2 CPUs, a 200 MB object store, no
dashboard, no usage statistics), on the loopback address only: with
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` Ray takes 127.0.0.1 as the node's address and binds
its servers to it (otherwise it advertises, and its runtime-env agent listens on, the
machine's address), which the first test checks. The environment must be set before Ray is
first imported, so this module imports Ray only in its fixture (and in tests that use it).
Token authentication stays on, with a token made for the run (nothing written to ``~/.ray``).
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from listening import descendants, is_loopback, listening_addresses

from lakecat.catalog import Catalog, Table
from lakecat.catalog.read import Scan
from lakecat.metadata.errors import UnsupportedFeature, ValidationError

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None, reason="needs Ray: pip install 'lakecat[ray]'"
    ),
    # Ray's own: its DataContext warns about its own deprecated settings when made
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*"),
]

MOR = {"write.delete.mode": "merge-on-read"}


@dataclass(frozen=True)
class RayNode:
    ray: Any  # the module, imported once the environment is set
    start_seconds: float  # what ray.init took


@pytest.fixture(scope="module")
def ray_node() -> Iterator[RayNode]:
    """A local Ray node for the module, shut down at its end."""
    if sys.modules.get("ray") is not None:
        pytest.fail("Ray was imported before its environment was set: it would not be local")
    with (
        pytest.MonkeyPatch.context() as env,
        tempfile.TemporaryDirectory(prefix="ray", ignore_cleanup_errors=True) as temp,
    ):
        env.setenv("RAY_USAGE_STATS_ENABLED", "0")
        env.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # the node is 127.0.0.1
        env.setenv("RAY_AUTH_MODE", "token")
        env.setenv("RAY_AUTH_TOKEN", secrets.token_hex(16))
        import ray  # after the environment: Ray reads some of it on import

        started = time.perf_counter()
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            object_store_memory=200 * 1024 * 1024,
            log_to_driver=False,
            configure_logging=False,
            _temp_dir=temp,  # a short path: Ray's sockets live under it
        )
        try:
            start_seconds = time.perf_counter() - started
            context = ray.data.DataContext.get_current()
            context.enable_progress_bars = False
            context.execution_options.preserve_order = True  # rows in to_arrow's order
            yield RayNode(ray, start_seconds)
        finally:
            ray.shutdown()


@pytest.fixture
def catalog(sqlite_url: str, warehouse: str) -> Iterator[Catalog]:
    lake = Catalog(sqlite_url, warehouse=warehouse)
    lake.create_namespace("db")
    yield lake
    lake.close()


SCHEMA = pa.schema(
    [("id", pa.int64()), ("region", pa.string()), ("day", pa.int32()), ("v", pa.float64())]
)


def events(ids: range, day: int = 1) -> pa.Table:
    columns = [list(ids), [("eu", "us", "ap")[i % 3] for i in ids], [day] * len(ids)]
    return pa.table([*columns, [i * 0.5 for i in ids]], schema=SCHEMA)


def many_files(catalog: Catalog, name: str, files: int, properties: dict[str, str]) -> Table:
    t = catalog.create_table(name, SCHEMA, properties=properties)
    for k in range(files):
        t.append(events(range(k * 20, (k + 1) * 20), day=k))
    return t


def collect(node: RayNode, dataset: Any) -> pa.Table:
    tables = node.ray.get(dataset.to_arrow_refs())
    if not tables:
        return dataset.schema().base_schema.empty_table()
    return pa.concat_tables(tables)


def assert_same_rows(node: RayNode, scan: Scan, **options: Any) -> pa.Table:
    want = scan.to_arrow()
    got = collect(node, scan.to_ray(**options))
    assert got.schema == want.schema
    assert got.equals(want), (got.num_rows, want.num_rows)  # order too: preserve_order
    return got


def test_ray_starts_in_seconds_and_listens_on_loopback_only(ray_node: RayNode) -> None:
    assert ray_node.start_seconds < 30
    assert ray_node.ray.util.get_node_ip_address() == "127.0.0.1"
    listening = listening_addresses(descendants(os.getpid()) | {os.getpid()})
    if listening is None:
        pytest.skip("no /proc to list the node's sockets")
    assert listening, "Ray's processes listen on no TCP socket: the check found none"
    assert [a for a in listening if not is_loopback(a)] == []


def test_a_filtered_projected_partitioned_scan_reads_the_rows_to_arrow_reads(
    ray_node: RayNode, catalog: Catalog
) -> None:
    t = catalog.create_table("db.events", SCHEMA, partition_by=["region", ("id", "bucket[4]")])
    for day in range(3):
        t.append(events(range(day * 100, day * 100 + 100), day=day))
    scan = t.scan("region = 'eu' AND id >= 50", columns=["v", "id"])
    got = assert_same_rows(ray_node, scan, override_num_blocks=3)
    assert got.column_names == ["id", "v"] and got.num_rows == 83
    assert assert_same_rows(ray_node, t.scan()).num_rows == 300


@pytest.mark.parametrize("properties", [MOR, {**MOR, "format-version": "3"}], ids=["v2", "v3"])
def test_position_deletes_and_deletion_vectors_are_applied(
    ray_node: RayNode, catalog: Catalog, properties: dict[str, str]
) -> None:
    t = many_files(catalog, "db.t", 6, properties)
    sevens = ", ".join(str(i) for i in range(0, 120, 7))
    t.delete(f"id IN ({sevens}) OR id BETWEEN 30 AND 45")
    assert t.scan().plan().deletes  # merge-on-read: delete files, not rewrites
    lineage = ["_row_id", "_last_updated_sequence_number"] if "format-version" in properties else []
    for scan in (t.scan(), t.scan("v > 10", columns=["id", *lineage])):
        got = assert_same_rows(ray_node, scan, override_num_blocks=4)
        assert not {i for i in got.column("id").to_pylist() if i % 7 == 0 or 30 <= i <= 45}
    # a count is the rows read: no task claims the count of files whose rows were deleted
    assert t.scan().to_ray().count() == t.scan().count() == 120 - 18 - 14


def test_time_travel_reads_the_older_snapshot_with_its_schema(
    ray_node: RayNode, catalog: Catalog
) -> None:
    t = many_files(catalog, "db.t", 3, {})
    first = t.snapshots()[0].snapshot_id
    t.delete("id < 10")
    with t.update_schema() as update:
        update.rename_column("v", "value")
    t.append(pa.table({"id": [1000], "region": ["eu"], "day": [9], "value": [1.0]}))
    old = assert_same_rows(ray_node, t.scan(snapshot_id=first))
    assert old.column_names == ["id", "region", "day", "v"]
    assert old.column("id").to_pylist() == list(range(20))
    assert assert_same_rows(ray_node, t.scan("value > 0")).num_rows == 51


def test_an_empty_scan_is_an_empty_dataset_with_the_scans_schema(
    ray_node: RayNode, catalog: Catalog
) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    never_written = t.scan(columns=["id", "v"]).to_ray()
    assert never_written.count() == 0
    assert never_written.schema().base_schema == pa.schema(
        [("id", pa.int64()), ("v", pa.float64())]
    )
    t.append(events(range(10)))
    assert_same_rows(ray_node, t.scan("id > 100"))
    assert t.scan("id > 100").to_ray().take_all() == []


def test_a_many_file_table_is_read_by_several_tasks_of_contiguous_files(
    ray_node: RayNode, catalog: Catalog
) -> None:
    t = many_files(catalog, "db.t", 12, {})
    scan = t.scan()
    files = [f.file_path for f in scan.plan().files]
    source = datasource(scan, batch_size=8)
    tasks = source.get_read_tasks(5)
    assert len(tasks) == 5
    groups = [list(task.metadata.input_files) for task in tasks]
    assert [p for g in groups for p in g] == files  # every file once, in planning order
    assert max(len(g) for g in groups) - min(len(g) for g in groups) <= 1  # files of one size
    assert sum(task.metadata.num_rows for task in tasks) == 240  # exact: no filter, no delete
    assert sum(task.metadata.size_bytes for task in tasks) == source.estimate_inmemory_data_size()
    assert all(task.metadata.size_bytes > 0 for task in tasks)
    assert len(source.get_read_tasks(100)) == 12  # never more tasks than files
    # a task streams its files: blocks of at most a batch, not its files whole
    blocks = list(tasks[0]())
    assert len(blocks) > 1 and all(b.num_rows <= 8 for b in blocks)
    assert sum(b.num_rows for b in blocks) == tasks[0].metadata.num_rows
    # with a filter, a file's count is no count of rows read
    assert [task.metadata.num_rows for task in datasource(t.scan("id < 5")).get_read_tasks(1)] == [
        None
    ]
    # through Ray: blocks of several tasks, the rows to_arrow reads
    assert scan.to_ray(override_num_blocks=5).materialize().num_blocks() >= 5
    assert_same_rows(ray_node, scan, override_num_blocks=5)
    assert_same_rows(ray_node, t.scan("day >= 3", columns=["id"]))  # Ray's own parallelism
    assert t.scan().to_ray().limit(7).count() == 7
    with pytest.raises(ValidationError, match="batch_size"):  # on the driver, not in a task
        t.scan().to_ray(batch_size=0)


def test_files_are_grouped_in_order_by_their_estimated_size(ray_node: RayNode) -> None:
    from lakecat.catalog.read.ray_source import file_groups

    files = list("abcdefgh")
    assert file_groups(files, [100, 1, 1, 1, 1, 100, 1, 1], 3) == [
        ["a"],
        ["b", "c", "d", "e"],
        ["f", "g", "h"],
    ]
    assert file_groups(files[:3], [1, 1000, 1], 3) == [["a"], ["b"], ["c"]]
    assert file_groups(files[:4], [0, 0, 0, 0], 2) == [["a", "b"], ["c", "d"]]
    assert file_groups(files, [5] * 8, 1) == [files]


def datasource(scan: Scan, batch_size: int = 100) -> Any:
    from lakecat.catalog.read.ray_source import ScanDatasource

    return ScanDatasource(scan, scan.plan(), batch_size=batch_size, max_read_ahead_bytes=1 << 20)


def test_without_ray_to_ray_is_a_typed_refusal_naming_the_extra(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray: ImportError, nothing imported
    monkeypatch.setitem(sys.modules, "ray.data", None)
    t = catalog.create_table("db.t", SCHEMA)
    with pytest.raises(UnsupportedFeature, match=r"lakecat\[ray\]"):
        t.scan().to_ray()
