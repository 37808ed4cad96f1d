"""Conflict checks between an operation's intent and the commits that landed since it started.

Pure: every input is data (the intent, a summary of each concurrent commit, what changed in
the table's metadata) and a predicate telling whether a data file may hold rows the operation
read. Each check is a small named function that raises a typed :class:`CommitConflict`.

The rules are the conflict matrix of ``docs/concurrency.md`` section 3 (Delta's,
file/partition-scoped), later committer = this operation:

==========================  =====================  ==============================  ===========
this op \\ concurrent        blind append           overwrite/delete/update/merge   replace
==========================  =====================  ==============================  ===========
append                      never                  never                           never
overwrite/delete/update/    serializable: added    added files matching the read   removed files
merge                       files matching the     filter; removed files it read   it read or
                            read filter            or removes                      removes
replace (compaction)        never                  removed files it rewrites       same
==========================  =====================  ==============================  ===========

plus: concurrent schema/spec/sort/property changes fail every operation but a blind append
(``MetadataChanged``), a format upgrade fails every operation (``ProtocolChanged``), an
(application id, version) already committed fails the second commit (``ConcurrentTransaction``),
and an operation whose branch a concurrent commit removed fails, blind appends included
(``BranchRemoved``: committing would create the branch anew without the rows it had).

Row level (delete files, merge-on-read): "added files" above are data files. Delete files a
concurrent commit added conflict with an operation that removes (rewrites) a file they apply
to (``check_new_deletes``: the rewrite would bring the deleted rows back). A merge-on-read
operation removes no data file; its delete files conflict with concurrent ones only when both
change the same row and this operation is an update or merge (a lost update:
``check_row_changes``). Two deletes of the same row do not conflict: the row is gone either way.
The data files a merge-on-read operation deletes rows from are read files, so a concurrent
commit that removes one (a copy-on-write rewrite, a compaction) conflicts. The other way
round, a compaction that knows where it moved each row (``Intent.moves``) carries concurrent
position deletes of its input files over to its output files instead of conflicting
(``carried``; the pipeline writes them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.metadata.errors import (
    BranchRemoved,
    ConcurrentAppend,
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    ConcurrentRowChange,
    ConcurrentTransaction,
    MetadataChanged,
    ProtocolChanged,
)
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.manifests.delete_index import named_data_file
from lakecat.metadata.properties import SERIALIZABLE
from lakecat.metadata.table.snapshots import APPEND, REPLACE

# Summary keys lakecat writes on its own snapshots.
BLIND_APPEND_KEY = "lakecat.blind-append"
APP_ID_KEY = "lakecat.app-id"
APP_VERSION_KEY = "lakecat.app-version"
ATTEMPTS_KEY = "lakecat.commit.attempts"
WAIT_MS_KEY = "lakecat.commit.wait-ms"
OPERATION_KEY = "lakecat.operation"

_MAX_LISTED = 5


@dataclass(frozen=True)
class ConcurrentCommit:
    """What one snapshot committed after the operation's starting snapshot did."""

    snapshot_id: int
    operation: str
    summary: Mapping[str, str]
    added_files: tuple[DataFile, ...]
    removed_paths: frozenset[str]

    @property
    def is_blind_append(self) -> bool:
        return self.operation == APPEND and self.summary.get(BLIND_APPEND_KEY) != "false"

    @property
    def changes_data(self) -> bool:
        return self.operation != REPLACE

    @property
    def label(self) -> str:
        kind = self.summary.get(OPERATION_KEY, self.operation)
        return f"snapshot {self.snapshot_id} ({kind})"


@dataclass(frozen=True)
class MetadataDelta:
    """Which parts of the table metadata changed between the starting and the current base."""

    format_upgraded: bool = False
    schema_changed: bool = False
    spec_changed: bool = False
    sort_order_changed: bool = False
    changed_properties: tuple[str, ...] = ()

    @property
    def any_metadata_change(self) -> bool:
        return (
            self.schema_changed
            or self.spec_changed
            or self.sort_order_changed
            or bool(self.changed_properties)
        )

    def describe(self) -> str:
        parts = []
        if self.schema_changed:
            parts.append("the schema")
        if self.spec_changed:
            parts.append("the partition spec")
        if self.sort_order_changed:
            parts.append("the sort order")
        if self.changed_properties:
            parts.append("properties " + ", ".join(self.changed_properties))
        return " and ".join(parts)


