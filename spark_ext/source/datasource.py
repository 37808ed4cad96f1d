"""The ``lakecat`` PySpark data source (``pyspark.sql.datasource``, PySpark 4).

>>> import lakecat.spark_ext as lk
>>> lk.register(spark, catalog=catalog)
>>> df = spark.read.format("lakecat").load("db.events")
>>> df.write.format("lakecat").mode("append").save("db.events")

Where each piece runs:

* ``schema()`` and ``reader()`` run in a Python worker on the driver: they load the table
  once (the resolved snapshot is kept in the data source instance, which Spark pickles from
  one call to the next), take the filters Spark pushes, plan the files and return one input
  partition per file or group of small files;
* ``read()`` runs on the executors: pyarrow reads the Parquet files by field id and yields
  Arrow record batches in Spark's form;
* ``writer()`` plans a :class:`~lakecat.spark_ext.source.write_jobs.WriteJob` on the driver; its
  ``write()`` runs on the executors, ``commit()``/``abort()`` on the driver.

A DataFrame reads the snapshot resolved when it was loaded: load it again to see newer
commits. Spark 4 also keeps the planned read of a DataFrame between queries: a query without
pushable filters that follows a filtered query on the *same* DataFrame object reuses the
filtered plan (see ``docs/spark.md``); load a new DataFrame per query when mixing them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import PySparkNotImplementedError
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    Filter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lakecat.catalog import Catalog
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions import AlwaysTrue, Expression, and_
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.schema import LINEAGE_COLUMNS, name_mapping_of
from lakecat.metadata.table import read_metadata
from lakecat.spark_ext.settings import (
    DEFAULT_FORMAT,
    CatalogSettings,
    settings_from_options,
    store_in_session,
    table_identifier,
)
from lakecat.spark_ext.source.filters import to_expression
from lakecat.spark_ext.source.partition_column import (
    PartitionColumn,
    add_file_constants,
    constants_read,
)
from lakecat.spark_ext.source.planning import ReadOptions, ReadView, groups_of, plan_files
from lakecat.spark_ext.source.stream_read import LakecatStreamReader
from lakecat.spark_ext.source.streaming import plan_stream
from lakecat.spark_ext.source.tasks import FileReader, with_both_metadata_columns
from lakecat.spark_ext.source.write_jobs import WriteJob, plan_write
from lakecat.spark_ext.types import (
    FILE_COLUMN,
    POS_COLUMN,
    ROW_ADDRESS_COLUMN,
    ROW_ADDRESS_SHIFT,
    project,
    spark_schema,
)

FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
_LINEAGE_IDS = frozenset(f.field_id for f in LINEAGE_COLUMNS.values())


class FileGroup(InputPartition):
    """One input partition: data files read by one Spark task, the delete files that apply
    to them and, for row lineage, their data sequence numbers (both by data file path)."""

    def __init__(
        self,
        files: Sequence[DataFile],
        deletes: Mapping[str, tuple[DataFile, ...]] | None = None,
        sequence_numbers: Mapping[str, int] | None = None,
    ) -> None:
        self.files = tuple(files)
        self.deletes = dict(deletes or {})
        self.sequence_numbers = dict(sequence_numbers or {})

    def __repr__(self) -> str:
        return f"FileGroup({len(self.files)} files)"


class LakecatDataSource(DataSource):
    """Reads and writes lakecat tables; :func:`register` makes a subclass bound to a catalog."""

    settings: ClassVar[CatalogSettings | None] = None
    format_name: ClassVar[str] = DEFAULT_FORMAT
    filter_pushdown: ClassVar[bool] = False
    # The session's default parallelism when registered: reads plan at least this many
    # partitions when the files allow it.
    parallelism: ClassVar[int] = 1

    @classmethod
    def name(cls) -> str:
        return cls.format_name

    def _settings(self) -> CatalogSettings:
        return settings_from_options(type(self).settings, self.options)

    def _view(self) -> ReadView:
        # Spark pickles this instance after schema() and unpickles it for reader(): both see
        # the same snapshot, and the catalog is read once per DataFrame.
        view: ReadView | None = getattr(self, "_pinned_view", None)
        if view is None:
            options = ReadOptions.parse(self.options)
            settings = self._settings()
            if options.metadata_location:  # planned on the driver: no catalog round trip
                location = options.metadata_location
                metadata = read_metadata(settings.file_io(location), location)
            else:
                with settings.open() as catalog:
                    table = catalog.load_table(table_identifier(self.options))
                    metadata, location = table.metadata, table.metadata_location
            view = ReadView.resolve(metadata, location, options)
            self._pinned_view = view
        return view

    def schema(self) -> StructType:
        view = self._view()
        return spark_schema(
            view.schema,
            metadata_columns=view.options.metadata_columns,
            row_lineage=view.options.row_lineage,
            row_addresses=view.options.row_addresses,
        )

    def reader(self, schema: StructType) -> DataSourceReader:
        reader_class = PushdownReader if type(self).filter_pushdown else LakecatReader
        return reader_class(
            self._view(),
            schema,
            self._settings(),
            parallelism=type(self).parallelism,
            table=table_identifier(self.options),
        )

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        job = plan_write(
            self._settings(),
            table_identifier(self.options),
            self.options,
            overwrite=overwrite,
            spark_schema=schema,
        )
        return LakecatWriter(job)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return LakecatStreamReader(
            self._settings(), self.options, schema, parallelism=type(self).parallelism
        )

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return plan_stream(
            self._settings(),
            table_identifier(self.options),
            self.options,
            overwrite=overwrite,
            spark_schema=schema,
        )


class LakecatReader(DataSourceReader):
    """Plans on the driver (``partitions``), reads on the executors (``read``)."""

    def __init__(
        self,
        view: ReadView,
        schema: StructType,
        settings: CatalogSettings,
        *,
        parallelism: int = 1,
        table: str = "the table",
    ) -> None:
        projected, metadata_columns = project(view.schema, schema)
        if metadata_columns and view.options.row_filter:
            raise ValidationError("the metadata columns cannot be read with a filter option")
        self.view = view
        self.spark_schema = schema
        self.projected = projected
        self.metadata_columns = metadata_columns
        self.io = settings.file_io(view.metadata.location)
        self.parallelism = parallelism
        self.table = table
        # Filters lakecat applies exactly (rows and files) / uses only to prune files.
        self.applied: list[Expression] = []
        self.pruning: list[Expression] = []

    @property
    def row_lineage(self) -> bool:
        """Whether the read asks for a row lineage column."""
        return any(f.field_id in _LINEAGE_IDS for f in self.projected.fields)

    def partitions(self) -> list[InputPartition]:
        filters = [*self.applied, *self.pruning, self.view.prune_filter()]
        plan = plan_files(self.io, self.view, filters, row_lineage=self.row_lineage)
        groups = groups_of(self.view, plan, parallelism=self.parallelism)
        return [
            FileGroup(group, plan.deletes_of(group), plan.sequence_numbers_of(group))
            for group in groups
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FileGroup):  # Spark's placeholder for "no partitions"
            return iter(())
        wanted = to_arrow_schema(self.spark_schema, timezone="UTC")
        read = constants_read(wanted)  # the file constants and the address are made below
        if ROW_ADDRESS_COLUMN in read.names:
            read = read.remove(read.get_field_index(ROW_ADDRESS_COLUMN))
        target = with_both_metadata_columns(read) if self.metadata_columns else read
        batches = self.file_reader().read(
            partition.files, target, partition.deletes, partition.sequence_numbers
        )
        if ROW_ADDRESS_COLUMN in wanted.names:
            paths = pa.array([f.file_path for f in partition.files], pa.string())
            batches = (_with_row_address(batch, paths) for batch in batches)
        batches = add_file_constants(
            batches,
            partition.files,
            lambda: PartitionColumn.of(self.view.metadata),
            wanted,
            FILE_COLUMN,
        )
        if read is wanted and target is wanted:
            return batches
        return (batch.select(wanted.names) for batch in batches)

    def file_reader(self) -> FileReader:
        row_filter: Expression = and_(self.view.base_filter(), *self.applied)
        return FileReader(
            io=self.io,
            table_schema=self.view.schema,
            projected=self.projected,
            specs=self.view.metadata.specs_by_id(),
            row_filter=row_filter if self.applied or self.view.options.row_filter else AlwaysTrue(),
            metadata_columns=self.metadata_columns,
            schemas=self.view.metadata.schemas,
            row_lineage=self.row_lineage and self.view.metadata.format_version >= 3,
            name_mapping=name_mapping_of(self.view.metadata.properties),
        )


def _with_row_address(batch: pa.RecordBatch, paths: pa.Array) -> pa.RecordBatch:
    """``batch`` (read with ``_file`` and ``_pos``) with each row's address: its file's index
    among ``paths`` (the task's files) shifted by :data:`ROW_ADDRESS_SHIFT`, plus ``_pos``."""
    index = pc.cast(pc.index_in(batch.column(FILE_COLUMN), value_set=paths), pa.int64())
    if index.null_count:
        raise ValueError("a row of a file outside its read task")  # never: the task's files
    shifted = pc.shift_left(index, pa.scalar(ROW_ADDRESS_SHIFT, pa.int64()))
    address = pc.add(shifted, batch.column(POS_COLUMN))
    return batch.append_column(pa.field(ROW_ADDRESS_COLUMN, pa.int64(), False), address)


class PushdownReader(LakecatReader):
    """A reader that takes the filters Spark pushes down (``spark.sql.python.filterPushdown
    .enabled``; Spark refuses a reader with ``pushFilters`` when it is off)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        for f in filters:
            expression = to_expression(f, self.view.schema)
            if expression is None:
                yield f  # Spark evaluates it
            elif self.metadata_columns:
                # Row positions must count every row: prune files only, Spark filters rows.
                self.pruning.append(expression)
                yield f
            else:
                self.applied.append(expression)


class LakecatWriter(DataSourceArrowWriter):
    """Executors write files (``write``); the driver commits once (``commit``)."""

    def __init__(self, job: WriteJob) -> None:
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self.job.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.job.commit(messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.job.abort(messages)


def register(
    spark: Any,
    catalog: Catalog | None = None,
    *,
    uri: str | None = None,
    warehouse: str | None = None,
    name: str = "lakecat",
    format_name: str = DEFAULT_FORMAT,
    filter_pushdown: bool = False,
    properties: Mapping[str, str] | None = None,
) -> type[LakecatDataSource]:
    """Register the lakecat data source in a Spark session, bound to one catalog.

    Give a :class:`~lakecat.catalog.Catalog` or its ``uri`` and ``warehouse`` (and storage
    ``properties``: ``s3.endpoint``, ...; a catalog brings its own). The storage properties
    travel to the executors inside the pickled data source, never in the session
    configuration when they are credentials (``lakecat.spark_ext.settings``). After this,
    ``spark.read.format(format_name).load("db.t")`` and
    ``df.write.format(format_name).mode("append").save("db.t")`` work. The settings travel
    with the registered class to every worker; they are also stored in the session
    configuration (``spark.lakecat.<format>.*``) for the helpers that take ``spark``
    (delete, update, merge, compact). ``filter_pushdown=True`` turns on Spark's Python filter
    pushdown for the session (``spark.sql.python.filterPushdown.enabled``), which lakecat
    uses to prune files; it is off by default because Spark 4 reuses a DataFrame's last
    pushed-down plan for its next unfiltered query (see ``docs/spark.md``). Returns the
    registered data source class.
    """
    if catalog is not None:
        settings = CatalogSettings.of_catalog(catalog)
    elif uri and warehouse:
        settings = CatalogSettings(uri, warehouse, name, properties=dict(properties or {}))
    else:
        raise ValidationError("register needs a catalog, or its uri and warehouse")
    # A class per registration, so that the settings are pickled with it (by value: it is
    # not importable by name) to every worker, with no state outside the class.
    source = type(
        f"LakecatDataSource_{format_name}",
        (LakecatDataSource,),
        {
            "settings": settings,
            "format_name": format_name,
            "filter_pushdown": filter_pushdown,
            "parallelism": _default_parallelism(spark),
            "__module__": __name__,
        },
    )
    spark.dataSource.register(source)
    if filter_pushdown:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    store_in_session(spark, format_name, settings)
    return source


def _default_parallelism(spark: Any) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except PySparkNotImplementedError:  # Spark Connect: no SparkContext
        return max(1, int(spark.conf.get("spark.default.parallelism", "1") or 1))
