"""Scan planning through the manifest cache and block-by-block reads plans the same files as a
plain read of every manifest, and never hands a partly read manifest to a writer."""

from __future__ import annotations

import io

import fastavro
import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.maintenance import rewrite_manifests
from lakecat.catalog.read.scan import Scan, to_expression
from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.expressions.evaluators import InclusiveMetricsEvaluator, PartitionEvaluator
from lakecat.metadata.expressions.expressions import bind
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import DataFile, ManifestFile, Status
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.manifests.order import BLOCKS_KEY, MIN_BLOCK_ENTRIES
from lakecat.metadata.table.table_metadata import TableMetadata

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.int32()),
        pa.field("value", pa.float64()),
    ]
)

FILTERS = [
    None,
    "part = 3",
    "part IN (1, 7)",
    "part > 5",
    "part IS NULL",
    "id < 40",  # a non-partition column: only file metrics prune
    "part = 4 AND value >= 30",
    "part = 2 OR id > 200",
]


def _rows(ids: range, part: int | None) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "part": pa.array([part] * len(ids), pa.int32()),
            "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(sqlite_url: str, warehouse: str) -> Catalog:
    c = Catalog(sqlite_url, warehouse=warehouse)
    c.create_namespace("db")
    yield c
    c.close()


@pytest.fixture
def table(catalog: Catalog):  # type: ignore[no-untyped-def]
    """Partitions 0..9 and null, one file per (append, partition), in commits of several
    partitions (so manifests hold several blocks) and single-file commits (merged)."""
    t = catalog.create_table("db.t", SCHEMA, partition_by=["part"])
    next_id = 0
    for commit in range(4):
        batch = []
        for _ in range(MIN_BLOCK_ENTRIES + 2):
            for part in (*range(10), None) if commit % 2 else range(10):
                batch.append(_rows(range(next_id, next_id + 3), part))
                next_id += 3
        files = []
        for data in batch:
            files += _write(t, data)
        _commit_files(t, files)
    for i in range(12):
        t.append(_rows(range(next_id, next_id + 2), i % 10))
        next_id += 2
    return catalog.load_table("db.t")


def _write(table, data: pa.Table) -> list[DataFile]:  # type: ignore[no-untyped-def]
    from lakecat.catalog.write.writer import conform, write_files

    return list(write_files(table.io, table.metadata, conform(table.metadata, data)))


def _commit_files(table, files: list[DataFile]) -> None:  # type: ignore[no-untyped-def]
    from lakecat.catalog.commit.intent import Intent, OpKind

    table.commit_intent(Intent(OpKind.APPEND, added_files=tuple(files)))


def _reference_plan(io: FileIO, metadata: TableMetadata, snapshot_id: int, row_filter: str | None):  # type: ignore[no-untyped-def]
    """Every entry of every manifest decoded, filtered entry by entry (no cache, no blocks)."""
    schema = metadata.schema()
    bound = bind(schema, to_expression(row_filter))
    specs = metadata.specs_by_id()
    metrics = InclusiveMetricsEvaluator(schema, bound)
    snapshot = metadata.snapshot_by_id(snapshot_id)
    out = []
    for manifest in read_manifest_list(io, snapshot.manifest_list):
        partition = PartitionEvaluator(specs[manifest.partition_spec_id], schema, bound)
        for e in read_manifest(io, manifest, specs=specs, schema=schema):
            live = e.status is not Status.DELETED
            if live and partition.eval(e.data_file.partition) and metrics.eval(e.data_file):
                out.append(e.data_file)
    return out


def _snapshot_ids(table) -> list[int]:  # type: ignore[no-untyped-def]
    return [s.snapshot_id for s in table.metadata.snapshots]


def test_cached_and_block_read_plans_equal_a_plain_read_of_every_manifest(table) -> None:  # type: ignore[no-untyped-def]
    cache = ManifestCache()
    for snapshot_id in _snapshot_ids(table):  # time travel to every snapshot, and current
        snapshot = table.metadata.snapshot_by_id(snapshot_id)
        for row_filter in FILTERS:
            expected = _reference_plan(table.io, table.metadata, snapshot_id, row_filter)
            schema = table.metadata.schema()
            for manifests in (None, cache, cache):  # no cache, first (cold) and warm plan
                plan = Scan(
                    table.io,
                    table.metadata,
                    snapshot,
                    schema,
                    row_filter=row_filter,
                    manifest_cache=manifests,
                ).plan()
                # same files in the same order, each with all its stats
                assert list(plan.files) == expected, (snapshot_id, row_filter)
                assert all(f.lower_bounds and f.column_sizes for f in plan.files)