def check_all(
    intent: Intent,
    concurrent: Sequence[ConcurrentCommit],
    delta: MetadataDelta,
    *,
    may_match_read: Callable[[DataFile], bool],
    describe_partition: Callable[[DataFile], str],
    rows_overlap: Callable[[DataFile, DataFile, str], bool],
) -> None:
    """Raise the first conflict found; return when the intent can be re-applied.

    ``rows_overlap(theirs, ours, data_file_path)``: whether two position delete files (or
    deletion vectors) delete a common row of that data file (it reads them)."""
    check_protocol(intent, delta)
    check_metadata(intent, delta)
    for commit in concurrent:
        check_delete_delete(intent, commit)
        check_delete_read(intent, commit)
        check_new_deletes(intent, commit)
        check_row_changes(intent, commit, rows_overlap)
        check_added_files(intent, commit, may_match_read, describe_partition)


def check_branch(intent: Intent, branches: Iterable[str]) -> None:
    """An operation that started from a snapshot of its branch fails when the branch is gone
    (``branches``: the table's branches now): committing would create the branch anew, from
    nothing, holding only this operation's files. An operation that creates its branch read
    main (``Intent.creates_branch``): a branch still missing is what it expects."""
    if intent.starting_snapshot_id is None or intent.creates_branch:
        return
    if intent.branch in set(branches):
        return
    raise BranchRemoved(
        f"{intent.kind.value}: branch {intent.branch!r}, which this operation read at snapshot "
        f"{intent.starting_snapshot_id}, was removed by a concurrent commit; nothing was "
        "committed. Create the branch again (or choose another) and re-run the operation.",
        snapshot_id=intent.starting_snapshot_id,
        operation=intent.kind.value,
    )


def check_protocol(intent: Intent, delta: MetadataDelta) -> None:
    if delta.format_upgraded:
        raise ProtocolChanged(
            f"{intent.kind.value}: the table's format version was upgraded by a concurrent commit; "
            "re-run the operation against the upgraded table"
        )


def check_metadata(intent: Intent, delta: MetadataDelta) -> None:
    if intent.kind is OpKind.APPEND or not delta.any_metadata_change:
        return
    raise MetadataChanged(
        f"{intent.kind.value}: a concurrent commit changed {delta.describe()} after this "
        "operation started; re-run it against the new metadata (appends are not affected)"
    )


def check_delete_delete(intent: Intent, commit: ConcurrentCommit) -> None:
    # data files: delete files an intent removes are replaced deletion vectors (merged again
    # on a newer base, see pipeline.merged_vectors) or a rewrite's inputs (the producer
    # refuses to remove a file that is gone)
    data_paths = frozenset(f.file_path for f in intent.removed_files if f.content is Content.DATA)
    overlap = data_paths & commit.removed_paths
    if not overlap:
        return
    raise ConcurrentDeleteDelete(
        f"{intent.kind.value}: {commit.label} already removed {_files(overlap)}, which this "
        f"operation also removes. {_advice(intent)}",
        snapshot_id=commit.snapshot_id,
        operation=commit.operation,
        files=tuple(sorted(overlap)),
    )


def check_delete_read(intent: Intent, commit: ConcurrentCommit) -> None:
    if commit.operation == REPLACE and intent.rebases_on_compaction:
        return  # the same rows in other files: the commit re-targets its deletes onto them
    overlap = frozenset(intent.read_files) & commit.removed_paths
    if not overlap:
        return
    raise ConcurrentDeleteRead(
        f"{intent.kind.value}: {commit.label} removed {_files(overlap)}, which this operation "
        f"read. {_advice(intent)}",
        snapshot_id=commit.snapshot_id,
        operation=commit.operation,
        files=tuple(sorted(overlap)),
    )


