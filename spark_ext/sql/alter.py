"""``ALTER TABLE`` from Spark: column changes as one schema update, property changes.

Spark sends one statement's changes together. Column changes (add, rename, drop, type,
nullability, comment, position, default) become one lakecat schema update, validated change
by change before anything is committed; ``SET/UNSET TBLPROPERTIES`` become property commits.
A statement never mixes the two; a caller that does gets a :class:`UnsupportedByCatalog`
error before anything is changed, so that every statement is all or nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from lakecat.catalog import Table
from lakecat.metadata.schema import BinaryType, DecimalType, FixedType, IcebergType
from lakecat.spark_ext.sql.convert import UnsupportedByCatalog, iceberg_type, spark_data_type

_PROPERTY_CHANGES = frozenset({"SetProperty", "RemoveProperty"})
_LOCATION = "location"  # Spark's reserved property for a table's location


_COLUMN_CHANGES = frozenset(
    {
        "AddColumn",
        "RenameColumn",
        "DeleteColumn",
        "UpdateColumnType",
        "UpdateColumnNullability",
        "UpdateColumnComment",
        "UpdateColumnDefaultValue",
        "UpdateColumnPosition",
    }
)
# what to use instead of the changes Spark offers that Iceberg tables do not have
_INSTEAD = {
    "ClusterBy": "lakecat tables are partitioned (ADD PARTITION FIELD) and sorted (WRITE "
    "ORDERED BY) instead",
}


def alter_table(table: Table, changes: Sequence[Mapping[str, Any]]) -> None:
    for change in changes:
        kind = change["change"]
        if kind not in _PROPERTY_CHANGES | _COLUMN_CHANGES:
            instead = _INSTEAD.get(kind)
            raise UnsupportedByCatalog(
                f"ALTER TABLE change {kind} is not supported" + (f": {instead}" if instead else "")
            )
    properties = [c for c in changes if c["change"] in _PROPERTY_CHANGES]
    columns = [c for c in changes if c["change"] not in _PROPERTY_CHANGES]
    if properties and columns:
        raise UnsupportedByCatalog(
            "change the columns and the table properties in separate ALTER TABLE statements"
        )
    if columns:
        with table.update_schema() as update:
            for change in columns:
                _column_change(update, table, change)
        return
    updates = {c["key"]: c["value"] for c in properties if c["change"] == "SetProperty"}
    removals = [c["key"] for c in properties if c["change"] == "RemoveProperty"]
    location = updates.pop(_LOCATION, None)  # ALTER TABLE ... SET LOCATION: not a property
    if location is not None:
        if updates or removals:
            raise UnsupportedByCatalog(
                "set the location and the table properties in separate ALTER TABLE statements"
            )
        table.set_location(location)
    if updates:
        table.set_properties(updates)
    if removals:
        table.remove_properties(*removals)


def _column_change(update: Any, table: Table, change: Mapping[str, Any]) -> None:
    kind = change["change"]
    path: list[str] = list(change["column"])
    name = ".".join(path)
    parent = ".".join(path[:-1])
    if kind == "AddColumn":
        first, after = _position(change.get("position"), parent)
        field_type = iceberg_type(spark_data_type(change["type"]))
        update.add_column(
            tuple(path),
            field_type,
            doc=change.get("comment"),
            required=not change["nullable"],
            first=first,
            after=after,
            default=_default(name, field_type, change.get("default")),
        )
    elif kind == "RenameColumn":
        update.rename_column(name, change["new_name"])
    elif kind == "DeleteColumn":
        if change.get("if_exists") and not table.schema().has_field(name):
            return
        update.delete_column(name)
    elif kind == "UpdateColumnType":
        update.update_column(name, field_type=iceberg_type(spark_data_type(change["type"])))
    elif kind == "UpdateColumnNullability":
        update.update_column(name, required=not change["nullable"])
    elif kind == "UpdateColumnComment":
        update.update_column(name, doc=change["comment"])
    elif kind == "UpdateColumnDefaultValue":
        field_type = table.schema().find_field(name).field_type
        update.update_column_default(name, _default(name, field_type, change["default"]))
    elif kind == "UpdateColumnPosition":
        first, after = _position(change.get("position"), parent)
        if first:
            update.move_first(name)
        elif after is not None:
            update.move_after(name, after)
    else:  # alter_table checked every kind first
        raise AssertionError(f"unexpected ALTER TABLE change {kind}")


def _default(name: str, field_type: IcebergType, default: Mapping[str, Any] | None) -> Any:
    """A default Spark analyzed (``SparkJson.defaultValue``) as a value of ``field_type``
    :meth:`SchemaUpdate.add_column` takes; None for none."""
    if default is None:
        return None
    if default.get("unknown"):
        raise UnsupportedByCatalog(
            f"the default of {name!r} must be a constant (a literal, or an expression of them)"
        )
    value = default["value"]
    if value is None:
        raise UnsupportedByCatalog(f"the default of {name!r} cannot be NULL (leave it out)")
    if isinstance(field_type, BinaryType | FixedType):
        return bytes.fromhex(value)
    if isinstance(field_type, DecimalType):
        return Decimal(value)
    return value


def _position(position: str | None, parent: str) -> tuple[bool, str | None]:
    """(first, after column) from ``"first"`` / ``"after:<sibling>"`` / None."""
    if position is None:
        return False, None
    if position == "first":
        return True, None
    sibling = position.removeprefix("after:")
    return False, f"{parent}.{sibling}" if parent else sibling
