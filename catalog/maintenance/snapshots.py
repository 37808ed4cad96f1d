"""Snapshot management: rollback, set current, cherry-pick, fast-forward.

Each is an ordinary commit through :func:`~lakecat.catalog.commit.pipeline.commit_updates`: the
change is rebuilt and re-validated on every refreshed base, and lands with the catalog's
compare-and-swap.

Moving ``main`` back (rollback, set current) is validated against the table as the caller sees
it (``table.metadata``): if ``main`` moved since, the commit fails with
:class:`RequirementFailed` instead of silently discarding commits the caller has not seen (as
pyiceberg does; Iceberg Java would re-apply the rollback on top of them). Refresh the table and
decide again. Ref retention settings (``min-snapshots-to-keep`` ...) are kept when a ref moves.

Cherry-pick follows Iceberg Java's ``CherryPickOperation``: a snapshot whose parent is the
current snapshot is fast-forwarded to (``main`` is set to it); otherwise an ``append`` snapshot
is re-committed on ``main`` as a new append of the same data files (the files are reused, not
copied; the summary records ``source-snapshot-id``); anything else raises
:class:`ValidationError`. Picking a snapshot already in ``main``'s history, or one already
picked, raises :class:`ValidationError`. Re-applying an append reads the picked snapshot's
manifests; if a concurrent expiry deleted them, the pick is planned again on the refreshed
table, where the snapshot is gone (:class:`NoSuchSnapshot`) (see
:mod:`lakecat.catalog.maintenance.replan`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.commit.pipeline import CommitResult
from lakecat.catalog.commit.producer import SnapshotProducer
from lakecat.catalog.maintenance.replan import plan_with_replans
from lakecat.catalog.read.incremental import snapshot_file_changes
from lakecat.metadata import properties as P
from lakecat.metadata.errors import (
    CommitStateUnknown,
    NoSuchRef,
    NoSuchSnapshot,
    StorageError,
    ValidationError,
)
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.table.snapshots import APPEND, MAIN_BRANCH, Snapshot, SnapshotRef
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.timetravel import (
    Timestamp,
    format_timestamp_ms,
    is_ancestor_of,
    to_timestamp_ms,
)
from lakecat.metadata.table.updates import (
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRef,
    TableRequirement,
    TableUpdate,
)

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

SOURCE_SNAPSHOT_ID_KEY = "source-snapshot-id"  # Iceberg's SnapshotSummary.SOURCE_SNAPSHOT_ID_PROP

Build = tuple[Sequence[TableUpdate], Sequence[TableRequirement]]


def rollback_to_snapshot(table: Table, snapshot_id: int) -> CommitResult:
    """Make ``snapshot_id``, an ancestor of the current snapshot, current again."""
    view = table.metadata
    view.snapshot_by_id(snapshot_id)  # NoSuchSnapshot for an unknown id
    if not _is_current_ancestor(view, snapshot_id):
        raise ValidationError(
            f"cannot roll back {table.name} to snapshot {snapshot_id}: it is not an ancestor of "
            f"the current snapshot {view.current_snapshot_id}; use set_current_snapshot"
        )
    return _move_main(table, view, snapshot_id)


def rollback_to_timestamp(table: Table, timestamp: Timestamp) -> CommitResult:
    """Roll back to the newest ancestor of the current snapshot committed before ``timestamp``."""
    view = table.metadata
    ms = to_timestamp_ms(timestamp)
    target = next(
        (s for s in view.ancestors(view.current_snapshot_id) if s.timestamp_ms < ms), None
    )
    if target is None:
        raise NoSuchSnapshot(
            f"cannot roll back {table.name}: no ancestor of the current snapshot is older "
            f"than {format_timestamp_ms(ms)}"
        )
    return _move_main(table, view, target.snapshot_id)


def set_current_snapshot(table: Table, snapshot_id: int) -> CommitResult:
    """Make any existing snapshot the current one (e.g. undo a rollback)."""
    view = table.metadata
    view.snapshot_by_id(snapshot_id)
    return _move_main(table, view, snapshot_id)


def fast_forward(table: Table, branch: str, to: str) -> CommitResult:
    """Move ``branch`` forward to the head of ``to`` (a branch or tag).

    ``branch``'s head must be an ancestor of ``to``'s head (or the same snapshot: no commit).
    """
    view = table.metadata
    target = view.ref_snapshot(to)
    if target is None:
        raise NoSuchRef(f"{table.name}: {to!r} points at no snapshot")
    target_id = target.snapshot_id

    def build(base: TableMetadata) -> Build:
        current = _branch(base, branch)
        if not is_ancestor_of(base, snapshot_id=target_id, ancestor_id=current.snapshot_id):
            raise ValidationError(
                f"cannot fast-forward {branch!r} (at snapshot {current.snapshot_id}) to {to!r} "
                f"(at snapshot {target_id}): {branch!r} is not an ancestor of {to!r}"
            )
        return (
            [_set_ref(branch, current, target_id)],
            [AssertTableUUID(base.table_uuid), AssertRefSnapshotId(branch, current.snapshot_id)],
        )

    build(view)  # fail fast, before touching the catalog
    return table.commit_updates(build)


def cherry_pick(table: Table, snapshot_id: int) -> CommitResult:
    """Apply the changes of ``snapshot_id`` (e.g. a staged or branch snapshot) to ``main``.
    A snapshot a write-audit-publish write staged (summary ``wap.id``) is published: the new
    snapshot records ``published-wap-id``, and a WAP id already published on ``main`` is
    refused (Iceberg's ``DuplicateWAPCommitException``)."""

    def plan() -> tuple[Snapshot, Intent]:  # on table.metadata as it is: refreshed on a re-plan
        view = table.metadata
        picked = view.snapshot_by_id(snapshot_id)
        _check_not_picked(view, picked)
        if not _is_fast_forward(view, picked) and picked.operation != APPEND:
            raise _not_pickable(picked)
        added: tuple[DataFile, ...] = ()
        if picked.operation == APPEND:
            added = tuple(snapshot_file_changes(table.io, view, picked)[0])
        summary = {SOURCE_SNAPSHOT_ID_KEY: str(snapshot_id)}
        wap_id = picked.summary.get(P.WAP_ID)
        if wap_id:
            summary[P.PUBLISHED_WAP_ID] = wap_id
        intent = Intent(
            kind=OpKind.APPEND,
            starting_snapshot_id=view.current_snapshot_id,
            added_files=added,
            extra_summary=tuple(sorted(summary.items())),
        )
        return picked, intent

    picked, intent = plan_with_replans(table, plan, job="cherry_pick")
    return _CherryPick(table, picked, intent).commit()


class _CherryPick:
    """Rebuilds the cherry-pick on each base; cleans up manifests, never the picked files."""

    def __init__(self, table: Table, picked: Snapshot, intent: Intent) -> None:
        self.table = table
        self.picked = picked
        self.intent = intent
        self.producer = SnapshotProducer(table.io, intent)
        self.lists: list[str] = []
        self.attempts = 0
        self.last_produced: str | None = None  # the last attempt's manifest list, if it made one

    def build(self, base: TableMetadata) -> Build:
        self.attempts += 1
        self.last_produced = None
        if not base.has_snapshot(self.picked.snapshot_id):
            # Expired concurrently: its data files may be deleted, they must not be re-added.
            raise NoSuchSnapshot(
                f"snapshot {self.picked.snapshot_id} was expired while it was being cherry-picked"
            )
        _check_not_picked(base, self.picked)
        main = base.refs.get(MAIN_BRANCH)
        if _is_fast_forward(base, self.picked):
            return (
                [_set_ref(MAIN_BRANCH, main, self.picked.snapshot_id)],
                [
                    AssertTableUUID(base.table_uuid),
                    AssertRefSnapshotId(MAIN_BRANCH, main.snapshot_id if main else None),
                ],
            )
        if self.picked.operation != APPEND:
            raise _not_pickable(self.picked)
        produced = self.producer.produce(base, attempt=self.attempts, extra_summary={})
        self.lists.extend(produced.attempt_files)
        self.last_produced = produced.attempt_files[-1]
        return produced.updates, produced.requirements

    def commit(self) -> CommitResult:
        try:
            result = self.table.commit_updates(self.build)
        except CommitStateUnknown:
            raise  # the manifests may be part of the table now
        except BaseException:
            # Only metadata this operation wrote; the picked data files belong to the table.
            self._delete([*self.producer.written, *self.lists])
            raise
        if self.last_produced is None:  # fast-forwarded: main is now the picked snapshot
            self._delete([*self.producer.written, *self.lists])
            return replace(result, snapshot_id=self.picked.snapshot_id)
        self._delete(self.producer.unused_manifests())
        self._delete([p for p in self.lists if p != self.last_produced])
        return replace(result, snapshot_id=self.intent.snapshot_id)

    def _delete(self, locations: Sequence[str]) -> None:
        for location in locations:
            # best effort: orphan removal collects what is left
            with contextlib.suppress(StorageError):
                self.table.io.delete(location)


# ---- helpers ----------------------------------------------------------------------------
def _move_main(table: Table, view: TableMetadata, snapshot_id: int) -> CommitResult:
    expected = view.current_snapshot_id

    def build(base: TableMetadata) -> Build:
        return (
            [_set_ref(MAIN_BRANCH, base.refs.get(MAIN_BRANCH), snapshot_id)],
            [AssertTableUUID(base.table_uuid), AssertRefSnapshotId(MAIN_BRANCH, expected)],
        )

    return table.commit_updates(build)


def _set_ref(name: str, current: SnapshotRef | None, snapshot_id: int) -> SetSnapshotRef:
    """Point a branch at a snapshot, keeping its retention settings."""
    return SetSnapshotRef(
        name,
        snapshot_id,
        "branch",
        max_ref_age_ms=current.max_ref_age_ms if current else None,
        max_snapshot_age_ms=current.max_snapshot_age_ms if current else None,
        min_snapshots_to_keep=current.min_snapshots_to_keep if current else None,
    )


def _branch(metadata: TableMetadata, name: str) -> SnapshotRef:
    ref = metadata.refs.get(name)
    if ref is None:
        raise NoSuchRef(f"no branch named {name!r}")
    if ref.ref_type != "branch":
        raise ValidationError(f"{name!r} is a tag; only branches can be fast-forwarded")
    return ref


def _is_current_ancestor(metadata: TableMetadata, snapshot_id: int) -> bool:
    current = metadata.current_snapshot_id
    return current is not None and is_ancestor_of(
        metadata, snapshot_id=current, ancestor_id=snapshot_id
    )


def _is_fast_forward(metadata: TableMetadata, picked: Snapshot) -> bool:
    return bool(picked.parent_snapshot_id == metadata.current_snapshot_id)


def _check_not_picked(metadata: TableMetadata, picked: Snapshot) -> None:
    if _is_current_ancestor(metadata, picked.snapshot_id):
        raise ValidationError(
            f"snapshot {picked.snapshot_id} is already part of the current state; "
            "nothing to cherry-pick"
        )
    source = str(picked.snapshot_id)
    wap_id = picked.summary.get(P.WAP_ID)
    for ancestor in metadata.ancestors(metadata.current_snapshot_id):
        if ancestor.summary.get(SOURCE_SNAPSHOT_ID_KEY) == source:
            raise ValidationError(
                f"snapshot {picked.snapshot_id} was already cherry-picked as snapshot "
                f"{ancestor.snapshot_id}"
            )
        if wap_id and wap_id in (
            ancestor.summary.get(P.WAP_ID),
            ancestor.summary.get(P.PUBLISHED_WAP_ID),
        ):
            raise ValidationError(
                f"WAP id {wap_id!r} was already published, as snapshot {ancestor.snapshot_id}"
            )


def publish_changes(table: Table, wap_id: str) -> tuple[int, CommitResult]:
    """Publish the snapshot a write-audit-publish write staged with ``wap_id`` (its summary's
    ``wap.id``): cherry-pick it onto ``main`` (:func:`cherry_pick`). The staged snapshot's id
    and the commit. An unknown WAP id, one that several snapshots carry, or one already
    published is refused, as Iceberg's ``publish_changes`` refuses them."""
    matching = [s for s in table.snapshots() if s.summary.get(P.WAP_ID) == wap_id]
    if not matching:
        raise NoSuchSnapshot(f"{table.name}: no snapshot was staged with WAP id {wap_id!r}")
    if len(matching) > 1:
        ids = ", ".join(str(s.snapshot_id) for s in matching)
        raise ValidationError(
            f"{table.name}: several snapshots carry WAP id {wap_id!r} ({ids}); cherry-pick one"
        )
    staged = matching[0].snapshot_id
    return staged, cherry_pick(table, staged)


def _not_pickable(picked: Snapshot) -> ValidationError:
    return ValidationError(
        f"cannot cherry-pick snapshot {picked.snapshot_id} ({picked.operation}): only appends can "
        "be re-applied; other operations only when their parent is the current snapshot "
        "(fast-forward)"
    )
