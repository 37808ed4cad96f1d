"""Build a new snapshot's metadata tree for an intent on top of a base.

One :class:`SnapshotProducer` serves every attempt of one commit. What does not depend on the
base is written once and reused: the manifests listing the operation's new data files (their
entries inherit snapshot id and sequence numbers, so they stay valid on any base). What depends
on the base is rebuilt only where the base changed: a base manifest that lost files is rewritten
once per distinct base manifest, and merged manifests are cached by the manifests they merge.
Each attempt writes exactly one new manifest list.

Manifest merging follows Iceberg's ``ManifestMergeManager``: per partition spec, manifests are
bin-packed from the oldest to ``commit.manifest.target-size-bytes``; a bin of more than one
manifest is merged, except the bin holding the new manifest while it has fewer than
``commit.manifest.min-count-to-merge`` manifests. That keeps the manifest list bounded.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from lakecat.catalog.commit.conflicts import (
    APP_ID_KEY,
    APP_VERSION_KEY,
    BLIND_APPEND_KEY,
    OPERATION_KEY,
)
from lakecat.catalog.commit.intent import Intent, OpKind, commit_parent
from lakecat.metadata import properties as P
from lakecat.metadata.errors import ConcurrentDeleteDelete
from lakecat.metadata.io.fileio import FileIO, join
from lakecat.metadata.manifests.cache import ManifestCache, NoCache
from lakecat.metadata.manifests.datafile import (
    Content,
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    Status,
)
from lakecat.metadata.manifests.delete_index import dangling_deletes
from lakecat.metadata.manifests.manifest import (
    as_listed,
    write_manifest,
    write_manifest_list,
)
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import (
    AddSnapshot,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRef,
    TableRequirement,
    TableUpdate,
)


def metadata_dir(metadata: TableMetadata) -> str:
    return metadata.properties.get(P.WRITE_METADATA_PATH) or join(metadata.location, "metadata")


def data_dir(metadata: TableMetadata) -> str:
    return metadata.properties.get(P.WRITE_DATA_PATH) or join(metadata.location, "data")


@dataclass(frozen=True)
class Produced:
    """One attempt's result: the snapshot, the records to apply, the files it wrote."""

    snapshot: Snapshot
    updates: tuple[TableUpdate, ...]
    requirements: tuple[TableRequirement, ...]
    attempt_files: tuple[str, ...]


@dataclass(frozen=True)
class PreparedAppend:
    """A blind append ready to commit on any base: what a group commit's lock holder needs to
    commit it for the writer that prepared it (:mod:`lakecat.catalog.commit.coordination.group`).

    ``manifests`` list the new data files and are written; ``change_summary`` holds the
    snapshot summary's own counts (added files, records, size, changed partitions)."""

    snapshot_id: int
    branch: str
    manifests: tuple[ManifestFile, ...]
    change_summary: tuple[tuple[str, str], ...]
    extra_summary: tuple[tuple[str, str], ...] = ()
    table_uuid: str = ""  # the table it was prepared for: a holder commits it to no other


@dataclass(frozen=True)
class DeleteSwap:
    """How one attempt changes the intent's deletion vectors (format v3) on a base where
    concurrent commits changed the deletes of the same data files: ``added`` DVs (each the
    union of the intent's and the base's for one data file) take the place of the intent's
    DVs ``dropped_added``; the base's DVs and position delete files ``extra_removed`` are
    removed as well, and ``dropped_removed`` (those the intent meant to replace, already gone
    from the base) are not."""

    added: tuple[DataFile, ...] = ()
    dropped_added: frozenset[tuple[str, int | None]] = frozenset()
    extra_removed: tuple[DataFile, ...] = ()
    dropped_removed: frozenset[tuple[str, int | None]] = frozenset()


NO_SWAP = DeleteSwap()


def staged(intent: Intent, base: TableMetadata) -> bool:
    """Whether the intent's snapshot is only added to ``base``, moving no branch: a write
    with a WAP id on a table with ``write.wap.enabled`` (Iceberg's ``stageOnly``; its
    parent is still the branch's head, and ``publish_changes`` applies it later)."""
    return intent.wap_id is not None and P.get_bool(base.properties, P.WRITE_WAP_ENABLED, False)


