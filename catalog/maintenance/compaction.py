"""Compaction (``rewrite_data_files``): bin-pack small files, optionally sort, as ``replace``.

Planning (:mod:`lakecat.catalog.maintenance.compaction_plan`) chooses files and groups them
as Iceberg's bin-pack planner does, by its options (:class:`FileSelection`): per partition,
the small files, the files too large, written for another partition spec, with too many
delete files or too high a share of deleted rows (and, with ``sort_by="table"``, not in the
table's sort order), packed into groups; a group is rewritten when it holds enough files,
enough content, or a file that must be rewritten.

Each group's files are read in the current schema, concatenated (and sorted), and written as
new files of the table's default spec (or ``output_spec_id``'s); the group then commits as an
ordinary :class:`~lakecat.catalog.commit.intent.Intent` of kind ``REPLACE`` that started at
the planned snapshot. The commit path gives the concurrency semantics (``docs/concurrency.md``):

* a concurrent append never fails, and never makes the compaction fail: the compaction
  re-applies on top of it (its new files do not matter to a ``replace``);
* a concurrent commit that removed one of the group's files (a delete, an overwrite, another
  compaction) makes the group fail with :class:`ConcurrentDeleteDelete`; its new files are
  deleted and the table is unchanged;
* a concurrent change of schema, spec, sort order or properties fails it with
  :class:`MetadataChanged`.

With ``partial_progress`` (the default) the groups commit in batches of consecutive groups, at
most ``partial_progress_max_commits`` (10) snapshots for the job, as Iceberg's
``partial-progress.max-commits``: up to 10 groups each commit on their own. A conflict loses
that batch's groups, not the job: failed groups are reported in
:attr:`CompactionResult.groups_failed`. When more commits than
``partial_progress_max_failed_commits`` (Iceberg's ``partial-progress.max-failed-commits``;
by default every one may fail) failed, the job raises :class:`TooManyFailedCommits` after the
others landed (they stay; the error carries the result). Without partial progress, all groups
commit as one snapshot and a conflict raises.

Planning reads the manifest list and manifests of the current snapshot. A concurrent manifest
rewrite or compaction followed by an expiry can delete them between the refresh and the read;
the plan is then made again on the newer metadata (:mod:`lakecat.catalog.maintenance.replan`:
a bounded number of times; with the table unchanged, the missing file is an error of the table
and propagates). Nothing has been written or committed at that point. A data file of a group
that is missing when the group is read was removed by a concurrent commit (and then deleted by
an expiry): that group is lost as it would be at commit time (see above).

Memory: without a sort a group is read and written in slices of about the target file size;
with a sort the whole group is held in memory (size it with ``max_group_size_bytes``).

Delete files (merge-on-read deletes another engine wrote): each rewritten file is read with the
delete files that apply to it (``FileGroup.deletes``), so the new files hold only live rows, and
the commit removes the delete files that applied only to the rewritten files. A file that at
least ``delete_file_threshold`` delete files apply to is rewritten whatever its size. The new
files take the starting snapshot's data sequence number (Iceberg's
``use-starting-sequence-number``, on by default): an equality delete another engine (Flink,
say) commits meanwhile is newer, so it applies to them as it did to the files they replace,
and does not fail the group; the commit keeps it however few files it still names. With
``use_starting_sequence_number=False`` the new files take the commit's sequence number, and
such a delete fails the group (the rows it deletes would come back), as Iceberg's
``validateNoNewDeletesForDataFiles`` does. Concurrent *position* deletes and deletion vectors
fail neither way: a group rewritten without a sort records where
each input row went (:class:`~lakecat.catalog.commit.moves.RowMoves`: input rows are written in
order, to one partition), and the commit writes the same deletes again for the new files, so a
merge-on-read DELETE, UPDATE or MERGE that commits first does not fail the compaction (a sorted
rewrite, or one that applied equality deletes, still fails on them).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, NamedTuple, TypeVar

import pyarrow as pa

from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.commit.moves import ROW_MOVES_KEY, MovedFile, RowMoves, write_row_moves
from lakecat.catalog.commit.pipeline import CommitResult, delete_quietly
from lakecat.catalog.commit.producer import metadata_dir
from lakecat.catalog.maintenance.compaction_plan import (
    DEFAULT_DELETE_RATIO_THRESHOLD,
    DEFAULT_MAX_GROUP_SIZE_BYTES,
    DEFAULT_MIN_INPUT_FILES,
    FileGroup,
    FileSelection,
    plan_file_groups,
)
from lakecat.catalog.maintenance.replan import plan_with_replans
from lakecat.catalog.read.deletes import DeleteReader
from lakecat.catalog.read.scan import RowFilter, Scan, ScanPlan
from lakecat.catalog.write.row_ops import rewrite_columns
from lakecat.catalog.write.writer import write_files
from lakecat.metadata import properties as P
from lakecat.metadata.errors import (
    CommitConflict,
    CommitStateUnknown,
    LakecatError,
    RetriesExhausted,
    StorageError,
    TooManyFailedCommits,
    ValidationError,
)
from lakecat.metadata.io.fileio import FileNotFoundStorageError, join
from lakecat.metadata.io.sorting import sort_rows
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.partitioning.transforms import parse_transform
from lakecat.metadata.schema.name_mapping import name_mapping_of
from lakecat.metadata.table.sorting import SortField
from lakecat.metadata.table.table_metadata import TableMetadata

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

# Iceberg's partial-progress.max-commits default: the most snapshots one compaction makes
DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS = 10

T = TypeVar("T")

# "table" (the table's sort order), column names each optionally followed by asc / desc, or
# sort fields (source column, transform, direction, null order: an Iceberg sort order's terms)
SortBy = Literal["table"] | Sequence[str] | Sequence[SortField] | None


@dataclass(frozen=True)
class CompactionResult:
    """What a ``rewrite_data_files`` run did.

    ``groups_failed`` pairs each failed group's description with the error that failed it
    (typically :class:`ConcurrentDeleteDelete`), and ``files_failed`` counts those groups'
    input files; ``snapshot_ids`` are the ``replace`` snapshots committed, in order.
    """

    groups_total: int
    groups_committed: int
    groups_failed: tuple[tuple[str, LakecatError], ...]
    files_removed: int
    files_added: int
    bytes_removed: int
    bytes_added: int
    snapshot_ids: tuple[int, ...]
    files_failed: int


class _Plan(NamedTuple):
    start: TableMetadata
    target: int
    sort_keys: Sequence[SortField] | None
    sort_order_id: int | None
    groups: list[FileGroup]


def rewrite_data_files(
    table: Table,
    *,
    row_filter: RowFilter = None,
    target_file_size_bytes: int | None = None,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    sort_by: SortBy = None,
    max_group_size_bytes: int = DEFAULT_MAX_GROUP_SIZE_BYTES,
    partial_progress: bool = True,
    progress: Callable[[int, int], None] | None = None,
    delete_file_threshold: int | None = None,
    min_file_size_bytes: int | None = None,
    max_file_size_bytes: int | None = None,
    rewrite_all: bool = False,
    partial_progress_max_commits: int = DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS,
    max_group_input_files: int | None = None,
    delete_ratio_threshold: float = DEFAULT_DELETE_RATIO_THRESHOLD,
    max_files_to_rewrite: int | None = None,
    partial_progress_max_failed_commits: int | None = None,
    output_spec_id: int | None = None,
    repartition: bool = True,
    use_starting_sequence_number: bool = True,
) -> CompactionResult:
    """Compact the table's small files (see the module docstring for planning and semantics).

    ``row_filter`` selects the files to consider (files that may hold matching rows);
    ``target_file_size_bytes`` defaults to the table's ``write.target-file-size-bytes``;
    ``sort_by`` is ``"table"`` (the table's sort order), column names, each optionally
    followed by ``asc`` / ``desc`` (``["region", "ts desc"]``), or sort fields (with
    transforms: ``SortField(id, "bucket[16]")``; see :func:`compaction_sort`);
    ``progress(done, total)`` is called after each group.

    Which files and groups (:class:`FileSelection`, Iceberg's options of the same names):
    ``min_input_files``, ``max_group_size_bytes``, ``max_group_input_files``,
    ``min_file_size_bytes``, ``max_file_size_bytes``, ``rewrite_all``,
    ``delete_file_threshold`` (a file that this many delete files apply to is rewritten
    whatever its size; off by default, as in Iceberg), ``delete_ratio_threshold`` (a file
    whose file-scoped deletes remove this share of its rows, 0.3 by default, is rewritten)
    and ``max_files_to_rewrite``. ``output_spec_id``: the partition spec the new files are
    written for (Iceberg's ``output-spec-id``; the table's default spec by default);
    ``repartition``: files of another spec must be rewritten (Iceberg's planner leaves them
    unless their size or deletes say otherwise: ``repartition=False``).
    ``use_starting_sequence_number`` (Iceberg's option and default): the new files take the
    starting snapshot's data sequence number, so that an equality delete another engine
    commits meanwhile applies to them too, and does not fail the group.

    ``partial_progress_max_commits`` (Iceberg's ``partial-progress.max-commits``): with
    partial progress, the groups commit in at most this many snapshots (consecutive groups
    together), not one snapshot per group; ``partial_progress_max_failed_commits``: more
    failed commits than this raise :class:`TooManyFailedCommits` (the others stay). Every
    rewritten file is read with its deletes applied, and the delete files that applied only
    to rewritten files are removed in the same commit. The table object is refreshed first
    and holds the latest committed metadata afterwards.
    """
    selection = FileSelection(
        min_input_files=min_input_files,
        max_group_size_bytes=max_group_size_bytes,
        max_group_input_files=max_group_input_files,
        min_file_size_bytes=min_file_size_bytes,
        max_file_size_bytes=max_file_size_bytes,
        rewrite_all=rewrite_all,
        delete_file_threshold=delete_file_threshold,
        delete_ratio_threshold=delete_ratio_threshold,
        max_files_to_rewrite=max_files_to_rewrite,
        output_spec_id=output_spec_id,
        repartition=repartition,
    )
    check_max_commits(partial_progress_max_commits, partial_progress_max_failed_commits)
    table.refresh()

    def plan() -> _Plan:  # on table.metadata as it is: refreshed on a re-plan
        start = table.metadata
        target = target_file_size_bytes or P.get_int(
            start.properties,
            P.WRITE_TARGET_FILE_SIZE_BYTES,
            P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
        )
        sort_keys, sort_order_id = compaction_sort(start, sort_by)
        groups = plan_file_groups(  # [] without a snapshot, after checking the thresholds
            table.io,
            start,
            selection,
            target_file_size_bytes=target,
            row_filter=row_filter,
            sort=sort_keys is not None,
            sort_order_id=sort_order_id,
        )
        return _Plan(start, target, sort_keys, sort_order_id, groups)

    start, target, sort_keys, sort_order_id, groups = plan_with_replans(
        table, plan, job="rewrite_data_files"
    )
    snapshot = start.current_snapshot
    job = _Job(
        table,
        start,
        target,
        selection.output_spec(start),
        sort_keys,
        sort_order_id,
        len(groups),
        progress,
        use_starting_sequence_number,
    )
    job.report()
    if groups:
        assert snapshot is not None
        if partial_progress:
            batches = commit_batches(groups, partial_progress_max_commits)
            for batch in batches:
                job.run_batch(batch, snapshot.snapshot_id)
            return check_failed_commits(
                job.result(), job.commits_failed, len(batches), partial_progress_max_failed_commits
            )
        job.run_all(groups, snapshot.snapshot_id)
    return job.result()


def check_max_commits(max_commits: int, max_failed_commits: int | None = None) -> None:
    """Iceberg's checks of ``partial-progress.max-commits`` and ``max-failed-commits``."""
    if max_commits < 1:
        raise ValidationError(f"partial_progress_max_commits must be at least 1, not {max_commits}")
    if max_failed_commits is not None and max_failed_commits < 0:
        raise ValidationError(
            f"partial_progress_max_failed_commits must be at least 0, not {max_failed_commits}"
        )


def check_failed_commits(
    result: CompactionResult, failed: int, commits: int, max_failed_commits: int | None
) -> CompactionResult:
    """``result`` of a compaction that tried ``commits`` commits (partial progress), of which
    ``failed`` failed, unless that is more than ``max_failed_commits`` allows: then
    :class:`TooManyFailedCommits` carrying it (the commits that landed stay)."""
    if max_failed_commits is not None and failed > max_failed_commits:
        raise TooManyFailedCommits(
            f"{failed} of the compaction's {commits} commits failed, more than the "
            f"{max_failed_commits} allowed (partial-progress.max-failed-commits); the other "
            f"{commits - failed} landed. First failure: {_first_failure(result)}. If this "
            "persists, more commits (partial-progress.max-commits) make each one smaller",
            result=result,
        )
    return result


def _first_failure(result: CompactionResult) -> str:
    if not result.groups_failed:
        return "none recorded"
    group, error = result.groups_failed[0]
    return f"{group}: {type(error).__name__}: {error}"


def commit_batches(groups: Sequence[T], max_commits: int) -> list[list[T]]:
    """``groups`` in at most ``max_commits`` runs of consecutive groups of near equal size
    (Iceberg's ``partial-progress.max-commits``: each run is one commit)."""
    size = -(-len(groups) // max_commits) if groups else 1
    return [list(groups[i : i + size]) for i in range(0, len(groups), size)]


class _Job:
    """One compaction run: rewrites groups, commits them, and tallies the outcome."""

    def __init__(
        self,
        table: Table,
        start: TableMetadata,
        target: int,
        output_spec_id: int,
        sort_keys: Sequence[SortField] | None,
        sort_order_id: int | None,
        total: int,
        progress: Callable[[int, int], None] | None,
        use_starting_sequence_number: bool,
    ) -> None:
        self.table = table
        self.start = start
        self.use_starting_sequence_number = use_starting_sequence_number
        # write_files takes the target from the properties and writes for the default spec; a
        # private copy carries ours.
        self.write_metadata = replace(
            start,
            properties={**start.properties, P.WRITE_TARGET_FILE_SIZE_BYTES: str(target)},
            default_spec_id=output_spec_id,
        )
        self.target = target
        self.sort_keys = sort_keys
        self.sort_order_id = sort_order_id
        self.total = total
        self.progress = progress
        self.done = 0
        self.committed = 0
        self.failed: list[tuple[str, LakecatError]] = []
        self.failed_files = 0
        self.commits_failed = 0
        self.removed: list[DataFile] = []
        self.added: list[DataFile] = []
        self.snapshot_ids: list[int] = []

    def report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total)

    def run_batch(self, groups: Sequence[FileGroup], starting_snapshot_id: int) -> None:
        """Rewrite ``groups`` and commit them as one snapshot (partial progress: a conflict
        loses these groups, not the job)."""
        kept: list[FileGroup] = []
        written: list[DataFile] = []
        moves: list[RowMoves | None] = []
        try:
            for group in groups:
                try:
                    new_files, group_moves = self._rewrite(group)
                except FileNotFoundStorageError as exc:
                    # a concurrent commit removed an input and an expiry deleted it already:
                    # this group lost (its new files are gone), the others go on
                    self._lost([group], exc)
                else:
                    kept.append(group)
                    written.extend(new_files)
                    moves.append(group_moves)
                self.done += 1
                self.report()
        except BaseException:
            delete_quietly(self.table.io, [f.file_path for f in written])
            raise
        if not kept:
            self.commits_failed += 1
            return
        try:
            self._commit(kept, written, starting_snapshot_id, RowMoves.joined(moves))
        except (CommitConflict, RetriesExhausted, FileNotFoundStorageError) as exc:
            # the commit deleted the new files: these groups lost, the table is unchanged
            self._lost(kept, exc)
            self.commits_failed += 1

    def _lost(self, groups: Sequence[FileGroup], exc: LakecatError) -> None:
        for group in groups:
            self.failed.append((group.describe(), exc))
            self.failed_files += len(group.files)

    def run_all(self, groups: list[FileGroup], starting_snapshot_id: int) -> None:
        written: list[DataFile] = []
        try:
            for group in groups:
                written.extend(self._rewrite(group)[0])
                self.done += 1
                self.report()
        except BaseException:
            delete_quietly(self.table.io, [f.file_path for f in written])
            raise
        self._commit(groups, written, starting_snapshot_id)

    def _commit(
        self,
        groups: list[FileGroup],
        new_files: list[DataFile],
        starting_snapshot_id: int,
        moves: RowMoves | None = None,
    ) -> None:
        removed = [f for g in groups for f in g.files]
        result = commit_compaction(
            self.table,
            self.start,
            starting_snapshot_id=starting_snapshot_id,
            removed=removed,
            added=new_files,
            moves=moves,
            use_starting_sequence_number=self.use_starting_sequence_number,
        )
        self.committed += len(groups)
        self.removed.extend(removed)
        self.added.extend(new_files)
        if result.snapshot_id is not None:
            self.snapshot_ids.append(result.snapshot_id)

    def _rewrite(self, group: FileGroup) -> tuple[list[DataFile], RowMoves | None]:
        """Write the group's rows as new files; on failure nothing written is left behind.
        Also where each input row went (:class:`RowMoves`), when that is known: no sort, no
        equality deletes applied, and every slice written in order to one partition."""
        written: list[DataFile] = []
        inputs: dict[str, MovedFile] | None = {}
        runs: list[list[tuple[str, int]]] = []
        reader = DeleteReader(
            self.table.io,
            self.start.schema(),
            self.start.schemas,
            name_mapping_of(self.start.properties),
        )
        try:
            if self.sort_keys is None:
                for chunk in _slices(group.files, self.target):
                    tables = self._read(reader, chunk, group)
                    out = self._write(_concat(tables))
                    written.extend(out)
                    if inputs is not None and len({f.partition for f in out}) <= 1:
                        offset = 0
                        for f, t in zip(chunk, tables, strict=True):
                            deleted = self._deleted_at_read(reader, f, group.deletes)
                            if deleted is None:
                                inputs = None
                                break
                            inputs[f.file_path] = MovedFile(len(runs), offset, deleted)
                            offset += t.num_rows
                        runs.append([(f.file_path, f.record_count) for f in out])
                    else:
                        inputs = None
            else:
                rows = sort_rows(
                    _concat(self._read(reader, group.files, group)),
                    self.start.schema(),
                    self.sort_keys,
                )
                written.extend(self._write(rows))
                inputs = None  # sorted: where a row went is not recorded
        except BaseException:
            delete_quietly(self.table.io, [f.file_path for f in written])
            raise
        if self.sort_order_id is not None:
            written = [replace(f, sort_order_id=self.sort_order_id) for f in written]
        moves = RowMoves(inputs, tuple(tuple(r) for r in runs)) if inputs else None
        return written, moves

    def _read(
        self,
        reader: DeleteReader,
        files: Sequence[DataFile],
        group: FileGroup,
    ) -> list[pa.Table]:
        """The live rows of each of ``files``: their ``deletes`` applied; on a v3 table with
        their row lineage, which the rewritten rows keep."""
        schema = self.start.schema()
        deletes = group.deletes
        columns = rewrite_columns(self.start)
        if columns is not None:
            scan = Scan(self.table.io, self.start, None, schema, columns=columns)
            plan = ScanPlan(tuple(files), 0, 0, 0, deletes, group.sequence_numbers)
            return [scan.live_rows(f, plan) for f in files]
        specs = self.start.specs_by_id()
        return [
            reader.read_table(
                f, deletes.get(f.file_path, ()), projected=schema, spec=specs[f.spec_id]
            )
            for f in files
        ]

    @staticmethod
    def _deleted_at_read(
        reader: DeleteReader, f: DataFile, deletes: Mapping[str, tuple[DataFile, ...]]
    ) -> pa.Int64Array | None:
        """The positions of ``f`` its deletes removed when it was read; ``None`` when an
        equality delete applied (which rows it removed is not known by position)."""
        applied = deletes.get(f.file_path, ())
        if any(d.content is Content.EQUALITY_DELETES for d in applied):
            return None
        index = reader.position_index(f, applied)
        return index.positions if index is not None else pa.array([], pa.int64())

    def _write(self, rows: pa.Table) -> list[DataFile]:
        # in the order given: sorted above when the compaction sorts, else in input order
        # (where each row went is recorded from that order)
        written: list[DataFile] = write_files(
            self.table.io, self.write_metadata, [rows], keep_order=True
        )
        return written

    def result(self) -> CompactionResult:
        return CompactionResult(
            groups_total=self.total,
            groups_committed=self.committed,
            groups_failed=tuple(self.failed),
            files_removed=len(self.removed),
            files_added=len(self.added),
            bytes_removed=sum(f.file_size_in_bytes for f in self.removed),
            bytes_added=sum(f.file_size_in_bytes for f in self.added),
            snapshot_ids=tuple(self.snapshot_ids),
            files_failed=self.failed_files,
        )


def _concat(tables: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _slices(files: Sequence[DataFile], target: int) -> Iterator[list[DataFile]]:
    """Consecutive runs of files holding about ``target`` bytes each (the last may be less)."""
    current: list[DataFile] = []
    size = 0
    for f in files:
        current.append(f)
        size += f.file_size_in_bytes
        if size >= target:
            yield current
            current, size = [], 0
    if current:
        yield current


# ---- sorting ------------------------------------------------------------------------------
def compaction_sort(
    metadata: TableMetadata, sort_by: SortBy
) -> tuple[tuple[SortField, ...] | None, int | None]:
    """The sort keys a compaction sorts by for ``sort_by`` (None: no sort), and the id of
    the table's sort order they are, to record on the new files (None: they are none of the
    table's orders). ``"table"`` needs the table to have a sort order; column names take
    Iceberg's default null order (first when ascending, last when descending); sort fields
    must name columns of the current schema and transforms those columns take."""
    if sort_by is None:
        return None, None
    if isinstance(sort_by, str) and sort_by == "table":
        order = metadata.sort_order()
        if order.is_unsorted:
            raise ValidationError(
                "sort_by='table' but the table has no sort order; give columns instead"
            )
        return order.fields, order.order_id
    if isinstance(sort_by, str):
        raise ValidationError(f"sort_by must be 'table' or a list of columns, not {sort_by!r}")
    if not sort_by:
        raise ValidationError("sort_by needs at least one column")
    schema = metadata.schema()
    keys: list[SortField] = []
    for item in sort_by:
        if isinstance(item, SortField):
            source = schema.find_type(item.source_id)  # a dropped column raises
            transform = parse_transform(item.transform)
            if not transform.can_transform(source):
                raise ValidationError(f"cannot sort by {transform} of a {source} column")
            keys.append(item)
            continue
        name, _, direction = item.strip().partition(" ")
        direction = direction.strip().lower() or "asc"
        if direction not in ("asc", "desc"):
            raise ValidationError(f"sort direction must be asc or desc: {item!r}")
        field = schema.find_field(name)
        # Iceberg's default null order: first when ascending, last when descending
        if direction == "asc":
            keys.append(SortField(field.field_id, "identity", "asc", "nulls-first"))
        else:
            keys.append(SortField(field.field_id, "identity", "desc", "nulls-last"))
    fields = tuple(keys)
    same = [o.order_id for o in metadata.sort_orders if o.fields == fields]
    return fields, (same[0] if same else None)


def commit_compaction(
    table: Table,
    start: TableMetadata,
    *,
    starting_snapshot_id: int,
    removed: Sequence[DataFile],
    added: Sequence[DataFile],
    moves: RowMoves | None = None,
    use_starting_sequence_number: bool = True,
) -> CommitResult:
    """Commit a compaction that rewrote ``removed`` as ``added``, planned on ``start``: a
    ``replace`` that keeps row lineage (the rows were copied with it).
    ``use_starting_sequence_number`` (Iceberg's option and default): ``added`` take the
    starting snapshot's data sequence number, not the commit's, so that equality deletes
    committed meanwhile apply to them too (and are no conflict). ``moves``: where each
    row went, when the rewrite knows (:mod:`lakecat.catalog.commit.moves`); the commit then
    carries a concurrent change's deletes over to ``added`` instead of failing, and on a
    format v2 table it writes the record next to the metadata and names it in its snapshot
    summary, so that a merge-on-read change that loses the race to it finds its rows (v3
    changes find them by row id). On a conflict ``added`` and the record are deleted."""
    record = None
    if moves is not None and start.format_version < 3:
        record = join(metadata_dir(start), f"{uuid.uuid4()}-row-moves.parquet")
        write_row_moves(table.io, record, moves)
    intent = Intent(
        kind=OpKind.REPLACE,
        starting_snapshot_id=starting_snapshot_id,
        added_files=tuple(added),
        removed_files=tuple(removed),
        moves=moves,
        keeps_row_lineage=True,  # v3: the rows are read and written with their lineage
        added_data_sequence_number=(
            start.snapshot_by_id(starting_snapshot_id).sequence_number
            if use_starting_sequence_number
            else None
        ),
        extra_summary=((ROW_MOVES_KEY, record),) if record else (),
    )
    try:
        return table.commit_intent(intent)  # on a conflict it deletes ``added``
    except CommitStateUnknown:
        raise  # it may have landed: the record stays (orphan removal takes it if not)
    except BaseException:
        if record:
            with contextlib.suppress(StorageError):
                table.io.delete(record)
        raise
