"""Expire snapshots: drop old snapshots from the metadata, then delete the files only they used.

Which snapshots stay follows Iceberg Java's ``RemoveSnapshots``:

* every ref is kept unless it is older than its ``max-ref-age-ms`` (the ref's own, else the
  table's ``history.expire.max-ref-age-ms``, default: forever); ``main`` is always kept, and
  the head of every kept branch or tag is never expired;
* on each kept branch, ancestors of the head are kept while fewer than ``min-snapshots-to-keep``
  have been kept or while they are newer than the expiry time. Both come from the branch's own
  retention, else from the arguments (``older_than``, ``retain_last``), else from the table's
  ``history.expire.max-snapshot-age-ms`` (default 5 days) and
  ``history.expire.min-snapshots-to-keep`` (default 1);
* snapshots that no ref reaches (e.g. rolled back) are kept while newer than the expiry time;
* ``snapshot_ids`` are expired in addition; naming the head of a kept ref is an error.

The change commits first, as an ordinary metadata commit through
:func:`~lakecat.catalog.commit.pipeline.commit_updates`: on a lost race the plan is recomputed on
the refreshed metadata, so a snapshot committed concurrently is newer than the expiry time and
survives. Only after the commit are files deleted: the manifest lists of the expired snapshots,
and the manifests and data files they reference that no remaining snapshot references.

Working out those files reads the trees of the remaining snapshots. A concurrent expiry may
commit and delete some of them meanwhile; the read then fails, and the files to delete are
worked out again on the newer metadata (:mod:`lakecat.catalog.maintenance.replan`): what the
newest metadata references is kept, and what it no longer references is not needed by the
table. Nothing after the commit raises: the commit stands. A file that cannot be deleted is
logged and listed in :attr:`ExpireResult.not_deleted`; if the files to delete cannot be worked
out at all (the table names a file that is missing, or kept changing), nothing is deleted and
:attr:`ExpireResult.cleanup_error` says why. Orphan removal collects what is left either way.
A dry run that races an expiry the same way is planned again on the newer metadata.

Running reads: a reader that planned a scan of a snapshot still protected by the age/count
guard is safe. A reader pinned to a snapshot older than the guard may find its files deleted
under it, as in Iceberg: size ``history.expire.max-snapshot-age-ms`` above the longest read.
Metadata files (``*.metadata.json``) are not deleted here; commits prune them per
``write.metadata.previous-versions-max`` and ``write.metadata.delete-after-commit.enabled``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lakecat.catalog.maintenance.reachable import (
    require_gc_enabled,
    side_files,
    statistics_files,
)
from lakecat.catalog.maintenance.replan import plan_with_replans
from lakecat.metadata import properties as P
from lakecat.metadata.errors import LakecatError, NoSuchSnapshot, ValidationError
from lakecat.metadata.io.fileio import FileIO, FileNotFoundStorageError
from lakecat.metadata.manifests.datafile import Status
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.table.snapshots import MAIN_BRANCH, SnapshotRef
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.timetravel import Timestamp, to_timestamp_ms
from lakecat.metadata.table.updates import (
    AssertTableUUID,
    RemoveSnapshotRef,
    RemoveSnapshots,
    TableRequirement,
    TableUpdate,
)

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

log = logging.getLogger("lakecat.maintenance")

_FOREVER = sys.maxsize


@dataclass(frozen=True)
class ExpireResult:
    """Snapshots expired and files deleted (for ``dry_run``: what would be).

    With ``delete_files=False`` the file tuples are empty: nothing was deleted, and remove
    orphan files collects the unreferenced files later. After a commit, cleanup never raises:
    ``not_deleted`` are files whose deletion failed (not in the ``deleted_*`` tuples), and
    ``cleanup_error`` is set when the files to delete could not be worked out, so that none
    was deleted. Either way the expiry stands and orphan removal collects the leftovers.
    """

    expired_snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    deleted_data_files: tuple[str, ...]
    deleted_manifests: tuple[str, ...]
    # manifest lists, and the files that live as long as their snapshot (a compaction's
    # row-moves record, ``reachable.side_files``; its statistics files, ``statistics_files``)
    deleted_manifest_lists: tuple[str, ...]
    not_deleted: tuple[str, ...] = ()
    cleanup_error: str | None = None


@dataclass(frozen=True)
class ExpiryPlan:
    """Which snapshots and refs to remove from one metadata version."""

    expired: frozenset[int]
    removed_refs: tuple[str, ...]

    @property
    def is_empty(self) -> bool:
        return not self.expired and not self.removed_refs


@dataclass(frozen=True)
class ExpiryPolicy:
    """The retention asked for; ``None`` fields fall back to the table's properties."""

    now_ms: int
    older_than_ms: int | None = None
    retain_last: int | None = None
    snapshot_ids: frozenset[int] = field(default_factory=frozenset)


