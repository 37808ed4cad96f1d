"""How lakecat's Spark integration finds its catalog, without global state.

:func:`lakecat.spark_ext.register` builds a :class:`CatalogSettings` and attaches it to the data
source class it registers (a class made for that registration, pickled by value with the
settings inside), so every Python worker Spark starts, on the driver or on an executor, gets
the settings with the data source. Per-read or per-write options (``catalog-uri``,
``warehouse``, ``catalog-name``) override them. The driver-side helpers that take a
``SparkSession`` (row-level operations, compaction) find the same settings in the session
configuration under ``spark.lakecat.<format>.*``, which ``register`` sets.

Only the driver opens the SQL catalog. Executors get the warehouse :class:`FileIO` (the
catalog's own, when it was registered from a :class:`Catalog` object, else the default FileIO
for the table location) and the table metadata the driver planned with.

Object-storage properties (``s3.endpoint``, ``s3.access-key-id``, ...) reach the executors
inside the pickled settings and FileIO, never through Spark's configuration: the session
configuration keeps the catalog's name, URL and warehouse and the storage properties that are
no credential (:data:`~lakecat.metadata.io.storage.SECRET_PROPERTIES`); the credentials stay
with the Python ``SparkSession`` object on the driver, for the helpers that take ``spark``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lakecat.catalog import Catalog
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io import SECRET_PROPERTIES, FileIO, check_storage_properties, file_io_for

# the SQL catalog plugin's class (spark.sql.catalog.<name>), in the plugin's jar
CATALOG_PLUGIN = "lakecat.spark.LakecatCatalog"


def plugin_catalogs(spark: Any) -> list[str]:
    """The names of the session's lakecat SQL catalogs (``spark.sql.catalog.<name>`` set to
    the plugin's class), sorted; their functions (``<name>.system.bucket``, ...) are
    lakecat's partition transforms."""
    prefix = "spark.sql.catalog."
    return sorted(
        key[len(prefix) :]
        for key, value in spark.conf.getAll.items()
        if key.startswith(prefix) and "." not in key[len(prefix) :] and value == CATALOG_PLUGIN
    )


DEFAULT_FORMAT = "lakecat"

# Data source options naming the catalog (override the registered settings).
OPTION_CATALOG_URI = "catalog-uri"
OPTION_WAREHOUSE = "warehouse"
OPTION_CATALOG_NAME = "catalog-name"
# The table: ``load("db.events")`` / ``save("db.events")`` pass it as "path".
OPTION_PATH = "path"
OPTION_TABLE = "table"

_CONF_PREFIX = "spark.lakecat"
_CONF_PROPERTY = "property"  # spark.lakecat.<format>.property.<key>: non-secret properties
# the attribute of the driver's SparkSession object holding each format's credentials
_SESSION_SECRETS = "_lakecat_storage_secrets"


@dataclass(frozen=True)
class CatalogSettings:
    """Where the catalog is: SQLAlchemy URL, warehouse location, catalog name, FileIO."""

    uri: str
    warehouse: str
    name: str = "lakecat"
    # The catalog's FileIO when registered from a Catalog (it must pickle); None: the default
    # FileIO for each table's location.
    io: FileIO | None = None
    # The catalog's storage properties (credentials among them): pickled with the settings to
    # the executors, never shown.
    properties: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", check_storage_properties(self.properties))

    @staticmethod
    def of_catalog(catalog: Catalog) -> CatalogSettings:
        if catalog.warehouse is None:
            raise ValidationError(
                f"catalog {catalog.name!r} has no warehouse: Spark needs one (open the catalog "
                "with warehouse=...)"
            )
        return CatalogSettings(
            catalog.uri, catalog.warehouse, catalog.name, catalog.io, dict(catalog.properties)
        )

    def with_options(self, options: Mapping[str, str]) -> CatalogSettings:
        """These settings overridden by the catalog options of one read or write."""
        uri = options.get(OPTION_CATALOG_URI, self.uri)
        warehouse = options.get(OPTION_WAREHOUSE, self.warehouse)
        name = options.get(OPTION_CATALOG_NAME, self.name)
        if (uri, warehouse, name) == (self.uri, self.warehouse, self.name):
            return self
        # Another catalog: the registered FileIO belongs to the registered warehouse (the
        # storage properties are kept: the same object store's).
        return replace(self, uri=uri, warehouse=warehouse, name=name, io=None)

    def open(self) -> Catalog:
        """A catalog connection (driver only); close it after use."""
        return Catalog(
            self.uri,
            warehouse=self.warehouse,
            name=self.name,
            io=self.io,
            properties=self.properties,
        )

    def as_options(self) -> dict[str, str]:
        """These settings as data source options (for a read or write of this catalog)."""
        return {
            OPTION_CATALOG_URI: self.uri,
            OPTION_WAREHOUSE: self.warehouse,
            OPTION_CATALOG_NAME: self.name,
        }

    def file_io(self, location: str) -> FileIO:
        """The FileIO executors use for files under ``location``."""
        return self.io if self.io is not None else file_io_for(location, self.properties)

    def __repr__(self) -> str:  # never show a password that may be in the URL
        return f"CatalogSettings(name={self.name!r}, warehouse={self.warehouse!r})"


