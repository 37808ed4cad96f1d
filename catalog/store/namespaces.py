"""Namespace rows as the JDBC catalog keeps them: existence, children and property statements.

A nested namespace is stored as its levels joined with dots (``"a.b"``). A namespace exists if
any property row or any table row has that namespace or one nested inside it (``"a"`` exists
when only ``"a.b"`` has rows), and its children are derived from both tables, as Iceberg Java's
``JdbcCatalog`` and pyiceberg's ``SqlCatalog`` do. Nesting is matched with ``LIKE 'a.b.%'``
with ``_``, ``%`` and the escape character ``!`` escaped, so names containing them match only
themselves.

The functions run inside the caller's transaction on a SQLAlchemy connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import ColumnElement, Connection, delete, exists, insert, or_, select, union, update

from lakecat.catalog.identifiers import Identifier, namespace_from_string
from lakecat.catalog.store.tables import (
    ICEBERG_TABLES,
    MAX_PROPERTY_KEY_LENGTH,
    MAX_PROPERTY_VALUE_LENGTH,
    NAMESPACE_EXISTS_PROPERTY,
    NAMESPACE_PROPERTIES,
)
from lakecat.metadata.errors import ValidationError

__all__ = [
    "check_property_key",
    "checked_properties",
    "child_namespaces",
    "delete_properties",
    "fetch_properties",
    "has_child_namespaces",
    "has_table_rows",
    "insert_properties",
    "namespace_exists",
    "update_property",
]

_TABLES = ICEBERG_TABLES.c
_PROPS = NAMESPACE_PROPERTIES.c


def namespace_exists(connection: Connection, catalog: str, encoded: str) -> bool:
    """True if a property or table row has namespace ``encoded`` or one nested in it."""
    return _any_row(connection, catalog, encoded, include_self=True)


def has_child_namespaces(connection: Connection, catalog: str, encoded: str) -> bool:
    """True if a property or table row has a namespace nested in ``encoded``."""
    return _any_row(connection, catalog, encoded, include_self=False)


def has_table_rows(connection: Connection, catalog: str, encoded: str) -> bool:
    """True if a table or view lives directly in namespace ``encoded``."""
    query = select(
        exists().where(_TABLES.catalog_name == catalog, _TABLES.table_namespace == encoded)
    )
    return bool(connection.execute(query).scalar())


def child_namespaces(connection: Connection, catalog: str, parent: Identifier) -> list[Identifier]:
    """The direct children of ``parent`` (top-level namespaces for ``()``), sorted.

    Stored namespaces with an empty level (other writers may store ``""``) are skipped.
    """
    table_query = select(_TABLES.table_namespace).where(_TABLES.catalog_name == catalog)
    property_query = select(_PROPS.namespace).where(_PROPS.catalog_name == catalog)
    if parent:
        encoded = ".".join(parent)
        table_query = table_query.where(_nested_in(_TABLES.table_namespace, encoded))
        property_query = property_query.where(_nested_in(_PROPS.namespace, encoded))
    depth = len(parent) + 1
    children: set[Identifier] = set()
    for stored in connection.execute(union(table_query, property_query)).scalars():
        parts = namespace_from_string(stored)[:depth]
        if len(parts) == depth and parts[:-1] == parent and all(parts):
            children.add(parts)
    return sorted(children)


def fetch_properties(connection: Connection, catalog: str, encoded: str) -> dict[str, str]:
    """All property rows of the namespace, the reserved ``exists`` row included."""
    rows = connection.execute(
        select(_PROPS.property_key, _PROPS.property_value).where(*_rows_of(catalog, encoded))
    )
    # Java's schema allows NULL values; pyiceberg's does not. Read NULL as "".
    return {key: value if value is not None else "" for key, value in rows}


def insert_properties(
    connection: Connection, catalog: str, encoded: str, properties: Mapping[str, str]
) -> None:
    if not properties:
        return
    connection.execute(
        insert(NAMESPACE_PROPERTIES),
        [
            {
                "catalog_name": catalog,
                "namespace": encoded,
                "property_key": key,
                "property_value": value,
            }
            for key, value in properties.items()
        ],
    )


def update_property(
    connection: Connection, catalog: str, encoded: str, key: str, value: str
) -> None:
    connection.execute(
        update(NAMESPACE_PROPERTIES)
        .where(*_rows_of(catalog, encoded), _PROPS.property_key == key)
        .values(property_value=value)
    )


def delete_properties(
    connection: Connection, catalog: str, encoded: str, keys: Iterable[str] | None = None
) -> None:
    """Delete the namespace's rows with ``keys``, or all of its rows when ``keys`` is None."""
    statement = delete(NAMESPACE_PROPERTIES).where(*_rows_of(catalog, encoded))
    if keys is not None:
        statement = statement.where(_PROPS.property_key.in_(list(keys)))
    connection.execute(statement)


def check_property_key(key: str) -> None:
    """ValidationError unless ``key`` fits the catalog table and is not the reserved one."""
    if not isinstance(key, str) or not key or len(key) > MAX_PROPERTY_KEY_LENGTH:
        raise ValidationError(
            f"property keys must be 1 to {MAX_PROPERTY_KEY_LENGTH} characters: {key!r}"
        )
    if key == NAMESPACE_EXISTS_PROPERTY:
        raise ValidationError(f"{key!r} is a reserved namespace property")


def checked_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``properties`` after checking every key and value; ValidationError if bad."""
    checked: dict[str, str] = {}
    for key, value in properties.items():
        check_property_key(key)
        if not isinstance(value, str) or len(value) > MAX_PROPERTY_VALUE_LENGTH:
            raise ValidationError(
                f"property {key!r} must be a string of at most {MAX_PROPERTY_VALUE_LENGTH} "
                "characters"
            )
        checked[key] = value
    return checked


def _rows_of(catalog: str, encoded: str) -> tuple[ColumnElement[bool], ...]:
    return (_PROPS.catalog_name == catalog, _PROPS.namespace == encoded)


def _nested_in(column: Any, encoded: str) -> ColumnElement[bool]:
    """``column`` names a namespace nested (at any depth) in namespace ``encoded``."""
    escaped = encoded.replace("!", "!!").replace("_", "!_").replace("%", "!%")
    clause: ColumnElement[bool] = column.like(escaped + ".%", escape="!")
    return clause


def _any_row(connection: Connection, catalog: str, encoded: str, *, include_self: bool) -> bool:
    def matching(column: Any) -> ColumnElement[bool]:
        nested = _nested_in(column, encoded)
        return or_(column == encoded, nested) if include_self else nested

    query = select(
        or_(
            exists().where(_TABLES.catalog_name == catalog, matching(_TABLES.table_namespace)),
            exists().where(_PROPS.catalog_name == catalog, matching(_PROPS.namespace)),
        )
    )
    return bool(connection.execute(query).scalar())
