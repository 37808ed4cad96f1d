"""Batch writes: plan on the driver, write files on executors, make one commit on the driver.

A :class:`WriteJob` is created on the driver when Spark asks the data source for a writer:
it loads the table (creating it from the DataFrame's schema when missing; with ``mergeSchema``
evolving its schema to take the DataFrame's), checks the DataFrame's columns against the
table's schema, fixes the write mode and the snapshot id the commit will have, and is pickled
to the executors with the writer. Each task writes its rows with
:func:`lakecat.spark_ext.source.tasks.write_batches` and returns a :class:`FilesMessage`.
``commit`` turns the files of the messages Spark hands it (successful attempts only) into one
:class:`~lakecat.catalog.commit.intent.Intent` and commits it with the catalog's commit
protocol (validate, re-apply, retry). ``abort`` deletes the files of the messages, unless the
job's snapshot is in the table (a commit whose outcome was unknown may have landed).

Modes (``mode("append")`` / ``mode("overwrite")`` plus options):

* append; with ``app-id`` and ``app-version`` it is idempotent: a version the application
  already committed is skipped (``skip-if-committed=false``: :class:`ConcurrentTransaction`);
* overwrite: replace the whole table (the branch's files as of the job's start);
* overwrite with ``overwrite-mode=dynamic`` (or Spark's ``partitionOverwriteMode``):
  replace the partitions the job wrote rows to;
* overwrite with ``overwrite-filter``: replace the rows matching a lakecat filter; files with
  some matching rows are rewritten on the driver (copy-on-write); every written row must match.
  When a file would have to be rewritten and the branch's snapshot has delete files
  (merge-on-read deletes another engine wrote), the job is refused with
  :class:`~lakecat.metadata.errors.UnsupportedFeature` when it is planned, before any task
  writes: the rewrite would not apply the deletes. The other modes drop whole files only and
  stay allowed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lakecat.catalog import Catalog, CommitResult, Table
from lakecat.catalog.engine import (
    Intent,
    OpKind,
    PositionBlock,
    Scan,
    check_metadata,
    check_protocol,
    delete_quietly,
    isolation_level,
    metadata_delta,
    metadata_dir,
    new_snapshot_id,
    plan_delete,
    start_of,
    write_files,
)
from lakecat.metadata import properties as P
from lakecat.metadata.errors import (
    CommitConflict,
    LakecatError,
    RetriesExhausted,
    ValidationError,
)
from lakecat.metadata.expressions import bind, parse
from lakecat.metadata.io import FileIO, deleted_on_error, join
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.schema import Schema, arrow_to_schema, conform_to_schema
from lakecat.metadata.table import (
    MAIN_BRANCH,
    SchemaUpdate,
    Snapshot,
    TableMetadata,
    read_metadata,
    user_summary,
)
from lakecat.spark_ext.settings import CatalogSettings
from lakecat.spark_ext.source.planning import METADATA_LOCATION
from lakecat.spark_ext.source.staging import (
    KEEP_ORDER,
    OUTPUT_SPEC_ID,
    RECORD_MOVES,
    STAGE_TO,
    TARGET_FILE_SIZE,
    StagedTask,
    write_handoff,
)
from lakecat.spark_ext.source.tasks import Journal, write_batches
from lakecat.spark_ext.types import (
    ROW_ADDRESS_COLUMN,
    ROW_ADDRESS_SHIFT,
    from_spark_schema,
    table_schema,
)

log = logging.getLogger("lakecat.spark")

# Write options.
OVERWRITE_MODE = "overwrite-mode"  # "static" (default) or "dynamic"
PARTITION_OVERWRITE_MODE = "partitionOverwriteMode"  # Spark's name for the same
OVERWRITE_FILTER = "overwrite-filter"
APP_ID = "app-id"
APP_VERSION = "app-version"
SKIP_IF_COMMITTED = "skip-if-committed"
BRANCH = "branch"
CREATE_BRANCH = "create-branch"  # with BRANCH: a missing branch starts at main's head
SNAPSHOT_PROPERTY_PREFIX = "snapshot-property."
PARTITION_BY = "partition-by"  # when the write creates the table: "region, ts:day, id:bucket[16]"
MERGE_SCHEMA = ("mergeSchema", "merge-schema")  # Iceberg's: add the data's new columns first


class WriteMode(StrEnum):
    APPEND = "append"
    OVERWRITE = "overwrite"
    DYNAMIC_OVERWRITE = "dynamic-overwrite"
    OVERWRITE_BY_FILTER = "overwrite-by-filter"


@dataclass(frozen=True)
class FilesMessage(WriterCommitMessage):
    """What one task wrote, and the table state its writer was planned against."""

    files: tuple[DataFile, ...]
    started_from: str  # metadata location the task's writer was planned with
    task: int = -1  # the Spark partition the task wrote (-1: unknown)
    blocks: tuple[PositionBlock, ...] | None = None  # with record_moves: the rows written


def files_of(messages: Iterable[WriterCommitMessage | None]) -> list[DataFile]:
    return [f for m in messages if isinstance(m, FilesMessage) for f in m.files]


@dataclass(frozen=True)
class WriteJob:
    """One Spark write into one table, as planned on the driver."""

    table: str
    settings: CatalogSettings
    metadata: TableMetadata
    metadata_location: str
    mode: WriteMode = WriteMode.APPEND
    branch: str = MAIN_BRANCH
    create_branch: bool = False  # a missing branch starts at main's head (see write_branch)
    overwrite_filter: str | None = None
    app_id: str | None = None
    app_version: int | None = None
    skip_if_committed: bool = True
    snapshot_properties: tuple[tuple[str, str], ...] = ()
    snapshot_id: int = field(default_factory=new_snapshot_id)
    stage_to: str | None = None  # hand the files over here instead of committing
    target_file_size: int | None = None  # overrides write.target-file-size-bytes
    record_moves: bool = False  # staged compaction: rows carry their address (see write)
    keep_order: bool = False  # staged compaction that sorted its rows: written as they come
    job_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def io(self) -> FileIO:
        return self.settings.file_io(self.metadata.location)

    @property
    def journal(self) -> Journal:
        return journal_for(self.io, self.metadata, self.job_id)

    # ---- executors --------------------------------------------------------------------
    def write(self, batches: Iterable[pa.RecordBatch]) -> FilesMessage:
        """Write one task's rows. With ``record_moves`` each batch ends with the row address
        column (``_lakecat_row_address``: input file index and position): it is not
        written; the rows are written in the order they come, and the message reports the
        blocks of consecutive input positions in that order."""
        recorder = _BlockRecorder() if self.record_moves else None
        if recorder is not None:
            batches = recorder.strip(batches)
        required = parse(self.overwrite_filter) if self.overwrite_filter else None
        metadata = self.metadata
        if self.target_file_size is not None:  # only for the files: commits plan with the real one
            props = {
                **metadata.properties,
                P.WRITE_TARGET_FILE_SIZE_BYTES: str(self.target_file_size),
            }
            metadata = replace(metadata, properties=props)
        files = write_batches(
            self.io,
            metadata,
            batches,
            journal=self.journal,
            required_filter=required,
            # only a driver-side operation's staged rows are copies that keep their lineage
            row_lineage=self.stage_to is not None and metadata.format_version >= 3,
            keep_order=self.keep_order or recorder is not None,
        )
        context = TaskContext.get()
        task = context.partitionId() if context is not None else -1
        blocks = None if recorder is None else tuple(recorder.blocks)
        return FilesMessage(tuple(files), self.metadata_location, task, blocks)

    # ---- driver -----------------------------------------------------------------------
    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> CommitResult | None:
        """Commit the files of the successful tasks as one snapshot (None: nothing to do)."""
        files = files_of(messages)
        paths = [f.file_path for f in files]
        if self.stage_to is not None:
            ours = [m for m in messages if isinstance(m, FilesMessage)]
            handoff = [StagedTask(m.task, m.files, m.blocks) for m in ours]
            write_handoff(self.io, self.stage_to, handoff)
            self.journal.clean(keep=paths)
            return None
        with self.settings.open() as catalog:
            table = catalog.load_table(self.table)
            intent: Intent | None = None
            try:
                intent = self.intent(files)
                if intent is not None:
                    check_unchanged(self.metadata, table.metadata, intent)
            except BaseException:
                # An overwrite by filter may have written the rows it keeps already.
                written = [f.file_path for f in intent.added_files] if intent else []
                delete_quietly(self.io, sorted({*paths, *written}))
                self.journal.clean()
                raise
            if intent is None:
                self.journal.clean()
                return None
            return commit_and_clean(table, intent, self.journal)

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Delete the files of a failed job, unless its snapshot landed after all."""
        files = files_of(messages)
        abort_files(self.settings, self.table, self.io, files, self.snapshot_id, self.journal)

    def intent(self, files: Sequence[DataFile]) -> Intent | None:
        """The intent committing ``files`` in this job's mode, planned against the table as
        the job started; None when the write changes nothing."""
        head = start_of(self.metadata, self.branch, create=self.create_branch)
        base = Intent(
            kind=OpKind.APPEND,
            snapshot_id=self.snapshot_id,
            branch=self.branch,
            creates_branch=self.create_branch and self.branch not in self.metadata.refs,
            starting_snapshot_id=head.snapshot_id if head else None,
            added_files=tuple(files),
            app_id=self.app_id,
            app_version=self.app_version,
            skip_if_committed=self.skip_if_committed,
            extra_summary=self.snapshot_properties,
            # the rows an overwrite by filter keeps are planned and written in Python, with
            # their lineage (lakecat.catalog.write.row_ops); the job's own rows are new
            keeps_row_lineage=True,
        )
        if self.mode is WriteMode.APPEND:
            return base if files else None
        overwrite = replace(
            base,
            kind=OpKind.OVERWRITE,
            isolation=isolation_level(self.metadata, P.DELETE_ISOLATION_LEVEL),
        )
        if self.mode is WriteMode.OVERWRITE_BY_FILTER:
            return self._overwrite_by_filter(overwrite, head)
        live = Scan(self.io, self.metadata, head, self.metadata.schema()).plan_files()
        if self.mode is WriteMode.DYNAMIC_OVERWRITE:
            partitions = frozenset((f.spec_id, f.partition) for f in files)
            live = [f for f in live if (f.spec_id, f.partition) in partitions]
            overwrite = replace(
                overwrite, kind=OpKind.DYNAMIC_OVERWRITE, read_partitions=partitions
            )
        if not files and not live:
            return None
        return replace(overwrite, removed_files=tuple(live))

    def _overwrite_by_filter(self, overwrite: Intent, head: Snapshot | None) -> Intent | None:
        assert self.overwrite_filter is not None
        expression = parse(self.overwrite_filter)
        plan = plan_delete(
            self.io,
            self.metadata,
            head,
            expression,
            write_kept=lambda rows: write_files(self.io, self.metadata, rows),
        )
        if not plan.changes_anything and not overwrite.added_files:
            return None
        with deleted_on_error(self.io) as written:
            written.extend(f.file_path for f in plan.kept_files)
            kept = plan.kept_files + (
                write_files(self.io, self.metadata, plan.kept_rows) if plan.kept_rows else []
            )
        return replace(
            overwrite,
            added_files=(*overwrite.added_files, *kept),
            removed_files=tuple(plan.removed),
            read_files=tuple(plan.read_files),
            read_filter=expression,
        )