def settings_from_options(
    registered: CatalogSettings | None, options: Mapping[str, str]
) -> CatalogSettings:
    """The settings of one read or write: registered ones overridden by its options."""
    if registered is not None:
        return registered.with_options(options)
    uri = options.get(OPTION_CATALOG_URI)
    warehouse = options.get(OPTION_WAREHOUSE)
    if not uri or not warehouse:
        raise ValidationError(
            "no lakecat catalog: register the data source with "
            "lakecat.spark_ext.register(spark, catalog=...) or pass the options "
            f"{OPTION_CATALOG_URI!r} and {OPTION_WAREHOUSE!r}"
        )
    return CatalogSettings(uri, warehouse, options.get(OPTION_CATALOG_NAME, "lakecat"))


def table_identifier(options: Mapping[str, str]) -> str:
    """The table a read or write names: ``load("db.t")``, ``save("db.t")`` or ``table``."""
    name = options.get(OPTION_TABLE) or options.get(OPTION_PATH)
    if not name:
        raise ValidationError(
            'name the table: spark.read.format("lakecat").load("db.table") or '
            'df.write.format("lakecat").save("db.table")'
        )
    return name


def conf_keys(format_name: str) -> dict[str, str]:
    """Session configuration keys holding the settings of a registered format."""
    base = f"{_CONF_PREFIX}.{format_name}"
    return {
        OPTION_CATALOG_URI: f"{base}.{OPTION_CATALOG_URI}",
        OPTION_WAREHOUSE: f"{base}.{OPTION_WAREHOUSE}",
        OPTION_CATALOG_NAME: f"{base}.{OPTION_CATALOG_NAME}",
        _CONF_PROPERTY: f"{base}.{_CONF_PROPERTY}.",
    }


def store_in_session(spark: Any, format_name: str, settings: CatalogSettings) -> None:
    """Record the settings for the driver-side helpers: in the session configuration all but
    the credentials, which stay on the driver's ``SparkSession`` object (see the module
    docstring)."""
    keys = conf_keys(format_name)
    spark.conf.set(keys[OPTION_CATALOG_URI], settings.uri)
    spark.conf.set(keys[OPTION_WAREHOUSE], settings.warehouse)
    spark.conf.set(keys[OPTION_CATALOG_NAME], settings.name)
    for key, value in settings.properties.items():
        if key not in SECRET_PROPERTIES:
            spark.conf.set(keys[_CONF_PROPERTY] + key, value)
    secrets = {k: v for k, v in settings.properties.items() if k in SECRET_PROPERTIES}
    held: dict[str, dict[str, str]] = getattr(spark, _SESSION_SECRETS, None) or {}
    held[format_name] = secrets
    setattr(spark, _SESSION_SECRETS, held)


def _properties_from_session(spark: Any, format_name: str) -> dict[str, str]:
    prefix = conf_keys(format_name)[_CONF_PROPERTY]
    found = {
        key[len(prefix) :]: value
        for key, value in spark.conf.getAll.items()
        if key.startswith(prefix)
    }
    held: dict[str, dict[str, str]] = getattr(spark, _SESSION_SECRETS, None) or {}
    return {**found, **held.get(format_name, {})}


def settings_from_session(
    spark: Any, catalog: Catalog | None = None, *, format_name: str = DEFAULT_FORMAT
) -> CatalogSettings:
    """The settings for a driver-side helper: the given catalog, else the registered ones."""
    if catalog is not None:
        return CatalogSettings.of_catalog(catalog)
    keys = conf_keys(format_name)
    uri = spark.conf.get(keys[OPTION_CATALOG_URI], None)
    warehouse = spark.conf.get(keys[OPTION_WAREHOUSE], None)
    if not uri or not warehouse:
        raise ValidationError(
            f"no lakecat catalog registered as format {format_name!r} in this Spark session: "
            "call lakecat.spark_ext.register(spark, catalog=...) or pass catalog="
        )
    name = spark.conf.get(keys[OPTION_CATALOG_NAME], None) or "lakecat"
    properties = _properties_from_session(spark, format_name)
    return CatalogSettings(uri, warehouse, name, properties=properties)
