"""Structured Streaming source: the rows appended to a table, micro-batch by micro-batch.

``spark.readStream.format("lakecat").load("db.events")`` (or ``readStream.table`` through the
catalog plugin) reads what Iceberg's Spark streaming source reads: the data files that the
``append`` snapshots of the table's ``main`` branch added, in commit order, and inside a
snapshot in the order of its manifest list and manifests (:func:`snapshot_files`).

An offset (:class:`StreamOffset`) says how far the stream has read, as Iceberg's
``StreamingOffset`` does: ``{"snapshot_id": id}`` when every file of that snapshot and of the
ones before it has been read (``-1``: before the first snapshot), ``{"snapshot_id": id,
"position": n}`` when only the first ``n`` files of that snapshot have been (a rate limit
stopped the batch inside it). The first form is the only one older lakecat versions wrote, so
their checkpoints resume unchanged. A micro-batch reads the files between its start and end
offsets, which depend on nothing but the two offsets and the snapshots' own (immutable)
manifests: a batch that Spark replays from its checkpoint reads exactly the same files.

* By default a query starts before the first snapshot (it reads every append of the
  history); ``stream-from-timestamp`` (ms since the epoch) starts it with the first snapshot
  committed at or after that time.
* Rate limits, Iceberg's options: ``streaming-max-files-per-micro-batch`` and
  ``streaming-max-rows-per-micro-batch``. A batch takes whole files in order until the next
  file would pass the files limit, or the rows taken reach the rows limit (the file that
  reaches it is taken: a file with more rows than the limit is a batch of its own, so the
  stream always advances). ``Trigger.AvailableNow`` reads, in batches that keep the limits,
  what the table held when the query started.
* Compactions (``replace`` snapshots) add no rows and are skipped. A snapshot that deletes or
  overwrites rows cannot be expressed as appended rows: the query fails when its next batch
  would include one, unless ``streaming-skip-delete-snapshots`` /
  ``streaming-skip-overwrite-snapshots`` is ``true`` (then its rows are not read, its deletes
  not applied), as in Iceberg.
* Appended files are read as they were appended, without later delete files, as Iceberg's
  incremental append scan does.
* A history that no longer holds the last offset (a rollback, a replace of the table, or
  snapshot expiry that removed it) fails the query with a typed error.

Errors: the offsets and the planning run on the driver in a Python worker, whose failure
Spark reports as the worker's traceback; a lakecat error is raised there so that the report
opens with the error's class and message (:func:`~lakecat.spark_ext.errors.error_headline`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from lakecat.catalog.engine import to_timestamp_ms
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError
from lakecat.metadata.expressions import AlwaysTrue
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.schema import NameMapping, Schema, name_mapping_of
from lakecat.metadata.table import (
    APPEND,
    DELETE,
    MAIN_BRANCH,
    OVERWRITE,
    REPLACE,
    Snapshot,
    TableMetadata,
    ancestors_between,
    is_ancestor_of,
)
from lakecat.spark_ext.errors import error_headline
from lakecat.spark_ext.settings import CatalogSettings, table_identifier
from lakecat.spark_ext.source.partition_column import (
    PartitionColumn,
    add_file_constants,
    constants_read,
)
from lakecat.spark_ext.source.planning import (
    FilePlan,
    ReadOptions,
    ReadView,
    appended_files,
    groups_of,
)
from lakecat.spark_ext.source.tasks import FileReader, with_both_metadata_columns
from lakecat.spark_ext.types import FILE_COLUMN, project

STREAM_FROM_TIMESTAMP = "stream-from-timestamp"
SKIP_DELETE = "streaming-skip-delete-snapshots"
SKIP_OVERWRITE = "streaming-skip-overwrite-snapshots"
MAX_FILES = "streaming-max-files-per-micro-batch"
MAX_ROWS = "streaming-max-rows-per-micro-batch"
BEFORE_FIRST = -1
# The most data files a stream reader remembers of the snapshots it planned
CACHED_FILES = 100_000


@dataclass(frozen=True)
class StreamOffset:
    """How far a stream has read: every file of the snapshots up to ``snapshot_id``, except,
    with a ``position``, the files of ``snapshot_id`` from that index on."""

    snapshot_id: int
    position: int | None = None  # None: the whole snapshot has been read

    @staticmethod
    def parse(offset: Mapping[str, Any]) -> StreamOffset:
        position = offset.get("position")
        return StreamOffset(int(offset["snapshot_id"]), None if position is None else int(position))

    def json(self) -> dict[str, int]:
        if self.position is None:
            return {"snapshot_id": self.snapshot_id}
        return {"snapshot_id": self.snapshot_id, "position": self.position}

    def first_file(self, snapshot_id: int) -> int:
        """The index of the first file of ``snapshot_id`` after this offset (as a start)."""
        if snapshot_id == self.snapshot_id and self.position is not None:
            return self.position
        return 0

    def end_file(self, snapshot_id: int, count: int) -> int:
        """The index after the last file of ``snapshot_id`` up to this offset (as an end)."""
        if snapshot_id == self.snapshot_id and self.position is not None:
            return self.position
        return count


START = StreamOffset(BEFORE_FIRST)


@dataclass(frozen=True)
class BatchLimits:
    """The most a micro-batch takes (None: no limit)."""

    max_files: int | None = None
    max_rows: int | None = None

    @staticmethod
    def parse(options: Mapping[str, str]) -> BatchLimits:
        return BatchLimits(_positive(options, MAX_FILES), _positive(options, MAX_ROWS))

    def under(self, limit: ReadLimit | None) -> BatchLimits | None:
        """The limits of one batch under the engine's ``limit`` (None: read all available)."""
        if isinstance(limit, ReadAllAvailable):
            return None
        if isinstance(limit, ReadMaxFiles):
            return BatchLimits(limit.max_files, self.max_rows)
        if isinstance(limit, ReadMaxRows):
            return BatchLimits(self.max_files, limit.max_rows)
        return self if self.max_files or self.max_rows else None

    def default(self) -> ReadLimit:
        """What Spark is told (it passes it back): the files limit, else the rows limit."""
        if self.max_files is not None:
            return ReadMaxFiles(self.max_files)
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        return ReadAllAvailable()


