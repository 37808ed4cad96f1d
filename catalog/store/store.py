"""The SQL catalog's pointer store: namespaces, table rows and the metadata compare-and-swap.

The store keeps rows in the two tables of Iceberg's JDBC catalog (see
:mod:`lakecat.catalog.store.tables`), so Iceberg Java's ``JdbcCatalog`` and pyiceberg's
``SqlCatalog`` configured with the same database and catalog name see the same namespaces and
tables. It knows nothing about metadata files: a table is a name and a pointer (the location of
its current ``metadata.json``); the catalog built on top writes the files and moves the pointer.

Namespaces follow the JDBC catalog (:mod:`lakecat.catalog.store.namespaces`): a nested namespace
is stored as its levels joined with dots, and exists if any property or table row has it or one
nested inside it. Creating one inserts its properties plus the reserved ``exists = 'true'`` row.

The compare-and-swap contract (:meth:`SqlCatalogStore.swap_metadata_location`)
    One transaction runs ``UPDATE iceberg_tables SET metadata_location = :new,
    previous_metadata_location = :expected WHERE <this table> AND metadata_location =
    :expected``; it commits only if exactly one row changed. The outcome is one of:

    * it returns normally: **committed**; ``new`` is the table's pointer.
    * :class:`CommitFailed`: **definitely not committed**; another writer moved the pointer
      first. Refresh and retry; files written for this attempt may be deleted.
    * :class:`NoSuchTable`: **definitely not committed**; the table is gone (dropped or
      renamed). Checked only after the UPDATE matched no row.
    * :class:`CatalogUnavailable`: **definitely not committed**; the database could not be
      reached before the UPDATE was sent, or stayed busy through every statement retry. Its
      :class:`CatalogRefused` kinds (:class:`CatalogReadOnly`,
      :class:`CatalogPermissionDenied`, ...): the database refused the statement with an error
      while the connection stayed up (the transaction is rolled back and never committed);
      trying again would meet the same refusal.
    * :class:`CommitStateUnknown`: **may or may not have committed**; the connection was lost
      while the UPDATE was in flight, or the COMMIT failed in any way other than the database
      reporting that it rolled back. Delete nothing; reload the table and check whether ``new``
      became its pointer.

    SQLite ``SQLITE_BUSY``/``SQLITE_LOCKED`` and PostgreSQL serialization failures and
    deadlocks (SQLSTATE 40001, 40P01) mean the database rolled the transaction back; the whole
    transaction is run again (at most ``max_statement_attempts`` times, with jittered
    exponential backoff) instead of surfacing as a conflict. A success costs one transaction
    and no SELECT.

Other writes follow the same classification (:mod:`lakecat.catalog.store.transactions`) but
report the unsure case as CatalogUnavailable, except :meth:`SqlCatalogStore.create_table_row`,
whose unsure COMMIT is a CommitStateUnknown: the caller must not delete the new table's
metadata file while the row may exist.

The constructor does no I/O: the catalog tables are created (when ``create_schema``) and
inspected on first use, or when :meth:`SqlCatalogStore.initialize` is called. A store is safe
to share between threads. Processes must each create their own store (never share one across
``fork``); they coordinate through the database alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from sqlalchemy import ColumnElement, Connection, Engine, delete, exists, insert, select, update
from sqlalchemy.exc import IntegrityError

from lakecat.catalog.identifiers import (
    MAX_ENCODED_LENGTH,
    Identifier,
    namespace_to_string,
    parse_namespace,
    validate_name,
)
from lakecat.catalog.store import namespaces as ns_rows
from lakecat.catalog.store.db import (
    DEFAULT_BUSY_TIMEOUT_MS,
    create_catalog_engine,
    is_unique_violation,
)
from lakecat.catalog.store.tables import (
    ICEBERG_TABLES,
    MAX_LOCATION_LENGTH,
    NAMESPACE_EXISTS_PROPERTY,
    TABLE_RECORD_TYPE,
    VIEW_RECORD_TYPE,
    TableLayout,
    prepare_tables,
)
from lakecat.catalog.store.transactions import RetryTransaction, TransactionRunner
from lakecat.metadata.errors import (
    AlreadyExists,
    CatalogUnavailable,
    CommitFailed,
    CorruptMetadata,
    LakecatError,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    NotFound,
    TableAlreadyExists,
    UnsupportedFeature,
    ValidationError,
    ViewAlreadyExists,
)

__all__ = [
    "DEFAULT_MAX_STATEMENT_ATTEMPTS",
    "PropertiesUpdateSummary",
    "SqlCatalogStore",
    "TablePointer",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_MAX_STATEMENT_ATTEMPTS = 5

_TABLES = ICEBERG_TABLES.c


@dataclass(frozen=True)
class TablePointer:
    """A table's row: its current metadata file and the one before it (None when created)."""

    metadata_location: str
    previous_metadata_location: str | None


