"""Structured Streaming sink: each micro-batch is one lakecat commit, exactly once.

Spark plans every micro-batch by asking the data source for a stream writer (on the driver),
pickles it to the executors, which write the batch's files, and calls ``commit(messages,
batchId)`` on the driver once every task succeeded. The commit is an append (``complete``
output mode: an overwrite of the whole table) with the commit protocol's idempotency:

* application id: the ``app-id`` option, else ``spark-query:<id>`` with the query id Spark
  keeps in the checkpoint (``<checkpointLocation>/metadata``), which stays the same across
  restarts of the query; application version: the batch id;
* a batch that the table already held when the batch *started* (a restarted query replaying
  the batch whose commit landed before the crash) is skipped and its files deleted, so a
  restart never duplicates a batch;
* a batch of the same application id that *another* writer committed while this batch ran
  (two queries started from the same checkpoint, or given the same ``app-id``) fails the
  commit with :class:`~lakecat.metadata.errors.ConcurrentTransaction`.

"When the batch started" is the table state the batch's writer was planned with: the
executors return it in their commit messages, so it reaches the commit, which runs in a
fresh writer.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from lakecat.catalog.engine import (
    Intent,
    app_versions,
    check_transaction,
    commit_parent,
    delete_quietly,
    new_snapshot_id,
)
from lakecat.metadata.errors import StorageError, ValidationError
from lakecat.metadata.io import file_io_for, join, to_uri
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.table import MAIN_BRANCH, TableMetadata, read_metadata
from lakecat.spark_ext.settings import CatalogSettings
from lakecat.spark_ext.source.tasks import write_batches
from lakecat.spark_ext.source.write_jobs import (
    APP_ID,
    FilesMessage,
    WriteJob,
    WriteMode,
    abort_files,
    check_unchanged,
    commit_and_clean,
    journal_for,
    load_for_write,
    snapshot_properties,
    write_branch,
)

log = logging.getLogger("lakecat.spark")

CHECKPOINT_LOCATION = "checkpointLocation"
QUERY_APP_ID_PREFIX = "spark-query:"


@dataclass(frozen=True)
class BatchMessage(FilesMessage):
    """A streaming task's files, with the batch writer's snapshot id and journal (the commit
    runs in another writer, made afresh by Spark)."""

    snapshot_id: int = 0
    job_id: str = ""


@dataclass(frozen=True)
class StreamJob:
    """A streaming query writing into one table, as one micro-batch's writer sees it."""

    table: str
    settings: CatalogSettings
    metadata: TableMetadata  # the table when this batch was planned
    metadata_location: str
    complete: bool = False  # complete output mode: every batch replaces the table
    app_id: str | None = None  # from the options; None: the query id from the checkpoint
    checkpoint: str | None = None
    branch: str = MAIN_BRANCH
    create_branch: bool = False
    snapshot_properties: tuple[tuple[str, str], ...] = ()
    snapshot_id: int = field(default_factory=new_snapshot_id)
    job_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def write(self, batches: Iterator[pa.RecordBatch]) -> BatchMessage:
        io = self.settings.file_io(self.metadata.location)
        journal = journal_for(io, self.metadata, self.job_id)
        files = write_batches(io, self.metadata, batches, journal=journal)
        return BatchMessage(
            tuple(files),
            self.metadata_location,
            snapshot_id=self.snapshot_id,
            job_id=self.job_id,
        )

    def commit(self, messages: Sequence[WriterCommitMessage | None], batch_id: int) -> None:
        ours = [m for m in messages if isinstance(m, BatchMessage)]
        if not ours:  # a batch without tasks: nothing to commit
            return
        files = [f for m in ours for f in m.files]
        first = ours[0]
        io = self.settings.file_io(self.metadata.location)
        app_id = self.app_id or query_app_id(self.checkpoint)
        with self.settings.open() as catalog:
            table = catalog.load_table(self.table)
            start = (
                table.metadata
                if first.started_from == table.metadata_location
                else read_metadata(io, first.started_from)
            )
            job = self._job(start, first, app_id, batch_id)
            journal = journal_for(io, start, first.job_id)
            try:
                intent = job.intent(files)
                replay = intent is not None and committed_before(start, intent) is not None
                if intent is not None and not replay:
                    check_unchanged(start, table.metadata, intent)
            except BaseException:
                delete_quietly(io, [f.file_path for f in files])
                journal.clean()
                raise
            if intent is None or replay:
                if replay:
                    log.info(
                        "batch %d of %s was committed before it started: skipped", batch_id, app_id
                    )
                delete_quietly(io, [f.file_path for f in files])
                journal.clean()
                return
            commit_and_clean(table, intent, journal)

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        ours = [m for m in messages if isinstance(m, BatchMessage)]
        if not ours:
            return
        files: list[DataFile] = [f for m in ours for f in m.files]
        io = self.settings.file_io(self.metadata.location)
        journal = journal_for(io, self.metadata, ours[0].job_id)
        abort_files(self.settings, self.table, io, files, ours[0].snapshot_id, journal)

    def _job(
        self, start: TableMetadata, first: BatchMessage, app_id: str, batch_id: int
    ) -> WriteJob:
        location, snapshot_id = first.started_from, first.snapshot_id
        return WriteJob(
            table=self.table,
            settings=self.settings,
            metadata=start,
            metadata_location=location,
            mode=WriteMode.OVERWRITE if self.complete else WriteMode.APPEND,
            branch=self.branch,
            create_branch=self.create_branch,
            app_id=app_id,
            app_version=batch_id,
            # A batch committed by another writer while this one ran is an error.
            skip_if_committed=False,
            snapshot_properties=self.snapshot_properties,
            snapshot_id=snapshot_id,
            job_id=first.job_id,
        )


