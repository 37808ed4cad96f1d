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

Not supported: ``migrate`` (replacing the source table in its own catalog), ``partition_filter``
and files of another format than Parquet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

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
    try:
        frame = ctx.spark.table(source_table)
        columns = ctx.spark.catalog.listColumns(source_table)
    except Exception as exc:  # Spark's AnalysisException: no such table
        raise ValidationError(f"snapshot: no source table {source_table}: {exc}") from exc
    paths = _source_files(ctx, source_table)
    partition_columns = [c.name for c in columns if c.isPartition]
    schema = to_arrow_schema(frame.schema, timezone="UTC")
    identifier = ctx.identifier(table)
    created = ctx.catalog.create_table(
        identifier,
        schema,
        partition_by=partition_columns,
        properties={**(properties or {}), P.GC_ENABLED: "false"},
        location=location,
    )
    try:
        if paths:
            created.add_files(paths)
    except BaseException:
        ctx.catalog.drop_table(identifier)  # no purge: the files are the source's
        raise
    return [(len(paths),)]
