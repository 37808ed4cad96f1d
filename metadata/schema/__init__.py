"""The type system: Iceberg types, schemas with field ids, conversion of values (single-value
binary, JSON, Python) and of schemas to and from Arrow. (Evolving a table's schema is a table
change: :mod:`lakecat.metadata.table.schema_evolution`.)

* :mod:`.types`: the types; :mod:`.schema`: :class:`Schema`, lookups by id, full name and path;
* :mod:`.conversions`: value serializations of the spec (Appendix D);
* :mod:`.arrow`: Arrow schemas with ``PARQUET:field_id``, conforming data to a schema;
* :mod:`.lineage`: the row lineage columns of format v3 (``_row_id``, ...).
"""

from lakecat.metadata.schema.arrow import (
    arrow_to_schema,
    conform_to_schema,
    list_parts,
    map_parts,
    schema_to_arrow,
)
from lakecat.metadata.schema.conversions import (
    INT_MIN,
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    decode_bound,
    from_bytes,
    from_json_value,
    human_string,
    to_json_value,
    to_python,
)
from lakecat.metadata.schema.lineage import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    LINEAGE_COLUMNS,
    ROW_ID,
    fill_lineage,
    with_lineage,
)
from lakecat.metadata.schema.name_mapping import (
    NAME_MAPPING_PROPERTY,
    MappedField,
    NameMapping,
    name_mapping_of,
)
from lakecat.metadata.schema.schema import (
    Schema,
)
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
    child_fields,
)

__all__ = [
    "INT_MIN",
    "LAST_UPDATED_SEQUENCE_NUMBER",
    "LINEAGE_COLUMNS",
    "MICROS_PER_DAY",
    "MICROS_PER_HOUR",
    "NAME_MAPPING_PROPERTY",
    "ROW_ID",
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FixedType",
    "FloatType",
    "IcebergType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "MappedField",
    "NameMapping",
    "NestedField",
    "PrimitiveType",
    "Schema",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampType",
    "TimestamptzType",
    "UUIDType",
    "arrow_to_schema",
    "child_fields",
    "conform_to_schema",
    "decode_bound",
    "fill_lineage",
    "from_bytes",
    "from_json_value",
    "human_string",
    "list_parts",
    "map_parts",
    "name_mapping_of",
    "schema_to_arrow",
    "to_json_value",
    "to_python",
    "with_lineage",
]