@dataclass(frozen=True)
class PropertiesUpdateSummary:
    """What :meth:`SqlCatalogStore.update_namespace_properties` did, keys sorted."""

    removed: tuple[str, ...]
    updated: tuple[str, ...]
    missing: tuple[str, ...]


@dataclass(frozen=True)
class _Kind:
    """Tables or views: their record type, their word in messages and their errors."""

    record_type: str
    word: str
    missing: type[NotFound]
    taken: type[AlreadyExists]


_TABLE = _Kind(TABLE_RECORD_TYPE, "table", NoSuchTable, TableAlreadyExists)
_VIEW = _Kind(VIEW_RECORD_TYPE, "view", NoSuchView, ViewAlreadyExists)


class _NameTaken(Exception):
    """An INSERT or rename met the primary key of an existing row; rolled back."""


class _SwapMissed(Exception):
    """The compare-and-swap UPDATE changed ``rowcount`` rows instead of one; rolled back."""

    def __init__(self, rowcount: int) -> None:
        super().__init__(rowcount)
        self.rowcount = rowcount


class SqlCatalogStore:
    """Namespaces and table pointers in a SQL database shared with Iceberg's JDBC catalog.

    ``url`` is a SQLAlchemy URL: ``sqlite:///path/catalog.db`` (a file: an in-memory SQLite
    database would be private to each pooled connection) or
    ``postgresql+psycopg://user@host:port/db``. ``engine_kwargs`` go to
    :func:`sqlalchemy.create_engine`. With ``create_schema`` false, missing catalog tables are
    an error instead of being created. ``busy_timeout_ms`` is how long a SQLite writer waits
    for the lock; ``max_statement_attempts`` bounds the runs of a transaction the database
    rolled back (busy, serialization failure).
    """

    def __init__(
        self,
        url: str,
        *,
        catalog_name: str = "lakecat",
        engine_kwargs: Mapping[str, Any] | None = None,
        create_schema: bool = True,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        max_statement_attempts: int = DEFAULT_MAX_STATEMENT_ATTEMPTS,
    ) -> None:
        if not isinstance(catalog_name, str) or not 0 < len(catalog_name) <= MAX_ENCODED_LENGTH:
            raise ValidationError(
                f"catalog_name must be 1 to {MAX_ENCODED_LENGTH} characters: {catalog_name!r}"
            )
        if max_statement_attempts < 1:
            raise ValidationError(f"max_statement_attempts must be >= 1: {max_statement_attempts}")
        self._catalog_name = catalog_name
        self._create_schema = create_schema
        self._engine: Engine = create_catalog_engine(
            url, busy_timeout_ms=busy_timeout_ms, engine_kwargs=engine_kwargs
        )
        self._runner = TransactionRunner(self._engine, max_attempts=max_statement_attempts)
        self._layout_lock = threading.Lock()
        self._layout: TableLayout | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def catalog_name(self) -> str:
        return self._catalog_name

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for diagnostics and tests; do not run catalog writes on it)."""
        return self._engine

    @property
    def safe_url(self) -> str:
        """The database URL with any password masked, for messages and logs."""
        url: str = self._engine.url.render_as_string(hide_password=True)
        return url

    def initialize(self) -> None:
        """Create missing catalog tables and detect their layout now instead of on first use."""
        self._table_layout()

    def close(self) -> None:
        """Close pooled connections. The store reconnects if it is used again."""
        self._engine.dispose()

    def __enter__(self) -> SqlCatalogStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqlCatalogStore({self.safe_url!r}, catalog_name={self._catalog_name!r})"

    # -- namespaces ------------------------------------------------------------------------

    def create_namespace(
        self, namespace: str | Sequence[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace with ``properties``; NamespaceAlreadyExists if it exists."""
        encoded = namespace_to_string(namespace)
        rows = ns_rows.checked_properties(properties or {})
        rows[NAMESPACE_EXISTS_PROPERTY] = "true"

        def work(connection: Connection, _layout: TableLayout) -> None:
            self._require_absent_namespace(connection, encoded)
            try:
                ns_rows.insert_properties(connection, self._catalog_name, encoded, rows)
            except IntegrityError as exc:
                if is_unique_violation(exc):  # created concurrently
                    raise NamespaceAlreadyExists(f"namespace {encoded!r} already exists") from exc
                raise

        self._transaction(work, write=True, action=f"create namespace {encoded!r}")

    def namespace_exists(self, namespace: str | Sequence[str]) -> bool:
        encoded = namespace_to_string(namespace)

        def work(connection: Connection, _layout: TableLayout) -> bool:
            found: bool = ns_rows.namespace_exists(connection, self._catalog_name, encoded)
            return found

        return self._transaction(work, write=False, action=f"check namespace {encoded!r}")

    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[Identifier]:
        """The direct children of ``parent`` (top-level namespaces for ``()``), sorted.

        Like the JDBC catalog, namespaces are derived from both property rows and table rows.
        NoSuchNamespace if ``parent`` is given and does not exist.
        """
        parent_parts: Identifier = () if len(parent) == 0 else parse_namespace(parent)

        def work(connection: Connection, _layout: TableLayout) -> list[Identifier]:
            if parent_parts:
                self._require_namespace(connection, ".".join(parent_parts))
            children: list[Identifier] = ns_rows.child_namespaces(
                connection, self._catalog_name, parent_parts
            )
            return children

        return self._transaction(work, write=False, action=f"list namespaces in {parent_parts}")

    def load_namespace_properties(self, namespace: str | Sequence[str]) -> dict[str, str]:
        """The namespace's properties, without the reserved ``exists`` key."""
        encoded = namespace_to_string(namespace)

        def work(connection: Connection, _layout: TableLayout) -> dict[str, str]:
            self._require_namespace(connection, encoded)
            properties: dict[str, str] = ns_rows.fetch_properties(
                connection, self._catalog_name, encoded
            )
            properties.pop(NAMESPACE_EXISTS_PROPERTY, None)
            return properties

        return self._transaction(work, write=False, action=f"load namespace {encoded!r}")

    def update_namespace_properties(
        self,
        namespace: str | Sequence[str],
        *,
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set properties in one transaction.

        A key both removed and updated, and the reserved ``exists`` key, are ValidationErrors.
        Removing a key that is not set is reported in ``missing``, not an error.
        """
        encoded = namespace_to_string(namespace)
        removal_keys = tuple(dict.fromkeys(removals))
        for key in removal_keys:
            ns_rows.check_property_key(key)
        new_values = ns_rows.checked_properties(updates or {})
        if overlap := set(removal_keys) & set(new_values):
            raise ValidationError(f"properties both removed and updated: {sorted(overlap)}")
        catalog = self._catalog_name

        def work(connection: Connection, _layout: TableLayout) -> PropertiesUpdateSummary:
            self._require_namespace(connection, encoded)
            current = ns_rows.fetch_properties(connection, catalog, encoded)
            removed = [key for key in removal_keys if key in current]
            if removed:
                ns_rows.delete_properties(connection, catalog, encoded, removed)
            for key, value in new_values.items():
                if key in current:
                    ns_rows.update_property(connection, catalog, encoded, key, value)
            inserts = {k: v for k, v in new_values.items() if k not in current}
            # Namespaces made by pyiceberg with properties have no `exists` row; add it so the
            # namespace survives the removal of its last property.
            if NAMESPACE_EXISTS_PROPERTY not in current:
                inserts[NAMESPACE_EXISTS_PROPERTY] = "true"
            try:
                ns_rows.insert_properties(connection, catalog, encoded, inserts)
            except IntegrityError as exc:
                if is_unique_violation(exc):  # a concurrent writer set the same key: redo
                    raise RetryTransaction() from exc
                raise
            return PropertiesUpdateSummary(
                removed=tuple(sorted(removed)),
                updated=tuple(sorted(new_values)),
                missing=tuple(sorted(set(removal_keys) - set(removed))),
            )

        return self._transaction(work, write=True, action=f"update namespace {encoded!r}")

    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        """Drop an empty namespace: NamespaceNotEmpty if it has tables or child namespaces."""
        encoded = namespace_to_string(namespace)
        catalog = self._catalog_name

        def work(connection: Connection, _layout: TableLayout) -> None:
            self._require_namespace(connection, encoded)
            # Any row counts, views included: dropping would orphan them.
            if ns_rows.has_table_rows(connection, catalog, encoded):
                raise NamespaceNotEmpty(f"namespace {encoded!r} still has tables or views")
            if ns_rows.has_child_namespaces(connection, catalog, encoded):
                raise NamespaceNotEmpty(f"namespace {encoded!r} still has child namespaces")
            ns_rows.delete_properties(connection, catalog, encoded)

        self._transaction(work, write=True, action=f"drop namespace {encoded!r}")

    # -- tables ----------------------------------------------------------------------------

    def create_table_row(
        self, namespace: str | Sequence[str], name: str, metadata_location: str
    ) -> None:
        """Insert a table row pointing at ``metadata_location``.

        NoSuchNamespace if the namespace does not exist, TableAlreadyExists if a table or view
        of that name does. Like the compare-and-swap, CommitStateUnknown means the row may or
        may not exist now; every other error means it was not created.
        """
        self._create_row(_TABLE, namespace, name, metadata_location)

    def get_table_pointer(self, namespace: str | Sequence[str], name: str) -> TablePointer:
        """The table's current and previous metadata locations; NoSuchTable if absent."""
        return self._get_pointer(_TABLE, namespace, name)

    def get_metadata_location(self, namespace: str | Sequence[str], name: str) -> str:
        """The table's current metadata location; NoSuchTable if absent."""
        return self.get_table_pointer(namespace, name).metadata_location

    def table_exists(self, namespace: str | Sequence[str], name: str) -> bool:
        return self._row_exists(_TABLE, namespace, name)

    def list_tables(self, namespace: str | Sequence[str]) -> list[str]:
        """Names of the tables (not views) directly in ``namespace``, sorted."""
        return self._list_rows(_TABLE, namespace)

    def rename_table(
        self,
        source_namespace: str | Sequence[str],
        source_name: str,
        target_namespace: str | Sequence[str],
        target_name: str,
    ) -> None:
        """Rename a table, possibly into another existing namespace.

        NoSuchTable if the source is missing, NoSuchNamespace if the target namespace is,
        TableAlreadyExists if the target name is taken (by a table or a view).
        """
        self._rename_row(_TABLE, source_namespace, source_name, target_namespace, target_name)

    def drop_table_row(self, namespace: str | Sequence[str], name: str) -> str:
        """Delete the table's row and return the metadata location it pointed at.

        NoSuchTable if there is no such table. A row without a metadata location (never
        written by lakecat or pyiceberg) is left in place and raises CorruptMetadata.
        """
        return self._drop_row(_TABLE, namespace, name)

    # -- views -----------------------------------------------------------------------------
    # The rows Iceberg's JDBC catalog keeps for views (``iceberg_type = 'VIEW'``), with the
    # same contracts as the table rows'. A database of the V0 schema has no views: reads find
    # none, and creating one is refused (UnsupportedFeature).

    def create_view_row(
        self, namespace: str | Sequence[str], name: str, metadata_location: str
    ) -> None:
        """Insert a view row; ViewAlreadyExists if a view or table has the name, else as
        :meth:`create_table_row`."""
        self._create_row(_VIEW, namespace, name, metadata_location)

    def get_view_location(self, namespace: str | Sequence[str], name: str) -> str:
        """The view's current metadata location; NoSuchView if absent."""
        return self._get_pointer(_VIEW, namespace, name).metadata_location

    def view_exists(self, namespace: str | Sequence[str], name: str) -> bool:
        return self._row_exists(_VIEW, namespace, name)

    def list_views(self, namespace: str | Sequence[str]) -> list[str]:
        """Names of the views directly in ``namespace``, sorted."""
        return self._list_rows(_VIEW, namespace)

    def rename_view(
        self,
        source_namespace: str | Sequence[str],
        source_name: str,
        target_namespace: str | Sequence[str],
        target_name: str,
    ) -> None:
        """As :meth:`rename_table`, for a view: NoSuchView, NoSuchNamespace, ViewAlreadyExists."""
        self._rename_row(_VIEW, source_namespace, source_name, target_namespace, target_name)

    def drop_view_row(self, namespace: str | Sequence[str], name: str) -> str:
        """Delete the view's row and return its metadata location; NoSuchView if absent."""
        return self._drop_row(_VIEW, namespace, name)

    def swap_view_location(
        self, namespace: str | Sequence[str], name: str, *, expected: str, new: str
    ) -> None:
        """The compare-and-swap of a view's pointer, with the contract of
        :meth:`swap_metadata_location` (NoSuchView for a view that is gone)."""
        self._swap(_VIEW, namespace, name, expected=expected, new=new)

    # -- rows of either kind ---------------------------------------------------------------

    def _create_row(
        self, kind: _Kind, namespace: str | Sequence[str], name: str, metadata_location: str
    ) -> None:
        encoded = namespace_to_string(namespace)
        validate_name(name)
        _check_location(metadata_location, what="metadata_location")

        def work(connection: Connection, layout: TableLayout) -> None:
            if kind is _VIEW and not layout.has_iceberg_type:
                raise UnsupportedFeature(
                    "the catalog database's iceberg_tables has no iceberg_type column (Iceberg's "
                    "JDBC schema V0), so it cannot hold views; Iceberg Java adds the column "
                    "when opened with jdbc.schema-version=V1"
                )
            self._require_namespace(connection, encoded)
            row = {
                "catalog_name": self._catalog_name,
                "table_namespace": encoded,
                "table_name": name,
                "metadata_location": metadata_location,
                "previous_metadata_location": None,
            }
            if layout.has_iceberg_type:
                row["iceberg_type"] = kind.record_type
            try:
                connection.execute(insert(ICEBERG_TABLES).values(row))
            except IntegrityError as exc:
                if is_unique_violation(exc):
                    raise _NameTaken() from exc
                raise

        try:
            self._transaction(
                work,
                write=True,
                action=f"create {kind.word} {encoded}.{name}",
                ambiguous_commit=True,
            )
        except _NameTaken as taken:
            raise kind.taken(self._taken_message(encoded, name)) from taken.__cause__

    def _taken_message(self, encoded: str, name: str) -> str:
        """What holds a name that an insert or rename found taken (looked up after the
        rolled-back transaction, for the message only)."""
        try:
            views = self.list_views(encoded)
        except LakecatError:
            views = []
        what = "view" if name in views else "table"
        return f"{what} {encoded}.{name} already exists"

    def _get_pointer(self, kind: _Kind, namespace: str | Sequence[str], name: str) -> TablePointer:
        encoded = namespace_to_string(namespace)
        validate_name(name)

        params = {"catalog": self._catalog_name, "namespace": encoded, "name": name}

        def work(connection: Connection, layout: TableLayout) -> TablePointer:
            row = connection.execute(layout.pointer_statement(kind.record_type), params).first()
            if row is None:
                raise kind.missing(f"{kind.word} {encoded}.{name} does not exist")
            return TablePointer(
                metadata_location=_present_location(row[0], encoded, name),
                previous_metadata_location=row[1],
            )

        return self._transaction(work, write=False, action=f"load {kind.word} {encoded}.{name}")

    def _row_exists(self, kind: _Kind, namespace: str | Sequence[str], name: str) -> bool:
        encoded = namespace_to_string(namespace)
        validate_name(name)
        return self._transaction(
            lambda connection, layout: bool(
                connection.execute(
                    select(exists().where(*self._row(kind, encoded, name, layout)))
                ).scalar()
            ),
            write=False,
            action=f"check {kind.word} {encoded}.{name}",
        )

    def _list_rows(self, kind: _Kind, namespace: str | Sequence[str]) -> list[str]:
        encoded = namespace_to_string(namespace)

        def work(connection: Connection, layout: TableLayout) -> list[str]:
            self._require_namespace(connection, encoded)
            names = connection.execute(
                select(_TABLES.table_name).where(
                    _TABLES.catalog_name == self._catalog_name,
                    _TABLES.table_namespace == encoded,
                    *layout.filters(kind.record_type),
                )
            ).scalars()
            return sorted(names)

        return self._transaction(work, write=False, action=f"list {kind.word}s in {encoded!r}")

    def _rename_row(
        self,
        kind: _Kind,
        source_namespace: str | Sequence[str],
        source_name: str,
        target_namespace: str | Sequence[str],
        target_name: str,
    ) -> None:
        source = namespace_to_string(source_namespace)
        target = namespace_to_string(target_namespace)
        validate_name(source_name)
        validate_name(target_name)

        def work(connection: Connection, layout: TableLayout) -> None:
            source_row = self._row(kind, source, source_name, layout)
            if not connection.execute(select(exists().where(*source_row))).scalar():
                raise kind.missing(f"{kind.word} {source}.{source_name} does not exist")
            self._require_namespace(connection, target)
            if (source, source_name) == (target, target_name):
                return
            try:
                result = connection.execute(
                    update(ICEBERG_TABLES)
                    .where(*source_row)
                    .values(table_namespace=target, table_name=target_name)
                )
            except IntegrityError as exc:
                if is_unique_violation(exc):
                    raise _NameTaken() from exc
                raise
            if result.rowcount != 1:  # dropped concurrently (PostgreSQL, READ COMMITTED)
                raise kind.missing(f"{kind.word} {source}.{source_name} does not exist")

        try:
            self._transaction(
                work,
                write=True,
                action=f"rename {kind.word} {source}.{source_name} to {target}.{target_name}",
            )
        except _NameTaken as taken:
            raise kind.taken(self._taken_message(target, target_name)) from taken.__cause__

    def _drop_row(self, kind: _Kind, namespace: str | Sequence[str], name: str) -> str:
        encoded = namespace_to_string(namespace)
        validate_name(name)

        def work(connection: Connection, layout: TableLayout) -> str:
            row_clauses = self._row(kind, encoded, name, layout)
            # FOR UPDATE (PostgreSQL) so the location returned is the one deleted even if a
            # commit races the drop; SQLite's BEGIN IMMEDIATE already excludes other writers.
            row = connection.execute(
                select(_TABLES.metadata_location).where(*row_clauses).with_for_update()
            ).first()
            if row is None:
                raise kind.missing(f"{kind.word} {encoded}.{name} does not exist")
            location = _present_location(row[0], encoded, name)
            connection.execute(delete(ICEBERG_TABLES).where(*row_clauses))
            return location

        return self._transaction(work, write=True, action=f"drop {kind.word} {encoded}.{name}")

    # -- the compare-and-swap --------------------------------------------------------------

    def swap_metadata_location(
        self, namespace: str | Sequence[str], name: str, *, expected: str, new: str
    ) -> None:
        """Atomically move the table's pointer from ``expected`` to ``new``.

        Returns normally: committed. CommitFailed (the pointer is no longer ``expected``),
        NoSuchTable (the table is gone), CatalogUnavailable (not reached, or busy through every
        retry) and its CatalogRefused kinds (refused): definitely not committed.
        CommitStateUnknown: the connection was lost with the UPDATE in flight or the COMMIT
        failed, so it may have committed; delete nothing and check the pointer. The module
        docstring has the full contract.
        """
        self._swap(_TABLE, namespace, name, expected=expected, new=new)

    def _swap(
        self, kind: _Kind, namespace: str | Sequence[str], name: str, *, expected: str, new: str
    ) -> None:
        encoded = namespace_to_string(namespace)
        validate_name(name)
        _check_location(expected, what="expected")
        _check_location(new, what="new")
        params = {
            "catalog": self._catalog_name,
            "namespace": encoded,
            "name": name,
            "expected": expected,
            "new": new,
        }

        def work(connection: Connection, layout: TableLayout) -> None:
            rowcount = connection.execute(layout.swap_statement(kind.record_type), params).rowcount
            if rowcount != 1:
                raise _SwapMissed(rowcount)  # the runner rolls back: never committed

        action = f"commit {kind.word} {encoded}.{name}"
        try:
            self._transaction(work, write=True, action=action, ambiguous_commit=True)
        except _SwapMissed as missed:
            self._raise_lost_swap(kind, encoded, name, expected, missed.rowcount)
        logger.debug(
            "swapped metadata pointer",
            extra={kind.word: f"{encoded}.{name}", "expected": expected, "new": new},
        )

    def _raise_lost_swap(
        self, kind: _Kind, encoded: str, name: str, expected: str, rowcount: int
    ) -> NoReturn:
        """Raise the right 'definitely not committed' error for an UPDATE that missed."""
        if rowcount > 1:
            raise CatalogUnavailable(
                f"the commit of {encoded}.{name} matched {rowcount} rows; the catalog table's "
                "primary key is broken (rolled back, nothing committed)"
            ) from None
        try:
            current = self._get_pointer(kind, encoded, name).metadata_location
        except kind.missing as exc:
            raise exc from None
        except (CatalogUnavailable, CorruptMetadata) as exc:
            raise CommitFailed(
                f"commit of {encoded}.{name} lost: its metadata location is no longer "
                f"{expected!r} (reading the current one failed: {exc})"
            ) from exc
        raise CommitFailed(
            f"commit of {encoded}.{name} lost: expected metadata location {expected!r}, "
            f"the catalog has {current!r}"
        ) from None

    # -- transactions ----------------------------------------------------------------------

    def _table_layout(self) -> TableLayout:
        layout = self._layout
        if layout is not None:
            return layout
        with self._layout_lock:
            if self._layout is None:
                self._layout = self._prepare_layout()
            return self._layout

    def _prepare_layout(self) -> TableLayout:
        def work(connection: Connection) -> TableLayout:
            return prepare_tables(connection, create=self._create_schema)

        action = "prepare the catalog tables"
        try:
            return self._runner.run(work, write=True, action=action)
        except CatalogUnavailable:
            # Another process may have created the tables at the same moment (PostgreSQL
            # reports the loser's CREATE as an error); one more look settles it.
            return self._runner.run(work, write=True, action=action)

    def _transaction(
        self,
        work: Callable[[Connection, TableLayout], T],
        *,
        write: bool,
        action: str,
        ambiguous_commit: bool = False,
    ) -> T:
        layout = self._table_layout()
        result: T = self._runner.run(
            lambda connection: work(connection, layout),
            write=write,
            action=action,
            ambiguous_commit=ambiguous_commit,
        )
        return result

    # -- statement helpers -----------------------------------------------------------------

    def _require_namespace(self, connection: Connection, encoded: str) -> None:
        if not ns_rows.namespace_exists(connection, self._catalog_name, encoded):
            raise NoSuchNamespace(f"namespace {encoded!r} does not exist")

    def _require_absent_namespace(self, connection: Connection, encoded: str) -> None:
        if ns_rows.namespace_exists(connection, self._catalog_name, encoded):
            raise NamespaceAlreadyExists(f"namespace {encoded!r} already exists")

    def _row(
        self, kind: _Kind, encoded: str, name: str, layout: TableLayout
    ) -> tuple[ColumnElement[bool], ...]:
        return (
            _TABLES.catalog_name == self._catalog_name,
            _TABLES.table_namespace == encoded,
            _TABLES.table_name == name,
            *layout.filters(kind.record_type),
        )


def _present_location(location: str | None, encoded: str, name: str) -> str:
    if location is None:
        raise CorruptMetadata(f"table {encoded}.{name} has no metadata location in the catalog")
    return location


def _check_location(location: str, *, what: str) -> None:
    if not isinstance(location, str) or not location:
        raise ValidationError(f"{what} must be a non-empty string, got {location!r}")
    if len(location) > MAX_LOCATION_LENGTH:
        raise ValidationError(
            f"{what} is {len(location)} characters long; the catalog stores at most "
            f"{MAX_LOCATION_LENGTH}"
        )
