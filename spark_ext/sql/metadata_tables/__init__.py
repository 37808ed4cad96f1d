"""Iceberg's metadata tables for Spark SQL: ``SELECT * FROM lake.db.t.snapshots``.

The Spark catalog answers ``lake.db.t.<kind>`` with a read-only table served by this Python
data source (registered next to the table data source by
:func:`lakecat.spark_ext.attach_catalog`). When Spark plans the read, the driver (a Python
worker) loads the table from the catalog and plans its rows (:func:`plan_rows`): the tables
of manifest entries, files and deleted positions, which grow with the table, are read a group
of manifests per task (up to ``read.split.metadata-target-size``, 32 MiB, of manifests each,
as Iceberg Java groups them), by the tasks; the others (snapshots, history, refs, metadata
log, manifests, partitions) are made on the driver and handed to one task. Executors never
open the catalog. Every table has Iceberg's columns, names and order (Iceberg 1.10,
``core/.../*Table.java``), read from the table's metadata, manifest lists and manifests:

* ``snapshots``, ``history``, ``refs``, ``metadata_log_entries`` (the metadata log plus the
  current metadata file);
* ``manifests`` (the current snapshot's manifest list) and ``all_manifests`` (every
  snapshot's, with ``reference_snapshot_id``);
* ``entries`` (every entry of the current snapshot's manifests, deleted ones too) and
  ``all_entries`` (of every manifest any snapshot lists, once per manifest);
* ``files``, ``data_files``, ``delete_files`` (the live entries of the current snapshot's
  manifests: all, data, delete manifests) and ``all_files``, ``all_data_files``,
  ``all_delete_files`` (of every manifest any snapshot lists: a file listed by several
  manifests appears once per manifest, as in Iceberg);
* ``partitions``: per partition, counts and sizes of the current snapshot's live files and
  the snapshot that last added to it;
* ``position_deletes``: one row per deleted position of the current snapshot's position
  delete files and deletion vectors.

Some columns take their type from the table, as in Iceberg (:class:`Shape`): ``partition``
(files, entries, partitions, position_deletes) is Iceberg's partition type over all the table's
specs (``Partitioning.partitionType``; left out, with ``partitions.spec_id``, when it has no
fields), ``readable_metrics`` (files and entries tables) a struct of every primitive column's
metrics with bounds in the column's type, ``position_deletes.row`` the table's row; the bridge
describes each metadata table with its table's columns, and a reader whose table has changed
shape since the query was planned refuses to read (``SchemaMismatch``). A read makes only
the columns the query selects (the plugin prunes them, :meth:`RowsPlan.pruned`), so
``readable_metrics`` costs nothing to a query that leaves it out. Where Iceberg's
Spark runtime refuses a type (``time``) its values are text. A missing
``partition_summaries`` bound is the text ``"null"``, as Iceberg prints it; ``all_manifests``
has ``key_metadata`` (Iceberg after 1.10).

docs/spark-sql.md, "Metadata tables", lists every table's columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.manifests import ManifestFile
from lakecat.spark_ext.settings import CatalogSettings, settings_from_options, table_identifier
from lakecat.spark_ext.source.planning import SNAPSHOT_ID
from lakecat.spark_ext.sql.metadata_tables.rows import (
    RowsPlan,
    check_time_travel,
    deleted_positions,
    metadata_table_schema,
    plan_rows,
    rows,
)
from lakecat.spark_ext.sql.metadata_tables.schemas import METADATA_TABLE, METADATA_TABLES, Shape

__all__ = [
    "METADATA_TABLE",
    "METADATA_TABLES",
    "ManifestGroup",
    "MetadataReader",
    "MetadataTableSource",
    "RowsPlan",
    "Shape",
    "check_time_travel",
    "deleted_positions",
    "metadata_source",
    "metadata_table_schema",
    "plan_rows",
    "rows",
]


class MetadataTableSource(DataSource):
    """Serves ``lake.db.t.<kind>``; :func:`metadata_source` makes a subclass per catalog."""

    settings: ClassVar[CatalogSettings | None] = None
    format_name: ClassVar[str] = "lakecat_metadata"

    @classmethod
    def name(cls) -> str:
        return cls.format_name

    def _kind(self) -> str:
        kind = self.options.get(METADATA_TABLE, "")
        if kind not in METADATA_TABLES:
            raise ValidationError(
                f"option {METADATA_TABLE} must be one of {', '.join(METADATA_TABLES)}"
            )
        return kind

    def schema(self) -> StructType:
        settings = settings_from_options(type(self).settings, self.options)
        with settings.open() as catalog:
            table = catalog.load_table(table_identifier(self.options))
            return metadata_table_schema(table, self._kind())

    def reader(self, schema: StructType) -> DataSourceReader:
        settings = settings_from_options(type(self).settings, self.options)
        with settings.open() as catalog:
            table = catalog.load_table(table_identifier(self.options))
            snapshot = self.options.get(SNAPSHOT_ID)  # time travel (the bridge resolved it)
            plan = plan_rows(table, self._kind(), None if snapshot is None else int(snapshot))
        # the columns the query reads (the plugin prunes them): SchemaMismatch if the table
        # changed shape since the query was planned
        return MetadataReader(plan.pruned(schema), settings, table.location)


class ManifestGroup(InputPartition):
    """One task of a metadata table made a manifest at a time: its manifests."""

    def __init__(self, manifests: tuple[ManifestFile, ...]) -> None:
        self.manifests = manifests


class MetadataReader(DataSourceReader):
    """Made on the driver with the table's plan: the rows, handed over by one task, or the
    groups of manifests, a task each, whose rows the tasks make (with the catalog's FileIO,
    never opening the catalog)."""

    def __init__(self, plan: RowsPlan, settings: CatalogSettings, location: str) -> None:
        self.plan = plan
        self.settings = settings
        self.location = location

    def partitions(self) -> list[InputPartition]:
        if self.plan.rows is not None or not self.plan.groups:
            return [InputPartition(0)]
        return [ManifestGroup(group) for group in self.plan.groups]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if self.plan.rows is not None:
            return iter(self.plan.rows)
        if not isinstance(partition, ManifestGroup):
            return iter(())
        io = self.settings.file_io(self.location)
        return iter(self.plan.rows_of(io, partition.manifests))


def metadata_source(settings: CatalogSettings, format_name: str) -> type[MetadataTableSource]:
    """A metadata table source bound to one catalog (pickled by value with its settings)."""
    return type(
        f"MetadataTableSource_{format_name}",
        (MetadataTableSource,),
        {"settings": settings, "format_name": format_name, "__module__": __name__},
    )
