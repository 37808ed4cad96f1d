"""Atomic ``CREATE TABLE AS SELECT``, ``REPLACE TABLE [AS SELECT]`` and ``CREATE OR REPLACE``.

Spark runs these statements through the plugin's ``StagingTableCatalog`` methods: it stages
the new table (:meth:`StagedTables.stage`), writes the query's rows into the staged table and
then commits (:meth:`StagedTables.commit`) or, when anything failed, aborts
(:meth:`StagedTables.abort`). Until the commit the catalog is untouched, so a failing query
leaves the old table, its rows and its history as they were (without staging, Spark drops the
table first).

* A replace resolves the new definition against the table
  (:func:`~lakecat.metadata.table.replace.plan_replacement`); the rows are written against the
  replaced metadata, saved under the table's metadata folder for the writers, and the commit
  is one :meth:`~lakecat.catalog.Table.commit_replace`: new schema, partitioning and rows in
  one snapshot, the history kept.
* A create writes the rows against the new table's first metadata; the commit creates the
  table with its first snapshot holding them (a query without rows makes an empty snapshot,
  as Iceberg's do; a statement without a query, none), in one metadata version
  (:meth:`~lakecat.catalog.Catalog.create_table` with ``files``): the table never exists
  empty, and a failure leaves no table.

The staged write is the data source's staging mode (``stage-to``): the writers hand their
files over instead of committing.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakecat.catalog import Catalog, Table
from lakecat.catalog.engine import delete_quietly, metadata_dir
from lakecat.metadata import properties as P
from lakecat.metadata.errors import NoSuchTable, TableAlreadyExists, ValidationError
from lakecat.metadata.io import join
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.schema import Schema
from lakecat.metadata.table import Replacement, TableMetadata, replaced, write_metadata
from lakecat.spark_ext.source.planning import METADATA_LOCATION
from lakecat.spark_ext.source.staging import STAGE_TO, handed_over

MODES = frozenset({"create", "replace", "create_or_replace"})


@dataclass(frozen=True)
class Staged:
    """One staged statement: the table as its rows are written, and how it commits."""

    name: str
    metadata: TableMetadata  # what the writers write against
    metadata_location: str  # ... saved here (deleted by the commit or the abort)
    stage_to: str  # where the writers hand their files over
    replacement: Replacement | None  # None: the statement creates the table
    location: str | None  # a created table's LOCATION

    def write_options(self) -> dict[str, str]:
        return {METADATA_LOCATION: self.metadata_location, STAGE_TO: self.stage_to}


class StagedTables:
    """The statements staged in one catalog bridge, by id, until Spark commits or aborts."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._staged: dict[str, Staged] = {}

    def stage(
        self,
        name: str,
        schema: Schema,
        *,
        mode: str,
        partition_by: Sequence[Any],
        properties: Mapping[str, str],
        location: str | None,
    ) -> tuple[str, Staged]:
        """Stage a create or replace of ``name`` (``mode``: create, replace,
        create_or_replace); nothing in the catalog changes. Returns the stage's id."""
        if mode not in MODES:
            raise ValidationError(f"not a staging mode: {mode!r}")
        exists = self.catalog.table_exists(name)
        if exists and mode == "create":
            raise TableAlreadyExists(f"table {name} already exists")
        if not exists and mode == "replace":
            raise NoSuchTable(f"table {name} does not exist")
        if exists:
            table = self.catalog.load_table(name)
            if location and location.rstrip("/") != table.location.rstrip("/"):
                raise ValidationError(
                    f"a replace keeps the table's location {table.location}, not {location}"
                )
            replacement = self.catalog.plan_replace(
                table, schema, partition_by=partition_by, properties=properties
            )
            metadata = replaced(table.metadata, replacement)
        else:
            replacement = None
            metadata = self.catalog.new_table_metadata(
                name, schema, partition_by=partition_by, properties=properties, location=location
            )
        folder = metadata_dir(metadata)
        stage_id = uuid.uuid4().hex
        staged = Staged(
            name=name,
            metadata=metadata,
            metadata_location=join(folder, f"staged-{stage_id}.metadata.json"),
            stage_to=join(folder, f"spark-stage-{stage_id}.pickle"),
            replacement=replacement,
            location=location,
        )
        write_metadata(self.catalog.io, staged.metadata_location, metadata)
        self._staged[stage_id] = staged
        return stage_id, staged

    def commit(self, stage_id: str, *, with_rows: bool = False) -> int | None:
        """Commit a staged statement; the id of the snapshot holding its rows (None: none).
        ``with_rows``: the statement has a query (``AS SELECT``), whose rows, none maybe, make
        a snapshot, as Iceberg's do; without, main has no snapshot."""
        staged = self._take(stage_id)
        io = self.catalog.io
        handed = handed_over(io, staged.stage_to)
        files = handed if handed or with_rows else None
        try:
            if staged.replacement is not None:
                table = self.catalog.load_table(staged.name)
                return table.commit_replace(staged.replacement, files).snapshot_id
            created = self._create(staged, files).current_snapshot()
        except BaseException:
            delete_quietly(io, [f.file_path for f in handed])
            raise
        finally:
            io.delete(staged.metadata_location)
        return None if created is None else created.snapshot_id

    def abort(self, stage_id: str) -> None:
        """Forget a staged statement and delete what it wrote (the catalog is untouched)."""
        staged = self._staged.pop(stage_id, None)
        if staged is None:
            return
        io = self.catalog.io
        files = handed_over(io, staged.stage_to)
        delete_quietly(io, [f.file_path for f in files])
        io.delete(staged.metadata_location)

    def _take(self, stage_id: str) -> Staged:
        staged = self._staged.pop(stage_id, None)
        if staged is None:
            raise ValidationError(f"no staged table {stage_id!r} (committed or aborted already)")
        return staged

    def _create(self, staged: Staged, files: Sequence[DataFile] | None) -> Table:
        metadata = staged.metadata
        return self.catalog.create_table(
            staged.name,
            metadata.schema(),
            partition_by=metadata.spec(),
            sort_by=metadata.sort_order(),
            properties={**metadata.properties, P.FORMAT_VERSION: str(metadata.format_version)},
            location=staged.location,
            files=files,
        )