class StreamFiles(InputPartition):
    """One micro-batch partition: appended data files and what reading them needs."""

    def __init__(
        self,
        files: tuple[Any, ...],
        table_schema: Schema,
        specs: Mapping[int, Any],
        schemas: tuple[Schema, ...],
        location: str,
        name_mapping: NameMapping | None = None,
    ) -> None:
        self.files = files
        self.table_schema = table_schema
        self.specs = dict(specs)
        self.schemas = schemas
        self.location = location
        self.name_mapping = name_mapping


class LakecatStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are :class:`StreamOffset` s of the table's ``main`` branch, as JSON."""

    def __init__(
        self,
        settings: CatalogSettings,
        options: Mapping[str, str],
        schema: StructType,
        *,
        parallelism: int = 1,
    ) -> None:
        self.settings = settings
        self.table = table_identifier(options)
        self.options = dict(options)
        self.spark_schema = schema
        self.parallelism = parallelism
        self.skip_delete = _flag(options, SKIP_DELETE)
        self.skip_overwrite = _flag(options, SKIP_OVERWRITE)
        self.limits = BatchLimits.parse(options)
        raw = (options.get(STREAM_FROM_TIMESTAMP) or "").strip()
        self.from_ms = to_timestamp_ms(int(raw) if raw.isdigit() else raw) if raw else None
        # Trigger.AvailableNow: the snapshot the query reads up to (the head when it started).
        self.available_now: int | None = None
        # The files each append snapshot added (immutable), by table uuid and snapshot id:
        # every micro-batch asks for its snapshots' files twice (its end offset, then its
        # partitions), and a batch that ends inside a snapshot leaves it to the next one.
        self._added: OrderedDict[tuple[str, int], tuple[DataFile, ...]] = OrderedDict()
        self._added_count = 0

    def _added_files(
        self, metadata: TableMetadata, location: str, snapshot: Snapshot
    ) -> tuple[DataFile, ...]:
        """:func:`snapshot_files`, remembered for the stream's snapshots (the most recently
        used, up to :data:`CACHED_FILES` files in all)."""
        key = (str(metadata.table_uuid), snapshot.snapshot_id)
        added = self._added.get(key)
        if added is not None:
            self._added.move_to_end(key)
            return added
        added = snapshot_files(self.settings, metadata, location, snapshot)
        self._added[key] = added
        self._added_count += len(added)
        while self._added_count > CACHED_FILES and len(self._added) > 1:
            _, dropped = self._added.popitem(last=False)
            self._added_count -= len(dropped)
        return added

    def _metadata(self) -> tuple[TableMetadata, str]:
        with self.settings.open() as catalog:
            table = catalog.load_table(self.table)
            return table.metadata, table.metadata_location

    # ---- driver -----------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, int]:
        with error_headline():
            return self._initial().json()

    def _initial(self) -> StreamOffset:
        if self.from_ms is None:
            return START
        metadata, _ = self._metadata()
        head = metadata.current_snapshot
        if head is None:
            return START
        history = ancestors_between(metadata, start_exclusive=None, end_inclusive=head.snapshot_id)
        before = [s for s in history if s.timestamp_ms < self.from_ms]
        latest = max(before, key=lambda s: s.sequence_number, default=None)
        return StreamOffset(latest.snapshot_id) if latest else START

    def getDefaultReadLimit(self) -> ReadLimit:
        return self.limits.default()

    def prepareForTriggerAvailableNow(self) -> None:
        with error_headline():
            metadata, _ = self._metadata()
            head = _head(metadata)
            self.available_now = BEFORE_FIRST if head is None else head

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, int]:
        with error_headline():
            begin = StreamOffset.parse(start) if start else self._initial()
            metadata, location = self._metadata()
            head = _head(metadata) if self.available_now is None else self.available_now
            if head is None or head == BEFORE_FIRST:
                return dict(start) if start else begin.json()
            end = self._latest(metadata, location, begin, head, self.limits.under(limit))
            # Unchanged, the start as it came (the same JSON: Spark sees no new data).
            return dict(start) if start and end == begin else end.json()

    def _latest(
        self,
        metadata: TableMetadata,
        location: str,
        start: StreamOffset,
        head: int,
        limits: BatchLimits | None,
    ) -> StreamOffset:
        """The end of the next batch from ``start`` towards ``head``, within ``limits``."""
        snapshots = self._snapshots(metadata, start, head)
        if limits is None:
            for snapshot in snapshots:
                self._reads(snapshot)  # refuses a snapshot the stream cannot read
            return StreamOffset(head)
        max_files, max_rows = limits.max_files, limits.max_rows
        end, files, rows = start, 0, 0
        for snapshot in snapshots:
            sid = snapshot.snapshot_id
            if self._reads(snapshot):
                added = self._added_files(metadata, location, snapshot)
                first = start.first_file(sid)
                for index in range(first, len(added)):
                    if max_files is not None and files + 1 > max_files:
                        return StreamOffset(sid, index) if index > first else end
                    files, rows = files + 1, rows + added[index].record_count
                    if max_rows is not None and rows >= max_rows:  # this file is taken
                        return StreamOffset(sid, index + 1 if index + 1 < len(added) else None)
            end = StreamOffset(sid)
            if max_files is not None and files >= max_files:
                return end
        return end

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        with error_headline():
            begin, stop = StreamOffset.parse(start), StreamOffset.parse(end)
            if stop in (begin, START):
                return []
            metadata, location = self._metadata()
            plan = self.plan(metadata, location, begin, stop)
            return self._partitions(metadata, location, stop, plan)

    def _partitions(
        self, metadata: TableMetadata, location: str, end: StreamOffset, plan: FilePlan
    ) -> list[InputPartition]:
        view = ReadView(
            metadata,
            location,
            metadata.snapshot_by_id(end.snapshot_id),
            metadata.schema(),
            ReadOptions(),
        )
        groups = groups_of(view, plan, parallelism=self.parallelism)
        return [
            StreamFiles(
                tuple(g),
                metadata.schema(),
                metadata.specs_by_id(),
                metadata.schemas,
                metadata.location,
                name_mapping_of(metadata.properties),
            )
            for g in groups
        ]

    def plan(
        self, metadata: TableMetadata, location: str, start: StreamOffset, end: StreamOffset
    ) -> FilePlan:
        """The files appended between the offsets; refuses what the stream cannot read."""
        snapshots = self._snapshots(metadata, start, end.snapshot_id)
        files: list[DataFile] = []
        total = 0
        for snapshot in snapshots:
            if not self._reads(snapshot):
                continue
            added = self._added_files(metadata, location, snapshot)
            total += len(added)
            sid = snapshot.snapshot_id
            files.extend(added[start.first_file(sid) : end.end_file(sid, len(added))])
        return FilePlan(tuple(files), total)

    def _snapshots(
        self, metadata: TableMetadata, start: StreamOffset, end_id: int
    ) -> list[Snapshot]:
        """The snapshots from ``start`` (itself, when read only partly) to ``end_id``, in
        commit order; fails when ``start`` is not in ``end_id``'s history."""
        try:
            metadata.snapshot_by_id(end_id)
        except NoSuchSnapshot:
            raise NoSuchSnapshot(
                f"{self.table}: the stream's end snapshot {end_id} is no longer in the table"
            ) from None
        begin = None if start.snapshot_id == BEFORE_FIRST else start.snapshot_id
        if begin is not None and not is_ancestor_of(
            metadata, snapshot_id=end_id, ancestor_id=begin
        ):
            raise ValidationError(
                f"{self.table}: the stream's last snapshot {begin} is not an ancestor of the "
                f"current snapshot {end_id} (rolled back, replaced or expired); start a new "
                "query with a new checkpoint"
            )
        later = ancestors_between(metadata, start_exclusive=begin, end_inclusive=end_id)
        partly = (
            [metadata.snapshot_by_id(begin)]
            if begin is not None and start.position is not None
            else []
        )
        return partly + list(reversed(later))

    def _reads(self, snapshot: Snapshot) -> bool:
        """Whether the stream reads the snapshot's files (an append); False for a snapshot it
        skips, an error for one it cannot read."""
        operation = snapshot.operation
        if operation == APPEND:
            return True
        if operation == REPLACE:
            return False
        if operation == DELETE and self.skip_delete:
            return False
        if operation == OVERWRITE and self.skip_overwrite:
            return False
        option = SKIP_DELETE if operation == DELETE else SKIP_OVERWRITE
        raise ValidationError(
            f"{self.table}: snapshot {snapshot.snapshot_id} is a {operation!r}, which a "
            f"stream of appended rows cannot read; set {option}=true to skip such snapshots"
        )

    def commit(self, end: dict[str, int]) -> None:
        pass

    # ---- executors --------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, StreamFiles):
            return iter(())
        projected, metadata_columns = project(partition.table_schema, self.spark_schema)
        reader = FileReader(
            io=self.settings.file_io(partition.location),
            table_schema=partition.table_schema,
            projected=projected,
            specs=partition.specs,
            row_filter=AlwaysTrue(),
            metadata_columns=metadata_columns,
            schemas=partition.schemas,
            name_mapping=partition.name_mapping,
        )
        wanted = to_arrow_schema(self.spark_schema, timezone="UTC")
        read = constants_read(wanted)  # _spec_id and _partition are made from _file
        target = with_both_metadata_columns(read) if metadata_columns else read
        files = list(partition.files)
        batches = add_file_constants(
            reader.read(files, target, {}, {}),
            files,
            lambda: PartitionColumn.of_specs(partition.specs, partition.schemas),
            wanted,
            FILE_COLUMN,
        )
        if read is wanted and target is wanted:
            return batches
        return (batch.select(wanted.names) for batch in batches)


def snapshot_files(
    settings: CatalogSettings, metadata: TableMetadata, location: str, snapshot: Snapshot
) -> tuple[DataFile, ...]:
    """The data files an append snapshot added, in the order offsets count them: its manifest
    list's order, then each manifest's (the incremental read of the range ending with it)."""
    options = ReadOptions(start_snapshot_id=snapshot.parent_snapshot_id)
    view = ReadView(metadata, location, snapshot, metadata.schema(), options)
    return appended_files(settings.file_io(metadata.location), view, AlwaysTrue()).files


def _head(metadata: TableMetadata) -> int | None:
    head = metadata.ref_snapshot(MAIN_BRANCH) if MAIN_BRANCH in metadata.refs else None
    return head.snapshot_id if head else None


def _flag(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"


def _positive(options: Mapping[str, str], key: str) -> int | None:
    raw = (options.get(key) or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) <= 0:
        raise ValidationError(f"option {key} must be a positive integer, not {raw!r}")
    return int(raw)
