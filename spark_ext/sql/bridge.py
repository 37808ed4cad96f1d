"""The Python side of the Spark catalog plugin: every catalog operation, answered in lakecat.

The JVM class ``lakecat.spark.LakecatCatalog`` (``spark_ext/java``) calls
:meth:`CatalogBridge.call` through a Py4J callback with a method name and JSON arguments, and
gets JSON back: ``{"ok": result}``, or ``{"error": {...}}`` for a lakecat error, classified
here (``kind``) so that the JVM raises the matching Spark exception (table not found, already
exists, ...). Only driver-side catalog calls come this way; reads and writes run in Spark's
Python workers through the data source named in each table's descriptor.

A table descriptor is what Spark needs of a table: its Spark schema, partition transforms and
properties, the data source format, the read options (the table and the metadata file it was
loaded from, so the read sees exactly this version, plus time travel) and the write options
(the table: Spark gives a Python writer only the write command's options).

Procedures (``CALL lake.system.<name>(...)``) are described and run by
:mod:`.procedures`. A lakecat error becomes Spark's own exception where Spark gives it a meaning
(no such table, ...), else the plugin's ``LakecatException`` (an ``AnalysisException`` reading
``lakecat <ErrorType>: <message>``); the error's class and attributes travel with it, so that
:func:`lakecat.spark_ext.lakecat_error` can raise the typed error again.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyspark
from pyroaring import BitMap64
from pyspark.sql.types import StructType

from lakecat.catalog import Catalog, Table
from lakecat.catalog.engine import merge_on_read, metadata_dir
from lakecat.metadata import properties as P
from lakecat.metadata.deletes import deserialize_bitmap, positions_array
from lakecat.metadata.errors import (
    LakecatError,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchRef,
    NoSuchSnapshot,
    NoSuchTable,
    NoSuchView,
    NotFound,
    TableAlreadyExists,
    ValidationError,
    ViewAlreadyExists,
)
from lakecat.metadata.expressions import and_, parse, selects_whole_partitions
from lakecat.metadata.io import join, to_uri
from lakecat.metadata.table import MAIN_BRANCH, TableMetadata, read_metadata
from lakecat.spark_ext.errors import error_attributes, error_class_name, error_in_traceback
from lakecat.spark_ext.native.delta_rows import describe_delta_rows, plan_delta_rows
from lakecat.spark_ext.native.distribution import STATEMENT_MODES, distribution_mode
from lakecat.spark_ext.native.local_files import local_write_options
from lakecat.spark_ext.native.scan import plan_catalog_scan
from lakecat.spark_ext.native.support import NotNative
from lakecat.spark_ext.native.write import folder_owned, remove_empty_folders
from lakecat.spark_ext.native.write import write as native_write
from lakecat.spark_ext.settings import OPTION_TABLE, table_identifier
from lakecat.spark_ext.source.partition_column import PartitionColumn
from lakecat.spark_ext.source.planning import (
    AS_OF_TIMESTAMP,
    BRANCH,
    METADATA_LOCATION,
    SNAPSHOT_ID,
    TAG,
    FilePlan,
    ReadOptions,
    ReadView,
    plan_files,
)
from lakecat.spark_ext.source.staging import STAGE_TO
from lakecat.spark_ext.source.write_jobs import BRANCH as WRITE_BRANCH
from lakecat.spark_ext.source.write_jobs import CREATE_BRANCH, OVERWRITE_FILTER, OVERWRITE_MODE
from lakecat.spark_ext.sql.aggregates import Aggregate, NotAnswered, answer_from_metrics
from lakecat.spark_ext.sql.alter import alter_table
from lakecat.spark_ext.sql.convert import (
    UnsupportedByCatalog,
    partition_by,
    predicates_expression,
    spark_sort_order,
    spark_transforms,
)
from lakecat.spark_ext.sql.grouping import data_grouping
from lakecat.spark_ext.sql.history import describe_sort_order
from lakecat.spark_ext.sql.metadata_tables import (
    METADATA_TABLE,
    METADATA_TABLES,
    check_time_travel,
    metadata_table_schema,
)
from lakecat.spark_ext.sql.procedures import (
    PROCEDURES,
    SYSTEM_NAMESPACE,
    ProcedureContext,
    call_procedure,
    find_procedure,
)
from lakecat.spark_ext.sql.row_level import (
    COMMANDS,
    commit_copy_on_write,
    commit_merge_on_read,
    driver_delete_max_bytes,
    staged_owned,
)
from lakecat.spark_ext.sql.staging import StagedTables
from lakecat.spark_ext.sql.views import (
    spark_summary,
    store_view,
    view_definition,
    view_descriptor,
)
from lakecat.spark_ext.types import spark_schema, table_schema

# Spark's reserved table properties that are not Iceberg table properties.
_PROVIDER, _LOCATION = "provider", "location"
# Spark's own keys, and the ones a table's descriptor shows but the table does not store (as
# Iceberg's runtime shows them: SHOW CREATE TABLE prints them, and running its output again
# must not store them)
_FORMAT, _CURRENT_SNAPSHOT = "format", "current-snapshot-id"
_SORT_ORDER, _IDENTIFIER_FIELDS = "sort-order", "identifier-fields"
_DESCRIBED = (_FORMAT, _CURRENT_SNAPSHOT, _SORT_ORDER, _IDENTIFIER_FIELDS)
_NOT_STORED = frozenset({_PROVIDER, _LOCATION, "external", "is_managed_location", *_DESCRIBED})
_PROVIDERS = frozenset({"lakecat", "iceberg"})
# the provider a table shows (DESCRIBE, SHOW CREATE TABLE), as Iceberg's runtime shows its
# tables: the statement SHOW CREATE TABLE prints runs on both catalogs
_SHOWN_PROVIDER = "iceberg"

log = logging.getLogger("lakecat.spark")

Handler = Callable[..., Any]


class CatalogBridge:
    """Answers one Spark catalog's calls with a lakecat :class:`Catalog` (implements the Java
    interface ``lakecat.spark.LakecatBridge``)."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        name: str,
        data_format: str,
        metadata_format: str,
        spark: Any = None,
    ) -> None:
        self.catalog = catalog
        self.name = name
        self.data_format = data_format
        self.metadata_format = metadata_format
        self.spark = spark  # the session procedures run Spark jobs in
        self.staged = StagedTables(catalog)
        self._handlers: dict[str, Handler] = {
            "list_namespaces": self.list_namespaces,
            "namespace_exists": self.namespace_exists,
            "load_namespace": self.load_namespace,
            "create_namespace": self.create_namespace,
            "alter_namespace": self.alter_namespace,
            "drop_namespace": self.drop_namespace,
            "list_tables": self.list_tables,
            "load_table": self.load_table,
            "create_table": self.create_table,
            "create_table_like": self.create_table_like,
            "alter_table": self.alter_table,
            "drop_table": self.drop_table,
            "rename_table": self.rename_table,
            "can_delete": self.can_delete,
            "delete": self.delete,
            "overwrite_filter": self.overwrite_filter,
            "scan_filter": self.scan_filter,
            "plan_scan": self.plan_scan,
            "aggregate": self.aggregate,
            "begin_row_level": self.begin_row_level,
            "commit_row_level": self.commit_row_level,
            "commit_merge_on_read": self.commit_merge_on_read,
            "stage_table": self.stage_table,
            "commit_staged": self.commit_staged,
            "abort_staged": self.abort_staged,
            "list_procedures": self.list_procedures,
            "load_procedure": self.load_procedure,
            "bind_procedure": self.bind_procedure,
            "call_procedure": self.call_procedure,
            "python_error": self.python_error,
            "load_relation": self.load_relation,
            "list_views": self.list_views,
            "load_view": self.load_view,
            "view_exists": self.view_exists,
            "create_view": self.create_view,
            "replace_view": self.replace_view,
            "create_or_replace_view": self.create_or_replace_view,
            "drop_view": self.drop_view,
            "rename_view": self.rename_view,
        }

    def call(self, method: str, arguments: str) -> str:
        """One call from the JVM: JSON arguments in, JSON answer out."""
        args = json.loads(arguments)
        try:
            handler = self._handlers.get(method)
            if handler is None:  # a plugin jar newer than this lakecat
                raise UnsupportedByCatalog(f"the catalog bridge has no method {method!r}")
            return json.dumps({"ok": handler(**args)})
        except LakecatError as exc:
            return json.dumps({"error": error_payload(exc, args)})

    def insert(self, arguments: str, dataset: Any) -> Any:
        """One batch write from the JVM (``lakecat.spark.NativeInsert``, and the staged rows of
        a copy-on-write statement from ``NativeRowLevelWrites``): ``dataset``, a JVM
        ``Dataset<Row>`` holding the statement's rows in the table's columns, written into
        the table named in the JSON arguments' ``options`` as :func:`lakecat.spark_ext.write`
        writes a DataFrame (Spark's own Parquet writer when the write qualifies, else the
        Python data source, with the same options); answered as :meth:`call`, except that a
        failure of Spark's own (a null in a required column, a task's failure) is answered with
        the JVM exception itself, which the plugin throws as it is."""
        args = json.loads(arguments)
        try:
            insert_rows(self, dataset, args["options"], overwrite=args["overwrite"])
            return json.dumps({"ok": None})
        except LakecatError as exc:
            return json.dumps({"error": error_payload(exc, args)})
        except Exception as exc:  # a Spark job's failure: its lakecat error, if it holds one
            error = error_in_traceback(str(exc))
            if error is not None:
                return json.dumps({"error": error_payload(error, args)})
            origin = getattr(exc, "_origin", None)  # pyspark's captured JVM exception
            if origin is None:
                raise
            return origin

    class Java:
        implements = ["lakecat.spark.LakecatBridge"]

    # ---- namespaces -----------------------------------------------------------------------
    def list_namespaces(self, namespace: Sequence[str]) -> list[list[str]]:
        if namespace and not self.catalog.namespace_exists(namespace):
            raise NoSuchNamespace(f"namespace {'.'.join(namespace)} does not exist")
        return [list(ns) for ns in self.catalog.list_namespaces(tuple(namespace))]

    def namespace_exists(self, namespace: Sequence[str]) -> bool:
        return bool(namespace) and self.catalog.namespace_exists(namespace)

    def load_namespace(self, namespace: Sequence[str]) -> dict[str, str]:
        return self.catalog.namespace_properties(namespace)

    def create_namespace(self, namespace: Sequence[str], properties: Mapping[str, str]) -> None:
        self.catalog.create_namespace(namespace, properties)

    def alter_namespace(
        self, namespace: Sequence[str], changes: Sequence[Mapping[str, Any]]
    ) -> None:
        updates = {c["key"]: c["value"] for c in changes if c["change"] == "SetProperty"}
        removals = [c["key"] for c in changes if c["change"] == "RemoveProperty"]
        if len(updates) + len(removals) != len(changes):
            raise UnsupportedByCatalog("only namespace properties can be changed")
        self.catalog.update_namespace_properties(namespace, updates=updates, removals=removals)

    def drop_namespace(self, namespace: Sequence[str], cascade: bool) -> bool:
        if not self.catalog.namespace_exists(namespace):
            return False
        tables = self.catalog.list_tables(namespace)
        views = self.catalog.list_views(namespace)
        if (tables or views) and not cascade:
            raise NamespaceNotEmpty(f"namespace {'.'.join(namespace)} still has tables or views")
        for ns, name in views:
            self.catalog.drop_view((*ns, name))
        for ns, name in tables:
            self.catalog.drop_table((*ns, name))
        self.catalog.drop_namespace(namespace)
        return True

    # ---- tables ---------------------------------------------------------------------------
    def list_tables(self, namespace: Sequence[str]) -> list[list[str]]:
        return [[*ns, name] for ns, name in self.catalog.list_tables(namespace)]

    def load_table(
        self,
        namespace: Sequence[str],
        name: str,
        version: str | None = None,
        timestamp_us: int | None = None,
        wap_branch: str | None = None,
    ) -> dict[str, Any]:
        """The descriptor of ``namespace.name``: a table (at ``version`` or ``timestamp_us``:
        time travel), a metadata table (``db.t.files``) or a ref table (``db.t.branch_x``).
        ``wap_branch``: the session's ``spark.wap.branch``, which a table with
        ``write.wap.enabled`` is read and written at (:meth:`_wap_branch`).

        Spark asks for a table alone where only a table will do (the target of a write, time
        travel): a view of the name is refused as such rather than reported missing."""
        try:
            return self._load_table(namespace, name, version, timestamp_us, wap_branch)
        except NoSuchTable:
            if namespace and self.catalog.view_exists((*namespace, name)):
                raise ValidationError(
                    f"{'.'.join((*namespace, name))} is a view: it is read by its query, "
                    "never written, and has no time travel"
                ) from None
            raise

    def _load_table(
        self,
        namespace: Sequence[str],
        name: str,
        version: str | None = None,
        timestamp_us: int | None = None,
        wap_branch: str | None = None,
    ) -> dict[str, Any]:
        try:
            table = self.catalog.load_table((*namespace, name))
        except NotFound:
            ref = _ref_name(name)
            base = self._named_table(namespace) if name in METADATA_TABLES or ref else None
            if base is None:
                raise
            if ref is None:
                snapshot_id = None
                if version is not None or timestamp_us is not None:
                    snapshot_id = _metadata_travel(base, name, version, timestamp_us)
                return self._metadata_table(namespace, name, base, snapshot_id)
            return self._ref_table(base, namespace, name, *ref, version, timestamp_us)
        travel = time_travel_options(table, version=version, timestamp_us=timestamp_us)
        if wap_branch and not travel and P.get_bool(table.properties, P.WRITE_WAP_ENABLED, False):
            return self._wap_branch(namespace, name, table, wap_branch)
        return self._descriptor(namespace, name, table, travel)

    def _wap_branch(
        self, namespace: Sequence[str], name: str, table: Table, branch: str
    ) -> dict[str, Any]:
        """A table with ``write.wap.enabled`` in a session with ``spark.wap.branch``, as
        Iceberg's Spark runtime treats it: read at that branch if it exists (else main), and
        every write commits to the branch, the first one creating it at main's head in its
        own commit (``create-branch``; row-level statements and deletes get ``new_branch``)."""
        found = table.refs().get(branch)
        if found is not None and found.ref_type != "branch":
            raise ValidationError(
                f"spark.wap.branch={branch!r} names a tag of {table.name}: it must name a "
                "branch (or one to create)"
            )
        travel = {BRANCH: branch} if found is not None else {}
        descriptor = self._descriptor(namespace, name, table, travel)
        descriptor["write_options"] = {OPTION_TABLE: table.name, WRITE_BRANCH: branch}
        descriptor["wap_branch"] = branch
        if found is None:
            descriptor["write_options"][CREATE_BRANCH] = "true"
            descriptor["new_branch"] = branch
        return descriptor

    def _named_table(self, namespace: Sequence[str]) -> Table | None:
        """The table ``namespace`` names (``db.t`` of ``db.t.files``), or None."""
        if len(namespace) < 2:
            return None
        try:
            return self.catalog.load_table(namespace)
        except NotFound:
            return None

    def _ref_table(
        self,
        table: Table,
        namespace: Sequence[str],
        name: str,
        kind: str,
        ref: str,
        version: str | None,
        timestamp_us: int | None,
    ) -> dict[str, Any]:
        """``t.branch_<name>`` / ``t.tag_<name>``: the table at a branch (read and append,
        insert overwrite) or a tag (read only), as Iceberg's Spark catalog names them."""
        if version is not None or timestamp_us is not None:
            raise ValidationError(f"{name} names a {kind} already: no time travel on it")
        found = table.refs().get(ref)
        if found is None or found.ref_type != kind:
            raise NoSuchRef(f"{table.name} has no {kind} {ref!r}")
        travel = {BRANCH if kind == "branch" else TAG: ref}
        descriptor = self._descriptor(namespace[:-1], namespace[-1], table, travel)
        descriptor["name"] = f"{self.name}.{table.name}.{name}"
        if kind == "branch":
            descriptor["write_options"] = {OPTION_TABLE: table.name, WRITE_BRANCH: ref}
            descriptor["branch"] = ref
        return descriptor

    def create_table(
        self,
        namespace: Sequence[str],
        name: str,
        schema: str,
        partitioning: Sequence[Mapping[str, Any]],
        properties: Mapping[str, str],
    ) -> dict[str, Any]:
        stored = _stored_properties(properties)
        self._refuse_parquet_folder(properties)
        table = self.catalog.create_table(  # refuses a table or view of the name first
            (*namespace, name),
            table_schema(StructType.fromJson(json.loads(schema))),
            partition_by=partition_by(partitioning),
            properties=stored,
            location=properties.get(_LOCATION),
        )
        return self._descriptor(namespace, name, table, {})

    def create_table_like(
        self,
        namespace: Sequence[str],
        name: str,
        source_metadata_location: str,
        properties: Mapping[str, str],
    ) -> dict[str, Any]:
        """``CREATE TABLE ... LIKE`` a lakecat table (of any lakecat catalog of the session):
        the source as Spark loaded it (its metadata file), copied by
        :meth:`Catalog.create_table_like`, the statement's ``TBLPROPERTIES`` and ``LOCATION``
        on top."""
        stored = _stored_properties(properties)
        self._refuse_parquet_folder(properties)
        table = self.catalog.create_table_like(
            (*namespace, name),
            read_metadata(self.catalog.io, source_metadata_location),
            properties=stored,
            location=properties.get(_LOCATION),
        )
        return self._descriptor(namespace, name, table, {})

    def _refuse_view_name(self, namespace: Sequence[str], name: str) -> None:
        """A table is not staged under a view's name: refused before any row is written
        (Spark looks the name up as a table, finds none, and goes on to create one; the
        staged create would meet the view only at its commit)."""
        if namespace and self.catalog.view_exists((*namespace, name)):
            raise TableAlreadyExists(
                f"view {'.'.join((*namespace, name))} already exists: a table cannot take its name"
            )

    def _refuse_parquet_folder(
        self, properties: Mapping[str, str], *, replacing: Sequence[str] | None = None
    ) -> None:
        """``USING parquet LOCATION '<folder>'`` for a new table is refused when the folder
        holds files: Spark's own catalog would read them as the table, an Iceberg table made
        there would not (it starts empty, as Iceberg Java's does), and removing the table's
        orphan files would delete them. ``replacing``: the statement may replace this table,
        whose own files the folder holds when it exists."""
        provider, location = properties.get(_PROVIDER), properties.get(_LOCATION)
        if provider is None or provider.lower() != "parquet" or location is None:
            return
        if replacing is not None and self.catalog.table_exists(replacing):
            return
        folder = to_uri(location).rstrip("/")
        found = next(iter(self.catalog.io.list_prefix(folder)), None)
        if found is not None:
            raise UnsupportedByCatalog(
                f"USING parquet LOCATION {location!r}: the folder holds files "
                f"({found.location}); a new Iceberg table there would not read them, and "
                "removing its orphan files would delete them. Make a table of them with CALL "
                "<catalog>.system.add_files(table => ..., source_table => "
                f"'`parquet`.`{folder}`') on a table at another location"
            )

    def stage_table(
        self,
        namespace: Sequence[str],
        name: str,
        schema: str,
        partitioning: Sequence[Mapping[str, Any]],
        properties: Mapping[str, str],
        mode: str,
    ) -> dict[str, Any]:
        """Stage CREATE TABLE AS SELECT / REPLACE TABLE / CREATE OR REPLACE TABLE (``mode``:
        create, replace, create_or_replace): the staged table's descriptor, for the writes of
        the statement's rows; the catalog changes only when it is committed."""
        self._refuse_view_name(namespace, name)
        stored = _stored_properties(properties)
        self._refuse_parquet_folder(
            properties, replacing=None if mode == "create" else (*namespace, name)
        )
        stage_id, staged = self.staged.stage(
            ".".join((*namespace, name)),
            table_schema(StructType.fromJson(json.loads(schema))),
            mode=mode,
            partition_by=partition_by(partitioning),
            properties=stored,
            location=properties.get(_LOCATION),
        )
        metadata = staged.metadata
        return {
            "stage_id": stage_id,
            "name": f"{self.name}.{staged.name}",
            "identifier": {"namespace": list(namespace), "name": name},
            "schema": spark_schema(metadata.schema()).json(),
            "partitioning": spark_transforms(metadata),
            "properties": {**metadata.properties, _PROVIDER: _SHOWN_PROVIDER},
            "format": self.data_format,
            "write_options": {OPTION_TABLE: staged.name, **staged.write_options()},
            "distribution": _write_distribution(metadata),
        }

    def commit_staged(self, stage_id: str, with_rows: bool = False) -> int | None:
        """Commit a staged statement (its rows' snapshot id; None: no snapshot); ``with_rows``:
        Spark wrote the statement's query into it (see :meth:`StagedTables.commit`)."""
        return self.staged.commit(stage_id, with_rows=with_rows)

    def abort_staged(self, stage_id: str) -> None:
        self.staged.abort(stage_id)

    def alter_table(
        self, namespace: Sequence[str], name: str, changes: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        table = self.catalog.load_table((*namespace, name))
        alter_table(table, changes)
        return self._descriptor(namespace, name, table.refresh(), {})

    def drop_table(self, namespace: Sequence[str], name: str, purge: bool = False) -> bool:
        try:
            self.catalog.drop_table((*namespace, name), purge=purge)
        except NoSuchTable:
            return False
        return True

    def rename_table(
        self, namespace: Sequence[str], name: str, to_namespace: Sequence[str], to_name: str
    ) -> None:
        target = self._rename_target(namespace, to_namespace)
        self.catalog.rename_table((*namespace, name), (*target, to_name))

    def _rename_target(self, namespace: Sequence[str], to_namespace: Sequence[str]) -> list[str]:
        """The namespace of a rename's new name. ALTER TABLE lake.db.a RENAME TO b keeps the
        namespace. Spark hands the new name over as written, relative to this catalog:
        RENAME TO lake.db.b (the form Iceberg's docs show, which fails on Iceberg's
        SparkCatalog) names namespace lake.db. When that namespace does not exist and it
        starts with this catalog's name, the rest is meant."""
        target = list(to_namespace or namespace)
        if (
            len(target) > 1
            and target[0] == self.name
            and not self.catalog.namespace_exists(target)
            and self.catalog.namespace_exists(target[1:])
        ):
            target = target[1:]
        return target

    # ---- views ----------------------------------------------------------------------------
    def load_relation(
        self, namespace: Sequence[str], name: str, wap_branch: str | None = None
    ) -> dict[str, Any]:
        """``{"table": descriptor}`` (as :meth:`load_table`) or ``{"view": descriptor}``;
        NoSuchTable when the name is neither."""
        try:
            return {"table": self._load_table(namespace, name, wap_branch=wap_branch)}
        except NoSuchTable:
            if not namespace:
                raise
            try:
                return {"view": self.load_view(namespace, name)}
            except NoSuchView:
                raise NoSuchTable(
                    f"table or view {'.'.join((*namespace, name))} does not exist"
                ) from None

    def list_views(self, namespace: Sequence[str]) -> list[list[str]]:
        return [[*ns, name] for ns, name in self.catalog.list_views(namespace)]

    def load_view(self, namespace: Sequence[str], name: str) -> dict[str, Any]:
        return view_descriptor(self.catalog.load_view((*namespace, name)), self.name)

    def view_exists(self, namespace: Sequence[str], name: str) -> bool:
        return bool(namespace) and self.catalog.view_exists((*namespace, name))

    def create_view(self, namespace: Sequence[str], name: str, **view: Any) -> dict[str, Any]:
        return self._store_view(namespace, name, view, mode="create")

    def replace_view(self, namespace: Sequence[str], name: str, **view: Any) -> dict[str, Any]:
        return self._store_view(namespace, name, view, mode="replace")

    def create_or_replace_view(
        self, namespace: Sequence[str], name: str, **view: Any
    ) -> dict[str, Any]:
        return self._store_view(namespace, name, view, mode="create_or_replace")

    def _store_view(
        self, namespace: Sequence[str], name: str, view: Mapping[str, Any], *, mode: str
    ) -> dict[str, Any]:
        spark_version = str(pyspark.__version__)
        stored = store_view(
            self.catalog,
            (*namespace, name),
            view_definition(catalog_name=self.name, spark_version=spark_version, **view),
            summary=spark_summary(spark_version),
            mode=mode,
        )
        return view_descriptor(stored, self.name)

    def drop_view(self, namespace: Sequence[str], name: str) -> bool:
        try:
            self.catalog.drop_view((*namespace, name))
        except NoSuchView:
            return False
        return True

    def rename_view(
        self, namespace: Sequence[str], name: str, to_namespace: Sequence[str], to_name: str
    ) -> None:
        target = self._rename_target(namespace, to_namespace)
        self.catalog.rename_view((*namespace, name), (*target, to_name))

    # ---- row-level ------------------------------------------------------------------------
    def can_delete(
        self,
        namespace: Sequence[str],
        name: str,
        predicates: Sequence[Mapping[str, Any]],
        branch: str | None = None,
        max_read_bytes: str | None = None,
    ) -> bool:
        """Whether ``DELETE FROM`` with Spark's ``predicates`` runs as :meth:`delete`, on the
        driver: when lakecat evaluates every predicate as Spark does, and the files it would
        read (those holding matching rows and others) are at most ``max_read_bytes`` (the
        session's ``spark.lakecat.driverDeleteMaxBytes``, text; default
        ``row_level.DRIVER_DELETE_MAX_BYTES``). Otherwise Spark plans the statement as a
        row-level operation, its rows read and written in tasks (:meth:`begin_row_level`); a
        delete that drops whole files only always runs here (Iceberg's metadata-only delete)."""
        limit = driver_delete_max_bytes(max_read_bytes)
        table = self.catalog.load_table((*namespace, name))
        try:
            expression = predicates_expression(predicates, table.schema())
        except UnsupportedByCatalog:
            return False
        return table.delete_read_bytes(expression, branch=branch or MAIN_BRANCH) <= limit

    def delete(
        self,
        namespace: Sequence[str],
        name: str,
        predicates: Sequence[Mapping[str, Any]],
        branch: str | None = None,
        snapshot_properties: Mapping[str, str] | None = None,
        create_branch: bool = False,
    ) -> int | None:
        """DELETE FROM: lakecat's delete (whole files dropped, others rewritten), one commit
        with the table's delete isolation level, on ``branch`` (``t.branch_<name>``, the
        session's WAP branch) or main; the new snapshot id (None: nothing deleted).
        ``snapshot_properties``: summary entries (the session's WAP id); ``create_branch``: a
        WAP branch that does not exist yet is created at main's head by the delete's commit."""
        table = self.catalog.load_table((*namespace, name))
        expression = predicates_expression(predicates, table.schema())
        result = table.delete(
            expression,
            branch=branch or MAIN_BRANCH,
            snapshot_properties=snapshot_properties or {},
            create_branch=create_branch,
        )
        return None if result is None else result.snapshot_id

    def overwrite_filter(
        self,
        namespace: Sequence[str],
        name: str,
        predicates: Sequence[Mapping[str, Any]],
        branch: str | None = None,
    ) -> dict[str, Any]:
        """The write options for an overwrite of the rows matching Spark's predicates;
        :class:`UnsupportedByCatalog`, naming the table and the condition, for predicates
        lakecat cannot evaluate as Spark does."""
        table = self.catalog.load_table((*namespace, name))
        try:
            expression = predicates_expression(predicates, table.schema())
        except UnsupportedByCatalog as exc:
            raise UnsupportedByCatalog(
                f"cannot overwrite the rows of {'.'.join((*namespace, name))} matching the "
                f"write's condition: {exc}. Overwrite by a condition on other columns, or "
                "change the rows with MERGE INTO, DELETE FROM or UPDATE, which Spark evaluates"
            ) from None
        text = str(expression)
        return {"options": {} if text == "true" else {OVERWRITE_FILTER: text}}

    # ---- reads and copy-on-write row-level operations -------------------------------------
    def _view(self, read_options: Mapping[str, str]) -> ReadView:
        """The table version and snapshot a read with these options sees."""
        options = ReadOptions.parse(read_options)
        location = options.metadata_location
        if location is None:
            raise ValidationError(f"a catalog read names its {METADATA_LOCATION}")
        metadata = self.catalog.metadata_cache.get(location)
        if metadata is None:
            metadata = read_metadata(self.catalog.io, location)
            self.catalog.metadata_cache.put(
                location, metadata, table=read_options.get(OPTION_TABLE, "")
            )
        return ReadView.resolve(metadata, location, options)

    def scan_filter(
        self, read_options: Mapping[str, str], predicates: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The file-pruning filter of a read: the conjunction of the predicates Spark pushed
        that lakecat evaluates exactly as Spark does, which of them it holds (``used``), and
        which of those the pruning decides alone (``complete``: every file the filter keeps
        holds only rows that pass them, under every partition spec the table has had, as
        Iceberg's Spark runtime decides; a read need not test its rows against them)."""
        view = self._view(read_options)
        schema = view.schema
        specs = view.metadata.partition_specs
        partitioned = any(s.fields for s in specs)
        used: list[int] = []
        complete: list[int] = []
        parts = []
        for index, predicate in enumerate(predicates):
            try:
                expression = predicates_expression([predicate], schema)
            except UnsupportedByCatalog:
                continue
            parts.append(expression)
            used.append(index)
            if partitioned and selects_whole_partitions(schema, specs, expression):
                complete.append(index)
        return {"filter": str(and_(*parts)), "used": used, "complete": complete}

    def plan_scan(
        self,
        read_options: Mapping[str, str],
        filter: str,
        columns: Sequence[str],
        group: bool = False,
        group_fields: Sequence[int] | None = None,
    ) -> dict[str, Any]:
        """The plan of a read of ``columns`` under a pruning filter: its data files, and
        whether Spark's own Parquet reader reads them (with their URIs and sizes) or the
        Python data source does (:mod:`lakecat.spark_ext.native.scan`). With ``group``, and
        when Spark's reader reads them, also how the files are grouped by partition
        (``grouping``, :mod:`lakecat.spark_ext.sql.grouping`; by ``group_fields`` when given):
        null when nothing groups them."""
        view = self._view(read_options)
        scan = plan_catalog_scan(view, self.catalog.io, prune_filter=parse(filter), columns=columns)
        answer = scan.to_json()
        grouping = None
        if group and scan.native is not None:
            grouping = data_grouping(view.metadata, view.schema, scan.files, columns, group_fields)
        answer["grouping"] = grouping.to_json() if grouping is not None else None
        return answer

    def aggregate(
        self, read_options: Mapping[str, str], filter: str, aggregates: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """Spark's aggregates of a read under a pruning filter that decides its rows, answered
        from the planned files' metrics (:mod:`lakecat.spark_ext.sql.aggregates`): their
        ``values``, or null and the ``reason`` Spark must read the rows."""
        view = self._view(read_options)
        wanted = [Aggregate.from_json(a) for a in aggregates]
        if view.snapshot is None:
            plan = FilePlan((), 0)
        else:
            plan = plan_files(self.catalog.io, view, [parse(filter)])
        try:
            values = answer_from_metrics(view, plan, wanted)
        except NotAnswered as exc:
            log.info("lakecat: %s: aggregates read from the rows: %s", view.metadata_location, exc)
            return {"values": None, "reason": exc.reason, "files": len(plan.files)}
        return {"values": values, "reason": None, "files": len(plan.files)}

    def begin_row_level(
        self,
        namespace: Sequence[str],
        name: str,
        read_options: Mapping[str, str],
        delta_schema: str | None = None,
    ) -> dict[str, Any]:
        """Where a row-level operation's staged write hands its files over, and its write
        options (staging against the version the operation read). For a merge-on-read
        statement whose new rows have the Spark schema ``delta_schema`` (JSON), also how its
        tasks write them with Spark's Parquet writer (``native_rows``,
        :mod:`lakecat.spark_ext.native.delta_rows`), or why they do not (``native_reason``:
        the rows go through the staged write)."""
        view = self._view(read_options)
        stage_to = join(metadata_dir(view.metadata), f"spark-stage-{uuid.uuid4()}.pickle")
        answer: dict[str, Any] = {
            "stage_to": stage_to,
            "write_options": {METADATA_LOCATION: view.metadata_location, STAGE_TO: stage_to},
        }
        if delta_schema is not None:
            rows = StructType.fromJson(json.loads(delta_schema))
            try:
                plan = plan_delta_rows(view.metadata, rows)
                session = self.calling_session()
                if session is not None:  # the tasks' file system (local_files)
                    local = local_write_options(session, plan.folder)
                    plan = replace(plan, writer_options={**plan.writer_options, **local})
                answer["native_rows"] = plan.to_json()
            except NotNative as exc:
                log.info(
                    "lakecat: staging the new rows on %s: %s",
                    ".".join((*namespace, name)),
                    exc.reason,
                )
                answer["native_reason"] = exc.reason
        return answer

    def commit_row_level(
        self,
        namespace: Sequence[str],
        name: str,
        command: str,
        filter: str,
        stage_to: str,
        files: Sequence[str],
        read_options: Mapping[str, str],
        snapshot_properties: Mapping[str, str] | None = None,
        new_branch: str | None = None,
    ) -> int | None:
        """Commit a copy-on-write DELETE/UPDATE/MERGE: the staged files replace the files
        the operation read; the new snapshot id (None: nothing changed).
        ``snapshot_properties``: summary entries (the session's WAP id); ``new_branch``: the
        session's WAP branch, which did not exist when the statement read main."""
        with staged_owned(self.catalog.io, stage_to):
            view = self._view(read_options)
            table = self.catalog.load_table((*namespace, name))
            return commit_copy_on_write(
                table,
                view,
                command=command,
                filter=parse(filter),
                read=files,
                stage_to=stage_to,
                snapshot_properties=snapshot_properties or {},
                new_branch=new_branch,
            )

    def commit_merge_on_read(
        self,
        namespace: Sequence[str],
        name: str,
        command: str,
        filter: str,
        stage_to: str,
        files: Sequence[str],
        read_options: Mapping[str, str],
        positions_file: str,
        runs: Mapping[str, Sequence[Sequence[int]]],
        rows_folder: str | None = None,
        rows_files: Sequence[str] = (),
        snapshot_properties: Mapping[str, str] | None = None,
        new_branch: str | None = None,
    ) -> int | None:
        """Commit a merge-on-read DELETE/UPDATE/MERGE: position deletes (v3: deletion vectors)
        for the rows Spark deleted or updated, and the new rows: staged, or written by the
        tasks in ``rows_folder`` (``native_rows`` of :meth:`begin_row_level`), of which the
        committed tasks wrote ``rows_files``. The deleted positions are in the plugin's
        ``positions_file``, as Roaring bitmaps; ``runs`` maps each data file to the byte ranges
        of its bitmaps there (:func:`read_positions`)."""
        io = self.catalog.io
        try:
            with staged_owned(io, stage_to):
                with folder_owned(io, rows_folder):
                    view = self._view(read_options)
                    table = self.catalog.load_table((*namespace, name))
                    deletes = read_positions(positions_file, runs)
                    written = (
                        describe_delta_rows(io, view.metadata, rows_folder, rows_files)
                        if rows_folder is not None
                        else []
                    )
                # from here the commit owns the files (and deletes them unless it may have landed)
                return commit_merge_on_read(
                    table,
                    view,
                    command=command,
                    filter=parse(filter),
                    read=files,
                    stage_to=stage_to,
                    deletes=deletes,
                    written=written,
                    snapshot_properties=snapshot_properties or {},
                    new_branch=new_branch,
                )
        finally:
            if rows_folder is not None:
                remove_empty_folders(rows_folder)

    # ---- procedures -----------------------------------------------------------------------
    def list_procedures(self, namespace: Sequence[str]) -> list[list[str]]:
        if list(namespace) != [SYSTEM_NAMESPACE]:
            return []
        return [[SYSTEM_NAMESPACE, name] for name in sorted(PROCEDURES)]

    def load_procedure(self, namespace: Sequence[str], name: str) -> dict[str, Any]:
        return find_procedure(namespace, name).descriptor()

    def bind_procedure(self, procedure: str, input_type: str) -> None:
        find_procedure([SYSTEM_NAMESPACE], procedure).check_input(
            StructType.fromJson(json.loads(input_type))
        )

    def call_procedure(self, procedure: str, arguments: Mapping[str, Any]) -> list[list[Any]]:
        context = ProcedureContext(
            self.catalog, self.name, self.calling_session(), self.data_format
        )
        return call_procedure(context, procedure, arguments)

    def calling_session(self) -> Any:
        """The Spark session of the statement being served: the active session of the JVM
        thread that called the bridge (Py4J runs a callback's own JVM calls on that thread),
        when it is another session of the application than the attaching one."""
        if self.spark is None:
            return None
        jvm = self.spark.sparkContext._jvm
        active = jvm.org.apache.spark.sql.SparkSession.getActiveSession()
        if not active.isDefined() or active.get().equals(self.spark._jsparkSession):
            return self.spark
        from pyspark.sql import SparkSession

        return SparkSession(self.spark.sparkContext, active.get())

    # ---- errors ---------------------------------------------------------------------------
    def python_error(self, text: str) -> dict[str, Any] | None:
        """The lakecat error in the traceback text of a failed Python data source call (the
        plugin raises it in place of Spark's ``PYTHON_DATA_SOURCE_ERROR``), or None."""
        error = error_in_traceback(text)
        return None if error is None else error_payload(error, {})

    # ---- descriptors ----------------------------------------------------------------------
    def _descriptor(
        self, namespace: Sequence[str], name: str, table: Table, travel: Mapping[str, str]
    ) -> dict[str, Any]:
        read_options = {
            OPTION_TABLE: table.name,
            METADATA_LOCATION: table.metadata_location,
            **travel,
        }
        view = ReadView.resolve(
            table.metadata, table.metadata_location, ReadOptions.parse(read_options)
        )
        snapshot = table.current_snapshot()
        properties = {
            **table.properties,
            _PROVIDER: _SHOWN_PROVIDER,
            _LOCATION: table.location,
            _FORMAT: "iceberg/parquet",
            _CURRENT_SNAPSHOT: str(snapshot.snapshot_id) if snapshot else "none",
            P.FORMAT_VERSION: str(table.metadata.format_version),
        }
        schema, order = table.schema(), table.sort_order()
        if order.fields:
            properties[_SORT_ORDER] = describe_sort_order(schema, order)
        if schema.identifier_field_ids:
            names = (schema.column_name(i) for i in schema.identifier_field_ids)
            properties[_IDENTIFIER_FIELDS] = f"[{','.join(names)}]"
        return {
            "name": f"{self.name}.{table.name}",
            "identifier": {"namespace": list(namespace), "name": name},
            "schema": spark_schema(view.schema, comments=True, defaults=True).json(),
            "partitioning": spark_transforms(table),
            "properties": properties,
            "format": self.data_format,
            "read_options": read_options,
            # Time travel reads an old version: there is nothing to write to.
            "write_options": None if travel else {OPTION_TABLE: table.name},
            "dynamic_overwrite_options": {OVERWRITE_MODE: "dynamic"},
            "data_table": True,
            # the _partition metadata column's type (none: the table has no partition fields)
            "partition_type": (
                column.spark_type().json()
                if (column := PartitionColumn.of(table.metadata)).partitioned
                else None
            ),
            "row_lineage": table.metadata.format_version >= 3,
            "distribution": _write_distribution(table.metadata),
            "row_level_modes": _row_level_modes(table.metadata),
        }

    def _metadata_table(
        self, namespace: Sequence[str], kind: str, table: Table, snapshot_id: int | None = None
    ) -> dict[str, Any]:
        table_name = ".".join(namespace)
        read_options = {OPTION_TABLE: table_name, METADATA_TABLE: kind}
        if snapshot_id is not None:
            read_options[SNAPSHOT_ID] = str(snapshot_id)
        return {
            "name": f"{self.name}.{table_name}.{kind}",
            "identifier": {"namespace": list(namespace), "name": kind},
            "schema": metadata_table_schema(table, kind).json(),
            "partitioning": [],
            "properties": {},
            "format": self.metadata_format,
            "read_options": read_options,
            "write_options": None,
        }


def _write_distribution(metadata: TableMetadata) -> dict[str, Any]:
    """How the plugin asks Spark to spread the rows of the table's writes over tasks (its
    ``RequiresDistributionAndOrdering`` writes): the distribution mode of a write (``write``)
    and of each row-level statement's rows, or the error of a mode that is not one (raised
    when such a write starts, before anything is written); the sort order ``range`` adds to
    the partition transforms."""
    modes: dict[str, dict[str, str]] = {}
    for statement in (None, *STATEMENT_MODES):
        try:
            modes[statement or "write"] = {"mode": distribution_mode(metadata, statement)}
        except ValidationError as exc:
            modes[statement or "write"] = {"error": str(exc)}
    return {"modes": modes, "sort_order": spark_sort_order(metadata)}


def _row_level_modes(metadata: TableMetadata) -> dict[str, dict[str, str]]:
    """Whether each row-level statement (``delete``, ``update``, ``merge``) is copy-on-write
    or merge-on-read on this table, as lakecat's Python API decides it (``merge_on_read``), or
    the error of a ``write.<statement>.mode`` that is not a mode (raised when such a statement
    starts: the table still loads, for reads)."""
    modes: dict[str, dict[str, str]] = {}
    for statement, (kind, _) in COMMANDS.items():
        try:
            mode = P.MERGE_ON_READ if merge_on_read(metadata, kind) else P.COPY_ON_WRITE
            modes[statement] = {"mode": mode}
        except ValidationError as exc:
            modes[statement] = {"error": str(exc)}
    return modes


def _ref_name(name: str) -> tuple[str, str] | None:
    """("branch" | "tag", ref) of a ``branch_<ref>`` / ``tag_<ref>`` table name."""
    for kind in ("branch", "tag"):
        prefix = f"{kind}_"
        if name.startswith(prefix) and len(name) > len(prefix):
            return kind, name[len(prefix) :]
    return None


def _stored_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """The table properties a CREATE / REPLACE stores: Spark's own keys left out, and
    ``USING parquet`` as Iceberg's runtime takes it, the Iceberg table's data file format
    (``write.format.default``; Spark passes it for ``saveAsTable`` without ``format``, from
    ``spark.sql.sources.default``). Any other provider but ``iceberg`` or ``lakecat`` is
    refused: ``avro`` and ``orc``, which Iceberg takes, because lakecat writes Parquet."""
    provider = properties.get(_PROVIDER)
    stored = {k: v for k, v in properties.items() if k not in _NOT_STORED}
    if provider is None or provider.lower() in _PROVIDERS:
        return stored
    if provider.lower() == "parquet":
        return {P.DEFAULT_FILE_FORMAT: "parquet", **stored}
    if provider.lower() in ("avro", "orc"):
        raise UnsupportedByCatalog(
            f"lakecat writes Parquet data files only, not {provider!r} (USING parquet, "
            "iceberg or lakecat, or leave it out)"
        )
    raise UnsupportedByCatalog(
        f"a lakecat catalog stores Iceberg tables, not {provider!r} (USING iceberg, lakecat "
        "or parquet, or leave it out)"
    )


def _metadata_travel(table: Table, kind: str, version: str | None, timestamp_us: int | None) -> int:
    """The snapshot ``VERSION AS OF`` / ``TIMESTAMP AS OF`` point a metadata table of
    ``table`` at (as for the table: a snapshot id, a tag or branch, a time), refused for the
    tables of the whole history and where the table had no snapshot yet."""
    check_time_travel(kind)
    options = time_travel_options(table, version=version, timestamp_us=timestamp_us)
    view = ReadView.resolve(table.metadata, table.location, ReadOptions.parse(options))
    if view.snapshot is None:
        raise NoSuchSnapshot(f"{table.name} had no snapshot at that time")
    return view.snapshot.snapshot_id


def time_travel_options(
    table: Table, *, version: str | None, timestamp_us: int | None
) -> dict[str, str]:
    """Read options for ``VERSION AS OF`` (a snapshot id, or a tag or branch name) and
    ``TIMESTAMP AS OF`` (Spark passes microseconds since the epoch)."""
    if timestamp_us is not None:
        return {AS_OF_TIMESTAMP: str(timestamp_us // 1000)}
    if version is None:
        return {}
    ref = table.refs().get(version)
    if ref is not None:
        return {TAG if ref.ref_type == "tag" else BRANCH: version}
    try:
        snapshot_id = int(version)
    except ValueError:
        raise NoSuchSnapshot(f"{table.name} has no snapshot, tag or branch {version!r}") from None
    table.snapshot(snapshot_id)  # NoSuchSnapshot for an unknown id
    return {SNAPSHOT_ID: str(snapshot_id)}


_KINDS: tuple[tuple[type[LakecatError], str], ...] = (
    (NoSuchTable, "no_such_table"),
    (NoSuchNamespace, "no_such_namespace"),
    (TableAlreadyExists, "table_exists"),
    (NoSuchView, "no_such_view"),
    (ViewAlreadyExists, "view_exists"),
    (NamespaceAlreadyExists, "namespace_exists"),
    (NamespaceNotEmpty, "namespace_not_empty"),
    (UnsupportedByCatalog, "unsupported"),
    (ValidationError, "invalid"),
    (NotFound, "invalid"),  # an unknown snapshot or ref in VERSION AS OF
)


def insert_rows(
    bridge: CatalogBridge, dataset: Any, options: Mapping[str, str], *, overwrite: bool
) -> None:
    """Write the JVM ``dataset`` into the table its write ``options`` name (the options the
    Python data source's write would get: the table, a branch, an overwrite filter, the
    statement's own options)."""
    from pyspark.sql import SparkSession
    from pyspark.sql.classic.dataframe import DataFrame

    session = bridge.spark if bridge.spark is not None else SparkSession.getActiveSession()
    if session is None:
        raise UnsupportedByCatalog("no active Spark session to write the rows in")
    if not session._jsparkSession.equals(dataset.sparkSession()):
        # a statement of another session of the application (spark.newSession()): the write
        # plans in that session, so the settings it needs are set there
        session = SparkSession(session.sparkContext, dataset.sparkSession())
    opts = dict(options)
    table = table_identifier(opts)  # the data source's error when no table is named
    opts.pop(OPTION_TABLE, None)
    df = DataFrame(dataset, session)
    native_write(
        df,
        table,
        "overwrite" if overwrite else "append",
        catalog=bridge.catalog,
        format_name=bridge.data_format,
        **opts,
    )


def read_positions(path: str, runs: Mapping[str, Sequence[Sequence[int]]]) -> dict[str, pa.Array]:
    """The deleted positions of each data file, from the plugin's positions file: 64-bit
    Roaring bitmaps in the portable format (``Roaring64NavigableMap.serializePortable``), one
    per data file and task; ``runs`` maps each data file to the [offset, length] byte ranges
    of its bitmaps there. Each file's positions come back sorted and distinct."""
    with open(path, "rb") as f:
        data = memoryview(f.read())
    out: dict[str, pa.Array] = {}
    for file, ranges in runs.items():
        bitmap = BitMap64()
        for offset, length in ranges:
            if offset < 0 or length < 0 or offset + length > len(data):
                raise ValidationError(f"the positions of {file} lie outside the commit's positions")
            bitmap |= deserialize_bitmap(data[offset : offset + length])
        out[file] = positions_array(bitmap)
    return out


def error_payload(exc: LakecatError, args: Mapping[str, Any]) -> dict[str, Any]:
    """A lakecat error for the JVM: its kind, type (and qualified class), message, attributes
    and the name it is about."""
    kind = next((k for cls, k in _KINDS if isinstance(exc, cls)), "error")
    named = ("no_such_table", "table_exists", "no_such_view", "view_exists")
    if kind in named and "name" not in args:
        kind = "error"  # a table named inside the call (a procedure's argument): lakecat's message
    namespace = list(args.get("namespace", []))
    if kind in ("table_exists", "view_exists") and "to_name" in args:  # a rename onto a name
        parts = [*(args["to_namespace"] or namespace), args["to_name"]]
    elif kind in named:
        parts = [*namespace, args.get("name", "")]
    else:
        parts = namespace
    return {
        "kind": kind,
        "type": type(exc).__name__,
        "class": error_class_name(type(exc)),
        "message": str(exc),
        "attributes": error_attributes(exc),
        "parts": parts,
    }