def test_plans_of_the_table_api_do_not_depend_on_cache_state(table, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    for row_filter in FILTERS:
        cold = catalog.load_table("db.t").scan(row_filter).plan()
        warm = table.scan(row_filter).plan()
        again = table.scan(row_filter).plan()
        assert cold == warm == again


def test_a_filtered_scan_decodes_only_blocks_that_can_match(table) -> None:  # type: ignore[no-untyped-def]
    snapshot = table.metadata.snapshot_by_id(_snapshot_ids(table)[0])
    (manifest,) = read_manifest_list(table.io, snapshot.manifest_list)
    blocks = list(fastavro.block_reader(io.BytesIO(table.io.read(manifest.manifest_path))))
    assert len(blocks) == 10  # one per partition
    cache = ManifestCache()
    specs, schema = table.metadata.specs_by_id(), table.metadata.schema()
    scan = Scan(table.io, table.metadata, snapshot, schema, row_filter="part = 3")
    may_hold = scan_block_test(scan)
    chunks = cache.live_files(table.io, manifest, specs=specs, schema=schema, may_hold=may_hold)
    assert [{f.partition for f in c.files} for c in chunks] == [{(3,)}]


def scan_block_test(scan: Scan):  # type: ignore[no-untyped-def]
    from lakecat.catalog.read.planning import _Evaluators

    spec = scan.metadata.spec()
    return _Evaluators(spec, scan.schema, scan.bound).blocks


def test_writers_read_complete_manifests_after_a_block_read_plan(table) -> None:  # type: ignore[no-untyped-def]
    cache = ManifestCache()
    snapshot = table.metadata.current_snapshot
    specs, schema = table.metadata.specs_by_id(), table.metadata.schema()
    Scan(
        table.io, table.metadata, snapshot, schema, row_filter="part = 3", manifest_cache=cache
    ).plan()
    for manifest in read_manifest_list(table.io, snapshot.manifest_list):
        entries = cache.read(table.io, manifest, specs=specs, schema=schema)
        assert entries == tuple(read_manifest(table.io, manifest, specs=specs, schema=schema))


def test_merging_and_rewrite_manifests_after_filtered_plans_keep_every_entry_and_stat(
    table, catalog: Catalog
) -> None:  # type: ignore[no-untyped-def]
    before = _live_entries(table)
    for row_filter in FILTERS:  # fill the catalog's cache with block reads
        table.scan(row_filter).plan()
    for i in range(3):  # merging appends read the cached manifests
        table.append(_rows(range(10_000 + i, 10_001 + i), 3))
    rewrite_manifests(table)
    after = _live_entries(catalog.load_table("db.t"))
    assert {p: e for p, e in after.items() if p in before} == before
    assert len(after) == len(before) + 3


def _live_entries(table) -> dict[str, DataFile]:  # type: ignore[no-untyped-def]
    snapshot = table.metadata.current_snapshot
    specs, schema = table.metadata.specs_by_id(), table.metadata.schema()
    return {
        e.data_file.file_path: e.data_file
        for m in read_manifest_list(table.io, snapshot.manifest_list)
        for e in read_manifest(table.io, m, specs=specs, schema=schema)
        if e.status is not Status.DELETED
    }


def test_the_cache_stays_within_its_bound(table) -> None:  # type: ignore[no-untyped-def]
    cache = ManifestCache(max_entries=60)
    schema = table.metadata.schema()
    for snapshot_id in _snapshot_ids(table):
        snapshot = table.metadata.snapshot_by_id(snapshot_id)
        for row_filter in FILTERS:
            Scan(
                table.io,
                table.metadata,
                snapshot,
                schema,
                row_filter=row_filter,
                manifest_cache=cache,
            ).plan()
            assert cache.size <= 60
    assert cache.size > 0


def test_block_summaries_that_do_not_match_the_blocks_are_corrupt_metadata(table) -> None:  # type: ignore[no-untyped-def]
    snapshot = table.metadata.snapshot_by_id(_snapshot_ids(table)[0])
    (manifest,) = read_manifest_list(table.io, snapshot.manifest_list)
    reader = fastavro.reader(io.BytesIO(table.io.read(manifest.manifest_path)))
    records = list(reader)
    metadata = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    metadata[BLOCKS_KEY] = "[[3,false,false,null,null]]"
    buf = io.BytesIO()
    fastavro.writer(buf, reader.writer_schema, records, metadata=metadata)
    table.io.write(manifest.manifest_path + ".bad.avro", buf.getvalue())
    bad = ManifestFile(
        **{**_fields(manifest), "manifest_path": manifest.manifest_path + ".bad.avro"}
    )
    cache = ManifestCache()
    scan = Scan(table.io, table.metadata, snapshot, table.metadata.schema(), row_filter="part = 3")
    with pytest.raises(CorruptMetadata):
        cache.live_files(
            table.io,
            bad,
            specs=table.metadata.specs_by_id(),
            schema=table.metadata.schema(),
            may_hold=scan_block_test(scan),
        )


def _fields(m: ManifestFile) -> dict[str, object]:
    return {name: getattr(m, name) for name in ManifestFile.__dataclass_fields__}