def check_new_deletes(intent: Intent, commit: ConcurrentCommit) -> None:
    """A concurrent commit added delete files (position deletes, deletion vectors, equality
    deletes) that may apply to a data file this operation removes: rewriting that file from
    what this operation read would bring the deleted rows back (Iceberg's
    ``validateNoNewDeletesForDataFiles``). A conflict under both isolation levels, for every
    operation that removes files (compaction included). Equality deletes are none when the
    operation's new files keep an older data sequence number (``added_data_sequence_number``,
    a compaction's starting one): they apply to the new files as to the removed ones."""
    removed = [f for f in intent.removed_files if f.content is Content.DATA]
    deletes = [
        f
        for f in commit.added_files
        if f.content is not Content.DATA
        and not carried(intent, f)
        and not (
            f.content is Content.EQUALITY_DELETES and intent.added_data_sequence_number is not None
        )
    ]
    if not removed or not deletes:
        return
    hits = sorted({f.file_path for f in removed if any(_may_apply(d, f) for d in deletes)})
    if not hits:
        return
    raise ConcurrentDeleteRead(
        f"{intent.kind.value}: {commit.label} added delete files for {_files(hits)}, which "
        "this operation rewrites or removes from what it read before those deletes; committing "
        f"would bring the deleted rows back. {_advice(intent)}",
        snapshot_id=commit.snapshot_id,
        operation=commit.operation,
        files=tuple(hits),
    )


def check_row_changes(
    intent: Intent,
    commit: ConcurrentCommit,
    rows_overlap: Callable[[DataFile, DataFile, str], bool],
) -> None:
    """A merge-on-read update or merge changed rows (deleted their old versions by position)
    that a concurrent commit's delete files also delete: committing would apply both changes
    to one row (a lost update, or an updated row brought back after a delete). An equality
    delete that may apply to such a data file conflicts too: which rows it deletes is not
    known without reading the data. Plain deletes never conflict here."""
    if intent.kind not in (OpKind.UPDATE, OpKind.MERGE):
        return
    ours = [(f, named_data_file(f)) for f in intent.added_delete_files]
    theirs = [f for f in commit.added_files if f.content is not Content.DATA]
    if not ours or not theirs:
        return
    hits: set[str] = set()
    for mine, target in ours:
        for other in theirs:
            if target is None:
                if _same_partition(mine, other):
                    hits.add(mine.file_path)  # not expected: lakecat names the data file
                continue
            if other.content is Content.EQUALITY_DELETES:
                if _may_apply_to_path(other, target, mine):
                    hits.add(target)
            elif _may_apply_to_path(other, target, mine) and rows_overlap(other, mine, target):
                hits.add(target)
    if not hits:
        return
    raise ConcurrentRowChange(
        f"{intent.kind.value}: {commit.label} deleted or changed rows of {_files(hits)} that "
        "this operation changes too; committing both would lose one of the changes. Re-run "
        "the operation on the new state.",
        snapshot_id=commit.snapshot_id,
        operation=commit.operation,
        files=tuple(sorted(hits)),
    )


def carried(intent: Intent, delete: DataFile) -> bool:
    """Whether the intent carries ``delete`` over to its new files instead of conflicting: a
    rewrite that knows where the rows of the file a position delete (or deletion vector)
    names went (``Intent.moves``); the commit writes the same deletes for the new files."""
    if intent.moves is None or delete.content is not Content.POSITION_DELETES:
        return False
    named = named_data_file(delete)
    return named is not None and intent.moves.covers(named)


def _may_apply(delete: DataFile, data: DataFile) -> bool:
    """Whether ``delete`` may delete rows of ``data`` (a cheap, conservative test: by the file
    it names, else by partition; an equality delete of an unpartitioned spec applies anywhere)."""
    return _may_apply_to_path(delete, data.file_path, data)


def _may_apply_to_path(delete: DataFile, path: str, like: DataFile) -> bool:
    """Whether ``delete`` may delete rows of the data file at ``path``, which is in the
    partition of ``like``."""
    named = named_data_file(delete)
    if named is not None:
        return named == path
    if delete.content is Content.EQUALITY_DELETES and not delete.partition:
        return True
    return _same_partition(delete, like)


