"""Planning on manifests pyiceberg wrote, and ``rewrite_manifests`` converting them.

pyiceberg writes manifests without lakecat's partition order and block summaries, so lakecat
decodes them whole. Its plans must still equal the reference planner's
(``tests/planning_oracle.py``) and pyiceberg's own at every snapshot; after
``rewrite_manifests`` the manifests are in lakecat's layout (a filtered scan decodes only the
blocks that can match) and every plan and row stays the same.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from planning_oracle import assert_decoders_agree, lakecat_plans, reference_plan
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema as PySchema
from pyiceberg.table import Table as PyTable
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import rewrite_manifests
from lakecat.catalog.read.planning import _Evaluators
from lakecat.metadata.manifests.blocks import in_partition_order
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import DataFile, ManifestContent
from lakecat.metadata.manifests.manifest import read_manifest_list
from lakecat.metadata.table.timetravel import schema_for

ARROW = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.int32()),
        pa.field("name", pa.string()),
        pa.field("grp", pa.int32()),
    ]
)
FILTERS = [
    None,
    "part = 3",
    "part IN (1, 6)",
    "part IS NULL",
    "part != 2",
    "id < 40",
    "id >= 100 AND part = 4",
    "id > 150 OR part = 0",
    "name IS NULL",
    "name LIKE 'n1%'",
    "grp = 1",
    "grp = 2 AND part = 3",
]

# pyiceberg keeps the null partition for ``part != 2`` (lakecat rules it out: null != 2 is not
# true); both are inclusive plans, so only the reference planner is compared there
PYICEBERG_KEEPS_MORE = {"part != 2"}


def rows(ids: range, part: int | None) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "part": pa.array([part] * len(ids), pa.int32()),
            "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in ids], pa.string()),
            "grp": pa.array([i % 3 for i in ids], pa.int32()),
        },
        schema=ARROW,
    )


@pytest.fixture
def py_catalog(sqlite_url: str, warehouse: str) -> Iterator[SqlCatalog]:
    catalog = SqlCatalog("lakecat", uri=sqlite_url, warehouse=Path(warehouse).as_uri())
    catalog.create_namespace("db")
    yield catalog
    catalog.engine.dispose()


@pytest.fixture
def lake(sqlite_url: str, warehouse: str, py_catalog: SqlCatalog) -> Iterator[Catalog]:
    catalog = Catalog(sqlite_url, warehouse=warehouse, name="lakecat")
    yield catalog
    catalog.close()


def pyiceberg_table(py_catalog: SqlCatalog, *, evolve: bool = False) -> PyTable:
    """Appends of several partitions each (pyiceberg: one manifest per append), a
    copy-on-write delete and an overwrite (DELETED entries, rewritten files); with
    ``evolve``, the last two appends in a second spec that adds identity(grp)."""
    schema = PySchema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "part", IntegerType(), required=False),
        NestedField(3, "name", StringType(), required=False),
        NestedField(4, "grp", IntegerType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
    name = "db.evolved" if evolve else "db.events"
    t = py_catalog.create_table(name, schema, partition_spec=spec)
    next_id = 0
    for commit in range(4):
        if evolve and commit == 2:
            with t.update_spec() as update:
                update.add_identity("grp")
        batch = []
        for part in (*range(8), None) if commit % 2 else range(8):
            batch.append(rows(range(next_id, next_id + 5), part))
            next_id += 5
        t.append(pa.concat_tables(batch))
    t.delete("id < 12")
    t.overwrite(rows(range(1000, 1004), 5), overwrite_filter="part = 5")
    return py_catalog.load_table(name)


def foreign(lake: Catalog, name: str) -> Table:
    t = lake.load_table(name)
    head = t.current_snapshot()
    assert head is not None
    data = [
        m for m in read_manifest_list(t.io, head.manifest_list) if m.content is ManifestContent.DATA
    ]
    assert data and not any(in_partition_order(t.io.read(m.manifest_path), "") for m in data)
    return t


def lakecat_plan(t: Table, snapshot_id: int, row_filter: str | None) -> list[DataFile]:
    return list(t.scan(row_filter, snapshot_id=snapshot_id).plan().files)


def path(f: DataFile) -> str:
    return f.file_path


def pyiceberg_paths(t: PyTable, snapshot_id: int, row_filter: str | None) -> set[str]:
    scan = t.scan(row_filter=row_filter or "True", snapshot_id=snapshot_id)
    return {task.file.file_path for task in scan.plan_files()}


@pytest.mark.parametrize("evolve", [False, True], ids=["one spec", "spec evolution"])
def test_plans_of_pyiceberg_manifests_equal_the_reference_and_pyiceberg(
    py_catalog: SqlCatalog, lake: Catalog, evolve: bool
) -> None:
    py = pyiceberg_table(py_catalog, evolve=evolve)
    t = foreign(lake, "db.evolved" if evolve else "db.events")
    cache = ManifestCache()
    for snapshot in t.metadata.snapshots:
        schema = schema_for(t.metadata, snapshot)
        for row_filter in FILTERS:
            expected = reference_plan(t.io, t.metadata, snapshot, schema, row_filter)
            for plan in lakecat_plans(t, snapshot, schema, row_filter, cache):
                assert list(plan.files) == expected.files, (snapshot.snapshot_id, row_filter)
            if row_filter not in PYICEBERG_KEEPS_MORE:
                paths = {f.file_path for f in expected.files}
                assert paths == pyiceberg_paths(py, snapshot.snapshot_id, row_filter), row_filter


def test_rewrite_manifests_converts_pyiceberg_manifests_to_lakecats_layout(
    py_catalog: SqlCatalog, lake: Catalog
) -> None:
    py = pyiceberg_table(py_catalog)
    t = foreign(lake, "db.events")
    before_head = t.current_snapshot()
    assert before_head is not None
    before = {f: lakecat_plan(t, before_head.snapshot_id, f) for f in FILTERS}
    rows_before = t.to_arrow().sort_by("id")

    result = rewrite_manifests(t)

    assert result.snapshot_id is not None
    head = t.refresh().current_snapshot()
    assert head is not None and head.snapshot_id == result.snapshot_id
    data = [
        m for m in read_manifest_list(t.io, head.manifest_list) if m.content is ManifestContent.DATA
    ]
    assert all(in_partition_order(t.io.read(m.manifest_path), m.manifest_path) for m in data)
    for row_filter, files in before.items():  # the same files, each with every stat
        after = lakecat_plan(t, head.snapshot_id, row_filter)
        assert sorted(after, key=path) == sorted(files, key=path), row_filter
    assert t.to_arrow().sort_by("id").equals(rows_before)
    # pyiceberg reads the converted table the same
    assert py.refresh().scan().to_arrow().sort_by("id").equals(rows_before)
    # a filter on the partition field now decodes only the blocks of that partition
    (manifest,) = data
    blocks = list(fastavro.block_reader(io.BytesIO(t.io.read(manifest.manifest_path))))
    assert len(blocks) > 1
    scan = t.scan("part = 3")
    may_hold = _Evaluators(t.metadata.spec(), scan.schema, scan.bound).blocks
    chunks = ManifestCache().live_files(
        t.io,
        manifest,
        specs=t.metadata.specs_by_id(),
        schema=t.schema(),
        may_hold=may_hold,
    )
    decoded = [f for c in chunks for f in c.files]
    # blocks hold >= MIN_BLOCK_ENTRIES entries, so neighbours of partition 3 come along
    assert len(decoded) < sum(b.num_records for b in blocks)
    assert {f.file_path for f in decoded} >= {
        f.file_path for f in lakecat_plan(t, head.snapshot_id, "part = 3")
    }
    # converted: a second rewrite has nothing to do
    again = rewrite_manifests(t)
    assert again.snapshot_id is None


def test_rewrite_manifests_converts_a_single_foreign_manifest(
    py_catalog: SqlCatalog, lake: Catalog
) -> None:
    py = pyiceberg_table(py_catalog)
    single = py_catalog.create_table("db.single", py.schema(), partition_spec=py.spec())
    single.append(pa.concat_tables([rows(range(p * 10, p * 10 + 10), p) for p in range(8)]))
    t = foreign(lake, "db.single")
    result = rewrite_manifests(t)
    assert result.manifests_before == result.manifests_after == 1
    assert result.snapshot_id is not None
    head = t.refresh().current_snapshot()
    assert head is not None
    (manifest,) = read_manifest_list(t.io, head.manifest_list)
    assert in_partition_order(t.io.read(manifest.manifest_path), manifest.manifest_path)
    assert rewrite_manifests(t).snapshot_id is None  # already in lakecat's layout


def test_the_compiled_decoder_reads_pyiceberg_manifests_as_fastavro_does(
    py_catalog: SqlCatalog, lake: Catalog
) -> None:
    pyiceberg_table(py_catalog, evolve=True)
    t = lake.load_table("db.evolved")
    records = 0
    seen: set[str] = set()
    for snapshot in t.metadata.snapshots:
        for m in read_manifest_list(t.io, snapshot.manifest_list):
            if m.manifest_path not in seen:
                seen.add(m.manifest_path)
                records += assert_decoders_agree(t.io.read(m.manifest_path))
    assert len(seen) > 5 and records > 50
