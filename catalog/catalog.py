"""The SQL catalog: namespaces and tables over the JDBC-compatible pointer store.

A table's state is the metadata tree in the warehouse; the catalog only holds each table's
current metadata location and swaps it atomically (:mod:`lakecat.catalog.store.store`). Tables
created here are visible to Iceberg Java's ``JdbcCatalog`` and pyiceberg's ``SqlCatalog``
configured with the same database and catalog name, and the other way round.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lakecat.catalog.commit.coordination.lock import CommitLock, Hold, WaitHooks, commit_lock_for
from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.commit.pipeline import delete_quietly
from lakecat.catalog.commit.producer import SnapshotProducer
from lakecat.catalog.identifiers import (
    namespace_to_string,
    parse_namespace,
    parse_table_identifier,
)
from lakecat.catalog.interrupts import DeferredInterrupts
from lakecat.catalog.maintenance.reachable import reachable_files, require_gc_enabled
from lakecat.catalog.metadata_cache import MetadataFileCache
from lakecat.catalog.store.store import SqlCatalogStore
from lakecat.catalog.table import Table
from lakecat.catalog.views import (
    View,
    ViewOps,
    commit_new_view,
    engine_summary,
    now_ms,
    representations_of,
)
from lakecat.catalog.write.writer import Data, conform, write_files
from lakecat.metadata import properties as P
from lakecat.metadata.errors import (
    CommitFailed,
    CommitStateUnknown,
    ConcurrentCreate,
    CorruptMetadata,
    LakecatError,
    NoSuchView,
    StorageError,
    TableAlreadyExists,
    ValidationError,
    ViewAlreadyExists,
)
from lakecat.metadata.io.fileio import FileIO, RoutingFileIO, file_io_for, join, to_uri
from lakecat.metadata.io.storage import check_storage_properties
from lakecat.metadata.manifests.cache import DEFAULT_MAX_ENTRIES, ManifestCache
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.partitioning.transforms import default_partition_field_name, parse_transform
from lakecat.metadata.schema.arrow import arrow_to_schema
from lakecat.metadata.schema.name_mapping import NAME_MAPPING_PROPERTY
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.metadata_files import (
    new_metadata_location,
    read_metadata,
    write_metadata,
)
from lakecat.metadata.table.new_table import new_table_metadata
from lakecat.metadata.table.replace import Replacement, plan_replacement, replaced
from lakecat.metadata.table.sorting import SortField, SortOrder
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.view import apply_view, define_view

if TYPE_CHECKING:
    from lakecat.catalog.commit.coordination.queue import FileCommitQueue

Namespace = tuple[str, ...]
PartitionBy = Sequence[str | tuple[str, str]]
SortBy = Sequence[str | tuple[str, str]]


@dataclass
class _TableOps:
    """Per-table operations for the commit loop
    (``lakecat.catalog.commit.pipeline.TableOperations``)."""

    store: SqlCatalogStore
    namespace: Namespace
    table: str
    io: FileIO
    manifest_cache: ManifestCache
    metadata_cache: MetadataFileCache
    lock: CommitLock

    @property
    def name(self) -> str:
        return f"{namespace_to_string(self.namespace)}.{self.table}"

    def refresh(self) -> tuple[TableMetadata, str]:
        location = self.current_location()
        return self.load(location), location

    def current_location(self) -> str:
        return self.store.get_metadata_location(self.namespace, self.table)

    def load(self, location: str) -> TableMetadata:
        metadata = self.metadata_cache.get(location)
        if metadata is None:
            previous = self.metadata_cache.latest(self.name)
            metadata = read_metadata(self.io, location, previous=previous)
            self.metadata_cache.put(location, metadata, table=self.name)
        return metadata

    def swap(self, *, expected: str, new: str) -> None:
        self.store.swap_metadata_location(self.namespace, self.table, expected=expected, new=new)

    def committed(self, location: str, metadata: TableMetadata) -> None:
        self.metadata_cache.put(location, metadata, table=self.name)

    def commit_lock(
        self,
        properties: Mapping[str, str],
        *,
        hooks: WaitHooks | None = None,
        timeout_s: float | None = None,
        faults: list[str] | None = None,
    ) -> AbstractContextManager[Hold | None]:
        if not P.get_bool(properties, P.COMMIT_LOCK_ENABLED, P.COMMIT_LOCK_ENABLED_DEFAULT):
            return nullcontext(None)
        if timeout_s is None:
            timeout_ms = P.get_int(
                properties,
                P.COMMIT_LOCK_ACQUIRE_TIMEOUT_MS,
                P.COMMIT_LOCK_ACQUIRE_TIMEOUT_MS_DEFAULT,
            )
            timeout_s = max(0, timeout_ms) / 1000
        return self.lock.hold(self._lock_key, timeout_s, hooks=hooks, faults=faults)

    def commit_queue(self, properties: Mapping[str, str]) -> FileCommitQueue | None:
        if not P.get_bool(properties, P.COMMIT_LOCK_ENABLED, P.COMMIT_LOCK_ENABLED_DEFAULT):
            return None  # queued appends are handed to the lock's holder
        return self.lock.queue(self._lock_key)

    def forget(self) -> None:
        """What this process remembers under the table's name goes: the name was dropped or
        renamed away, and the next table to take it is another table."""
        self.lock.forget(self._lock_key)
        self.metadata_cache.forget_table(self.name)

    @property
    def _lock_key(self) -> str:
        return f"{self.store.catalog_name}/{namespace_to_string(self.namespace)}/{self.table}"


def load_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read a metadata file; a missing or unreadable one is :class:`CorruptMetadata`."""
    return read_metadata(io, location)


