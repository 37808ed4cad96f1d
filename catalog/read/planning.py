"""Scan planning: the data files of one snapshot that may hold rows a filter matches, and the
delete files that apply to each.

Planning prunes in three steps, each cheaper than the next: manifests by their partition
summaries, entries by their partition tuple (the filter projected through the partition
transforms, evaluated once per distinct partition of a manifest), and files by their column
bounds and counts. Through the catalog's
:class:`~lakecat.metadata.manifests.cache.ManifestCache`, a plan decodes each manifest list and
manifest at most once per process. Manifests are read one of two ways
(:meth:`~lakecat.metadata.manifests.cache.ManifestCache.scan_view`):

* a filter on the first partition field decodes only the Avro blocks of a lakecat-written,
  partition-ordered manifest that can match (:mod:`~lakecat.metadata.manifests.blocks`);
* any other manifest (other engines' manifests above all) is decoded whole, by a decoder
  compiled from the file's Avro schema (:mod:`~lakecat.metadata.manifests.avro_decoder`),
  straight to entries (or, for a file only fastavro reads, to records that are filtered before
  entry objects are built, only for the records kept:
  :mod:`~lakecat.metadata.manifests.scan_entries`); when the filter can rule partitions out,
  each record is first decoded only up to its partition, and in full once a scan keeps it.

Plans hold complete data files (every stat) either way, in manifest order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from lakecat.metadata.expressions.evaluators import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    PartitionEvaluator,
)
from lakecat.metadata.expressions.expressions import AlwaysTrue, BoundExpression
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.blocks import BlockTest
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import DataFile, ManifestContent
from lakecat.metadata.manifests.delete_index import delete_index, delete_manifests
from lakecat.metadata.manifests.scan_entries import ManifestEntries
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata


@dataclass(frozen=True)
class ScanPlan:
    """The data files a scan reads and, for each that has any, the delete files to apply to
    it (keyed by data file path; see :mod:`lakecat.catalog.read.deletes`)."""

    files: tuple[DataFile, ...]
    manifests_total: int
    manifests_scanned: int
    files_total: int
    deletes: Mapping[str, tuple[DataFile, ...]] = field(default_factory=dict)
    # data sequence numbers by file path: planned when deletes apply or row lineage is read
    sequence_numbers: Mapping[str, int] = field(default_factory=dict)

    @property
    def record_count(self) -> int:
        """The rows in the planned files; with deletes to apply, an upper bound."""
        return sum(f.record_count for f in self.files)


def plan_scan(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    schema: Schema,
    bound: BoundExpression,
    *,
    cache: ManifestCache,
    sequence_numbers: bool = False,
) -> ScanPlan:
    """The plan of a scan of ``snapshot`` with the filter ``bound`` (bound to ``schema``);
    with ``sequence_numbers``, every planned file's data sequence number too (row lineage)."""
    if snapshot is None:
        return ScanPlan((), 0, 0, 0)
    listing = cache.manifest_list(io, snapshot.manifest_list)
    specs = metadata.specs_by_id()
    evaluators = _SpecEvaluators(schema, bound)
    metrics = InclusiveMetricsEvaluator(schema, bound)
    deleting = delete_manifests(listing.manifests)
    index = (
        delete_index(io, deleting, specs=specs, schema=schema, cache=cache) if deleting else None
    )
    files: list[DataFile] = []
    deletes: dict[str, tuple[DataFile, ...]] = {}
    sequences: dict[str, int] = {}
    scanned = 0
    total = 0
    for manifest, summaries in zip(listing.manifests, listing.summaries, strict=True):
        if manifest.content is not ManifestContent.DATA:
            continue  # delete files are applied to data files, never read as data
        if not manifest.has_added_files and not manifest.has_existing_files:
            continue
        ev = evaluators.of(specs[manifest.partition_spec_id])
        if summaries is not None and not ev.manifest.eval_summaries(summaries):
            total += manifest.live_files_count
            continue
        scanned += 1
        # counted from the list row: a filtered scan may decode only some of the entries
        total += manifest.live_files_count
        entries_needed = index is not None or sequence_numbers  # data sequence numbers
        view = cache.scan_view(
            io,
            manifest,
            specs=specs,
            schema=schema,
            may_hold=None if entries_needed else ev.blocks,
            by_partition=ev.by_partition,
        )
        if not isinstance(view, ManifestEntries):  # blocks of a partition-ordered manifest
            for live in view:
                files.extend(f for f in live.select(ev.partition.eval) if metrics.eval(f))
            continue
        for e in view.select(ev.partition.eval, metrics):
            f = e.data_file
            files.append(f)
            if not entries_needed:
                continue
            if e.sequence_number is not None:
                sequences[f.file_path] = e.sequence_number
            applicable = index.for_data_file(f, e.sequence_number or 0) if index else ()
            if applicable:
                deletes[f.file_path] = applicable
    return ScanPlan(tuple(files), len(listing.manifests), scanned, total, deletes, sequences)


class _Evaluators:
    """A scan filter's evaluators for one partition spec."""

    def __init__(self, spec: PartitionSpec, schema: Schema, bound: BoundExpression) -> None:
        self.manifest = ManifestEvaluator(spec, schema, bound)
        self.partition = PartitionEvaluator(spec, schema, bound)
        # the filter can rule partitions out: records are decoded once their partition is kept
        self.by_partition = not isinstance(self.partition.projected, AlwaysTrue)
        # Blocks of a partition-ordered manifest are known by their first field's range.
        by_first = (
            ManifestEvaluator(replace(spec, fields=spec.fields[:1]), schema, bound)
            if spec.fields
            else None
        )
        self.blocks: BlockTest | None = (
            None
            if by_first is None or isinstance(by_first.projected, AlwaysTrue)
            else by_first.eval_summaries
        )


class _SpecEvaluators:
    def __init__(self, schema: Schema, bound: BoundExpression) -> None:
        self._schema = schema
        self._bound = bound
        self._by_spec: dict[int, _Evaluators] = {}

    def of(self, spec: PartitionSpec) -> _Evaluators:
        found = self._by_spec.get(spec.spec_id)
        if found is None:
            found = self._by_spec[spec.spec_id] = _Evaluators(spec, self._schema, self._bound)
        return found
