"""Driver-side operations that run their rewrite on Spark and commit themselves.

Row-level operations and compaction plan on the driver against one table state (a
:class:`TargetTable`), let Spark read the candidate files (:func:`read_files`: the data
source pinned to the planned metadata file, restricted to the planned files, with the
``_file``/``_pos`` columns) and write the new rows (:func:`stage_write`: the data source's
writer in *staging* mode), then commit one intent on the driver.

Compaction also learns where each row went: its rows carry their address (file and position,
one long: ``row_addresses``) to the writer, which writes them in the order they arrive and
hands over, per task, the blocks of input positions it wrote (``record_moves``).

A staged write goes through Spark's write protocol like any other: only the files of
successful task attempts reach the driver, and a failed job's files are deleted by the
writer's ``abort``. Instead of committing, the writer's ``commit`` (which runs in a Python
worker) hands the file list to the calling driver process through a small file at a fresh
location under the table's metadata folder, which the caller reads and deletes at once.
"""

from __future__ import annotations

import json
import pickle
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as st

from lakecat.catalog import Catalog, Table
from lakecat.catalog.engine import PositionBlock, metadata_dir
from lakecat.metadata.errors import CorruptMetadata, ValidationError
from lakecat.metadata.io import FileIO, join
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.table import Snapshot, TableMetadata
from lakecat.spark_ext.settings import CatalogSettings, settings_from_session
from lakecat.spark_ext.source.planning import (
    FILES,
    METADATA_COLUMNS,
    METADATA_LOCATION,
    ROW_ADDRESSES,
    ROW_LINEAGE,
)
from lakecat.spark_ext.types import FILE_COLUMN, POS_COLUMN, spark_schema

STAGE_TO = "stage-to"  # write option: hand the written files over here, do not commit
TARGET_FILE_SIZE = "target-file-size-bytes"  # write option (Iceberg Spark's name)
# write option, "true": the rows carry their address last (read with ROW_ADDRESSES); write
# them in order and hand over the blocks of input positions written
RECORD_MOVES = "record-moves"
# write option, "true": write the rows in the order they come, not sorted by the table's sort
# order (a compaction that sorted them itself)
KEEP_ORDER = "keep-order"
OUTPUT_SPEC_ID = "output-spec-id"  # staged write: the spec the files are for (Iceberg's name)


def activate(spark: Any) -> None:
    """Make ``spark`` the JVM's active session in this thread.

    Spark looks a Python data source up in the thread's active session when it writes, and a
    thread the session was not created in has none (the write then fails with
    ``ClassNotFoundException: lakecat.DefaultSource``). ``createDataFrame`` sets it, through
    the public API, at the cost of planning an empty local relation.
    """
    spark.createDataFrame([], "unused int")


@dataclass(frozen=True)
class StagedTask:
    """What one task of a staged write wrote: its Spark partition, its files in the order
    written and, when it recorded moves, the blocks of input positions it wrote, in order
    (positions' files by their index among the task's input files)."""

    task: int
    files: tuple[DataFile, ...]
    blocks: tuple[PositionBlock, ...] | None = None


Staged = list[StagedTask]


def write_handoff(io: FileIO, location: str, staged: Staged) -> None:
    io.write(location, pickle.dumps(staged), exclusive=True)


def read_handoff(io: FileIO, location: str) -> Staged:
    """The files a staged write handed over, per task (the handoff file is deleted)."""
    data = io.read(location)
    io.delete(location)
    # Written by this operation's own writer moments ago, at a location it chose at random.
    staged = pickle.loads(data)
    if not isinstance(staged, list) or not all(
        isinstance(t, StagedTask) and all(isinstance(f, DataFile) for f in t.files) for t in staged
    ):
        raise CorruptMetadata(f"{location} is not a list of staged data files")
    return staged


def handed_over(io: FileIO, location: str) -> list[DataFile]:
    """The files a staged write handed over at ``location`` (none when no task wrote)."""
    if not io.exists(location):
        return []
    return [f for t in read_handoff(io, location) for f in t.files]


