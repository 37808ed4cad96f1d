"""A lakecat error under Spark: one readable first line, ``lakecat <ErrorType>: <message>``, for
SQL statements and DataFrame writes alike, and ``lk.lakecat_error`` gives the typed error back.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

import lakecat.spark_ext as lk
from lakecat.metadata.errors import (
    CommitConflict,
    ConcurrentAppend,
    ConcurrentTransaction,
    NoSuchRef,
    NoSuchSnapshot,
    NullInRequiredColumn,
    UnknownColumn,
)
from lakecat.spark_ext.errors import error_in_traceback
from lakecat.spark_ext.sql.bridge import error_payload

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def table(lake) -> Any:
    created = lake.catalog.create_table("db.t", SCHEMA)
    created.append(pa.Table.from_pylist([{"id": 1, "name": "a"}], SCHEMA))
    return created


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0]


@pytest.mark.spark
def test_a_sql_statement_shows_the_lakecat_error_on_its_first_line(lake, table) -> None:
    with pytest.raises(AnalysisException) as raised:
        lake.sql("SELECT * FROM lake.db.t VERSION AS OF 'nope'")

    assert (
        first_line(raised.value)
        == "lakecat NoSuchSnapshot: db.t has no snapshot, tag or branch 'nope'"
    )
    error = lk.lakecat_error(raised.value)
    assert type(error) is NoSuchSnapshot
    assert str(error) == "db.t has no snapshot, tag or branch 'nope'"


@pytest.mark.spark
def test_a_dataframe_write_shows_the_lakecat_error_on_its_first_line(lake, table) -> None:
    df = lake.spark.createDataFrame([(2, "b")], "id long, name string")

    with pytest.raises(AnalysisException) as raised:  # the Python writer refuses, on the driver
        df.writeTo("lake.db.t").option("branch", "nope").append()

    assert first_line(raised.value) == "lakecat NoSuchRef: the table has no branch 'nope'"
    assert type(lk.lakecat_error(raised.value)) is NoSuchRef
    with pytest.raises(AnalysisException) as inserted:  # the same write, in SQL
        lake.sql("INSERT INTO lake.db.t WITH ('branch' = 'nope') VALUES (3, 'c')")
    assert first_line(inserted.value) == first_line(raised.value)
    assert lake.rows("db.t", "id") == [(1,)]


@pytest.mark.spark
def test_a_conflict_at_commit_names_its_class_and_comes_back_typed(lake, table) -> None:
    """The Python data source commits in a Python worker; the plugin turns the worker's
    traceback into the lakecat error's one line."""
    writer = (
        lake.spark.createDataFrame([(2, "b")], "id long, name string")
        .writeTo("lake.db.t")
        .option("app-id", "nightly")
        .option("app-version", "7")
        .option("skip-if-committed", "false")
    )
    writer.append()

    with pytest.raises(AnalysisException) as raised:
        writer.append()

    assert first_line(raised.value).startswith("lakecat ConcurrentTransaction: ")
    assert "Traceback" not in str(raised.value)
    error = lk.lakecat_error(raised.value)
    assert isinstance(error, ConcurrentTransaction) and isinstance(error, CommitConflict)
    assert str(error) == first_line(raised.value).removeprefix("lakecat ConcurrentTransaction: ")
    assert lake.rows("db.t", "id") == [(1,), (2,)]
    with pytest.raises(ConcurrentTransaction), lk.lakecat_errors():
        writer.append()


@pytest.mark.spark
def test_the_plain_data_source_error_comes_back_typed_too(lake, table) -> None:
    """``df.write.format(...)`` (no catalog plugin): Spark's own PYTHON_DATA_SOURCE_ERROR, with
    the traceback in it, from which ``lakecat_error`` finds the typed error."""
    df = lake.spark.createDataFrame([(2, "b")], "id long, name string")
    fmt = lake.bridge.data_format

    with pytest.raises(AnalysisException) as raised:
        df.write.format(fmt).mode("append").option("branch", "nope").save("db.t")

    assert type(lk.lakecat_error(raised.value)) is NoSuchRef


@pytest.mark.spark
def test_an_error_in_an_executors_task_comes_back_typed(lake) -> None:
    """A task's Python writer fails (Spark: ``Job aborted``, the task's traceback in the causes)."""
    required = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    lake.catalog.create_table("db.required", required)
    df = lake.spark.range(0, 10, numPartitions=1).selectExpr("IF(id = 5, NULL, id) AS id")

    with pytest.raises(Exception) as raised:  # the plain data source: no plugin in between
        df.write.format(lake.bridge.data_format).mode("append").save("db.required")

    error = lk.lakecat_error(raised.value)
    assert isinstance(error, NullInRequiredColumn) and "required columns contain nulls" in str(
        error
    )


@pytest.mark.spark
def test_errors_without_a_lakecat_error_behind_them_pass_through(lake, table) -> None:
    with pytest.raises(AnalysisException) as raised:
        lake.sql("SELECT no_such_column FROM lake.db.t")
    assert lk.lakecat_error(raised.value) is None
    with pytest.raises(AnalysisException), lk.lakecat_errors():
        lake.sql("SELECT no_such_column FROM lake.db.t")


def test_a_traceback_names_the_error_on_the_line_after_its_last_frame() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/write_jobs.py", line 1, in plan\n'
        "    raise UnknownColumn('a')\n"
        "    ^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "lakecat.metadata.errors.UnknownColumn: no column 'a'\n"
        "in the table db.t\n"
    )
    error = error_in_traceback(text)
    assert type(error) is UnknownColumn
    assert str(error) == "no column 'a'\nin the table db.t"
    # a lakecat error that caused another one is not the error raised
    chained = (
        text
        + "\nThe above exception ...:\n\nTraceback (most recent call last):\n"
        + ('  File "/x/y.py", line 2, in f\n    g()\nValueError: lakecat.metadata.errors.X: no\n')
    )
    assert error_in_traceback(chained) is None
    assert error_in_traceback("os.NotLakecat: x") is None
    assert error_in_traceback("lakecat.metadata.errors.NotAnError: x") is None


class _JavaName:
    def __init__(self, name: str) -> None:
        self._name = name

    def getName(self) -> str:
        return self._name


class _FakeLakecatException:
    """Stands in for the py4j proxy of the plugin's LakecatException."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def getClass(self) -> _JavaName:
        return _JavaName("lakecat.spark.LakecatException")

    def errorClassName(self) -> str:
        return self.payload["class"]

    def errorMessage(self) -> str:
        return self.payload["message"]

    def attributesJson(self) -> str:
        return json.dumps(self.payload["attributes"])

    def getCause(self) -> None:
        return None


def test_a_conflict_from_the_bridge_comes_back_with_its_attributes() -> None:
    conflict = ConcurrentAppend(
        "delete: snapshot 7 added a.parquet in region=eu that this operation read",
        snapshot_id=7,
        operation="append",
        partitions=("region=eu",),
        files=("a.parquet",),
    )
    spark_error = Exception("lakecat ConcurrentAppend: ...")
    spark_error._origin = _FakeLakecatException(error_payload(conflict, {}))  # type: ignore[attr-defined]

    error = lk.lakecat_error(spark_error)

    assert type(error) is ConcurrentAppend and str(error) == str(conflict)
    assert (error.snapshot_id, error.operation, error.partitions, error.files) == (
        7,
        "append",
        ("region=eu",),
        ("a.parquet",),
    )
    assert error.__cause__ is spark_error
