"""The catalog's two tables, exactly as Iceberg's JDBC catalog and pyiceberg's SqlCatalog make them.

``iceberg_tables`` holds one row per table (or view) with its current metadata pointer;
``iceberg_namespace_properties`` one row per namespace property. Iceberg Java created
``iceberg_tables`` without ``iceberg_type`` before it supported views (its "V0" schema); such a
database is used as it is: :func:`prepare_tables` reports whether the column exists and every
statement leaves it out when it does not. New databases get the V1 schema.

Rows are shared with other implementations, so lakecat writes what they write: tables get
``iceberg_type = 'TABLE'``, views ``'VIEW'`` (rows without a type are tables from V0 writers; a V0
database has no views), and a namespace is created by inserting its properties plus
``exists = 'true'``. A table and a view share the primary key, so one name is one or the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    MetaData,
    Select,
    String,
    Table,
    Update,
    bindparam,
    false,
    inspect,
    or_,
    select,
    update,
)

from lakecat.metadata.errors import CatalogRefused

__all__ = [
    "ICEBERG_TABLES",
    "MAX_LOCATION_LENGTH",
    "MAX_PROPERTY_KEY_LENGTH",
    "MAX_PROPERTY_VALUE_LENGTH",
    "NAMESPACE_EXISTS_PROPERTY",
    "NAMESPACE_PROPERTIES",
    "TABLE_RECORD_TYPE",
    "VIEW_RECORD_TYPE",
    "TableLayout",
    "prepare_tables",
]

NAMESPACE_EXISTS_PROPERTY = "exists"
"""Reserved property that Java and lakecat insert so that a namespace exists without tables."""

TABLE_RECORD_TYPE = "TABLE"
VIEW_RECORD_TYPE = "VIEW"
MAX_LOCATION_LENGTH = 1000
MAX_PROPERTY_KEY_LENGTH = 255
MAX_PROPERTY_VALUE_LENGTH = 1000

_METADATA = MetaData()

ICEBERG_TABLES = Table(
    "iceberg_tables",
    _METADATA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("table_namespace", String(255), primary_key=True, nullable=False),
    Column("table_name", String(255), primary_key=True, nullable=False),
    Column("metadata_location", String(MAX_LOCATION_LENGTH), nullable=True),
    Column("previous_metadata_location", String(MAX_LOCATION_LENGTH), nullable=True),
    Column("iceberg_type", String(5), nullable=True),
)

NAMESPACE_PROPERTIES = Table(
    "iceberg_namespace_properties",
    _METADATA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("namespace", String(255), primary_key=True, nullable=False),
    Column("property_key", String(MAX_PROPERTY_KEY_LENGTH), primary_key=True, nullable=False),
    Column("property_value", String(MAX_PROPERTY_VALUE_LENGTH), nullable=True),
)


@dataclass(frozen=True)
class TableLayout:
    """What this database's ``iceberg_tables`` looks like, and the statements built for it.

    The two statements on every commit's path (read the pointer, swap it) are built once per
    record type (table, view) with bind parameters, so a commit spends no time constructing
    SQL.
    """

    has_iceberg_type: bool

    def filters(self, record_type: str) -> tuple[ColumnElement[bool], ...]:
        """WHERE clauses that keep the rows of ``record_type``: tables (also the rows of V0
        writers, which have no type; no clause at all on a V0 schema) or views."""
        return self.table_filters if record_type == TABLE_RECORD_TYPE else self.view_filters

    @cached_property
    def table_filters(self) -> tuple[ColumnElement[bool], ...]:
        """WHERE clauses that keep table rows (not views); empty on a V0 schema."""
        if not self.has_iceberg_type:
            return ()
        column = ICEBERG_TABLES.c.iceberg_type
        return (or_(column == TABLE_RECORD_TYPE, column.is_(None)),)

    @cached_property
    def view_filters(self) -> tuple[ColumnElement[bool], ...]:
        """WHERE clauses that keep view rows; on a V0 schema, a clause no row matches."""
        if not self.has_iceberg_type:
            return (false(),)
        return (ICEBERG_TABLES.c.iceberg_type == VIEW_RECORD_TYPE,)

    def pointer_statement(
        self, record_type: str = TABLE_RECORD_TYPE
    ) -> Select[str | None, str | None]:
        """SELECT of a table's (or view's) two locations, parameters ``catalog, namespace,
        name``."""
        return self._statements[record_type][0]

    def swap_statement(self, record_type: str = TABLE_RECORD_TYPE) -> Update:
        """The compare-and-swap UPDATE, parameters ``catalog, namespace, name, expected,
        new``."""
        return self._statements[record_type][1]

    @cached_property
    def _statements(self) -> dict[str, tuple[Select[str | None, str | None], Update]]:
        t = ICEBERG_TABLES.c
        out = {}
        for record_type in (TABLE_RECORD_TYPE, VIEW_RECORD_TYPE):
            row = (
                t.catalog_name == bindparam("catalog"),
                t.table_namespace == bindparam("namespace"),
                t.table_name == bindparam("name"),
                *self.filters(record_type),
            )
            pointer = select(t.metadata_location, t.previous_metadata_location).where(*row)
            swap = (
                update(ICEBERG_TABLES)
                .where(*row, t.metadata_location == bindparam("expected"))
                .values(
                    metadata_location=bindparam("new"),
                    previous_metadata_location=bindparam("expected"),
                )
            )
            out[record_type] = (pointer, swap)
        return out


def prepare_tables(connection: Connection, *, create: bool) -> TableLayout:
    """Create the catalog tables that are missing (if ``create``) and detect the layout.

    Runs inside the caller's transaction. Raises CatalogRefused if a table is missing and
    ``create`` is false.
    """
    inspector = inspect(connection)
    missing = [t for t in (ICEBERG_TABLES, NAMESPACE_PROPERTIES) if not inspector.has_table(t.name)]
    if missing:
        if not create:
            names = ", ".join(t.name for t in missing)
            raise CatalogRefused(f"the catalog database has no {names} table (create_schema=False)")
        _METADATA.create_all(connection, tables=missing)
    # A fresh inspector: the first one cached the column list from before any CREATE.
    columns = {
        column["name"].lower() for column in inspect(connection).get_columns(ICEBERG_TABLES.name)
    }
    return TableLayout(has_iceberg_type="iceberg_type" in columns)