# ---- planning a job on the driver ---------------------------------------------------------
def plan_write(
    settings: CatalogSettings,
    table_name: str,
    options: Mapping[str, str],
    *,
    overwrite: bool,
    spark_schema: StructType,
) -> WriteJob:
    """Load (or create) the table and fix the job's mode from Spark's flag and the options."""
    stage_to = options.get(STAGE_TO) or None
    if stage_to is not None:
        location = options.get(METADATA_LOCATION) or ""
        if overwrite or not location:
            raise ValidationError(f"{STAGE_TO} is an append against {METADATA_LOCATION}")
        metadata = read_metadata(settings.file_io(location), location)
        if (spec := options.get(OUTPUT_SPEC_ID)) is not None:
            # the files are written for that spec (the commit knows it from their spec ids)
            metadata = replace(metadata, default_spec_id=metadata.spec(int(spec)).spec_id)
        return WriteJob(
            table_name,
            settings,
            metadata,
            location,
            stage_to=stage_to,
            target_file_size=target_file_size_option(options),
            record_moves=options.get(RECORD_MOVES, "false").strip().lower() == "true",
            keep_order=options.get(KEEP_ORDER, "false").strip().lower() == "true",
        )
    with settings.open() as catalog:
        table = load_for_write(catalog, table_name, options, spark_schema)
        mode = write_mode(options, overwrite=overwrite, unpartitioned=table.spec().is_unpartitioned)
        app_id, app_version = app_options(options)
        branch, create_branch = write_branch(options, table.metadata)  # NoSuchRef early
        if mode is WriteMode.OVERWRITE_BY_FILTER:
            # a bad filter fails before any task writes
            bind(table.schema(), parse(options[OVERWRITE_FILTER]))
        return WriteJob(
            table=table_name,
            settings=settings,
            metadata=table.metadata,
            metadata_location=table.metadata_location,
            mode=mode,
            branch=branch,
            create_branch=create_branch,
            overwrite_filter=options.get(OVERWRITE_FILTER) or None,
            app_id=app_id,
            app_version=app_version,
            skip_if_committed=options.get(SKIP_IF_COMMITTED, "true").strip().lower() != "false",
            snapshot_properties=snapshot_properties(options),
            target_file_size=target_file_size_option(options),
        )