def _same_partition(a: DataFile, b: DataFile) -> bool:
    return (a.spec_id, a.partition) == (b.spec_id, b.partition)


def check_added_files(
    intent: Intent,
    commit: ConcurrentCommit,
    may_match_read: Callable[[DataFile], bool],
    describe_partition: Callable[[DataFile], str],
) -> None:
    if not added_files_matter(intent, commit):
        return
    hits = [f for f in commit.added_files if f.content is Content.DATA and may_match_read(f)]
    if not hits:
        return
    partitions = tuple(sorted({describe_partition(f) for f in hits}))
    raise ConcurrentAppend(
        f"{intent.kind.value} (isolation {intent.isolation}, read {intent.read_filter}): "
        f"{commit.label} added {_files(f.file_path for f in hits)} in "
        f"{_partitions(partitions)} that this operation read. {_advice(intent)}",
        snapshot_id=commit.snapshot_id,
        operation=commit.operation,
        partitions=partitions,
        files=tuple(f.file_path for f in hits),
    )


def added_files_matter(intent: Intent, commit: ConcurrentCommit) -> bool:
    """Whether a concurrent commit's added files can conflict with this operation at all.

    Blind appends and compactions never look at added files. Compaction's own added files
    carry no new data. Under snapshot isolation (write-serializable) only files added by
    operations that themselves read the table count, as in Delta.
    """
    if intent.kind in (OpKind.APPEND, OpKind.REPLACE):
        return False
    if not commit.changes_data:
        return False
    return not (commit.is_blind_append and intent.isolation != SERIALIZABLE)


def check_transaction(
    intent: Intent, committed_versions: Mapping[str, tuple[int, int]]
) -> int | None:
    """The snapshot id that already committed this (app id, version), or ``None``.

    ``committed_versions`` maps an application id to (highest version, snapshot id) over the
    branch's history. Raises :class:`ConcurrentTransaction` unless the intent asked to skip.
    """
    if intent.app_id is None or intent.app_version is None:
        return None
    found = committed_versions.get(intent.app_id)
    if found is None or found[0] < intent.app_version:
        return None
    version, snapshot_id = found
    if intent.skip_if_committed:
        return snapshot_id
    raise ConcurrentTransaction(
        f"application {intent.app_id!r} already committed version {version} in snapshot "
        f"{snapshot_id}; version {intent.app_version} is not newer. A re-run batch or a second "
        "writer with the same application id must not commit again",
        snapshot_id=snapshot_id,
    )


def app_versions(summaries: Iterable[tuple[int, Mapping[str, str]]]) -> dict[str, tuple[int, int]]:
    """(app id -> (highest version, snapshot id)) from (snapshot id, summary) pairs."""
    out: dict[str, tuple[int, int]] = {}
    for snapshot_id, summary in summaries:
        app = summary.get(APP_ID_KEY)
        raw = summary.get(APP_VERSION_KEY)
        if app is None or raw is None:
            continue
        try:
            version = int(raw)
        except ValueError:
            continue
        if app not in out or out[app][0] < version:
            out[app] = (version, snapshot_id)
    return out


def _files(paths: Iterable[str]) -> str:
    listed = sorted(paths)
    names = ", ".join(p.rsplit("/", 1)[-1] for p in listed[:_MAX_LISTED])
    more = f" and {len(listed) - _MAX_LISTED} more" if len(listed) > _MAX_LISTED else ""
    return f"{len(listed)} file(s) [{names}{more}]"


def _partitions(partitions: tuple[str, ...]) -> str:
    shown = ", ".join(p or "<unpartitioned>" for p in partitions[:_MAX_LISTED])
    return f"partition(s) {shown}"


def _advice(intent: Intent) -> str:
    if intent.kind is OpKind.REPLACE:
        return "Compact again; the concurrent change has already rewritten these files."
    return (
        "To let such operations run at once, make them disjoint: partition the table by the "
        "column your conditions use and put an explicit predicate on the partition column in "
        "the condition"
        + (
            ", or use isolation level 'snapshot' (write-serializable) for this operation."
            if intent.isolation == SERIALIZABLE
            else "."
        )
    )
