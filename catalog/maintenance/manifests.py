"""Rewrite manifests: regroup the current snapshot's manifests by partition.

Appends leave one small manifest per commit (merging on commit bounds how many, see
:mod:`lakecat.catalog.commit.producer`), and their entries are in commit order, so a scan filtering
on a partition still opens most of them. ``rewrite_manifests`` reads every live entry of the
current snapshot, sorts them per partition spec by partition, and writes them into manifests of
about ``commit.manifest.target-size-bytes`` each, packing whole partitions (a partition larger
than the target gets manifests of its own), so that each manifest covers a narrow range of
partitions and the partition summaries in the manifest list prune well.

It also converts manifests written by other engines (Spark / Iceberg Java, pyiceberg) and by
older lakecat into lakecat's partition-ordered layout (:mod:`lakecat.metadata.manifests.order`):
entries in partition order, in Avro blocks whose first-partition-field summaries sit in the
file's header, so a filtered scan decodes only the blocks that can match
(:mod:`lakecat.metadata.manifests.blocks`) instead of every entry. A partitioned spec's data
manifests are therefore rewritten even when there is a single one, unless it already has that
layout. (On format v3 tables every data manifest inherits row ids and is decoded whole; there
the rewrite still regroups by partition.)

The entries are written as EXISTING with their original snapshot ids and sequence numbers, so
the rewrite changes no data and no sequence-number semantics. It commits one ``replace``
snapshot (summary ``manifests-created``, ``manifests-kept``, ``manifests-replaced``) through
:func:`~lakecat.catalog.commit.pipeline.commit_updates`: on a lost race the manifests are rewritten
for the refreshed current snapshot, and the manifests of the lost attempt are deleted afterwards.

The rewrite reads the manifest list and manifests of the current snapshot of the base it builds
on. A concurrent rewrite or compaction followed by an expiry can delete them before they are
read; the read fails, nothing has been committed, and the rewrite is planned again on the newer
metadata (:mod:`lakecat.catalog.maintenance.replan`; the table unchanged means the table names
a missing file, and that error propagates).
"""

from __future__ import annotations