class _BlockRecorder:
    """Takes the row address column off a task's batches and notes, in order, the blocks of
    consecutive positions of one input file that the rows are."""

    def __init__(self) -> None:
        self.blocks: list[PositionBlock] = []

    def strip(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_columns == 0 or batch.schema.names[-1] != ROW_ADDRESS_COLUMN:
                raise ValidationError(f"{RECORD_MOVES} needs rows ending with {ROW_ADDRESS_COLUMN}")
            if batch.num_rows:
                self._note(batch.column(batch.num_columns - 1).to_numpy())
            yield batch.drop_columns([ROW_ADDRESS_COLUMN])

    def _note(self, addresses: np.ndarray) -> None:
        # a block ends where the next address is not this one plus one (another file, or a
        # gap of deleted positions)
        breaks = np.flatnonzero(np.diff(addresses) != 1) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [len(addresses)]))
        mask = (1 << ROW_ADDRESS_SHIFT) - 1
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            first = int(addresses[start])
            index, position, count = first >> ROW_ADDRESS_SHIFT, first & mask, end - start
            if self.blocks:
                last_index, last_position, last_count = self.blocks[-1]
                if last_index == index and last_position + last_count == position:
                    self.blocks[-1] = (index, last_position, last_count + count)
                    continue
            self.blocks.append((index, position, count))


