"""What a write operation means, recorded as data so it can be re-applied on a newer base.

An :class:`Intent` is built once, when the operation plans its work against the snapshot it
started from. It lists the data files the operation wrote (written once, never rewritten on
retry; for a merge-on-read change, its delete files too), the files it removes and the files
it read, the filter it read with, and the isolation level it asked for. The commit loop
(:mod:`lakecat.catalog.commit.pipeline`) re-applies the same intent to every refreshed base
until the swap succeeds or a conflict check fails.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import StrEnum

from lakecat.catalog.commit.moves import RowMoves
from lakecat.metadata import properties as P
from lakecat.metadata.errors import NoSuchRef, ValidationError
from lakecat.metadata.expressions.expressions import AlwaysTrue, Expression
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.table.replace import Replacement
from lakecat.metadata.table.snapshots import (
    APPEND,
    DELETE,
    MAIN_BRANCH,
    OVERWRITE,
    REPLACE,
    Snapshot,
)
from lakecat.metadata.table.table_metadata import TableMetadata


class OpKind(StrEnum):
    """The kinds of write the conflict matrix distinguishes (docs/concurrency.md, section 3)."""

    APPEND = "append"  # blind append: reads nothing
    OVERWRITE = "overwrite"  # whole table or by filter
    DYNAMIC_OVERWRITE = "dynamic-overwrite"  # replace the partitions written to
    DELETE = "delete"
    UPDATE = "update"
    MERGE = "merge"  # merge and upsert: the insert side counts as a read
    REPLACE = "replace"  # compaction: same rows, different files

    @property
    def snapshot_operation(self) -> str:
        """The Iceberg snapshot operation this kind commits as."""
        return _SNAPSHOT_OPERATION[self]

    @property
    def changes_data(self) -> bool:
        return self is not OpKind.REPLACE


_SNAPSHOT_OPERATION = {
    OpKind.APPEND: APPEND,
    OpKind.OVERWRITE: OVERWRITE,
    OpKind.DYNAMIC_OVERWRITE: OVERWRITE,
    OpKind.DELETE: DELETE,
    OpKind.UPDATE: OVERWRITE,
    OpKind.MERGE: OVERWRITE,
    OpKind.REPLACE: REPLACE,
}


def isolation_level(metadata: TableMetadata, key: str) -> str:
    """The isolation level the table property ``key`` (``write.<operation>.isolation-level``)
    asks for, ``serializable`` or ``snapshot`` (the default when unset), in any case as
    Iceberg's ``IsolationLevel.fromName`` reads it (:func:`properties.get_choice`).
    :class:`ValidationError` for a value that is neither, before anything is written."""
    return P.get_choice(metadata.properties, key)


def new_snapshot_id() -> int:
    """A random positive 63-bit id, as Iceberg Java derives it from a UUID."""
    u = uuid.uuid4().int
    return ((u >> 64) ^ (u & ((1 << 64) - 1))) & ((1 << 63) - 1)


@dataclass(frozen=True)
class Intent:
    """One operation's recorded intent. Frozen: retries re-apply it, never change it."""

    kind: OpKind
    snapshot_id: int = field(default_factory=new_snapshot_id)
    branch: str = "main"
    # The branch did not exist when the operation read (it read main's head, its starting
    # snapshot): the commit creates it at main's head, as Iceberg's writes to a branch not yet
    # made do (write-audit-publish's ``spark.wap.branch``), unless a concurrent commit
    # created it first (then it commits on top of that). See :func:`commit_parent`.
    creates_branch: bool = False
    # The snapshot the operation read (None: the table was empty, or a blind append).
    starting_snapshot_id: int | None = None
    added_files: tuple[DataFile, ...] = ()
    removed_files: tuple[DataFile, ...] = ()
    # Files read but kept (e.g. scanned by a merge and found without matches).
    read_files: tuple[str, ...] = ()
    # The filter the operation read with, as a string for messages and as an expression for
    # the checks; AlwaysTrue for whole-table reads.
    read_filter: Expression = field(default_factory=AlwaysTrue)
    # For partition-scoped operations (dynamic partition overwrite): the (spec id, partition)
    # pairs it read. A concurrent file in another spec is conservatively taken as read.
    read_partitions: frozenset[tuple[int, tuple[object, ...]]] | None = None
    isolation: str = "snapshot"
    app_id: str | None = None
    app_version: int | None = None
    skip_if_committed: bool = False
    extra_summary: tuple[tuple[str, str], ...] = ()
    # A rewrite (compaction) that knows where each row of its removed files went: concurrent
    # position deletes of those files are carried over to its new files instead of failing it.
    moves: RowMoves | None = field(default=None, compare=False)
    # The data files it adds carry the row lineage (format v3 ``_row_id`` and
    # ``_last_updated_sequence_number``) of the rows they copy from the files it removes. A
    # rewrite that does not cannot commit to a v3 table (see ``require_row_lineage``).
    keeps_row_lineage: bool = False
    # The data sequence number of the data files it adds, when not this commit's: a compaction
    # that gives its files its starting snapshot's (Iceberg's use-starting-sequence-number), so
    # that equality deletes committed meanwhile, newer than that, apply to them as they did to
    # the files they replace (those deletes are then no conflict, and never dangling here).
    added_data_sequence_number: int | None = None
    # A replace of the table's definition (REPLACE TABLE ... AS SELECT): applied to each base
    # before the snapshot is built on it, which then has no parent (see metadata/table/replace.py).
    replacement: Replacement | None = field(default=None, compare=False)
    # The data files it adds were not written by this operation (add_files): they belong to
    # whoever made them, and are never deleted when the commit fails.
    imports_files: bool = False

    @property
    def reads_table(self) -> bool:
        return self.kind is not OpKind.APPEND

    @property
    def wap_id(self) -> str | None:
        """The write-audit-publish id in its summary (``wap.id``): on a table with
        ``write.wap.enabled`` its snapshot is staged, not made current (see the producer)."""
        return dict(self.extra_summary).get(P.WAP_ID) or None

    @property
    def can_be_handed_over(self) -> bool:
        """A blind append without an application id: it never conflicts, so another writer
        can commit it without validating anything
        (:mod:`lakecat.catalog.commit.coordination.group`)."""
        return (
            self.kind is OpKind.APPEND
            and self.app_id is None
            and self.wap_id is None
            and not self.creates_branch
            and self.replacement is None
            and not self.imports_files
        )

    @property
    def added_data_files(self) -> tuple[DataFile, ...]:
        return tuple(f for f in self.added_files if f.content is Content.DATA)

    @property
    def added_delete_files(self) -> tuple[DataFile, ...]:
        """Delete files (merge-on-read): they name rows of data files that stay."""
        return tuple(f for f in self.added_files if f.content is not Content.DATA)

    @property
    def snapshot_operation(self) -> str:
        adds_data = bool(self.added_data_files)
        if self.kind is OpKind.DELETE and adds_data:
            return OVERWRITE  # a delete that rewrote files adds files: spec says overwrite
        if self.kind in (OpKind.UPDATE, OpKind.MERGE) and not self.removed_files:
            if self.added_delete_files:  # merge-on-read: Iceberg's RowDelta operations
                return OVERWRITE if adds_data else DELETE
            return APPEND if adds_data else DELETE
        return self.kind.snapshot_operation

    @property
    def copies_rows(self) -> bool:
        """Whether it may move existing rows to new data files: it removes data files and
        adds data files (a copy-on-write change, an overwrite, a compaction)."""
        return bool(self.added_data_files) and any(
            f.content is Content.DATA for f in self.removed_files
        )

    @property
    def rebases_on_compaction(self) -> bool:
        """A merge-on-read change (it deletes rows by position delete file or deletion vector
        and removes no data file): a compaction that rewrote its files first does not fail
        it; its deletes are re-targeted onto the compaction's files, by row id on a v3 table
        (:mod:`lakecat.catalog.commit.retarget`), by the compaction's row-moves record on v2
        (:mod:`lakecat.catalog.commit.moves`)."""
        return any(f.content is Content.POSITION_DELETES for f in self.added_files) and not any(
            f.content is Content.DATA for f in self.removed_files
        )

    @property
    def removed_paths(self) -> frozenset[str]:
        return frozenset(f.file_path for f in self.removed_files)