import contextlib
import itertools
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lakecat.catalog.commit.conflicts import OPERATION_KEY
from lakecat.catalog.commit.intent import new_snapshot_id
from lakecat.catalog.commit.producer import metadata_dir
from lakecat.catalog.maintenance.replan import plan_with_replans
from lakecat.metadata import properties as P
from lakecat.metadata.errors import CommitStateUnknown, StorageError, ValidationError
from lakecat.metadata.io.fileio import FileIO, join
from lakecat.metadata.manifests.blocks import in_partition_order
from lakecat.metadata.manifests.datafile import ManifestContent, ManifestEntry, ManifestFile, Status
from lakecat.metadata.manifests.manifest import (
    decode_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from lakecat.metadata.table.snapshots import MAIN_BRANCH, REPLACE, Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import (
    AddSnapshot,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRef,
    TableRequirement,
    TableUpdate,
)

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

# Totals a replace snapshot carries over unchanged from its parent.
_CARRIED_TOTALS = (
    "total-records",
    "total-files-size",
    "total-data-files",
    "total-delete-files",
    "total-position-deletes",
    "total-equality-deletes",
)


@dataclass(frozen=True)
class ManifestRewriteResult:
    """Manifest counts before and after; ``snapshot_id`` is None when nothing was rewritten."""

    manifests_before: int
    manifests_after: int
    snapshot_id: int | None


def rewrite_manifests(
    table: Table, *, target_size_bytes: int | None = None
) -> ManifestRewriteResult:
    """Regroup the current snapshot's data manifests by partition, converting manifests of
    other writers to lakecat's partition-ordered layout (module docstring).

    ``target_size_bytes`` defaults to the table's ``commit.manifest.target-size-bytes``. A
    snapshot whose specs each have a single manifest that would stay a single manifest, and
    (for a partitioned spec) already has lakecat's layout, is left alone (no commit).
    """
    if target_size_bytes is not None and target_size_bytes <= 0:
        raise ValidationError(f"target_size_bytes must be positive, not {target_size_bytes}")
    rewriter = _Rewriter(table.io, target_size_bytes)
    try:
        # A base whose files a concurrent expiry deleted under the build: plan again on the
        # newer metadata (each attempt reads before it writes, so the failed one wrote nothing).
        result = plan_with_replans(
            table, lambda: table.commit_updates(rewriter.build), job="rewrite_manifests"
        )
    except CommitStateUnknown:
        raise  # the files may be part of the table now: keep them
    except BaseException:
        rewriter.delete(rewriter.all_written())
        raise
    rewriter.delete(rewriter.superseded())
    if result.metadata is rewriter.last_base or rewriter.last_outcome is None:
        before = rewriter.last_before
        return ManifestRewriteResult(before, before, None)
    before, after = rewriter.last_outcome
    return ManifestRewriteResult(before, after, rewriter.snapshot_id)


@dataclass
class _Rewriter:
    """Builds the rewrite for each base the commit loop hands it; remembers what it wrote."""

    io: FileIO
    target_size_bytes: int | None
    snapshot_id: int = field(default_factory=new_snapshot_id)
    commit_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    attempts: list[list[str]] = field(default_factory=list)
    last_base: TableMetadata | None = None
    last_before: int = 0
    last_outcome: tuple[int, int] | None = None

    def build(
        self, base: TableMetadata
    ) -> tuple[Sequence[TableUpdate], Sequence[TableRequirement]]:
        written: list[str] = []
        self.attempts.append(written)
        self.last_base = base
        self.last_outcome = None
        head = base.current_snapshot
        if head is None:
            self.last_before = 0
            return (), ()
        manifests = read_manifest_list(self.io, head.manifest_list)
        self.last_before = len(manifests)
        target = self.target_size_bytes or P.get_int(
            base.properties, P.MANIFEST_TARGET_SIZE_BYTES, P.MANIFEST_TARGET_SIZE_BYTES_DEFAULT
        )
        kept = [m for m in manifests if m.content is not ManifestContent.DATA]
        data = [m for m in manifests if m.content is ManifestContent.DATA]
        plan = _plan(self.io, base, data, target)
        if plan is None:
            return (), ()
        attempt = len(self.attempts)
        new: list[ManifestFile] = []
        for spec_id, entries in plan:
            location = join(metadata_dir(base), f"{self.commit_uuid}-r{attempt}-{len(new)}.avro")
            written.append(location)
            new.append(
                write_manifest(
                    self.io,
                    location,
                    spec=base.spec(spec_id),
                    schema=base.schema(),
                    entries=entries,
                    added_snapshot_id=self.snapshot_id,
                    format_version=base.format_version,
                )
            )
        sequence_number = base.last_sequence_number + 1
        list_location = join(
            metadata_dir(base), f"snap-{self.snapshot_id}-{attempt}-{self.commit_uuid}.avro"
        )
        written.append(list_location)
        first_row_id = base.next_first_row_id  # row lineage: see SnapshotProducer.produce
        _, added_rows = write_manifest_list(
            self.io,
            list_location,
            [*new, *kept],
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=head.snapshot_id,
            sequence_number=sequence_number,
            format_version=base.format_version,
            first_row_id=first_row_id,
        )
        summary = {
            "manifests-created": str(len(new)),
            "manifests-kept": str(len(kept)),
            "manifests-replaced": str(len(data)),
            "entries-processed": str(sum(len(entries) for _, entries in plan)),
            **{k: head.summary[k] for k in _CARRIED_TOTALS if k in head.summary},
            OPERATION_KEY: "rewrite-manifests",
        }
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=head.snapshot_id,
            sequence_number=sequence_number,
            timestamp_ms=max(int(time.time() * 1000), base.last_updated_ms),
            manifest_list=list_location,
            operation=REPLACE,
            summary=summary,
            schema_id=base.current_schema_id,
            first_row_id=first_row_id,
            added_rows=added_rows,
        )
        self.last_outcome = (len(manifests), len(new) + len(kept))
        return (
            (AddSnapshot(snapshot), SetSnapshotRef(MAIN_BRANCH, self.snapshot_id, "branch")),
            (AssertTableUUID(base.table_uuid), AssertRefSnapshotId(MAIN_BRANCH, head.snapshot_id)),
        )

    def all_written(self) -> list[str]:
        return [p for attempt in self.attempts for p in attempt]

    def superseded(self) -> list[str]:
        """Files of every attempt but the last (the last one committed, or wrote nothing)."""
        return [p for attempt in self.attempts[:-1] for p in attempt]

    def delete(self, locations: Sequence[str]) -> None:
        for location in locations:
            # best effort: orphan removal collects what is left
            with contextlib.suppress(StorageError):
                self.io.delete(location)


