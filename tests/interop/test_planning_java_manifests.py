"""Planning on manifests Iceberg Java wrote (``java_fixtures.py``): position deletes scoped to a
partition or to one file, deletion vectors, equality deletes (partitioned and global), spec
evolution. At every snapshot of every table and for several filters, lakecat's plan (no cache,
a cold and a warm cache) equals the reference planner's (``tests/planning_oracle.py``), and an
unfiltered plan lists exactly the live data files, with their data sequence numbers, that
Iceberg Java's ``entries`` table lists (``expected.json``)."""

from __future__ import annotations

import pytest
from peers import JavaFixtures
from planning_oracle import assert_decoders_agree, lakecat_plans, reference_plan

from lakecat.catalog import Catalog
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.manifest import read_manifest_list
from lakecat.metadata.table.timetravel import schema_for

pytestmark = pytest.mark.interop

FILTERS = [
    None,
    "cat = 'a'",
    "cat IS NULL",
    "id < 100",
    "id >= 150 AND cat != 'b'",
    "id > 280 OR cat = 'c'",
    "note LIKE 'u%'",
]


def test_plans_of_java_written_tables_equal_the_reference_planner(
    java_fixtures: JavaFixtures, java_lake: Catalog
) -> None:
    checked_deletes = 0
    for name in java_fixtures.tables:
        t = java_lake.load_table(f"db.{name}")
        cache = ManifestCache()
        for snapshot in t.metadata.snapshots:
            schema = schema_for(t.metadata, snapshot)
            for row_filter in FILTERS:
                expected = reference_plan(t.io, t.metadata, snapshot, schema, row_filter)
                columns = [*schema.column_names, "_row_id"]
                for plan in lakecat_plans(t, snapshot, schema, row_filter, cache, columns):
                    context = (name, snapshot.snapshot_id, row_filter)
                    assert list(plan.files) == expected.files, context
                    deletes = {p: {d.key for d in ds} for p, ds in plan.deletes.items()}
                    assert deletes == expected.deletes, context
                    assert dict(plan.sequence_numbers) == {
                        f.file_path: expected.sequence_numbers[f.file_path] for f in plan.files
                    }, context
                    checked_deletes += len(deletes)
    assert checked_deletes > 100  # the fixtures hold deletes of every kind


def test_unfiltered_plans_list_the_live_data_files_java_lists(
    java_fixtures: JavaFixtures, java_lake: Catalog
) -> None:
    for name, table in java_fixtures.tables.items():
        t = java_lake.load_table(f"db.{name}")
        for snap in table["snapshots"]:
            plan = t.scan(snapshot_id=snap["snapshot_id"], columns=["id", "_row_id"]).plan()
            java = {d["file_path"]: d["sequence_number"] for d in snap["data_files"]}
            assert {f.file_path for f in plan.files} == set(java), (name, snap["step"])
            assert dict(plan.sequence_numbers) == java, (name, snap["step"])


def test_the_compiled_decoder_reads_java_manifests_as_fastavro_does(
    java_fixtures: JavaFixtures, java_lake: Catalog
) -> None:
    seen: set[str] = set()
    for name in java_fixtures.tables:
        t = java_lake.load_table(f"db.{name}")
        for snapshot in t.metadata.snapshots:
            for m in read_manifest_list(t.io, snapshot.manifest_list):
                if m.manifest_path not in seen:
                    seen.add(m.manifest_path)
                    assert_decoders_agree(t.io.read(m.manifest_path))
    assert len(seen) > 50