class Catalog:
    """A lakecat catalog: a SQL database for pointers plus a warehouse for files.

    ``Catalog("sqlite:///lake/catalog.db", warehouse="lake/warehouse")`` is the embedded
    default; ``Catalog("postgresql+psycopg://user@host/db", warehouse="s3://bucket/wh")``
    shares the catalog between machines. The warehouse is where new tables go by default:
    without one (``warehouse=None``) the catalog lists, loads and changes its tables (their
    locations are absolute), and creates a table only at an explicit ``location``.

    ``properties`` configure object storage, under pyiceberg's names (``s3.endpoint``,
    ``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token``, ``s3.region``,
    ``s3.path-style-access``, ``gcs.*``, ``adls.*``: :mod:`lakecat.metadata.io.storage`).
    Unknown keys and bad values raise :class:`ValidationError` here; credentials never
    appear in the catalog's repr. They configure the default FileIO (not an ``io`` given).
    """

    def __init__(
        self,
        uri: str,
        *,
        warehouse: str | None,
        name: str = "lakecat",
        io: FileIO | None = None,
        engine_kwargs: Mapping[str, Any] | None = None,
        manifest_cache_entries: int = DEFAULT_MAX_ENTRIES,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        if warehouse is not None and not warehouse:
            raise ValidationError("the warehouse location is empty (None: a catalog without one)")
        self.properties: Mapping[str, str] = MappingProxyType(
            check_storage_properties(properties or {})
        )
        self.name = name
        self.uri = uri
        self.warehouse = None if warehouse is None else to_uri(warehouse)
        # without a warehouse, each table's files are served by the FileIO of their location
        self.io = io or (
            RoutingFileIO(self.properties)
            if self.warehouse is None
            else file_io_for(self.warehouse, self.properties)
        )
        self.store = SqlCatalogStore(uri, catalog_name=name, engine_kwargs=engine_kwargs)
        # Decoded manifests are immutable; scans and commits of this catalog share them.
        self.manifest_cache = ManifestCache(manifest_cache_entries)
        self.metadata_cache = MetadataFileCache()
        self.commit_lock = commit_lock_for(self.store.engine)

    @staticmethod
    def embedded(folder: str | os.PathLike[str], *, name: str = "lakecat") -> Catalog:
        """The embedded default: ``<folder>/catalog.db`` (SQLite) and ``<folder>/warehouse``."""
        root = os.path.abspath(os.fspath(folder))
        os.makedirs(root, exist_ok=True)
        return Catalog(
            f"sqlite:///{os.path.join(root, 'catalog.db')}",
            warehouse=os.path.join(root, "warehouse"),
            name=name,
        )

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Catalog({self.name!r}, uri={self.store.safe_url!r}, warehouse={self.warehouse!r})"

    # ---- namespaces -------------------------------------------------------------------------
    def create_namespace(
        self, namespace: str | Sequence[str], properties: Mapping[str, str] | None = None
    ) -> None:
        self.store.create_namespace(parse_namespace(namespace), dict(properties or {}))

    def create_namespace_if_not_exists(
        self, namespace: str | Sequence[str], properties: Mapping[str, str] | None = None
    ) -> None:
        ns = parse_namespace(namespace)
        if not self.store.namespace_exists(ns):
            self.store.create_namespace(ns, dict(properties or {}))

    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[Namespace]:
        return self.store.list_namespaces(parse_namespace(parent) if parent else ())

    def namespace_exists(self, namespace: str | Sequence[str]) -> bool:
        return self.store.namespace_exists(parse_namespace(namespace))

    def namespace_properties(self, namespace: str | Sequence[str]) -> dict[str, str]:
        return self.store.load_namespace_properties(parse_namespace(namespace))

    def update_namespace_properties(
        self,
        namespace: str | Sequence[str],
        *,
        updates: Mapping[str, str] | None = None,
        removals: Iterable[str] = (),
    ) -> None:
        self.store.update_namespace_properties(
            parse_namespace(namespace), removals=tuple(removals), updates=dict(updates or {})
        )

    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        self.store.drop_namespace(parse_namespace(namespace))

    # ---- tables -----------------------------------------------------------------------------
    def list_tables(self, namespace: str | Sequence[str]) -> list[tuple[Namespace, str]]:
        ns = parse_namespace(namespace)
        return [(ns, t) for t in self.store.list_tables(ns)]

    def table_exists(self, identifier: str | Sequence[str]) -> bool:
        ns, name = parse_table_identifier(identifier)
        return self.store.table_exists(ns, name)

    def default_location(self, namespace: Namespace, name: str) -> str:
        """``<warehouse>/<namespace...>/<name>``; :class:`ValidationError` without a warehouse."""
        if self.warehouse is None:
            table = f"{namespace_to_string(namespace)}.{name}"
            raise ValidationError(
                f"catalog {self.name!r} has no warehouse: give table {table} a location, or "
                "open the catalog with a warehouse"
            )
        return join(self.warehouse, *namespace, name)

    def new_table_metadata(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        *,
        partition_by: PartitionSpec | PartitionBy = (),
        sort_by: SortOrder | SortBy = (),
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
    ) -> TableMetadata:
        """The metadata :meth:`create_table` would create the table with, written nowhere."""
        ns, name = parse_table_identifier(identifier)
        iceberg_schema = arrow_to_schema(schema) if isinstance(schema, pa.Schema) else schema
        spec = (
            partition_by
            if isinstance(partition_by, PartitionSpec)
            else build_spec(iceberg_schema, partition_by)
        )
        order = (
            sort_by if isinstance(sort_by, SortOrder) else build_sort_order(iceberg_schema, sort_by)
        )
        table_location = to_uri(location) if location else self.default_location(ns, name)
        return new_table_metadata(
            schema=iceberg_schema,
            spec=spec,
            sort_order=order,
            location=table_location.rstrip("/"),
            properties={**P.CREATE_DEFAULTS, **(properties or {})},
        )

    def create_table(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        *,
        partition_by: PartitionSpec | PartitionBy = (),
        sort_by: SortOrder | SortBy = (),
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        data: Data | None = None,
        files: Sequence[DataFile] | None = None,
    ) -> Table:
        """Create a table. ``partition_by`` takes a spec or ``["region", ("ts", "day"),
        ("id", "bucket[16]")]``; ``sort_by`` a sort order or ``["id", ("ts", "desc")]``.

        New tables get lakecat's defaults written explicitly as properties (isolation levels,
        metadata-file pruning) so that other engines apply the same behaviour.

        With ``data`` (rows, written as the table's first data files) or ``files`` (data files
        already written in the form of :meth:`new_table_metadata`'s metadata, e.g. by a
        staged ``CREATE TABLE AS SELECT``), the table is created with its first snapshot, an
        append of them (of none, for no rows: as Iceberg's ``CREATE TABLE AS SELECT``), in
        one metadata version: nobody ever sees it empty, and if the create fails the files
        this call wrote are deleted (``files`` stay the caller's).
        """
        ns, name = parse_table_identifier(identifier)
        if self.store.table_exists(ns, name):
            raise TableAlreadyExists(f"table {namespace_to_string(ns)}.{name} already exists")
        if self.store.view_exists(ns, name):
            raise TableAlreadyExists(f"view {namespace_to_string(ns)}.{name} already exists")
        metadata = self.new_table_metadata(
            identifier,
            schema,
            partition_by=partition_by,
            sort_by=sort_by,
            properties=properties,
            location=location,
        )
        written: list[str] = []  # what this call wrote, deleted if the table is not created
        try:
            if data is not None:
                new_files = write_files(self.io, metadata, conform(metadata, data))
                written.extend(f.file_path for f in new_files)
                files = [*(files or ()), *new_files]
            if files is not None:
                metadata = self._with_first_append(metadata, files, written)
        except BaseException:
            delete_quietly(self.io, written)
            raise
        metadata_location = new_metadata_location(metadata.location, None, metadata.properties)
        written.append(metadata_location)
        try:
            write_metadata(self.io, metadata_location, metadata)
        except BaseException:
            delete_quietly(self.io, written)
            raise
        interrupts = DeferredInterrupts()  # the row's INSERT is this table's point of no return
        interrupts.start()
        try:
            self.store.create_table_row(ns, name, metadata_location)
        except TableAlreadyExists as exc:
            delete_quietly(self.io, written)
            raise ConcurrentCreate(
                f"table {namespace_to_string(ns)}.{name} was created by another writer at the "
                "same time; load it instead"
            ) from exc
        except CommitStateUnknown:
            raise  # the row may exist and point at this file: keep it
        except LakecatError:
            delete_quietly(self.io, written)  # the store's contract: definitely not created
            raise
        # anything else (an unexpected error) may have come after the INSERT: keep the file
        finally:
            interrupts.stop(f"lakecat: creating {namespace_to_string(ns)}.{name} was interrupted")
        return Table(self._ops(ns, name), metadata, metadata_location)

    def create_table_like(
        self,
        identifier: str | Sequence[str],
        like: Table | TableMetadata,
        *,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
    ) -> Table:
        """Create an empty table shaped like ``like`` (``CREATE TABLE ... LIKE``): its
        current schema (docs, defaults and identifier fields included; field ids numbered
        afresh, as for any new table), partition spec, sort order, format version and
        properties, with ``properties`` set on top. No rows, snapshots or refs are copied.

        Two kinds of property stay behind: those that place files outside the table's
        location (:data:`~lakecat.metadata.properties.PATH_PROPERTIES`: the copy's files are
        its own, and removing its orphan files must not touch the source's) and the name
        mapping (``schema.name-mapping.default``), whose field ids are the source's."""
        metadata = like.metadata if isinstance(like, Table) else like
        copied = {
            key: value
            for key, value in metadata.properties.items()
            if key not in P.PATH_PROPERTIES and key != NAME_MAPPING_PROPERTY
        }
        return self.create_table(
            identifier,
            metadata.schema(),
            partition_by=metadata.spec(),
            sort_by=metadata.sort_order(),
            properties={
                **copied,
                P.FORMAT_VERSION: str(metadata.format_version),
                **(properties or {}),
            },
            location=location,
        )

    def _with_first_append(
        self, metadata: TableMetadata, files: Sequence[DataFile], written: list[str]
    ) -> TableMetadata:
        """``metadata`` (a new table's) with a first snapshot appending ``files``: its
        manifests and manifest list written (their paths added to ``written``), as a commit
        of the append on that base would write them."""
        producer = SnapshotProducer(self.io, Intent(kind=OpKind.APPEND, added_files=tuple(files)))
        try:
            produced = producer.produce(metadata, attempt=1, extra_summary={})
        finally:
            written.extend(producer.written)
        written.extend(produced.attempt_files)
        return apply(metadata, produced.updates)

    def replace_table(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        *,
        partition_by: PartitionBy = (),
        sort_by: SortBy = (),
        properties: Mapping[str, str] | None = None,
        data: Data | None = None,
    ) -> Table:
        """Give an existing table a new schema, partitioning, sort order and rows in one
        commit (``REPLACE TABLE ... AS SELECT``): if anything fails, the table is unchanged.
        The table keeps its identity, location, properties (``properties`` are set on top)
        and history; the new rows form a snapshot without a parent. See
        :mod:`lakecat.metadata.table.replace`."""
        table = self.load_table(identifier)
        replacement = self.plan_replace(
            table, schema, partition_by=partition_by, sort_by=sort_by, properties=properties
        )
        files: list[DataFile] | None = None  # no data: no snapshot
        if data is not None:
            target = replaced(table.metadata, replacement)
            files = write_files(table.io, target, conform(target, data))
        table.commit_replace(replacement, files)
        return table

    def create_or_replace_table(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        *,
        partition_by: PartitionBy = (),
        sort_by: SortBy = (),
        properties: Mapping[str, str] | None = None,
        data: Data | None = None,
    ) -> Table:
        """:meth:`replace_table` when the table exists, else :meth:`create_table` and (with
        ``data``) an append."""
        ns, name = parse_table_identifier(identifier)
        if self.store.table_exists(ns, name):
            return self.replace_table(
                identifier,
                schema,
                partition_by=partition_by,
                sort_by=sort_by,
                properties=properties,
                data=data,
            )
        return self.create_table(
            identifier,
            schema,
            partition_by=partition_by,
            sort_by=sort_by,
            properties=properties,
            data=data,
        )

    @staticmethod
    def plan_replace(
        table: Table,
        schema: Schema | pa.Schema,
        *,
        partition_by: PartitionBy = (),
        sort_by: SortBy = (),
        properties: Mapping[str, str] | None = None,
    ) -> Replacement:
        """The new definition of ``table`` for :meth:`Table.commit_replace` (rows written for
        it use ``replaced(table.metadata, replacement)``)."""
        iceberg_schema = arrow_to_schema(schema) if isinstance(schema, pa.Schema) else schema
        return plan_replacement(
            table.metadata,
            iceberg_schema,
            spec_of=lambda s: build_spec(s, partition_by),
            sort_order_of=lambda s: build_sort_order(s, sort_by),
            properties=properties,
        )

    def load_table(self, identifier: str | Sequence[str]) -> Table:
        ns, name = parse_table_identifier(identifier)
        ops = self._ops(ns, name)
        metadata, location = ops.refresh()
        return Table(ops, metadata, location)

    def register_table(self, identifier: str | Sequence[str], metadata_location: str) -> Table:
        """Add an existing table (its metadata file) to the catalog."""
        ns, name = parse_table_identifier(identifier)
        metadata_location = to_uri(metadata_location)
        metadata = load_metadata(self.io, metadata_location)
        self.store.create_table_row(ns, name, metadata_location)
        return Table(self._ops(ns, name), metadata, metadata_location)

    def rename_table(self, source: str | Sequence[str], destination: str | Sequence[str]) -> None:
        src_ns, src = parse_table_identifier(source)
        dst_ns, dst = parse_table_identifier(destination)
        self.store.rename_table(src_ns, src, dst_ns, dst)
        self._ops(src_ns, src).forget()
        self._ops(dst_ns, dst).forget()

    def drop_table(self, identifier: str | Sequence[str], *, purge: bool = False) -> None:
        """Remove a table from the catalog; with ``purge`` also delete all its files.

        Purging deletes every file the table's metadata tree references and everything under
        the table location; without it the files stay (they can be registered again).
        """
        ns, name = parse_table_identifier(identifier)
        if purge:
            require_gc_enabled(self.load_table(identifier).metadata, "purge the table")
        location = self.store.drop_table_row(ns, name)
        self._ops(ns, name).forget()
        if purge:
            self._purge(location)

    def _purge(self, metadata_location: str) -> None:
        try:
            metadata = load_metadata(self.io, metadata_location)
        except CorruptMetadata:
            return
        for path in sorted(reachable_files(self.io, metadata, metadata_location)):
            self.io.delete(path)
        try:
            for info in self.io.list_prefix(metadata.location):
                self.io.delete(info.location)
        except StorageError:
            pass

    # ---- views ------------------------------------------------------------------------------
    def list_views(self, namespace: str | Sequence[str]) -> list[tuple[Namespace, str]]:
        ns = parse_namespace(namespace)
        return [(ns, v) for v in self.store.list_views(ns)]

    def view_exists(self, identifier: str | Sequence[str]) -> bool:
        ns, name = parse_table_identifier(identifier)
        return self.store.view_exists(ns, name)

    def load_view(self, identifier: str | Sequence[str]) -> View:
        """The view (NoSuchView if there is none of that name)."""
        ops = self._view_ops(*parse_table_identifier(identifier))
        metadata, location = ops.refresh()
        return View(ops, metadata, location)

    def create_view(
        self,
        identifier: str | Sequence[str],
        sql: str | Mapping[str, str],
        schema: Schema | pa.Schema,
        *,
        default_namespace: Sequence[str] | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        summary: Mapping[str, str] | None = None,
    ) -> View:
        """Create an Iceberg view: ``sql`` is its query in Spark's dialect (or ``{dialect:
        query}`` for several), ``schema`` the columns it produces (field docs are column
        comments). Unqualified names in the query resolve against ``default_namespace`` (the
        view's own when not given) and ``default_catalog`` (the catalog holding the view when
        None). lakecat stores the definition; engines run it. ViewAlreadyExists when a view
        or a table has the name."""
        ns, name = parse_table_identifier(identifier)
        iceberg_schema = arrow_to_schema(schema) if isinstance(schema, pa.Schema) else schema
        view_location = to_uri(location) if location else self.default_location(ns, name)
        at = now_ms()
        metadata = apply_view(
            None,
            define_view(
                location=view_location.rstrip("/"),
                schema=iceberg_schema,
                representations=representations_of(sql),
                default_namespace=ns if default_namespace is None else tuple(default_namespace),
                default_catalog=default_catalog,
                properties=properties,
                summary=engine_summary() if summary is None else summary,
                now_ms=at,
            ),
            now_ms=at,
        )
        metadata_location = commit_new_view(self.store, ns, name, self.io, metadata)
        return View(self._view_ops(ns, name), metadata, metadata_location)

    def create_or_replace_view(
        self,
        identifier: str | Sequence[str],
        sql: str | Mapping[str, str],
        schema: Schema | pa.Schema,
        *,
        default_namespace: Sequence[str] | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        summary: Mapping[str, str] | None = None,
    ) -> View:
        """:meth:`View.replace` when the view exists, else :meth:`create_view`. A view
        created meanwhile by another writer is replaced."""
        iceberg_schema = arrow_to_schema(schema) if isinstance(schema, pa.Schema) else schema
        for _ in range(2):
            try:
                view = self.load_view(identifier)
            except NoSuchView:
                try:
                    return self.create_view(
                        identifier,
                        sql,
                        iceberg_schema,
                        default_namespace=default_namespace,
                        default_catalog=default_catalog,
                        properties=properties,
                        summary=summary,
                    )
                except ViewAlreadyExists:
                    if not self.view_exists(identifier):
                        raise  # a table has the name
                    continue  # created meanwhile: replace it
            return view.replace(
                sql,
                iceberg_schema,
                default_namespace=default_namespace,
                default_catalog=default_catalog,
                properties=properties,
                summary=summary,
            )
        raise ViewAlreadyExists(f"view {identifier} kept being created and dropped meanwhile")

    def rename_view(self, source: str | Sequence[str], destination: str | Sequence[str]) -> None:
        src_ns, src = parse_table_identifier(source)
        dst_ns, dst = parse_table_identifier(destination)
        self.store.rename_view(src_ns, src, dst_ns, dst)

    def drop_view(self, identifier: str | Sequence[str]) -> None:
        """Remove the view from the catalog and delete its current metadata file, as Iceberg's
        JDBC catalog does (older metadata files stay; NoSuchView if there is no such view)."""
        ns, name = parse_table_identifier(identifier)
        location = self.store.drop_view_row(ns, name)
        delete_quietly(self.io, [location])

    def _view_ops(self, namespace: Namespace, name: str) -> ViewOps:
        return ViewOps(self.store, namespace, name, self.io)

    def _ops(self, namespace: Namespace, name: str) -> _TableOps:
        return _TableOps(
            self.store,
            namespace,
            name,
            self.io,
            self.manifest_cache,
            self.metadata_cache,
            self.commit_lock,
        )


def build_spec(schema: Schema, partition_by: PartitionBy) -> PartitionSpec:
    """A partition spec from ``["region", ("ts", "day"), ("id", "bucket[16]")]``."""
    fields = []
    for i, item in enumerate(partition_by):
        column, transform_text = (item, "identity") if isinstance(item, str) else item
        source = schema.find_field(column)
        transform = parse_transform(transform_text)
        fields.append(
            PartitionField(
                source_id=source.field_id,
                field_id=1000 + i,
                transform=str(transform),
                name=default_partition_field_name(source.name, transform),
            )
        )
    return PartitionSpec(0, tuple(fields))


def build_sort_order(schema: Schema, sort_by: SortBy) -> SortOrder:
    """A sort order from ``["id", ("ts", "desc")]`` (nulls first for asc, last for desc)."""
    if not sort_by:
        return SortOrder(0, ())
    fields = []
    for item in sort_by:
        column, direction = (item, "asc") if isinstance(item, str) else item
        field_id = schema.find_field(column).field_id
        if direction == "asc":
            fields.append(SortField(field_id, "identity", "asc", "nulls-first"))
        elif direction == "desc":
            fields.append(SortField(field_id, "identity", "desc", "nulls-last"))
        else:
            raise ValidationError(f"sort direction must be 'asc' or 'desc', not {direction!r}")
    return SortOrder(1, tuple(fields))


__all__ = ["Catalog", "CommitFailed", "build_sort_order", "build_spec"]
