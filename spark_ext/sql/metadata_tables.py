"""Iceberg's metadata tables for Spark SQL: ``SELECT * FROM lake.db.t.snapshots``.

The Spark catalog answers ``lake.db.t.<kind>`` with a read-only table served by this Python
data source (registered next to the table data source by
:func:`lakecat.spark_ext.attach_catalog`). The rows are made on the driver when Spark plans the
read (a Python worker loads the table from the catalog) and handed to one task; executors
never open the catalog. Columns follow Iceberg's metadata tables:

* ``snapshots``: committed_at, snapshot_id, parent_id, operation, manifest_list, summary
* ``history``: made_current_at, snapshot_id, parent_id, is_current_ancestor
* ``files``: content, file_path, file_format, spec_id, partition, record_count,
  file_size_in_bytes (the live data files of the current snapshot; ``partition`` is a map of
  partition field name to the value as text, where Iceberg has a struct)
* ``refs``: name, type, snapshot_id, max_reference_age_in_ms, min_snapshots_to_keep,
  max_snapshot_age_in_ms
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any, ClassVar

from pyspark.sql import types as st
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from lakecat.catalog import Table
from lakecat.metadata.errors import ValidationError
from lakecat.spark_ext.settings import CatalogSettings, settings_from_options, table_identifier

METADATA_TABLE = "metadata-table"  # read option: which metadata table

_TEXT, _LONG, _INT = st.StringType(), st.LongType(), st.IntegerType()
_TIME, _BOOL = st.TimestampType(), st.BooleanType()


def _schema(*columns: tuple[str, st.DataType]) -> StructType:
    return StructType([st.StructField(name, t) for name, t in columns])


SCHEMAS: dict[str, StructType] = {
    "snapshots": _schema(
        ("committed_at", _TIME),
        ("snapshot_id", _LONG),
        ("parent_id", _LONG),
        ("operation", _TEXT),
        ("manifest_list", _TEXT),
        ("summary", st.MapType(_TEXT, _TEXT)),
    ),
    "history": _schema(
        ("made_current_at", _TIME),
        ("snapshot_id", _LONG),
        ("parent_id", _LONG),
        ("is_current_ancestor", _BOOL),
    ),
    "files": _schema(
        ("content", _INT),
        ("file_path", _TEXT),
        ("file_format", _TEXT),
        ("spec_id", _INT),
        ("partition", st.MapType(_TEXT, _TEXT)),
        ("record_count", _LONG),
        ("file_size_in_bytes", _LONG),
    ),
    "refs": _schema(
        ("name", _TEXT),
        ("type", _TEXT),
        ("snapshot_id", _LONG),
        ("max_reference_age_in_ms", _LONG),
        ("min_snapshots_to_keep", _INT),
        ("max_snapshot_age_in_ms", _LONG),
    ),
}
METADATA_TABLES = tuple(SCHEMAS)


def rows(table: Table, kind: str) -> list[tuple[Any, ...]]:
    """The rows of one metadata table of ``table``."""
    if kind == "snapshots":
        return [
            (
                _time(s.timestamp_ms),
                s.snapshot_id,
                s.parent_snapshot_id,
                s.operation,
                s.manifest_list,
                dict(s.summary),
            )
            for s in table.snapshots()
        ]
    if kind == "history":
        return [
            (_time(ms), snapshot_id, table.snapshot(snapshot_id).parent_snapshot_id, ancestor)
            for ms, snapshot_id, ancestor in table.history()
        ]
    if kind == "files":
        specs = table.metadata.specs_by_id()
        out = []
        for f in table.scan().plan_files():
            names = [p.name for p in specs[f.spec_id].fields]
            values = zip(names, f.partition, strict=True)
            partition = {n: None if v is None else str(v) for n, v in values}
            out.append(
                (
                    int(f.content),
                    f.file_path,
                    str(f.file_format),
                    f.spec_id,
                    partition,
                    f.record_count,
                    f.file_size_in_bytes,
                )
            )
        return out
    if kind == "refs":
        return [
            (
                name,
                ref.ref_type,
                ref.snapshot_id,
                ref.max_ref_age_ms,
                ref.min_snapshots_to_keep,
                ref.max_snapshot_age_ms,
            )
            for name, ref in sorted(table.refs().items())
        ]
    raise ValidationError(f"no metadata table {kind!r}: use one of {', '.join(METADATA_TABLES)}")


def _time(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


class MetadataTableSource(DataSource):
    """Serves ``lake.db.t.<kind>``; :func:`metadata_source` makes a subclass per catalog."""

    settings: ClassVar[CatalogSettings | None] = None
    format_name: ClassVar[str] = "lakecat_metadata"

    @classmethod
    def name(cls) -> str:
        return cls.format_name

    def _kind(self) -> str:
        kind = self.options.get(METADATA_TABLE, "")
        if kind not in SCHEMAS:
            raise ValidationError(
                f"option {METADATA_TABLE} must be one of {', '.join(METADATA_TABLES)}"
            )
        return kind

    def schema(self) -> StructType:
        return SCHEMAS[self._kind()]

    def reader(self, schema: StructType) -> DataSourceReader:
        settings = settings_from_options(type(self).settings, self.options)
        with settings.open() as catalog:
            table = catalog.load_table(table_identifier(self.options))
            return MetadataReader(rows(table, self._kind()))


class MetadataReader(DataSourceReader):
    """Made on the driver with the rows; one task hands them to Spark."""

    def __init__(self, table_rows: list[tuple[Any, ...]]) -> None:
        self.table_rows = table_rows

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return iter(self.table_rows)


def metadata_source(settings: CatalogSettings, format_name: str) -> type[MetadataTableSource]:
    """A metadata table source bound to one catalog (pickled by value with its settings)."""
    return type(
        f"MetadataTableSource_{format_name}",
        (MetadataTableSource,),
        {"settings": settings, "format_name": format_name, "__module__": __name__},
    )