@dataclass
class SnapshotProducer:
    """Writes manifests and manifest lists for one intent, across commit attempts."""

    io: FileIO
    intent: Intent
    manifests: ManifestCache = field(default_factory=NoCache)
    # another writer's append, committed by this one: its manifests are written already
    prepared: PreparedAppend | None = None
    commit_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    _manifest_count: int = 0
    _new_manifests: dict[
        tuple[int, ManifestContent, frozenset[tuple[str, int | None]]], ManifestFile
    ] = field(default_factory=dict)
    # by (base manifest, dangling delete files removed): its rewrite and the paths it removed
    _rewritten: dict[
        tuple[str, frozenset[tuple[str, int | None]]],
        tuple[ManifestFile | None, frozenset[tuple[str, int | None]]],
    ] = field(default_factory=dict)
    _merged: dict[tuple[str, ...], ManifestFile] = field(default_factory=dict)
    _dangling_by_parent: dict[int, tuple[DataFile, ...]] = field(default_factory=dict)
    _extra: dict[tuple[str, ...], ManifestFile] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)  # every manifest written, any attempt
    last_manifests: list[ManifestFile] = field(default_factory=list)  # the latest attempt's list

    # ---- the attempt ----------------------------------------------------------------------
    def produce(
        self,
        base: TableMetadata,
        *,
        attempt: int,
        extra_summary: dict[str, str],
        extra_files: tuple[DataFile, ...] = (),
        swap: DeleteSwap = NO_SWAP,
    ) -> Produced:
        """One attempt on ``base``. ``extra_files``: delete files this attempt adds besides
        the intent's (a compaction's carried-over deletes, which depend on the base);
        ``swap``: deletion vectors merged with the base's in place of the intent's."""
        intent = self.intent
        parent = commit_parent(base, intent)
        base_manifests = (
            list(self.manifests.manifest_list(self.io, parent.manifest_list).manifests)
            if parent
            else []
        )

        # delete files that applied only to the removed data files go with them, on this base
        dangling = self._dangling(base, parent)
        kept, rewritten = self._remove_files(base, base_manifests, dangling, swap)
        new = (
            list(self.prepared.manifests)
            if self.prepared
            else self._write_new_manifests(base, swap.dropped_added)
        )
        extra_files = (*extra_files, *swap.added)
        if extra_files:
            new.extend(self._extra_manifests(base, extra_files))
        manifests = new + rewritten + kept
        if P.get_bool(base.properties, P.MANIFEST_MERGE_ENABLED, P.MANIFEST_MERGE_ENABLED_DEFAULT):
            manifests = self._merge(base, manifests, first_new={m.manifest_path for m in new})
        sequence_number = base.last_sequence_number + 1
        list_location = join(
            metadata_dir(base), f"snap-{intent.snapshot_id}-{attempt}-{self.commit_uuid}.avro"
        )
        # v3 row lineage: this attempt's row ids start at the base's next-row-id, so each
        # retry assigns them afresh (the list writer gives new data manifests their ranges)
        first_row_id = base.next_first_row_id
        manifests, added_rows = write_manifest_list(
            self.io,
            list_location,
            manifests,
            snapshot_id=intent.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            known=self.manifests.rows,
            format_version=base.format_version,
            first_row_id=first_row_id,
        )
        self.last_manifests = manifests
        self.manifests.put_manifest_list(list_location, as_listed(manifests, sequence_number))
        summary = self._summary(parent, extra_summary, dangling, extra_files, swap)
        now = max(int(time.time() * 1000), base.last_updated_ms)
        snapshot = Snapshot(
            snapshot_id=intent.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            timestamp_ms=now,
            manifest_list=list_location,
            operation=intent.snapshot_operation,
            summary=summary,
            schema_id=base.current_schema_id,
            first_row_id=first_row_id,
            added_rows=added_rows,
        )
        ref = base.refs.get(intent.branch)
        updates: tuple[TableUpdate, ...] = (AddSnapshot(snapshot),)
        if not staged(intent, base):
            # A commit moves the branch; its retention settings (used by expiry) stay.
            updates += (
                SetSnapshotRef(
                    intent.branch,
                    intent.snapshot_id,
                    "branch",
                    max_ref_age_ms=ref.max_ref_age_ms if ref else None,
                    max_snapshot_age_ms=ref.max_snapshot_age_ms if ref else None,
                    min_snapshots_to_keep=ref.min_snapshots_to_keep if ref else None,
                ),
            )
        requirements: tuple[TableRequirement, ...] = (
            AssertTableUUID(base.table_uuid),
            # (a branch this commit creates must still be missing)
            AssertRefSnapshotId(intent.branch, ref.snapshot_id if ref else None),
        )
        return Produced(snapshot, updates, requirements, (list_location,))

    def prepare(self, base: TableMetadata) -> None:
        """Write what no base changes (the manifests of the new data files) ahead of the
        first attempt, so that it is not done while holding the commit lock."""
        self._write_new_manifests(base)

    def prepared_append(self, base: TableMetadata) -> PreparedAppend:
        """This blind append, ready for another writer to commit (see :class:`PreparedAppend`)."""
        if not self.intent.can_be_handed_over:
            raise ValueError("only blind appends without an application id can be handed over")
        return PreparedAppend(
            snapshot_id=self.intent.snapshot_id,
            branch=self.intent.branch,
            manifests=tuple(self._write_new_manifests(base)),
            change_summary=tuple(self._change_summary().items()),
            extra_summary=self.intent.extra_summary,
            table_uuid=base.table_uuid,
        )

    @classmethod
    def for_prepared(
        cls, io: FileIO, prepared: PreparedAppend, manifests: ManifestCache
    ) -> SnapshotProducer:
        """A producer committing another writer's prepared append."""
        intent = Intent(
            OpKind.APPEND,
            snapshot_id=prepared.snapshot_id,
            branch=prepared.branch,
            extra_summary=prepared.extra_summary,
        )
        return cls(io, intent, manifests, prepared=prepared)

    def unused_manifests(self) -> list[str]:
        """Manifests written by any attempt that the latest manifest list does not use."""
        used = {m.manifest_path for m in self.last_manifests}
        return [p for p in self.written if p not in used]

    # ---- pieces ---------------------------------------------------------------------------
    def _next_manifest_location(self, base: TableMetadata) -> str:
        self._manifest_count += 1
        return join(metadata_dir(base), f"{self.commit_uuid}-m{self._manifest_count}.avro")

    def _write(
        self,
        base: TableMetadata,
        spec_id: int,
        entries: Iterable[ManifestEntry],
        content: ManifestContent = ManifestContent.DATA,
    ) -> ManifestFile:
        location = self._next_manifest_location(base)
        manifest = write_manifest(
            self.io,
            location,
            spec=base.spec(spec_id),
            schema=base.schema(),
            entries=entries,
            added_snapshot_id=self.intent.snapshot_id,
            content=content,
            format_version=base.format_version,
        )
        self.written.append(location)
        return manifest

    def _write_new_manifests(
        self,
        base: TableMetadata,
        dropped: frozenset[tuple[str, int | None]] = frozenset(),
    ) -> list[ManifestFile]:
        """One manifest per (partition spec, content) of the new files: data files in data
        manifests, delete files (merge-on-read) in delete manifests; without the ``dropped``
        ones (deletion vectors an attempt replaced with merged ones)."""
        groups: dict[tuple[int, ManifestContent], list[DataFile]] = {}
        for f in self.intent.added_files:
            if f.key in dropped:
                continue
            content = ManifestContent.DATA if f.content is Content.DATA else ManifestContent.DELETES
            groups.setdefault((f.spec_id, content), []).append(f)
        out = []
        for (spec_id, content), files in sorted(groups.items()):
            key = (spec_id, content, dropped if content is ManifestContent.DELETES else frozenset())
            cached = self._new_manifests.get(key)
            if cached is None:
                # Snapshot id and sequence numbers left null: inherited from the manifest list,
                # which is what lets every retry reuse this file unchanged. A data sequence
                # number the intent fixes (a compaction's starting one) is written out.
                fixed = (
                    self.intent.added_data_sequence_number
                    if content is ManifestContent.DATA
                    else None
                )
                entries = (ManifestEntry(Status.ADDED, f, sequence_number=fixed) for f in files)
                cached = self._write(base, spec_id, entries, content)
                self._new_manifests[key] = cached
            out.append(cached)
        return out

    def _extra_manifests(
        self, base: TableMetadata, files: tuple[DataFile, ...]
    ) -> list[ManifestFile]:
        """The delete manifests (one per spec) of an attempt's extra delete files, each
        written once per distinct set."""
        by_spec: dict[int, list[DataFile]] = {}
        for f in files:
            by_spec.setdefault(f.spec_id, []).append(f)
        out = []
        for spec_id, in_spec in sorted(by_spec.items()):
            key = tuple(sorted(f"{f.file_path}#{f.content_offset}" for f in in_spec))
            cached = self._extra.get(key)
            if cached is None:
                entries = (ManifestEntry(Status.ADDED, f) for f in in_spec)
                cached = self._write(base, spec_id, entries, ManifestContent.DELETES)
                self._extra[key] = cached
            out.append(cached)
        return out

    def _dangling(self, base: TableMetadata, parent: Snapshot | None) -> tuple[DataFile, ...]:
        """The delete files of ``parent`` that apply only to data files this intent removes
        (:func:`~lakecat.metadata.manifests.delete_index.dangling_deletes`), once per parent."""
        if not self.intent.removed_files or parent is None:
            return ()
        found = self._dangling_by_parent.get(parent.snapshot_id)
        if found is None:
            found = dangling_deletes(
                self.io,
                base,
                parent,
                self.intent.removed_files,
                self.manifests,
                added_data_sequence_number=self.intent.added_data_sequence_number,
            )
            self._dangling_by_parent[parent.snapshot_id] = found
        return found

    def _remove_files(
        self,
        base: TableMetadata,
        base_manifests: list[ManifestFile],
        dangling: tuple[DataFile, ...] = (),
        swap: DeleteSwap = NO_SWAP,
    ) -> tuple[list[ManifestFile], list[ManifestFile]]:
        """Split base manifests into kept ones and rewrites that mark removed files (and the
        ``dangling`` delete files, and the ``swap``'s) DELETED."""
        # by entry key, not path: the DVs of several data files may share one Puffin file
        removed_data = (
            frozenset(f.key for f in (*self.intent.removed_files, *swap.extra_removed))
            - swap.dropped_removed
        )
        to_remove = removed_data | frozenset(f.key for f in dangling)
        snapshot_id = self.intent.snapshot_id
        kept: list[ManifestFile] = []
        rewritten: list[ManifestFile] = []
        found: set[tuple[str, int | None]] = set()
        specs = base.specs_by_id()
        removed_partitions = {
            (f.spec_id, f.partition)
            for f in (*self.intent.removed_files, *dangling, *swap.extra_removed)
        }
        for manifest in base_manifests:
            if manifest.live_files_count == 0 and manifest.added_snapshot_id != snapshot_id:
                continue  # only DELETED entries of older snapshots: nothing live to carry
            if not to_remove or not _may_hold(manifest, removed_partitions):
                kept.append(manifest)
                continue
            key = (manifest.manifest_path, to_remove)
            cached = self._rewritten.get(key)
            if cached is None:
                entries = list(
                    self.manifests.read(self.io, manifest, specs=specs, schema=base.schema())
                )
                hit = frozenset(
                    e.data_file.key
                    for e in entries
                    if e.status is not Status.DELETED and e.data_file.key in to_remove
                )
                replacement = None
                if hit:
                    replacement = self._write(
                        base,
                        manifest.partition_spec_id,
                        _mark_deleted(entries, hit, snapshot_id),
                        manifest.content,
                    )
                cached = (replacement, hit)
                self._rewritten[key] = cached
            replacement, hit = cached
            found |= hit
            if replacement is None:
                kept.append(manifest)
            else:
                rewritten.append(replacement)
        missing = sorted(path for path, _ in removed_data - found)
        if missing:
            raise ConcurrentDeleteDelete(
                f"{self.intent.kind.value}: {len(missing)} file(s) to remove are no longer in the "
                f"table (e.g. {missing[0]}); a concurrent commit removed them",
                files=tuple(missing),
            )
        return kept, rewritten

    def _merge(
        self, base: TableMetadata, manifests: list[ManifestFile], *, first_new: set[str]
    ) -> list[ManifestFile]:
        target = P.get_int(
            base.properties, P.MANIFEST_TARGET_SIZE_BYTES, P.MANIFEST_TARGET_SIZE_BYTES_DEFAULT
        )
        min_count = P.get_int(
            base.properties, P.MANIFEST_MIN_MERGE_COUNT, P.MANIFEST_MIN_MERGE_COUNT_DEFAULT
        )
        groups: dict[int, list[ManifestFile]] = {}
        out: list[ManifestFile] = []
        for m in manifests:
            if m.content is not ManifestContent.DATA:
                out.append(m)  # delete manifests are carried over as they are, never merged
                continue
            groups.setdefault(m.partition_spec_id, []).append(m)
        for spec_id in sorted(groups, reverse=True):
            for bin_ in _pack_end(groups[spec_id], target):
                holds_new = any(m.manifest_path in first_new for m in bin_)
                if len(bin_) == 1 or (holds_new and len(bin_) < min_count):
                    out.extend(bin_)
                else:
                    out.append(self._merged_manifest(base, spec_id, bin_))
        return out

    def _merged_manifest(
        self, base: TableMetadata, spec_id: int, bin_: list[ManifestFile]
    ) -> ManifestFile:
        key = tuple(m.manifest_path for m in bin_)
        cached = self._merged.get(key)
        if cached is not None:
            return cached
        specs = base.specs_by_id()
        snapshot_id = self.intent.snapshot_id
        entries: list[ManifestEntry] = []
        for m in bin_:
            for e in self.manifests.read(self.io, m, specs=specs, schema=base.schema()):
                entries.extend(
                    _merge_entry(e, m, snapshot_id, self.intent.added_data_sequence_number)
                )
        merged = self._write(base, spec_id, entries)
        self._merged[key] = merged
        return merged

    def _summary(
        self,
        parent: Snapshot | None,
        extra: dict[str, str],
        dangling: tuple[DataFile, ...] = (),
        extra_files: tuple[DataFile, ...] = (),
        swap: DeleteSwap = NO_SWAP,
    ) -> dict[str, str]:
        intent = self.intent
        s = (
            dict(self.prepared.change_summary)
            if self.prepared
            else self._change_summary(dangling, extra_files, swap)
        )
        prev = parent.summary if parent else {}
        for total, plus, minus in (
            ("total-records", "added-records", "deleted-records"),
            ("total-files-size", "added-files-size", "removed-files-size"),
            ("total-data-files", "added-data-files", "deleted-data-files"),
        ):
            if parent is None or total in prev:
                value = int(prev.get(total, "0")) + int(s.get(plus, "0")) - int(s.get(minus, "0"))
                s[total] = str(value)
        # carry the delete totals only when a table has or gets delete files (snapshot
        # summaries are repeated in every metadata.json, so their size matters)
        for total, plus, minus in (
            ("total-delete-files", "added-delete-files", "removed-delete-files"),
            ("total-position-deletes", "added-position-deletes", "removed-position-deletes"),
            ("total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"),
        ):
            if prev.get(total, "0") != "0" or plus in s:
                value = int(prev.get(total, "0")) + int(s.get(plus, "0")) - int(s.get(minus, "0"))
                s[total] = str(max(0, value))
        if intent.kind.value != intent.snapshot_operation:
            s[OPERATION_KEY] = intent.kind.value  # e.g. "merge" committed as "overwrite"
        if intent.kind is not OpKind.APPEND:
            s[BLIND_APPEND_KEY] = "false"
        if intent.app_id is not None and intent.app_version is not None:
            s[APP_ID_KEY] = intent.app_id
            s[APP_VERSION_KEY] = str(intent.app_version)
        s.update(dict(intent.extra_summary))
        s.update(extra)
        return s

    def _change_summary(
        self,
        dangling: tuple[DataFile, ...] = (),
        extra_files: tuple[DataFile, ...] = (),
        swap: DeleteSwap = NO_SWAP,
    ) -> dict[str, str]:
        """The summary's counts of this operation's own change (``dangling``: the delete files
        it removes; ``extra_files``: delete files the attempt adds besides the intent's, the
        ``swap``'s included)."""
        intent = self.intent
        added = intent.added_data_files
        new_deletes = (
            *(f for f in intent.added_delete_files if f.key not in swap.dropped_added),
            *extra_files,
        )
        removed = tuple(f for f in intent.removed_files if f.content is Content.DATA)
        # delete files an operation removes itself (rewrite_position_delete_files, replaced
        # DVs) and those that its removed data files leave applying to nothing
        gone_deletes = (
            *(
                f
                for f in intent.removed_files
                if f.content is not Content.DATA and f.key not in swap.dropped_removed
            ),
            *swap.extra_removed,
            *dangling,
        )
        s: dict[str, str] = {}
        if added:
            s["added-data-files"] = str(len(added))
            s["added-records"] = str(sum(f.record_count for f in added))
        if new_deletes:
            s.update(_deletes_summary("added", new_deletes))
        if added or new_deletes:  # Iceberg's: data and delete files
            size = sum(f.file_size_in_bytes for f in (*added, *new_deletes))
            s["added-files-size"] = str(size)
        if removed:
            s["deleted-data-files"] = str(len(removed))
            s["deleted-records"] = str(sum(f.record_count for f in removed))
            s["removed-files-size"] = str(sum(f.file_size_in_bytes for f in removed))
        if gone_deletes:
            s.update(_deletes_summary("removed", gone_deletes))
            size = sum(f.file_size_in_bytes for f in (*removed, *gone_deletes))
            s["removed-files-size"] = str(size)  # Iceberg's: data and delete files
        changed = (*added, *new_deletes, *removed, *intent.removed_files)
        s["changed-partition-count"] = str(len({(f.spec_id, f.partition) for f in changed}))
        return s