def target_file_size_option(options: Mapping[str, str]) -> int | None:
    """The write's ``target-file-size-bytes`` option (None: unset); :class:`ValidationError`
    when it is not a positive integer."""
    raw = options.get(TARGET_FILE_SIZE)
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"{TARGET_FILE_SIZE} must be an integer, not {raw!r}") from None
    if value <= 0:
        raise ValidationError(f"{TARGET_FILE_SIZE} must be positive, not {value}")
    return value


def load_or_create(
    catalog: Catalog, name: str, options: Mapping[str, str], spark_schema: StructType
) -> Table:
    if catalog.table_exists(name):
        return catalog.load_table(name)
    schema, partition_by = created_table_args(options, spark_schema)
    return catalog.create_table(name, schema, partition_by=partition_by)


def load_for_write(
    catalog: Catalog, name: str, options: Mapping[str, str], spark_schema: StructType
) -> Table:
    """:func:`load_or_create`, then, with the ``mergeSchema`` option (or ``merge-schema``), the
    table's schema evolved to take the data (:func:`merge_schema`), and the data's columns
    checked against the schema: a missing required column, an extra column or a type that
    cannot be cast fails here, on the driver, before any task writes (values that do not fit
    a narrower type can only fail in the tasks)."""
    table = load_or_create(catalog, name, options, spark_schema)
    data = to_arrow_schema(spark_schema, timezone="UTC")
    if merge_schema_option(options):
        merge_schema(table, from_spark_schema(data, table.schema()))
    conform_to_schema(from_spark_schema(data, table.schema()).empty_table(), table.schema())
    return table