def expire_snapshots(
    table: Table,
    *,
    older_than: Timestamp | None = None,
    retain_last: int | None = None,
    snapshot_ids: Sequence[int] = (),
    dry_run: bool = False,
    delete_files: bool = True,
) -> ExpireResult:
    """Expire snapshots by age and count (module docstring) and delete the files they freed.

    ``older_than``: expire snapshots committed before this time (ms, datetime or ISO text);
    default now minus ``history.expire.max-snapshot-age-ms``. ``retain_last``: keep at least
    this many ancestors per branch; default ``history.expire.min-snapshots-to-keep``.
    ``dry_run`` commits nothing and deletes nothing and reports what would go. Once the
    expiry committed, failures to work out or delete the freed files are reported in the
    result (see :class:`ExpireResult`), not raised.
    """
    if retain_last is not None and retain_last < 1:
        raise ValidationError(f"retain_last must be at least 1, not {retain_last}")
    policy = ExpiryPolicy(
        now_ms=int(time.time() * 1000),
        older_than_ms=None if older_than is None else to_timestamp_ms(older_than),
        retain_last=retain_last,
        snapshot_ids=frozenset(snapshot_ids),
    )
    table.refresh()
    require_gc_enabled(table.metadata, "expire snapshots")
    for snapshot_id in policy.snapshot_ids:
        table.metadata.snapshot_by_id(snapshot_id)  # NoSuchSnapshot for an unknown id
    if dry_run:

        def dry() -> ExpireResult:  # on table.metadata as it is: refreshed on a re-plan
            base = table.metadata
            plan = plan_expiry(base, policy, strict=False)  # the ids were checked above
            data, manifests, lists = _freed_files(table.io, base, plan, keep=base)
            return ExpireResult(
                tuple(sorted(plan.expired)), plan.removed_refs, data, manifests, lists
            )

        return plan_with_replans(table, dry, job="expire_snapshots (dry run)")

    built: list[tuple[TableMetadata, ExpiryPlan]] = []

    def build(base: TableMetadata) -> tuple[Sequence[TableUpdate], Sequence[TableRequirement]]:
        plan = plan_expiry(base, policy, strict=False)
        built.append((base, plan))
        updates: list[TableUpdate] = [RemoveSnapshotRef(name) for name in plan.removed_refs]
        if plan.expired:
            updates.append(RemoveSnapshots(tuple(sorted(plan.expired))))
        return updates, (AssertTableUUID(base.table_uuid),)

    result = table.commit_updates(build)
    base, plan = built[-1]
    if result.metadata is base:  # nothing to expire: no commit
        return ExpireResult((), (), (), (), ())
    if not delete_files:  # committed, files kept on request
        return ExpireResult(tuple(sorted(plan.expired)), plan.removed_refs, (), (), ())
    return _delete_freed_files(table, base, plan)


