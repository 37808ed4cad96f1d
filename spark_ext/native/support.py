"""Whether lakecat's native Spark path can serve a read or a write, and why not.

The native path (:mod:`lakecat.spark_ext.native.write`, :mod:`lakecat.spark_ext.native.read`)
lets Spark's own Parquet writer and reader do the data work while lakecat plans and commits,
as Iceberg's Spark runtime does. It is taken only when the result is exactly what lakecat's
Python data source would produce; otherwise the data source serves the read or write. The
planning of the native path raises :class:`NotNative` for anything it cannot do exactly; the
functions that decide catch it and return a :class:`NativeSupport` carrying the reason, which
is logged when a call falls back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lakecat.metadata import properties as P
from lakecat.metadata.io import local_path

# Parquet codecs of the table property write.parquet.compression-codec that Spark writes the
# same way lakecat does. Spark's "lz4" is Hadoop's framed LZ4, not the LZ4_RAW pyarrow
# writes, and its brotli codec is not bundled with Spark.
_SPARK_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "uncompressed": "uncompressed",
    "none": "uncompressed",
}


@dataclass(frozen=True)
class NativeSupport:
    """The decision for one read or write: ``native`` (Spark's own Parquet reader or writer
    does the data work, lakecat plans and commits) or not, with the ``reason``; then
    lakecat's Python data source serves it."""

    reason: str | None = None

    @property
    def native(self) -> bool:
        return self.reason is None


NATIVE = NativeSupport()


class NotNative(Exception):
    """Something the native path cannot do exactly. Raised while planning it and caught where
    the decision is made: it never leaves :mod:`lakecat.spark_ext`."""

    @property
    def reason(self) -> str:
        return str(self.args[0])


def require_local(location: str, what: str) -> None:
    """The native path runs on local file locations only: Spark's Hadoop file systems and
    lakecat's FileIO name remote stores differently (``s3a://`` and ``s3://``)."""
    if local_path(location) is None:
        raise NotNative(
            f"{what} {location} is not a local file location (the native path is limited to "
            "local locations, which Spark and lakecat name alike)"
        )


def parquet_write_options(properties: Mapping[str, str]) -> dict[str, str]:
    """Spark Parquet writer options carrying the table's ``write.parquet.*`` properties (the
    codec, its zstd level, row-group, page and dictionary sizes; parquet-java reads the
    ``parquet.*`` keys from the write's Hadoop configuration, which writer options extend)."""
    name = properties.get(P.PARQUET_COMPRESSION, P.PARQUET_COMPRESSION_DEFAULT).strip().lower()
    codec = _SPARK_CODECS.get(name)
    if codec is None:
        raise NotNative(
            f"table property {P.PARQUET_COMPRESSION}={name!r}: Spark does not write that codec "
            "as lakecat does"
        )
    options = {"compression": codec}
    level = P.get_int(properties, P.PARQUET_COMPRESSION_LEVEL, 0)
    if level and codec == "zstd":
        options["parquet.compression.codec.zstd.level"] = str(level)
    for prop, key in (
        (P.PARQUET_ROW_GROUP_SIZE_BYTES, "parquet.block.size"),
        (P.PARQUET_PAGE_SIZE_BYTES, "parquet.page.size"),
        (P.PARQUET_DICT_SIZE_BYTES, "parquet.dictionary.page.size"),
    ):
        value = P.get_int(properties, prop, 0)
        if value > 0:
            options[key] = str(value)
    return options


def normalized_options(options: Mapping[str, object]) -> dict[str, str]:
    """Options as the data source sees them: keys lower-cased (Spark's options are
    case-insensitive and reach a Python data source lower-cased), booleans as ``true`` /
    ``false``, other values as text; ``None`` values left out."""
    out: dict[str, str] = {}
    for key, value in options.items():
        if value is None:
            continue
        out[key.lower()] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def loadable_everywhere(context: Any, class_name: str) -> bool:
    """Whether the driver and every executor of the Spark application (``context``, a
    ``SparkContext``) can load ``class_name``, a class of the catalog plugin's jar: the driver
    has it on its classpath and the master is ``local`` (the executors run in the driver's
    JVM), or the jar is among the application's jars (``SparkContext.addJar``, which attaching
    a catalog does)."""
    jvm = context._jvm
    try:
        source = jvm.java.lang.Class.forName(class_name).getProtectionDomain().getCodeSource()
    except Exception:  # ClassNotFoundException through Py4J: the plugin's jar is not there
        return False
    master = str(context.master)
    if master == "local" or master.startswith("local["):
        return True
    if source is None:
        return False
    name = os.path.basename(str(source.getLocation().getPath()))  # the jar's file name
    added = str(context._jsc.sc().listJars().mkString("\n")).split("\n")  # a Scala Seq of URLs
    return any(url.rsplit("/", 1)[-1] == name for url in added if url)
