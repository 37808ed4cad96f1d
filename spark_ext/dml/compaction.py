"""Compaction on Spark: the rewrite runs on the executors, the commits on the driver.

Planning and commits are those of lakecat's compaction
(:func:`lakecat.catalog.maintenance.rewrite_data_files`): the driver plans the file groups
with :func:`~lakecat.catalog.maintenance.plan_file_groups` (Iceberg's bin-pack planner: small
and oversized files, files of other partition specs, files with many deletes, packed per
partition) against the current snapshot; the groups then commit as ``replace`` intents that
started at that snapshot, in batches (``partial_progress``, the default: a conflict loses
that batch's groups, reported in ``groups_failed``) or all groups as one snapshot, their new
files with the starting snapshot's data sequence number by default. A ``replace`` never
conflicts with concurrent appends; a concurrent commit that removed one of a group's files
fails the group with ``ConcurrentDeleteDelete``.

What Spark does: one task per group reads the group's files (through the data source, pinned
to the planned metadata) and writes its rows again at the target file size (through the data
source's writer in staging mode: only successful attempts count, a failed job's files are
deleted).

With ``sort_by`` (the table's sort order, columns, or sort fields with transforms: see
:func:`lakecat.catalog.engine.compaction_sort`) each partition that has a file to rewrite is
rewritten whole, as the Python job does; each group's task sorts its rows with Spark's own sort
(which spills to disk) and writes them in that order, so that the group's new files do not
overlap. The files record the table's sort order when the sort is one of its orders. A
transform other than identity is computed by the session's lakecat SQL catalog's functions
(``<catalog>.system.bucket``, ...). A sorted group records no row moves: a merge-on-read
change that races it fails as against a compaction of another layout (nothing is lost).
``zorder`` sorts the same way by the Z-order value of columns (Iceberg's ``zorder(...)``
sort), computed by the catalog's ``zorder`` function.

Where each row went: the rows carry their address (file and position) to the writer, which
writes them in the order they come and reports the blocks of input positions it wrote. When
every input file's rows went, in order, to one stretch of one partition's output files (what
a bin-pack task does), the commit gets the :class:`~lakecat.catalog.commit.moves.RowMoves`
the Python compaction records, with the same effects: a merge-on-read change that lands
first has its deletes carried over to the output files instead of failing the group, and on
a format v2 table the record is written for merge-on-read changes that lose the race to the
compaction (``lakecat.row-moves``; v3 changes find their rows by row id). A group whose rows
did not keep that layout commits without a record, as before.

Delete files (merge-on-read deletes another engine wrote): the data source applies them while
the tasks read, so the new files hold only live rows, and the commit removes the delete files
that applied only to the rewritten files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakecat.catalog import Catalog
from lakecat.catalog.engine import (
    DEFAULT_DELETE_RATIO_THRESHOLD,
    DEFAULT_MAX_GROUP_SIZE_BYTES,
    DEFAULT_MIN_INPUT_FILES,
    DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS,
    CompactionResult,
    FileGroup,
    FileSelection,
    PositionBlock,
    RowFilter,
    SortBy,
    check_failed_commits,
    check_max_commits,
    commit_batches,
    commit_compaction,
    compaction_sort,
    delete_quietly,
    observed_moves,
    plan_file_groups,
)
from lakecat.metadata import properties as P
from lakecat.metadata.errors import CommitConflict, LakecatError, RetriesExhausted, ValidationError
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.schema import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)
from lakecat.metadata.table import SortField, TableMetadata
from lakecat.spark_ext.native.columns import quoted
from lakecat.spark_ext.native.distribution import ordered
from lakecat.spark_ext.native.partitions import catalog_transform, source_column
from lakecat.spark_ext.settings import DEFAULT_FORMAT, plugin_catalogs
from lakecat.spark_ext.source.staging import (
    TargetTable,
    open_target,
    read_files,
    stage_write_by_task,
)

ZORDER_VAR_LENGTH_CONTRIBUTION = 8  # Iceberg's default var-length-contribution
_INT_MAX = 2**31 - 1  # Iceberg's default max-output-size: no limit


def compact(
    spark: Any,
    table: str,
    *,
    row_filter: RowFilter = None,
    target_file_size_bytes: int | None = None,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    max_group_size_bytes: int = DEFAULT_MAX_GROUP_SIZE_BYTES,
    partial_progress: bool = True,
    sort_by: SortBy = None,
    zorder: Sequence[str] | None = None,
    zorder_var_length_contribution: int = ZORDER_VAR_LENGTH_CONTRIBUTION,
    zorder_max_output_size: int | None = None,
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
    catalog: Catalog | None = None,
    format_name: str = DEFAULT_FORMAT,
) -> CompactionResult:
    """Compact a table's small files on Spark (see the module docstring); the arguments are
    those of :func:`lakecat.catalog.maintenance.rewrite_data_files`, whose ``sort_by`` also
    takes sort fields here. ``zorder``: column names to sort each rewritten partition by the
    Z-order value of (Iceberg's ``zorder(...)`` sort, :func:`zorder_column`), in place of
    ``sort_by``; ``zorder_var_length_contribution`` and ``zorder_max_output_size`` are
    Iceberg's ``var-length-contribution`` and ``max-output-size`` of that sort."""
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
    _check_zorder_sizes(zorder, zorder_var_length_contribution, zorder_max_output_size)
    with open_target(spark, table, catalog, format_name) as target:
        start = target.head
        target_size = target_file_size_bytes or P.get_int(
            target.metadata.properties,
            P.WRITE_TARGET_FILE_SIZE_BYTES,
            P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
        )
        if zorder is not None and sort_by is not None:
            raise ValidationError("compact sorts by sort_by or by zorder, not both")
        # before anything is read: what the session cannot sort by is refused here
        if zorder is not None:
            order: list[Column] | None = [
                zorder_column(
                    spark,
                    target.metadata,
                    zorder,
                    var_length_contribution=zorder_var_length_contribution,
                    max_output_size=zorder_max_output_size,
                )
            ]
            sort_order_id = None
        else:
            sort_keys, sort_order_id = compaction_sort(target.metadata, sort_by)
            order = None if sort_keys is None else sort_columns(spark, target.metadata, sort_keys)
        groups = plan_file_groups(
            target.io,
            target.metadata,
            selection,
            target_file_size_bytes=target_size,
            row_filter=row_filter,
            sort=order is not None,
            sort_order_id=sort_order_id,
        )
        if start is None or not groups:
            return _result(len(groups), [], [])
        rows = read_files(
            spark,
            target,
            [list(g.files) for g in groups],
            metadata_columns=False,
            row_lineage=target.row_lineage,
            row_addresses=order is None,
        )
        spec_id = selection.output_spec(target.metadata)
        if order is None:
            staged = stage_write_by_task(
                target,
                rows,
                target_file_size=target_size,
                record_moves=True,
                output_spec_id=spec_id,
            )
        else:  # each group's task sorts its rows (one Spark partition per group)
            staged = stage_write_by_task(
                target,
                rows.sortWithinPartitions(*order),
                target_file_size=target_size,
                keep_order=True,
                output_spec_id=spec_id,
            )
        new_files: list[list[DataFile]] = [[] for _ in groups]
        # a group whose task did not report (none should) has no known moves
        blocks: list[Sequence[PositionBlock] | None] = [None for _ in groups]
        for task in staged:  # one Spark task per group, in order
            files = task.files
            if sort_order_id is not None:
                files = tuple(replace(f, sort_order_id=sort_order_id) for f in files)
            new_files[task.task].extend(files)
            blocks[task.task] = task.blocks
        batches = (
            commit_batches(range(len(groups)), partial_progress_max_commits)
            if partial_progress
            else [list(range(len(groups)))]
        )
        result, failed_commits = _commit(
            target,
            groups,
            new_files,
            blocks,
            start.snapshot_id,
            batches,
            partial_progress=partial_progress,
            use_starting_sequence_number=use_starting_sequence_number,
        )
        if not partial_progress:
            return result
        return check_failed_commits(
            result, failed_commits, len(batches), partial_progress_max_failed_commits
        )


# the types Iceberg's Z-order takes (SparkZOrderUDF): their values order as bytes
_ZORDER_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DateType,
    TimestampType,
    TimestamptzType,
    StringType,
    BinaryType,
)