def _deletes_summary(prefix: str, deletes: tuple[DataFile, ...]) -> dict[str, str]:
    """Iceberg's summary counts of added or removed delete files (``SnapshotSummary``)."""
    positional = [d for d in deletes if d.content is Content.POSITION_DELETES]
    dvs = [d for d in positional if d.is_deletion_vector]
    equality = [d for d in deletes if d.content is Content.EQUALITY_DELETES]
    s = {f"{prefix}-delete-files": str(len(deletes))}
    counts = (
        ("position-delete-files", len(positional) - len(dvs)),
        ("dvs", len(dvs)),
        ("equality-delete-files", len(equality)),
        ("position-deletes", sum(d.record_count for d in positional)),
        ("equality-deletes", sum(d.record_count for d in equality)),
    )
    s.update((f"{prefix}-{key}", str(n)) for key, n in counts if n)
    return s


def _may_hold(manifest: ManifestFile, removed: set[tuple[int, tuple[object, ...]]]) -> bool:
    """Cheap pre-check: a manifest of another spec cannot hold the removed files."""
    return any(spec_id == manifest.partition_spec_id for spec_id, _ in removed)


def _mark_deleted(
    entries: list[ManifestEntry], hit: frozenset[tuple[str, int | None]], snapshot_id: int
) -> Iterable[ManifestEntry]:
    for e in entries:
        if e.status is Status.DELETED:
            continue  # deletions of older snapshots are not carried (Iceberg drops them too)
        if e.data_file.key in hit:
            yield replace(e, status=Status.DELETED, snapshot_id=snapshot_id)
        else:
            yield replace(e, status=Status.EXISTING)


def _merge_entry(
    e: ManifestEntry, manifest: ManifestFile, snapshot_id: int, fixed: int | None
) -> Iterable[ManifestEntry]:
    if e.snapshot_id == snapshot_id and e.status is Status.ADDED:
        # our own new files: keep them inheriting this commit's sequence number, or keep the
        # data sequence number the intent fixes for its data files
        kept = fixed if fixed is not None and e.data_file.content is Content.DATA else None
        yield replace(e, sequence_number=kept, file_sequence_number=None)
    elif e.status is Status.DELETED:
        if e.snapshot_id == snapshot_id:
            yield e
    else:
        yield replace(e, status=Status.EXISTING)


def _pack_end(manifests: list[ManifestFile], target: int) -> list[list[ManifestFile]]:
    """Iceberg's ``ListPacker.packEnd`` with lookback 1: fill bins from the oldest manifest."""
    bins: list[list[ManifestFile]] = []
    current: list[ManifestFile] = []
    size = 0
    for m in reversed(manifests):
        if current and size + m.manifest_length > target:
            bins.append(list(reversed(current)))
            current, size = [], 0
        current.append(m)
        size += m.manifest_length
    if current:
        bins.append(list(reversed(current)))
    return list(reversed(bins))