def _plan(
    io: FileIO, base: TableMetadata, manifests: list[ManifestFile], target: int
) -> list[tuple[int, list[ManifestEntry]]] | None:
    """The new manifests as (spec id, entries); ``None`` when the rewrite would change nothing."""
    specs = base.specs_by_id()
    by_spec: dict[int, list[ManifestEntry]] = {}
    inputs: dict[int, int] = {}
    total_bytes: dict[int, int] = {}
    in_order: dict[int, bool] = {}  # per spec: every manifest in lakecat's layout
    for m in manifests:
        inputs[m.partition_spec_id] = inputs.get(m.partition_spec_id, 0) + 1
        total_bytes[m.partition_spec_id] = (
            total_bytes.get(m.partition_spec_id, 0) + m.manifest_length
        )
        entries = by_spec.setdefault(m.partition_spec_id, [])
        data = io.read(m.manifest_path)
        in_order[m.partition_spec_id] = in_order.get(m.partition_spec_id, True) and (
            in_partition_order(data, m.manifest_path)
        )
        for e in decode_manifest(data, m, specs=specs, schema=base.schema()):
            if e.status is not Status.DELETED:
                # Read with inheritance applied: snapshot id and sequence numbers are explicit.
                entries.append(replace(e, status=Status.EXISTING))
    out: list[tuple[int, list[ManifestEntry]]] = []
    unchanged = True
    for spec_id in sorted(by_spec):
        entries = sorted(by_spec[spec_id], key=_entry_key)
        if not entries:
            unchanged = False  # a manifest of only deleted entries is dropped
            continue
        per_entry = max(1, total_bytes[spec_id] // max(1, len(entries)))
        per_manifest = max(1, target // per_entry)
        chunks = _pack_partitions(entries, per_manifest)
        converted = not specs[spec_id].fields or in_order[spec_id]  # nothing to order by
        unchanged = unchanged and inputs[spec_id] == 1 and len(chunks) == 1 and converted
        out.extend((spec_id, chunk) for chunk in chunks)
    return None if unchanged else out


def _pack_partitions(entries: list[ManifestEntry], per_manifest: int) -> list[list[ManifestEntry]]:
    """Consecutive whole partitions per manifest, up to ``per_manifest`` entries; a partition
    with more entries than that gets manifests of its own. Entries come sorted by partition."""
    chunks: list[list[ManifestEntry]] = []
    current: list[ManifestEntry] = []
    for _, group in itertools.groupby(entries, key=lambda e: _entry_key(e)[0]):
        part = list(group)
        if current and len(current) + len(part) > per_manifest:
            chunks.append(current)
            current = []
        while len(part) > per_manifest:
            chunks.append(part[:per_manifest])
            part = part[per_manifest:]
        current.extend(part)
    if current:
        chunks.append(current)
    return chunks


def _entry_key(e: ManifestEntry) -> tuple[Any, ...]:
    """Sort key of an entry: its partition (nulls first), then its path."""
    return (tuple(_value_key(v) for v in e.data_file.partition), e.data_file.file_path)


def _value_key(value: Any) -> tuple[bool, Any]:
    # Values of one partition field share a type; None sorts first without being compared.
    return (value is not None, value if value is not None else 0)