def zorder_column(
    spark: Any,
    metadata: TableMetadata,
    columns: Sequence[str],
    *,
    var_length_contribution: int = ZORDER_VAR_LENGTH_CONTRIBUTION,
    max_output_size: int | None = None,
) -> Column:
    """The ascending sort by the Z-order value of ``columns`` (the lakecat SQL catalog's
    ``zorder`` function, as Iceberg's ``zorder(...)`` sort strategy computes it). As in
    Iceberg, identity partition columns are left out (constant within a partition); a column
    that is not there or of another type than a boolean, number, date, timestamp, string or
    binary is refused, and so is a list of nothing but identity partition columns.
    ``var_length_contribution``: how many bytes of a string or binary value count (Iceberg's
    default 8); ``max_output_size``: at most how many bytes of the interleaved value are kept
    (None: all); both positive (the catalog's ``zorder_bytes`` function computes them)."""
    if not columns:
        raise ValidationError("zorder needs at least one column")
    _check_zorder_sizes(columns, var_length_contribution, max_output_size)
    schema = metadata.schema()
    identity = {f.source_id for f in metadata.spec().fields if f.transform == "identity"}
    kept = []
    for name in columns:
        field = schema.find_field(name)
        if not isinstance(field.field_type, _ZORDER_TYPES):
            raise ValidationError(
                f"cannot Z-order by {name!r} of type {field.field_type}: use boolean, integer, "
                "floating point, date, timestamp, string or binary columns"
            )
        if field.field_id not in identity:
            kept.append(source_column(schema.column_path(field.field_id)))
    if not kept:
        raise ValidationError(
            f"cannot Z-order by {', '.join(columns)}: identity partition columns are constant "
            "within a partition, and all the columns given are"
        )
    catalogs = plugin_catalogs(spark)
    if not catalogs:
        raise ValidationError(
            "Z-ordering on Spark needs a lakecat SQL catalog in the session (its zorder "
            "function computes the values); register the catalog (lk.session, attach_catalog)"
        )
    system = f"{quoted(catalogs[0])}.system"
    if var_length_contribution == ZORDER_VAR_LENGTH_CONTRIBUTION and max_output_size is None:
        return F.call_function(f"{system}.zorder", *kept).asc()
    sizes = (F.lit(var_length_contribution), F.lit(max_output_size or _INT_MAX))
    return F.call_function(f"{system}.zorder_bytes", *sizes, *kept).asc()


