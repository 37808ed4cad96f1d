"""Structured Streaming source: the rows appended to a table, micro-batch by micro-batch.

``spark.readStream.format("lakecat").load("db.events")`` (or ``readStream.table`` through the
catalog plugin) reads what Iceberg's Spark streaming source reads: the data files that the
``append`` snapshots of the table's ``main`` branch added, in commit order. An offset is a
snapshot id (``-1``: before the first snapshot); a micro-batch reads the appends of the
snapshots after its start offset up to the table's current snapshot.

* By default a query starts before the first snapshot (it reads every append of the
  history); ``stream-from-timestamp`` (ms since the epoch) starts it with the first snapshot
  committed at or after that time.
* Compactions (``replace`` snapshots) add no rows and are skipped. A snapshot that deletes or
  overwrites rows cannot be expressed as appended rows: the query fails on it unless
  ``streaming-skip-delete-snapshots`` / ``streaming-skip-overwrite-snapshots`` is ``true`` (then
  its rows are not read, its deletes not applied), as in Iceberg.
* Appended files are read as they were appended, without later delete files, as Iceberg's
  incremental append scan does.
* A history that no longer holds the last offset (a rollback, a replace of the table, or
  snapshot expiry that removed it) fails the query with a typed error.

The offsets make a restarted query (same checkpoint) continue where it left off; Spark's
checkpoint and this source's deterministic planning make each micro-batch read the same
files when it is replayed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lakecat.catalog.engine import to_timestamp_ms
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError
from lakecat.metadata.expressions import AlwaysTrue
from lakecat.metadata.schema import Schema
from lakecat.metadata.table import (
    APPEND,
    DELETE,
    MAIN_BRANCH,
    OVERWRITE,
    REPLACE,
    TableMetadata,
    ancestors_between,
    is_ancestor_of,
)
from lakecat.spark_ext.settings import CatalogSettings, table_identifier
from lakecat.spark_ext.source.planning import (
    FilePlan,
    ReadOptions,
    ReadView,
    appended_files,
    groups_of,
)
from lakecat.spark_ext.source.tasks import FileReader
from lakecat.spark_ext.types import project

STREAM_FROM_TIMESTAMP = "stream-from-timestamp"
SKIP_DELETE = "streaming-skip-delete-snapshots"
SKIP_OVERWRITE = "streaming-skip-overwrite-snapshots"
BEFORE_FIRST = -1


class StreamFiles(InputPartition):
    """One micro-batch partition: appended data files and what reading them needs."""

    def __init__(
        self,
        files: tuple[Any, ...],
        table_schema: Schema,
        specs: Mapping[int, Any],
        schemas: tuple[Schema, ...],
        location: str,
    ) -> None:
        self.files = files
        self.table_schema = table_schema
        self.specs = dict(specs)
        self.schemas = schemas
        self.location = location


class LakecatStreamReader(DataSourceStreamReader):
    """Offsets are ``{"snapshot_id": id}`` of the table's ``main`` branch."""

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
        raw = (options.get(STREAM_FROM_TIMESTAMP) or "").strip()
        self.from_ms = to_timestamp_ms(int(raw) if raw.isdigit() else raw) if raw else None

    def _metadata(self) -> tuple[TableMetadata, str]:
        with self.settings.open() as catalog:
            table = catalog.load_table(self.table)
            return table.metadata, table.metadata_location

    # ---- driver -----------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, int]:
        if self.from_ms is None:
            return {"snapshot_id": BEFORE_FIRST}
        metadata, _ = self._metadata()
        head = metadata.current_snapshot
        if head is None:
            return {"snapshot_id": BEFORE_FIRST}
        history = ancestors_between(metadata, start_exclusive=None, end_inclusive=head.snapshot_id)
        before = [s for s in history if s.timestamp_ms < self.from_ms]
        latest = max(before, key=lambda s: s.sequence_number, default=None)
        return {"snapshot_id": latest.snapshot_id if latest else BEFORE_FIRST}

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: Any = None
    ) -> dict[str, int]:
        metadata, _ = self._metadata()
        head = metadata.ref_snapshot(MAIN_BRANCH) if MAIN_BRANCH in metadata.refs else None
        return {"snapshot_id": head.snapshot_id if head else BEFORE_FIRST}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        start_id, end_id = int(start["snapshot_id"]), int(end["snapshot_id"])
        if end_id in (start_id, BEFORE_FIRST):
            return []
        metadata, location = self._metadata()
        plan = self.plan(metadata, location, start_id, end_id)
        view = ReadView(
            metadata, location, metadata.snapshot_by_id(end_id), metadata.schema(), ReadOptions()
        )
        groups = groups_of(view, plan, parallelism=self.parallelism)
        return [
            StreamFiles(
                tuple(g),
                metadata.schema(),
                metadata.specs_by_id(),
                metadata.schemas,
                metadata.location,
            )
            for g in groups
        ]

    def plan(self, metadata: TableMetadata, location: str, start_id: int, end_id: int) -> FilePlan:
        """The files the appends in (start, end] added; refuses what the stream cannot read."""
        try:
            end = metadata.snapshot_by_id(end_id)
        except NoSuchSnapshot:
            raise NoSuchSnapshot(
                f"{self.table}: the stream's end snapshot {end_id} is no longer in the table"
            ) from None
        start = None if start_id == BEFORE_FIRST else start_id
        if start is not None and not is_ancestor_of(
            metadata, snapshot_id=end_id, ancestor_id=start
        ):
            raise ValidationError(
                f"{self.table}: the stream's last snapshot {start} is not an ancestor of the "
                f"current snapshot {end_id} (rolled back, replaced or expired); start a new "
                "query with a new checkpoint"
            )
        in_range = ancestors_between(metadata, start_exclusive=start, end_inclusive=end_id)
        for snapshot in reversed(in_range):  # in commit order: the first one that fails
            operation = snapshot.operation
            if operation in (APPEND, REPLACE):
                continue
            if operation == DELETE and self.skip_delete:
                continue
            if operation == OVERWRITE and self.skip_overwrite:
                continue
            option = SKIP_DELETE if operation == DELETE else SKIP_OVERWRITE
            raise ValidationError(
                f"{self.table}: snapshot {snapshot.snapshot_id} is a {operation!r}, which a "
                f"stream of appended rows cannot read; set {option}=true to skip such snapshots"
            )
        options = ReadOptions(start_snapshot_id=start)
        view = ReadView(metadata, location, end, metadata.schema(), options)
        return appended_files(self.settings.file_io(metadata.location), view, AlwaysTrue())

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
        )
        target = to_arrow_schema(self.spark_schema, timezone="UTC")
        return reader.read(list(partition.files), target, {}, {})


def _flag(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"