def plan_expiry(
    metadata: TableMetadata, policy: ExpiryPolicy, *, strict: bool = True
) -> ExpiryPlan:
    """The snapshots and refs ``policy`` expires from ``metadata`` (pure).

    ``strict``: an explicitly named snapshot that is unknown raises :class:`NoSuchSnapshot`
    (on a retry it may have been expired concurrently, which is not an error).
    """
    props = metadata.properties
    default_older_than = (
        policy.older_than_ms
        if policy.older_than_ms is not None
        else policy.now_ms - P.get_int(props, P.MAX_SNAPSHOT_AGE_MS, P.MAX_SNAPSHOT_AGE_MS_DEFAULT)
    )
    default_min_keep = (
        policy.retain_last
        if policy.retain_last is not None
        else P.get_int(props, P.MIN_SNAPSHOTS_TO_KEEP, P.MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    )
    default_max_ref_age = P.get_int(props, P.MAX_REF_AGE_MS, _FOREVER)

    kept_refs = _kept_refs(metadata, policy.now_ms, default_max_ref_age)
    heads: dict[int, list[str]] = {}
    for name, ref in kept_refs.items():
        heads.setdefault(ref.snapshot_id, []).append(name)
    for snapshot_id in sorted(policy.snapshot_ids):
        if snapshot_id in heads:
            raise ValidationError(
                f"cannot expire snapshot {snapshot_id}: it is the head of "
                f"{', '.join(sorted(heads[snapshot_id]))}"
            )
        if strict and not metadata.has_snapshot(snapshot_id):
            raise NoSuchSnapshot(f"no snapshot with id {snapshot_id}")

    keep: set[int] = set(heads)
    reachable: set[int] = set()
    for ref in kept_refs.values():
        if ref.ref_type != "branch":
            reachable.add(ref.snapshot_id)
            continue
        older_than = (
            policy.now_ms - ref.max_snapshot_age_ms
            if ref.max_snapshot_age_ms is not None
            else default_older_than
        )
        min_keep = (
            ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else default_min_keep
        )
        kept_here = 0
        protecting = True
        for snap in metadata.ancestors(ref.snapshot_id):
            reachable.add(snap.snapshot_id)
            if protecting and (kept_here < min_keep or snap.timestamp_ms >= older_than):
                keep.add(snap.snapshot_id)
                kept_here += 1
            else:
                protecting = False
    for snap in metadata.snapshots:
        if snap.snapshot_id not in reachable and snap.timestamp_ms >= default_older_than:
            keep.add(snap.snapshot_id)

    expired = {s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in keep}
    expired |= {i for i in policy.snapshot_ids if metadata.has_snapshot(i)}
    removed_refs = tuple(sorted(set(metadata.refs) - set(kept_refs)))
    return ExpiryPlan(frozenset(expired), removed_refs)


def _kept_refs(
    metadata: TableMetadata, now_ms: int, default_max_ref_age: int
) -> dict[str, SnapshotRef]:
    kept: dict[str, SnapshotRef] = {}
    for name, ref in metadata.refs.items():
        if name == MAIN_BRANCH:
            kept[name] = ref
            continue
        if not metadata.has_snapshot(ref.snapshot_id):
            continue  # a ref to a missing snapshot is invalid: Java drops it too
        max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_max_ref_age
        if now_ms - metadata.snapshot_by_id(ref.snapshot_id).timestamp_ms <= max_age:
            kept[name] = ref
    return kept


# ---- files ------------------------------------------------------------------------------
@dataclass
class _Tree:
    """The manifest lists, manifests and live data files some snapshots reference."""

    manifest_lists: set[str] = field(default_factory=set)
    manifests: set[str] = field(default_factory=set)
    data_files: set[str] = field(default_factory=set)


def _tree(
    io: FileIO,
    metadata: TableMetadata,
    snapshot_ids: Iterable[int],
    *,
    skip_manifests: AbstractSet[str] = frozenset(),
    missing_ok: bool = False,
) -> _Tree:
    """Files reachable from ``snapshot_ids``; data files of ``skip_manifests`` are not read.

    ``missing_ok``: a manifest list or manifest that is already gone (an earlier, interrupted
    run deleted it) is skipped instead of failing.
    """
    tree = _Tree()
    specs = metadata.specs_by_id()
    schema = metadata.schema()
    for snapshot_id in snapshot_ids:
        snap = metadata.snapshot_by_id(snapshot_id)
        tree.manifest_lists.add(snap.manifest_list)
        tree.manifest_lists.update(side_files(snap))  # deleted with the list
        tree.manifest_lists.update(statistics_files(metadata, snapshot_id))  # and its statistics
        try:
            manifests = read_manifest_list(io, snap.manifest_list)
        except FileNotFoundStorageError:
            if not missing_ok:
                raise
            continue
        for manifest in manifests:
            if manifest.manifest_path in tree.manifests:
                continue
            tree.manifests.add(manifest.manifest_path)
            if manifest.manifest_path in skip_manifests:
                continue
            try:
                entries = read_manifest(io, manifest, specs=specs, schema=schema)
            except FileNotFoundStorageError:
                if not missing_ok:
                    raise
                continue
            for entry in entries:
                if entry.status is not Status.DELETED:
                    tree.data_files.add(entry.data_file.file_path)
    return tree


def _freed_files(
    io: FileIO, base: TableMetadata, plan: ExpiryPlan, *, keep: TableMetadata
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The data files, manifests and manifest lists that only the snapshots ``plan`` expires
    from ``base`` use, given that the table now is ``keep``: every snapshot of ``keep`` but the
    expired ones stays (``keep`` is ``base`` for a dry run)."""
    expired_ids = sorted(plan.expired)
    kept_ids = [s.snapshot_id for s in keep.snapshots if s.snapshot_id not in plan.expired]
    kept = _tree(io, keep, kept_ids)
    # A manifest a kept snapshot still lists has only kept data files: no need to read it.
    gone = _tree(io, base, expired_ids, skip_manifests=kept.manifests, missing_ok=True)
    lists = tuple(sorted(gone.manifest_lists - kept.manifest_lists))
    manifests = tuple(sorted(gone.manifests - kept.manifests))
    data = tuple(sorted(gone.data_files - kept.data_files))
    return data, manifests, lists


def _delete_freed_files(table: Table, base: TableMetadata, plan: ExpiryPlan) -> ExpireResult:
    """After the expiry committed (``table.metadata`` is its result): delete the files only the
    expired snapshots used. Never raises: the commit stands whatever happens here."""
    expired_ids = tuple(sorted(plan.expired))
    try:
        # The remaining snapshots' trees are read on table.metadata; when a concurrent expiry
        # deletes part of them meanwhile, they are read again on the newer metadata: what it
        # references is kept, what it dropped the table no longer needs.
        data, manifests, lists = plan_with_replans(
            table,
            lambda: _freed_files(table.io, base, plan, keep=table.metadata),
            job="expire_snapshots (files to delete)",
        )
    except (LakecatError, OSError) as exc:
        log.warning(
            "%s: expired snapshots %s, but could not work out which files they freed, so none "
            "was deleted (remove_orphan_files collects them): %s",
            table.name,
            list(expired_ids),
            exc,
        )
        return ExpireResult(
            expired_ids, plan.removed_refs, (), (), (), cleanup_error=f"{type(exc).__name__}: {exc}"
        )
    failed: set[str] = set()
    # Data first, then manifests, then lists: an interrupted run leaves the tree readable
    # down to what is already gone, and orphan removal takes the rest.
    for location in (*data, *manifests, *lists):
        try:
            table.io.delete(location)
        except (LakecatError, OSError) as exc:  # the commit landed; a leftover is only an orphan
            log.warning("could not delete %s: %s", location, exc)
            failed.add(location)

    def done(locations: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(p for p in locations if p not in failed)

    return ExpireResult(
        expired_ids,
        plan.removed_refs,
        done(data),
        done(manifests),
        done(lists),
        not_deleted=tuple(p for p in (*data, *manifests, *lists) if p in failed),
    )