def _check_zorder_sizes(
    zorder: Sequence[str] | None, var_length_contribution: int, max_output_size: int | None
) -> None:
    """The Z-order sizes: positive ints, given with a zorder sort only."""
    if zorder is None:
        if var_length_contribution != ZORDER_VAR_LENGTH_CONTRIBUTION or max_output_size is not None:
            raise ValidationError("the Z-order sizes apply to a zorder sort only")
        return
    for what, size in (
        ("var-length-contribution", var_length_contribution),
        ("max-output-size", max_output_size),
    ):
        if size is not None and (isinstance(size, bool) or not 0 < size <= _INT_MAX):
            raise ValidationError(
                f"the Z-order {what} must be a positive int (at most {_INT_MAX}), not {size!r}"
            )


def sort_columns(spark: Any, metadata: TableMetadata, fields: Sequence[SortField]) -> list[Column]:
    """Spark sort expressions of sort fields over rows in table form: the source column
    (inside structs too) through its transform, in the field's direction and null order. A
    transform other than identity needs a lakecat SQL catalog in the session, whose function
    computes it; a ``void`` field sorts nothing."""
    schema = metadata.schema()
    catalogs = plugin_catalogs(spark)
    out = []
    for f in fields:
        value = source_column(schema.column_path(f.source_id))
        if f.transform == "void":
            continue
        if f.transform != "identity":
            if not catalogs:
                raise ValidationError(
                    f"sorting by {f.transform} on Spark needs a lakecat SQL catalog in the "
                    "session (its functions compute the transform); sort by columns, or "
                    "register the catalog (lk.session, attach_catalog)"
                )
            value = catalog_transform(catalogs[0], f.transform, value)
        out.append(ordered(value, f.direction, f.null_order))
    return out