def start_of(
    metadata: TableMetadata, branch: str, *, create: bool = False, table: str = "the table"
) -> Snapshot | None:
    """The snapshot a write to ``branch`` reads in ``metadata`` (None: an empty table or
    branch): the branch's head. A branch that does not exist is :class:`NoSuchRef`, except
    ``main`` (a new table's) and, with ``create``, any branch: the write then reads main's
    head and its commit creates the branch (``Intent.creates_branch``). A tag is read-only:
    :class:`ValidationError`."""
    found = metadata.refs.get(branch)
    if found is not None:
        if found.ref_type != "branch":
            raise ValidationError(f"{branch!r} is a tag of {table}: only a branch takes writes")
        return metadata.ref_snapshot(branch)
    if branch == MAIN_BRANCH:
        return None
    if not create:
        raise NoSuchRef(f"{table} has no branch {branch!r}")
    return metadata.current_snapshot


def commit_parent(base: TableMetadata, intent: Intent) -> Snapshot | None:
    """The snapshot ``intent``'s commit builds on in ``base`` (its validation window ends
    there): its branch's head; while the branch does not exist, main's head for an intent that
    creates it, and none otherwise (a new table; a branch removed since the operation read
    it, which :func:`~lakecat.catalog.commit.conflicts.check_branch` refuses)."""
    if intent.branch in base.refs:
        return base.ref_snapshot(intent.branch)
    if intent.creates_branch:
        return base.current_snapshot
    return None
