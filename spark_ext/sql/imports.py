"""The ``add_files`` and ``snapshot`` procedures: existing Parquet files join a lakecat table
as they are.

``CALL lake.system.add_files(table => 'db.t', source_table => '`parquet`.`/path/to/dir`')``
adds every Parquet file under the folder (recursively; names starting with ``_`` or ``.``,
such as ``_SUCCESS``, are skipped); ``source_table`` may also name a file-based Spark table
(e.g. one of the session catalog ``USING parquet``), whose files Spark lists. The files are
checked and committed by :meth:`lakecat.catalog.Table.add_files` (one append; files without
field ids read through the table's name mapping). Iceberg's result columns:
``added_files_count``, ``changed_partition_count``.

A partitioned source in Hive's layout (``region=eu/part-0.parquet``, the partition column not
in the files) goes into a table partitioned by those columns (identity): each file's partition
value comes from its folder.

``CALL lake.system.snapshot(source_table => 'spark_catalog.db.legacy', table => 'db.t')``
creates a lakecat table with the source's schema and partitioning (its partition columns as
identity partitions) and adds the source's files to it, without copying or changing them; the
source stays as it was. The new table gets ``gc.enabled=false`` (as Iceberg's snapshot does):
its files belong to the source too, so nothing of lakecat deletes them (expiry, orphan removal
and purging refuse); its new writes go under its own location. If adding the files fails, the
new table is dropped again. Result: ``imported_files_count``.

``CALL lake.system.migrate(table => 'spark_catalog.db.legacy')`` moves a Spark table to
lakecat: a lakecat table of the same namespace and name (``lake.db.legacy``) at the source's
location takes over its files (``gc.enabled`` stays on: the files are the new table's now), and
the source is renamed to ``<name>_BACKUP_`` (``backup_table_name``) so that nothing writes to
it any more; with ``drop_backup`` the backup's catalog entry is dropped, which only an
EXTERNAL source allows (dropping a managed Spark table deletes its files, which now belong to
the lakecat table). If adding the files fails, the new table is dropped and the source is left
as it was. Result: ``migrated_files_count``.

Not supported: ``partition_filter``, and files of another format than Parquet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from lakecat.metadata import properties as P
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io import to_uri

if TYPE_CHECKING:
    from lakecat.spark_ext.sql.procedures import ProcedureContext, Row

# `parquet`.`/some/path` (the backticks optional around the format)
_PATH_SOURCE = re.compile(r"^`?(?P<format>[A-Za-z]+)`?\.`(?P<path>.+)`$")


def add_files(
    ctx: ProcedureContext,
    *,
    table: str,
    source_table: str,
    partition_filter: Mapping[str, str] | None = None,
    check_duplicate_files: bool | None = None,
    parallelism: int | None = None,
) -> list[Row]:
    """Add the Parquet files of ``source_table`` to ``table``."""
    if partition_filter:
        raise ValidationError(
            "add_files: partition_filter is not supported (partitions come from the files' "
            "own columns)"
        )
    target = ctx.table(table)
    paths = _source_files(ctx, source_table)
    if not paths:
        raise ValidationError(f"add_files: {source_table} holds no Parquet file")
    result = target.add_files(paths, check_duplicates=check_duplicate_files is not False)
    del parallelism  # one driver-side pass over the footers
    if target.spec().is_unpartitioned or result.snapshot_id is None:
        return [(len(paths), None)]
    snapshot = target.refresh().snapshot(result.snapshot_id)
    return [(len(paths), snapshot.summary_count("changed-partition-count"))]


def _source_files(ctx: ProcedureContext, source: str) -> list[str]:
    match = _PATH_SOURCE.match(source.strip())
    if match is not None:
        if match["format"].lower() != "parquet":
            raise ValidationError(f"add_files: only Parquet files can be added, not {source}")
        folder = to_uri(match["path"]).rstrip("/")
        files = []
        for info in ctx.catalog.io.list_prefix(folder):
            parts = [p for p in info.location[len(folder) :].split("/") if p]
            if not info.location.endswith(".parquet") or any(
                p.startswith(("_", ".")) for p in parts
            ):
                continue
            files.append(info.location)
        return sorted(files)
    try:
        frame = ctx.spark.table(source)
    except Exception as exc:  # Spark's AnalysisException: no such table
        raise ValidationError(f"add_files: no source table {source}: {exc}") from exc
    files = sorted(frame.inputFiles())
    if any(not f.endswith(".parquet") for f in files):
        raise ValidationError(f"add_files: {source} is not a table of Parquet files")
    return files


def migrate(
    ctx: ProcedureContext,
    *,
    table: str,
    properties: Mapping[str, str] | None = None,
    drop_backup: bool | None = None,
    backup_table_name: str | None = None,
    parallelism: int | None = None,
) -> list[Row]:
    """Move the Spark table ``table`` to a lakecat table of the same namespace and name (see
    the module docstring)."""
    del parallelism  # one driver-side pass over the footers
    source = _spark_table(ctx, table)
    if drop_backup and source.table_type != "EXTERNAL":
        raise ValidationError(
            f"migrate: {table} is a managed Spark table: dropping its backup would delete the "
            "files the lakecat table takes over (keep the backup, drop_backup => false)"
        )
    backup = backup_table_name or f"{source.name}_BACKUP_"
    namespace = source.namespace or ["default"]
    identifier = [*namespace, source.name]
    created = ctx.catalog.create_table(
        identifier,
        source.schema,
        partition_by=source.partition_columns,
        properties=dict(properties or {}),
        location=source.location,
    )
    try:
        if source.files:
            created.add_files(source.files)
        # RENAME TO names the table within its catalog
        renamed = [*namespace, backup]
        ctx.spark.sql(f"ALTER TABLE {_quoted(source.qualified)} RENAME TO {_quoted(renamed)}")
    except BaseException:
        ctx.catalog.drop_table(identifier)  # no purge: the files stay the source's
        raise
    if drop_backup:
        ctx.spark.sql(f"DROP TABLE {_quoted([source.catalog, *renamed])}")
    return [(len(source.files),)]


def snapshot(
    ctx: ProcedureContext,
    *,
    source_table: str,
    table: str,
    location: str | None = None,
    properties: Mapping[str, str] | None = None,
    parallelism: int | None = None,
) -> list[Row]:
    """A lakecat table over the files of the Spark table ``source_table``, which stays as it
    is (see the module docstring)."""
    del parallelism  # one driver-side pass over the footers
    source = _spark_table(ctx, source_table)
    identifier = ctx.identifier(table)
    created = ctx.catalog.create_table(
        identifier,
        source.schema,
        partition_by=source.partition_columns,
        properties={**(properties or {}), P.GC_ENABLED: "false"},
        location=location,
    )
    try:
        if source.files:
            created.add_files(source.files)
    except BaseException:
        ctx.catalog.drop_table(identifier)  # no purge: the files are the source's
        raise
    return [(len(source.files),)]


@dataclass(frozen=True)
class _SparkTable:
    """A file-based Spark table as ``snapshot`` and ``migrate`` read it."""

    qualified: list[str]  # catalog, namespace..., name
    table_type: str
    schema: pa.Schema
    partition_columns: list[str]
    files: list[str]
    location: str | None

    @property
    def catalog(self) -> str:
        return self.qualified[0]

    @property
    def namespace(self) -> list[str]:
        return self.qualified[1:-1]

    @property
    def name(self) -> str:
        return self.qualified[-1]


def _spark_table(ctx: ProcedureContext, name: str) -> _SparkTable:
    try:
        info = ctx.spark.catalog.getTable(name)
        frame = ctx.spark.table(name)
        columns = ctx.spark.catalog.listColumns(name)
        described = ctx.spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except Exception as exc:  # Spark's AnalysisException: no such table
        raise ValidationError(f"no source table {name}: {exc}") from exc
    location = next((r.data_type for r in described if r.col_name == "Location"), None)
    return _SparkTable(
        qualified=[info.catalog or "spark_catalog", *(info.namespace or []), info.name],
        table_type=str(info.tableType),
        schema=to_arrow_schema(frame.schema, timezone="UTC"),
        partition_columns=[c.name for c in columns if c.isPartition],
        files=_source_files(ctx, name),
        location=location,
    )


def _quoted(parts: Sequence[str] | str) -> str:
    items = parts.split(".") if isinstance(parts, str) else list(parts)
    return ".".join("`" + p.replace("`", "``") + "`" for p in items)