def merge_schema_option(options: Mapping[str, str]) -> bool:
    """Whether the write options ask for Iceberg's schema merge (``true`` in any case)."""
    keys = {key.lower() for key in MERGE_SCHEMA}
    return any(
        key.lower() in keys and str(value).strip().lower() == "true"
        for key, value in options.items()
    )


def merge_schema(table: Table, data: pa.Schema) -> None:
    """Evolve ``table``'s schema to take rows of ``data``, as Iceberg's Spark writer does for
    ``mergeSchema``: columns matched by name, the data's new columns (nested fields too) added
    as optional, ``int``/``float``/decimal columns widened, columns the data has as nullable
    made optional; nothing dropped. One schema commit, before the rows are written, and none
    when the schema takes the data already. :class:`InvalidUpdate` for a type the column
    cannot become (``int`` to ``string``), with nothing committed. ``data`` has the table's
    names (:func:`~lakecat.spark_ext.types.from_spark_schema`)."""
    incoming = arrow_to_schema(data)
    if not SchemaUpdate(table.metadata).union_by_name(incoming).updates():
        return
    with table.update_schema() as update:
        update.union_by_name(incoming)


def created_table_args(
    options: Mapping[str, str], spark_schema: StructType
) -> tuple[Schema, list[str | tuple[str, str]]]:
    """The schema and partitioning a write creates a missing table with: the DataFrame's
    columns (their comments as docs, as a ``CREATE TABLE`` keeps them) and ``partition-by``."""
    return table_schema(spark_schema), parse_partition_by(options.get(PARTITION_BY, ""))


def parse_partition_by(text: str) -> list[str | tuple[str, str]]:
    """``"region, ts:day"`` -> ``["region", ("ts", "day")]`` (``column:transform`` items).

    A column is its full name (``s.x`` for field ``x`` of struct ``s``, ``a.b`` for a
    top-level column named ``"a.b"``); a name with a comma, a colon or a backquote, or with
    spaces at either end, goes in backquotes with a backquote in it doubled
    (```a,b`:bucket[4]``). :class:`ValidationError` for an item without a column or an
    unterminated backquote."""
    out: list[str | tuple[str, str]] = []
    for column, transform in _partition_items(text):
        out.append((column, transform) if transform else column)
    return out


def _partition_items(text: str) -> Iterator[tuple[str, str]]:
    """(column, transform or "") for each comma-separated item of a ``partition-by`` text."""
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i < n and text[i] == "`":
            chars: list[str] = []
            i += 1
            while True:
                if i >= n:
                    raise ValidationError(f"{PARTITION_BY}: unterminated backquote in {text!r}")
                if text[i] == "`":
                    if i + 1 < n and text[i + 1] == "`":
                        chars.append("`")
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(text[i])
                i += 1
            column = "".join(chars)
            rest_end = text.find(",", i)
            rest_end = n if rest_end < 0 else rest_end
            rest = text[i:rest_end].strip()
            if rest and not rest.startswith(":"):
                raise ValidationError(
                    f"{PARTITION_BY}: expected ':' or ',' after `{column}` in {text!r}"
                )
            transform = rest[1:].strip()
        else:
            rest_end = text.find(",", i)
            rest_end = n if rest_end < 0 else rest_end
            item = text[i:rest_end]
            column, _, transform = (part.strip() for part in item.partition(":"))
            if not column:
                if not transform:
                    i = rest_end + 1
                    continue  # an empty item ("a,,b" or a trailing comma)
                raise ValidationError(f"{PARTITION_BY}: no column before ':' in {text!r}")
        if not column:
            raise ValidationError(f"{PARTITION_BY}: empty column name in {text!r}")
        yield column, transform
        i = rest_end + 1


