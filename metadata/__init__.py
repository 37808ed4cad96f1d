"""lakecat's implementation of the Apache Iceberg v2 table format.

Frozen models of everything a ``metadata.json`` holds, manifests and manifest lists through
fastavro, Parquet data files with Iceberg metrics through pyarrow, the expression model with its
evaluators, and the pure ``apply(base, updates)``. Storage is reached only through the FileIO
seam in :mod:`lakecat.metadata.io.fileio`. Nothing here imports ``lakecat.catalog`` or
``lakecat.spark_ext``.
"""

from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = [
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FixedType",
    "FloatType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "NestedField",
    "Schema",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampType",
    "TimestamptzType",
    "UUIDType",
]
