"""lakecat as a Spark SQL catalog: ``spark.sql.catalog.<name>``, set up from Python.

>>> import lakecat.spark_ext as lk
>>> spark = lk.session("lake", catalog_url="sqlite:///lake/catalog.db",
...                    warehouse="lake/warehouse").master("local[2]").getOrCreate()
>>> spark.sql("SELECT * FROM lake.db.events VERSION AS OF 42")

Spark finds a catalog by the JVM class its configuration names, so the catalog is a small Java
plugin (shipped precompiled, rebuilt when it does not fit: :mod:`lakecat.spark_ext.sql.jar`) on
the driver's classpath that
forwards every call through Py4J to a :class:`~lakecat.spark_ext.sql.bridge.CatalogBridge`
in this Python process. :func:`attach_catalog` connects the two in a running session: it
registers lakecat's data source and metadata table source for the catalog, starts PySpark's
callback server and hands the bridge to the JVM under the catalog's name. :func:`session`
returns a builder that puts the jar on the classpath and attaches the catalog in
``getOrCreate()``.
"""

from __future__ import annotations

import os
from typing import Any

from lakecat.catalog import Catalog
from lakecat.metadata.errors import ValidationError
from lakecat.spark_ext.settings import CATALOG_PLUGIN, CatalogSettings
from lakecat.spark_ext.source.datasource import register
from lakecat.spark_ext.sql.bridge import CatalogBridge
from lakecat.spark_ext.sql.jar import SparkCatalogError, catalog_jar
from lakecat.spark_ext.sql.metadata_tables import metadata_source

CATALOG_CLASS = CATALOG_PLUGIN
BRIDGES_CLASS = "lakecat.spark.Bridges"


EXTENSIONS_CONF = "spark.sql.extensions"
EXTENSIONS_CLASS = "lakecat.spark.LakecatSqlExtensions"


def with_extensions(builder: Any) -> str:
    """The session's ``spark.sql.extensions`` with lakecat's SQL extensions added (Iceberg's
    ``ALTER TABLE ... CREATE BRANCH`` / ``ADD PARTITION FIELD`` statements; docs/spark-sql.md),
    keeping extensions the builder was given."""
    options = getattr(builder, "_options", {})  # PySpark's builder keeps its settings here
    given = [e.strip() for e in str(options.get(EXTENSIONS_CONF, "")).split(",") if e.strip()]
    return ",".join([*[e for e in given if e != EXTENSIONS_CLASS], EXTENSIONS_CLASS])


def data_format(name: str) -> str:
    """The data source format serving the tables of the Spark catalog ``name``."""
    return f"lakecat_catalog_{name}"


def attach_catalog(
    spark: Any,
    name: str = "lake",
    *,
    catalog: Catalog | None = None,
    catalog_url: str | None = None,
    warehouse: str | None = None,
    filter_pushdown: bool = False,
) -> CatalogBridge:
    """Serve the Spark catalog ``name`` from a lakecat catalog in this session.

    The catalog plugin's jar must be on the driver's classpath (:func:`session` does that;
    else ``spark.driver.extraClassPath`` = :func:`lakecat.spark_ext.catalog_jar`). Sets
    ``spark.sql.catalog.<name>``, registers the data sources the catalog's tables read and
    write through, ships the jar to the executors (:func:`ship_jar_to_executors`) and hands the
    JVM the Python bridge. Attaching again (another catalog under the same name) replaces the
    bridge. ``filter_pushdown`` is :func:`register`'s.
    """
    if not name or not name.replace("_", "").isalnum():
        raise ValidationError(f"a Spark catalog name is letters, digits and _, not {name!r}")
    if catalog is None:
        if not (catalog_url and warehouse):
            raise ValidationError(
                "attach_catalog needs a catalog, or its catalog_url and warehouse"
            )
        catalog = Catalog(catalog_url, warehouse=warehouse)
    jvm = spark.sparkContext._jvm
    bridges = _bridges_class(jvm)
    fmt = data_format(name)
    register(spark, catalog=catalog, format_name=fmt, filter_pushdown=filter_pushdown)
    spark.dataSource.register(metadata_source(CatalogSettings.of_catalog(catalog), f"{fmt}_meta"))
    bridge = CatalogBridge(
        catalog, name=name, data_format=fmt, metadata_format=f"{fmt}_meta", spark=spark
    )
    ship_jar_to_executors(spark)
    _start_callback_server(spark)
    bridges.register(name, bridge, spark._jsparkSession)
    spark.conf.set(f"spark.sql.catalog.{name}", CATALOG_CLASS)
    return bridge