def write_mode(options: Mapping[str, str], *, overwrite: bool, unpartitioned: bool) -> WriteMode:
    dynamic = (
        options.get(OVERWRITE_MODE) or options.get(PARTITION_OVERWRITE_MODE) or "static"
    ).strip().lower() == "dynamic"
    by_filter = bool(options.get(OVERWRITE_FILTER))
    if not overwrite:
        if dynamic or by_filter:
            raise ValidationError(
                f"{OVERWRITE_MODE}=dynamic and {OVERWRITE_FILTER} need mode('overwrite')"
            )
        return WriteMode.APPEND
    if dynamic and by_filter:
        raise ValidationError(f"choose one of {OVERWRITE_MODE}=dynamic and {OVERWRITE_FILTER}")
    if by_filter:
        parse(options[OVERWRITE_FILTER])  # a bad filter fails before anything is written
        return WriteMode.OVERWRITE_BY_FILTER
    if dynamic:
        if unpartitioned:
            raise ValidationError(
                "the table is not partitioned: a dynamic partition overwrite would replace "
                "the whole table; use a static overwrite for that"
            )
        return WriteMode.DYNAMIC_OVERWRITE
    return WriteMode.OVERWRITE


def app_options(options: Mapping[str, str]) -> tuple[str | None, int | None]:
    app_id = options.get(APP_ID) or None
    raw = options.get(APP_VERSION)
    if (app_id is None) != (raw is None):
        raise ValidationError(f"the options {APP_ID} and {APP_VERSION} go together")
    if raw is None:
        return None, None
    try:
        return app_id, int(raw)
    except ValueError:
        raise ValidationError(f"{APP_VERSION} must be an integer, not {raw!r}") from None


def snapshot_properties(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The ``snapshot-property.<key>`` options as summary entries; :class:`ValidationError`
    for a key the writer computes (``operation``, the counts, ``lakecat.*``)."""
    return user_summary(
        {
            key[len(SNAPSHOT_PROPERTY_PREFIX) :]: value
            for key, value in options.items()
            if key.startswith(SNAPSHOT_PROPERTY_PREFIX)
        }
    )


# ---- shared with streaming and row-level operations -----------------------------------------
def write_branch(options: Mapping[str, str], metadata: TableMetadata) -> tuple[str, bool]:
    """The branch a write commits to (``branch``; main by default) and whether it may create
    it (``create-branch=true``: a branch that does not exist starts at main's head, in the
    write's commit); :class:`NoSuchRef` for a missing branch it may not create."""
    branch = options.get(BRANCH) or MAIN_BRANCH
    create = options.get(CREATE_BRANCH, "false").strip().lower() == "true"
    start_of(metadata, branch, create=create)
    return branch, create


def check_unchanged(planned: TableMetadata, current: TableMetadata, intent: Intent) -> None:
    """Fail an operation that read the table if its schema, spec, sort order, properties or
    format changed between planning and now (the commit loop checks from now on)."""
    delta = metadata_delta(planned, current)
    check_protocol(intent, delta)
    check_metadata(intent, delta)


def journal_for(io: FileIO, metadata: TableMetadata, job_id: str) -> Journal:
    return Journal(io, join(metadata_dir(metadata), "spark-jobs", job_id))


def commit_and_clean(table: Table, intent: Intent, journal: Journal) -> CommitResult:
    """Commit an intent, then delete the job's files that it does not hold (attempts whose
    messages never reached the driver). After an unknown outcome nothing is deleted."""
    try:
        result = table.commit_intent(intent)
    except (CommitConflict, RetriesExhausted):
        journal.clean()  # the commit deleted the intent's files; these are the rest
        raise
    committed = () if result.skipped else [f.file_path for f in intent.added_files]
    journal.clean(keep=committed)
    return result


def abort_files(
    settings: CatalogSettings,
    table_name: str,
    io: FileIO,
    files: Sequence[DataFile],
    snapshot_id: int,
    journal: Journal,
) -> None:
    """Delete a failed job's files, unless its snapshot is in the table after all."""
    try:
        with settings.open() as catalog:
            landed = catalog.load_table(table_name).metadata.has_snapshot(snapshot_id)
    except LakecatError as exc:
        log.warning(
            "abort of %s: cannot read the table (%s); leaving the job's files to orphan removal",
            table_name,
            exc,
        )
        return
    if landed:
        journal.clean(keep=[f.file_path for f in files])
    else:
        delete_quietly(io, [f.file_path for f in files])
        journal.abort()