def _commit(
    target: TargetTable,
    groups: Sequence[FileGroup],
    new_files: Sequence[list[DataFile]],
    blocks: Sequence[Sequence[PositionBlock] | None],
    starting_snapshot_id: int,
    indices: Sequence[Sequence[int]],
    *,
    partial_progress: bool,
    use_starting_sequence_number: bool,
) -> tuple[CompactionResult, int]:
    """Commit the groups' new files, one commit per batch of group ``indices``; with partial
    progress a conflict loses that batch's groups, else it raises. Also how many commits
    failed."""
    runs = list(zip(groups, blocks, new_files, strict=True))
    batches = [[runs[i] for i in batch] for batch in indices]
    committed: list[tuple[list[FileGroup], list[DataFile], int | None]] = []
    failed: list[tuple[FileGroup, LakecatError]] = []
    for index, batch in enumerate(batches):
        batch_groups = [g for g, _, _ in batch]
        added = [f for _, _, files in batch for f in files]
        observed = [(g.files, b, files) for g, b, files in batch if b is not None]
        moves = observed_moves(observed) if len(observed) == len(batch) else None
        try:
            # the rows are copied with their lineage (read_files); a conflict deletes `added`
            result = commit_compaction(
                target.table,
                target.metadata,
                starting_snapshot_id=starting_snapshot_id,
                removed=[f for g in batch_groups for f in g.files],
                added=added,
                moves=moves,
                use_starting_sequence_number=use_starting_sequence_number,
            )
        except (CommitConflict, RetriesExhausted) as exc:
            if not partial_progress:
                raise
            failed.extend((g, exc) for g in batch_groups)  # the batch's groups lost
            continue
        except BaseException:
            # The groups not tried yet leave nothing behind; this one's outcome may be unknown.
            untried = [f.file_path for b in batches[index + 1 :] for _, _, fs in b for f in fs]
            delete_quietly(target.io, untried)
            raise
        committed.append((batch_groups, added, result.snapshot_id))
    return _result(len(groups), committed, failed), len(batches) - len(committed)


def _result(
    total: int,
    committed: Sequence[tuple[list[FileGroup], list[DataFile], int | None]],
    failed: Sequence[tuple[FileGroup, LakecatError]],
) -> CompactionResult:
    removed = [f for groups, _, _ in committed for g in groups for f in g.files]
    added = [f for _, files, _ in committed for f in files]
    return CompactionResult(
        groups_total=total,
        groups_committed=sum(len(groups) for groups, _, _ in committed),
        groups_failed=tuple((g.describe(), exc) for g, exc in failed),
        files_removed=len(removed),
        files_added=len(added),
        bytes_removed=sum(f.file_size_in_bytes for f in removed),
        bytes_added=sum(f.file_size_in_bytes for f in added),
        snapshot_ids=tuple(s for _, _, s in committed if s is not None),
        files_failed=sum(len(g.files) for g, _ in failed),
    )
