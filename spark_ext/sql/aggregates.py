"""Aggregates answered from manifests: Spark's aggregate push-down into a catalog read.

A query like ``SELECT count(*), min(id), max(day) FROM lake.db.t [WHERE part = 3]`` that Spark
offers the plugin's scan builder (``SupportsPushDownAggregates``: no ``GROUP BY``, and no
filter left for Spark to evaluate on rows, i.e. none or only filters the partition values
decide) is answered from the metrics of the data files the read plans, as Iceberg's runtime
answers it (``SparkScanBuilder.pushAggregation``), without reading a data file:

* ``count(*)``: the files' record counts;
* ``count(col)``: their value counts minus their null counts;
* ``min(col)`` / ``max(col)``: the least lower bound / greatest upper bound of the files
  holding a non-null value, for boolean, int, long, date, timestamp and decimal columns
  (their bounds are the values themselves).

Nothing is answered (Spark reads the rows as for any query; :func:`answer_from_metrics`
says why) when a delete file applies to a planned file (the counts would include deleted
rows), when the read is incremental or has a ``filter`` read option, for any other aggregate
(``sum``, ``avg``, ``DISTINCT``, an expression), a column inside a struct, or ``min``/``max``
of a string, binary, float or double column (string and binary bounds may be truncated; a
float's bounds leave NaN out, which Spark orders above every number), when the table's metrics
mode for the column is ``none`` (or ``counts`` for ``min``/``max``), or when a planned file
lacks a metric the answer needs (a file written before the column was added, or by a writer
that kept no metrics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from lakecat.metadata.errors import CorruptMetadata, ValidationError
from lakecat.metadata.io import metrics_mode
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.schema import (
    BooleanType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    PrimitiveType,
    TimestampType,
    TimestamptzType,
    decode_bound,
)
from lakecat.spark_ext.source.planning import FilePlan, ReadView

COUNT_STAR = "count_star"
COUNT = "count"
MIN = "min"
MAX = "max"
OPERATIONS = (COUNT_STAR, COUNT, MIN, MAX)

# the types whose bounds are exact values (Parquet statistics of the column itself)
BOUNDED_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    DateType,
    TimestampType,
    TimestamptzType,
    DecimalType,
)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One aggregate Spark offers: ``op`` (one of :data:`OPERATIONS`) of a top-level
    ``column`` (None for ``count(*)``)."""

    op: str
    column: str | None = None

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Aggregate:
        op = obj.get("op")
        column = obj.get("column")
        if op not in OPERATIONS or (column is None) != (op == COUNT_STAR):
            raise ValidationError(f"not an aggregate lakecat answers: {dict(obj)!r}")
        return Aggregate(str(op), None if column is None else str(column))


class NotAnswered(Exception):
    """Why the metrics cannot answer an aggregate (Spark reads the rows instead)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def answer_from_metrics(
    view: ReadView, plan: FilePlan, aggregates: Sequence[Aggregate]
) -> list[Any]:
    """The value of each aggregate over the rows of ``plan``'s files (their metrics), in
    JSON form (a count as an int, a decimal as its text, a date as days and a timestamp as
    microseconds since the epoch, null for the ``min``/``max`` of no value). Raises
    :class:`NotAnswered` with the reason when the metrics do not decide them."""
    if view.options.incremental:
        raise NotAnswered("an incremental read's rows are not a snapshot's")
    if view.options.row_filter:
        raise NotAnswered("the filter read option is applied to the rows")
    if plan.deletes:
        raise NotAnswered("delete files apply to planned files")
    return [_answer(view, plan.files, aggregate) for aggregate in aggregates]


def _answer(view: ReadView, files: Sequence[DataFile], aggregate: Aggregate) -> Any:
    if aggregate.op == COUNT_STAR:
        return sum(f.record_count for f in files)
    assert aggregate.column is not None
    field = next((f for f in view.schema.fields if f.name == aggregate.column), None)
    if field is None or not isinstance(field.field_type, PrimitiveType):
        raise NotAnswered(f"{aggregate.column} is not a top-level primitive column")
    t = field.field_type
    bounded = aggregate.op in (MIN, MAX)
    if bounded and not isinstance(t, BOUNDED_TYPES):
        raise NotAnswered(f"the bounds of {t} column {aggregate.column} are not its values")
    mode = metrics_mode(view.metadata.properties, aggregate.column, t, repeated=False)
    if not mode.counts or (bounded and not mode.bounds):
        raise NotAnswered(f"metrics mode {mode.kind} of column {aggregate.column}")
    values = []
    for f in files:
        counted = _non_null(f, field.field_id)
        if counted is None:
            raise NotAnswered(f"{f.file_path} has no counts of column {aggregate.column}")
        if not bounded:
            values.append(counted)
            continue
        if counted == 0:
            continue
        bounds = f.lower_bounds if aggregate.op == MIN else f.upper_bounds
        raw = None if bounds is None else bounds.get(field.field_id)
        if raw is None:
            raise NotAnswered(f"{f.file_path} has no {aggregate.op} of column {aggregate.column}")
        try:
            values.append(decode_bound(t, raw))
        except CorruptMetadata as exc:  # the read reports it, if it reads the file
            raise NotAnswered(f"{f.file_path}: {exc}") from exc
    if not bounded:
        return sum(values)
    if not values:
        return None
    value = min(values) if aggregate.op == MIN else max(values)
    return str(value) if isinstance(value, Decimal) else value


def _non_null(f: DataFile, field_id: int) -> int | None:
    """The non-null values of the column in file ``f``, None when its metrics lack them."""
    if f.value_counts is None or f.null_value_counts is None:
        return None
    values, nulls = f.value_counts.get(field_id), f.null_value_counts.get(field_id)
    if values is None or nulls is None:
        return None
    return values - nulls