def _bridges_class(jvm: Any) -> Any:
    from py4j.java_gateway import JavaClass

    bridges = jvm
    for part in BRIDGES_CLASS.split("."):
        bridges = getattr(bridges, part)
    if not isinstance(bridges, JavaClass):  # py4j answers unknown classes with a JavaPackage
        raise SparkCatalogError(
            f"the lakecat catalog classes are not on this Spark driver's classpath: the JVM "
            f"was started without them. Create the session with lakecat.spark_ext.session(...), "
            f"or set spark.driver.extraClassPath={catalog_jar()} before the first SparkSession "
            "of the process"
        )
    return bridges


def ship_jar_to_executors(spark: Any) -> None:
    """Add the plugin's jar to the jars the application's executors load, once.

    The executors run some of the plugin's classes: the wrappers of Spark's Parquet reader
    (columns reordered, deleted positions dropped, row lineage assigned) and the writers of
    merge-on-read row-level statements. On ``local`` masters the executors share the driver's
    classpath; on a cluster they fetch the jar from the driver (``SparkContext.addJar``, as
    ``spark.jars`` does), before the tasks that need it. Spark keeps one jar per file name,
    so a jar of that name already added is left as it is.
    """
    jar = catalog_jar()
    context = spark.sparkContext._jsc.sc()
    name = os.path.basename(jar)
    added = str(context.listJars().mkString("\n")).split("\n")  # a Scala Seq of URLs
    if any(url.rsplit("/", 1)[-1] == name for url in added if url):
        return
    context.addJar(jar)


def _start_callback_server(spark: Any) -> None:
    """PySpark's Py4J callback server, through which the JVM calls the bridge."""
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(spark.sparkContext._gateway)  # type: ignore[no-untyped-call]


class CatalogSessionBuilder:
    """A ``SparkSession.builder`` whose ``getOrCreate()`` also attaches a lakecat catalog.

    Every builder method works as on PySpark's builder (``master``, ``appName``, ``config``,
    ...) and returns this builder.
    """

    def __init__(self, builder: Any, name: str, attach: dict[str, Any]) -> None:
        self._builder = builder
        self._name = name
        self._attach = attach

    def __getattr__(self, attribute: str) -> Any:
        target = getattr(self._builder, attribute)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            result = target(*args, **kwargs)
            return self if result is self._builder else result

        return call

    def getOrCreate(self) -> Any:
        spark = self._builder.getOrCreate()
        attach_catalog(spark, self._name, **self._attach)
        return spark


def session(
    name: str = "lake",
    *,
    catalog: Catalog | None = None,
    catalog_url: str | None = None,
    warehouse: str | None = None,
    filter_pushdown: bool = False,
    builder: Any = None,
) -> CatalogSessionBuilder:
    """A SparkSession builder with lakecat registered as the Spark catalog ``name``.

    Finds the catalog plugin's jar (:func:`lakecat.spark_ext.catalog_jar`: the shipped one, or
    one compiled with a JDK when that does not fit the running PySpark), puts it on the
    driver's classpath (``spark.driver.extraClassPath``: to set more entries yourself, include
    :func:`lakecat.spark_ext.catalog_jar` in them) and sets
    ``spark.sql.catalog.<name>``; ``getOrCreate()`` then attaches the catalog
    (:func:`attach_catalog`). Give a lakecat :class:`Catalog` or its ``catalog_url`` and
    ``warehouse``; ``builder`` continues an existing ``SparkSession.builder``. The jar must be
    on the classpath when the process starts its JVM, so build the first session of the
    process with it.
    """
    if catalog is None and not (catalog_url and warehouse):
        raise ValidationError("session needs a catalog, or its catalog_url and warehouse")
    if builder is None:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder
    jar = catalog_jar()
    # On the driver's classpath from the start (the catalog class is loaded by name); the
    # executors get it when the catalog is attached (ship_jar_to_executors)
    configured = (
        builder.config("spark.driver.extraClassPath", jar)
        .config(f"spark.sql.catalog.{name}", CATALOG_CLASS)
        .config(EXTENSIONS_CONF, with_extensions(builder))
    )
    attach = {
        "catalog": catalog,
        "catalog_url": catalog_url,
        "warehouse": warehouse,
        "filter_pushdown": filter_pushdown,
    }
    return CatalogSessionBuilder(configured, name, attach)