def committed_before(start: TableMetadata, intent: Intent) -> int | None:
    """The snapshot that committed the intent's (app id, version) in ``start``, if any."""
    head = commit_parent(start, intent)
    history = start.ancestors(head.snapshot_id if head else None)
    versions = app_versions((s.snapshot_id, s.summary) for s in history)
    return check_transaction(replace(intent, skip_if_committed=True), versions)


def query_app_id(checkpoint: str | None) -> str:
    """``spark-query:<id>`` from the query id Spark keeps in ``<checkpoint>/metadata``."""
    if not checkpoint:
        raise ValidationError(
            f"a lakecat streaming sink needs the option {CHECKPOINT_LOCATION!r} (whose query "
            f"id makes its commits idempotent) or an explicit {APP_ID!r}"
        )
    location = to_uri(checkpoint)
    try:
        text = file_io_for(location).read(join(location, "metadata"))
        query_id = json.loads(text)["id"]
    except (StorageError, ValueError, KeyError, TypeError) as exc:
        raise ValidationError(
            f"cannot read the streaming query id from {location}/metadata ({exc}); "
            f"set the option {APP_ID!r}"
        ) from exc
    return f"{QUERY_APP_ID_PREFIX}{query_id}"


class LakecatStreamWriter(DataSourceStreamArrowWriter):
    """The stream writer Spark gets for each micro-batch."""

    def __init__(self, job: StreamJob) -> None:
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self.job.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.job.commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.job.abort(messages)


def plan_stream(
    settings: CatalogSettings,
    table_name: str,
    options: Mapping[str, str],
    *,
    overwrite: bool,
    spark_schema: StructType,
) -> LakecatStreamWriter:
    """Plan one micro-batch's writer on the driver (Spark asks once per batch)."""
    app_id = options.get(APP_ID) or None
    checkpoint = options.get(CHECKPOINT_LOCATION) or None
    if app_id is None and checkpoint is None:
        query_app_id(None)  # raises: the sink could not be idempotent
    with settings.open() as catalog:
        table = load_for_write(catalog, table_name, options, spark_schema)
    branch, create_branch = write_branch(options, table.metadata)
    return LakecatStreamWriter(
        StreamJob(
            table=table_name,
            settings=settings,
            metadata=table.metadata,
            metadata_location=table.metadata_location,
            complete=overwrite,
            app_id=app_id,
            checkpoint=checkpoint,
            branch=branch,
            create_branch=create_branch,
            snapshot_properties=snapshot_properties(options),
        )
    )
