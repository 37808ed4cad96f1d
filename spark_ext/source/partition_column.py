"""The ``_spec_id`` and ``_partition`` metadata columns of a read, as Iceberg's Spark runtime
offers them: the id of the partition spec a row's file was written for, and the file's
partition over all the table's specs (Iceberg's ``Partitioning.partitionType``: the fields of
every spec, by field id, a field the file's spec lacks null). Both are constants of a file,
taken from its manifest entry; the data source adds them to the rows it reads by their
``_file``. A table without partition fields has no ``_partition`` (Iceberg's is an empty
struct there)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as st

from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.partitioning import (
    PartitionSpec,
    parse_transform,
    source_type,
    union_fields,
)
from lakecat.metadata.schema import (
    IcebergType,
    PrimitiveType,
    Schema,
    TimeType,
    UUIDType,
    human_string,
    to_python,
)
from lakecat.metadata.table import TableMetadata
from lakecat.spark_ext.types import PARTITION_COLUMN, SPEC_ID_COLUMN, spark_type


def spark_value(t: IcebergType, value: Any) -> Any:
    """An in-memory value of primitive type ``t`` as PySpark takes it for its Spark type
    (:func:`~lakecat.spark_ext.types.spark_type` with ``time_as_text``)."""
    if value is None:
        return None
    if isinstance(t, TimeType):
        return human_string(t, value)
    if isinstance(t, UUIDType):
        return str(value)
    if isinstance(t, PrimitiveType):
        return to_python(t, value)
    raise CorruptMetadata(f"a metadata value of the non-primitive type {t}")


@dataclass(frozen=True)
class PartitionColumn:
    """The partition type over all of a table's specs, and what fills it from a file's own
    partition tuple."""

    specs: Mapping[int, PartitionSpec]
    fields: tuple[tuple[int, str, IcebergType], ...]  # field id, name, transform result type

    @staticmethod
    def of(metadata: TableMetadata) -> PartitionColumn:
        return PartitionColumn.of_specs(metadata.specs_by_id(), metadata.schemas)

    @staticmethod
    def of_specs(specs: Mapping[int, PartitionSpec], schemas: Sequence[Schema]) -> PartitionColumn:
        fields = []
        for name, p in union_fields(specs.values(), schemas):
            transform = parse_transform(p.transform, strict=False)
            fields.append(
                (p.field_id, name, transform.result_type(source_type(schemas, p.source_id)))
            )
        return PartitionColumn(dict(specs), tuple(fields))

    @property
    def partitioned(self) -> bool:
        return bool(self.fields)

    def spark_type(self) -> st.StructType:
        return st.StructType(
            [
                st.StructField(name, spark_type(t, name, time_as_text=True))
                for _, name, t in self.fields
            ]
        )

    def value(self, f: DataFile) -> tuple[Any, ...]:
        """``f``'s partition over the union of the table's fields: null where its spec lacks
        one."""
        spec = self.specs[f.spec_id]
        values = {p.field_id: v for p, v in zip(spec.fields, f.partition, strict=True)}
        return tuple(spark_value(t, values.get(field_id)) for field_id, _, t in self.fields)

    def projected(self, spec_id: int) -> int:
        """How many of the union's fields spec ``spec_id`` has (Iceberg's
        ``StructProjection.projectedFields`` of a file's coerced partition)."""
        own = {p.field_id for p in self.specs[spec_id].fields}
        return sum(1 for field_id, _, _ in self.fields if field_id in own)

    def arrow(self, files: Sequence[DataFile], arrow_type: pa.DataType) -> pa.Array:
        """The column's value for each of ``files``, as ``arrow_type`` (Spark's Arrow form of
        the struct, or of the fields a query kept of it: Spark prunes nested columns)."""
        names = [name for _, name, _ in self.fields]
        rows = [dict(zip(names, self.value(f), strict=True)) for f in files]
        return pa.array(rows, type=arrow_type)


def constants_read(wanted: pa.Schema) -> pa.Schema:
    """What a read of ``wanted`` (Spark's schema, in Arrow form) asks the file reader for:
    ``wanted`` without ``_spec_id`` and ``_partition``, which :func:`with_file_constants`
    adds."""
    read = wanted
    for made in (SPEC_ID_COLUMN, PARTITION_COLUMN):
        if made in read.names:
            read = read.remove(read.get_field_index(made))
    return read


def add_file_constants(
    batches: Iterator[pa.RecordBatch],
    files: Sequence[DataFile],
    column: Callable[[], PartitionColumn],
    wanted: pa.Schema,
    file_column: str,
) -> Iterator[pa.RecordBatch]:
    """``batches`` with the file constants ``wanted`` asks for (none: as they are);
    ``column`` makes the partition type when one is asked for."""
    if SPEC_ID_COLUMN not in wanted.names and PARTITION_COLUMN not in wanted.names:
        return batches
    partition = column()
    return (with_file_constants(b, files, partition, wanted, file_column) for b in batches)


def with_file_constants(
    batch: pa.RecordBatch,
    files: Sequence[DataFile],
    column: PartitionColumn,
    wanted: pa.Schema,
    file_column: str,
) -> pa.RecordBatch:
    """``batch`` (read with ``file_column``, each row's file path) with the ``_spec_id`` and
    ``_partition`` columns of ``wanted`` (the read's schema), by the row's file among
    ``files``."""
    paths = pa.array([f.file_path for f in files], pa.string())
    index = pc.index_in(batch.column(file_column), value_set=paths)
    if index.null_count:
        raise ValueError("a row of a file outside its read task")  # never: the task's files
    out = batch
    if SPEC_ID_COLUMN in wanted.names:
        field = wanted.field(SPEC_ID_COLUMN)
        spec_ids = pa.array([f.spec_id for f in files], field.type).take(index)
        out = out.append_column(field, spec_ids)
    if PARTITION_COLUMN in wanted.names:
        field = wanted.field(PARTITION_COLUMN)
        out = out.append_column(field, column.arrow(files, field.type).take(index))
    return out