@dataclass
class TargetTable:
    """A table as a driver-side operation planned against it."""

    name: str
    table: Table  # its metadata is the state the operation started from
    settings: CatalogSettings
    format_name: str

    @property
    def metadata(self) -> TableMetadata:
        return self.table.metadata

    @property
    def io(self) -> FileIO:
        return self.settings.file_io(self.metadata.location)

    @property
    def head(self) -> Snapshot | None:
        return self.metadata.current_snapshot

    @property
    def row_lineage(self) -> bool:
        """Whether rows copied from the table must keep their lineage (format v3)."""
        return self.metadata.format_version >= 3

    def stage_location(self) -> str:
        """A fresh location for a staged write's handoff (:func:`read_handoff`)."""
        return join(metadata_dir(self.metadata), f"spark-stage-{uuid.uuid4()}.pickle")

    def catalog_options(self) -> dict[str, str]:
        """The catalog of this operation, for the data source it reads and writes with."""
        return self.settings.as_options()

    def reader(self, spark: Any) -> Any:
        """A DataFrameReader pinned to the planned metadata (no catalog round trip)."""
        return (
            spark.read.format(self.format_name)
            .options(**self.catalog_options())
            .option(METADATA_LOCATION, self.table.metadata_location)
        )


@contextmanager
def open_target(
    spark: Any, name: str, catalog: Catalog | None, format_name: str
) -> Iterator[TargetTable]:
    """Load a table for a driver-side operation (its start); the catalog closes afterwards."""
    settings = settings_from_session(spark, catalog, format_name=format_name)
    with settings.open() as opened:
        yield TargetTable(name, opened.load_table(name), settings, format_name)


def read_files(
    spark: Any,
    target: TargetTable,
    files: Sequence[DataFile] | Sequence[Sequence[DataFile]],
    *,
    metadata_columns: bool = True,
    row_lineage: bool = False,
    row_addresses: bool = False,
    columns: Sequence[str] | None = None,
) -> Any:
    """The rows of the given data files of the planned snapshot as a DataFrame; a list of
    lists reads each inner list as one Spark partition, a flat list one file per partition.
    ``row_lineage``: with the columns ``_row_id`` and ``_last_updated_sequence_number``
    (format v3), which :func:`stage_write` writes back with the rows. ``row_addresses``: with
    the column ``_lakecat_row_address`` last (each row's file, by its index in its inner
    list, and position), for :func:`stage_write_by_task`'s ``record_moves``. ``columns``:
    only these table columns (and the metadata columns) are read, for a job that needs no
    others (the data source gets no column pruning from Spark); not with the lineage or
    address columns."""
    if files and not isinstance(files[0], DataFile):
        groups = [[f.file_path for f in group] for group in files]  # type: ignore[union-attr]
    else:
        groups = [[f.file_path] for f in files]  # type: ignore[union-attr]
    reader = target.reader(spark).option(FILES, json.dumps(groups))
    if metadata_columns:
        reader = reader.option(METADATA_COLUMNS, "true")
    if row_lineage:
        reader = reader.option(ROW_LINEAGE, "true")
    if row_addresses:
        reader = reader.option(ROW_ADDRESSES, "true")
    if columns is not None:
        if row_lineage or row_addresses:
            raise ValidationError("columns are not chosen with the lineage or address columns")
        full = spark_schema(target.metadata.schema(), metadata_columns=metadata_columns)
        wanted = {*columns, FILE_COLUMN, POS_COLUMN} if metadata_columns else set(columns)
        reader = reader.schema(st.StructType([f for f in full.fields if f.name in wanted]))
    return reader.load(target.name)


def stage_write(target: TargetTable, df: Any) -> list[DataFile]:
    """Write a DataFrame's rows as data files of the planned table state, without a commit."""
    return [f for t in stage_write_by_task(target, df) for f in t.files]


def stage_write_by_task(
    target: TargetTable,
    df: Any,
    *,
    target_file_size: int | None = None,
    record_moves: bool = False,
    keep_order: bool = False,
    output_spec_id: int | None = None,
) -> Staged:
    """:func:`stage_write`, the files grouped by the Spark partition that wrote them;
    ``record_moves``: ``df`` ends with the row address column (``read_files(...,
    row_addresses=True)``), written in order and reported as :attr:`StagedTask.blocks`;
    ``keep_order``: each task's rows are written in the order they come (sorted already);
    ``output_spec_id``: the files are written for that partition spec of the table, not its
    default one."""
    location = target.stage_location()
    activate(df.sparkSession)
    writer = (
        df.write.format(target.format_name)
        .mode("append")
        .options(**target.catalog_options())
        .option(METADATA_LOCATION, target.table.metadata_location)
        .option(STAGE_TO, location)
    )
    if target_file_size is not None:
        writer = writer.option(TARGET_FILE_SIZE, str(target_file_size))
    if record_moves:
        writer = writer.option(RECORD_MOVES, "true")
    if keep_order:
        writer = writer.option(KEEP_ORDER, "true")
    if output_spec_id is not None:
        writer = writer.option(OUTPUT_SPEC_ID, str(output_spec_id))
    writer.save(target.name)
    if not target.io.exists(location):
        return []  # a job without tasks
    return read_handoff(target.io, location)
