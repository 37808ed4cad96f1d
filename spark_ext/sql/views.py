"""Spark views as Iceberg views: what the plugin's ``ViewCatalog`` methods store and load.

A Spark view (``CREATE VIEW lake.db.v AS SELECT ...``) is kept as Iceberg's Spark runtime keeps
it, so that either engine reads the other's views:

* the query text as the version's ``spark`` SQL representation;
* Spark's current catalog and namespace as the version's default catalog and namespace (the
  names the query leaves unqualified resolve against them); no default catalog when the
  current one is the view's own, so that the view moves with its catalog's name;
* the view's schema (the query's columns under the view's column names, with their comments as
  field docs);
* the query's own column names in the property ``spark.query-column-names``, which Spark uses
  to map the query's output onto the view's columns;
* the other properties as they are (``comment``, ``owner``, ...), except Spark's reserved
  ``provider``, ``table_type`` and ``location`` (the latter is the view's location), plus
  Iceberg's ``create_engine_version`` and ``engine_version`` (``Spark 4.3.0``).

Spark's ``WITH SCHEMA`` mode, unless it is Spark 4's default (``COMPENSATION``), is kept in
``spark.view-schema-mode`` (Iceberg has no field for it). Spark 4.3 cannot sync the schema of
a ``WITH SCHEMA EVOLUTION`` view that is not in its session catalog: once the query's columns
change, reading such a view fails (``FAILED_UPDATE_VIEW_SCHEMA``) until it is replaced. The
SQL settings Spark captures with a view are not kept, as in Iceberg's runtime.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql.types import ArrayType, DataType, MapType, StructType, VariantType

from lakecat.catalog import Catalog, View
from lakecat.metadata.errors import UnsupportedFeature
from lakecat.spark_ext.types import spark_schema, table_schema

QUERY_COLUMN_NAMES = "spark.query-column-names"
SCHEMA_MODE = "spark.view-schema-mode"
DEFAULT_SCHEMA_MODE = "COMPENSATION"  # Spark 4's, when a view says nothing
CREATE_ENGINE_VERSION, ENGINE_VERSION = "create_engine_version", "engine_version"
_LOCATION = "location"
# Spark's reserved properties (and Iceberg's, which a load adds back)
_NOT_STORED = frozenset(
    {"provider", _LOCATION, "table_type", "format-version", QUERY_COLUMN_NAMES, SCHEMA_MODE}
)
DIALECT = "spark"


def view_descriptor(view: View, catalog_name: str) -> dict[str, Any]:
    """What the plugin builds Spark's ``View`` from."""
    version = view.current_version
    query = version.sql_for(DIALECT)
    if query is None:
        dialects = sorted(r.dialect for r in version.representations)
        raise UnsupportedFeature(
            f"view {view.name} has no query in Spark's dialect (it has: {', '.join(dialects)})"
        )
    schema = spark_schema(view.schema(), comments=True)
    names = view.properties.get(QUERY_COLUMN_NAMES, "")
    properties = {k: v for k, v in view.properties.items() if k not in _NOT_STORED}
    return {
        "sql": query.sql,
        "current_catalog": version.default_catalog or catalog_name,
        "current_namespace": list(version.default_namespace),
        "schema": schema.json(),
        "query_column_names": names.split(",") if names else [],
        "properties": {
            **properties,
            "provider": "iceberg",
            _LOCATION: view.location,
            "format-version": str(view.metadata.format_version),
        },
        "schema_mode": view.properties.get(SCHEMA_MODE),
    }


def view_definition(
    *,
    catalog_name: str,
    spark_version: str,
    sql: str,
    current_catalog: str | None,
    current_namespace: Sequence[str],
    schema: str,
    query_column_names: Sequence[str],
    properties: Mapping[str, str],
    schema_mode: str | None = None,
) -> dict[str, Any]:
    """The keyword arguments of :meth:`Catalog.create_view` for a Spark view stored in the
    Spark catalog ``catalog_name``."""
    spark_type = StructType.fromJson(json.loads(schema))
    _refuse_variants(spark_type, "")
    iceberg = table_schema(spark_type)
    stored = {k: v for k, v in properties.items() if k not in _NOT_STORED}
    stored[CREATE_ENGINE_VERSION] = stored[ENGINE_VERSION] = f"Spark {spark_version}"
    stored[QUERY_COLUMN_NAMES] = ",".join(query_column_names)
    if schema_mode and schema_mode != DEFAULT_SCHEMA_MODE:
        stored[SCHEMA_MODE] = schema_mode
    return {
        "sql": {DIALECT: sql},
        "schema": iceberg,
        "default_namespace": tuple(current_namespace),
        "default_catalog": None if current_catalog == catalog_name else current_catalog,
        "properties": stored,
        "location": properties.get(_LOCATION),
    }


def spark_summary(spark_version: str) -> dict[str, str]:
    """A version's summary, as Iceberg's Spark runtime writes its engine's."""
    return {"engine-name": "spark", "engine-version": spark_version}


def store_view(
    catalog: Catalog,
    identifier: Sequence[str],
    definition: Mapping[str, Any],
    *,
    summary: Mapping[str, str],
    mode: str,
) -> View:
    """Create (``mode`` "create"), replace ("replace") or create or replace
    ("create_or_replace") a view with a :func:`view_definition`.

    Spark replaces a view (``ALTER VIEW ... AS``, ``SET`` / ``UNSET TBLPROPERTIES``, ``WITH
    SCHEMA``) with the whole view it loaded, changed: its properties become the ones given
    (``UNSET`` removes). ``CREATE OR REPLACE VIEW`` sets its properties on top of the view's,
    as Iceberg's runtime does. A replacement keeps the view's location."""
    args = dict(definition)
    location = args.pop("location")
    if mode == "create":
        return catalog.create_view(identifier, location=location, summary=summary, **args)
    if mode == "replace":
        view = catalog.load_view(identifier)
        gone = [k for k in view.properties if k not in args["properties"]]
        return view.replace(summary=summary, remove_properties=gone, **args)
    return catalog.create_or_replace_view(identifier, summary=summary, **args)


def _refuse_variants(t: DataType, path: str) -> None:
    """A ``variant`` column is refused: lakecat has no Iceberg v3 variant type (Arrow would
    turn it into a struct of two binaries, which Spark then cannot read the view as)."""
    if isinstance(t, VariantType):
        raise UnsupportedFeature(
            f"view column {path!r} has type variant, which lakecat cannot store in a view's "
            "schema; cast it (to_json(...)) in the view's query"
        )
    if isinstance(t, StructType):
        for f in t.fields:
            _refuse_variants(f.dataType, f"{path}.{f.name}" if path else f.name)
    elif isinstance(t, ArrayType):
        _refuse_variants(t.elementType, f"{path}.element")
    elif isinstance(t, MapType):
        _refuse_variants(t.keyType, f"{path}.key")
        _refuse_variants(t.valueType, f"{path}.value")
