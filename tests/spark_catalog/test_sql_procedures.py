"""``CALL lake.system.<procedure>(...)``: Iceberg's procedure names, arguments (positional and
named) and result columns, each checked through lakecat's Python API; bad calls are Spark
``AnalysisException``s that name the problem and commit nothing."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

from lakecat.metadata.errors import NoSuchSnapshot, ValidationError
from lakecat.spark_ext import lakecat_error
from lakecat.spark_ext.sql.procedures import Parameter, Procedure, accepts, identifier_parts

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def rows(*items: tuple[int, str]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "region": r} for i, r in items], SCHEMA)


@pytest.fixture
def three_appends(lake) -> Any:
    """db.t partitioned by region with three snapshots, one file each: eu 1, eu 2, us 3."""
    table = lake.catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    for item in ((1, "eu"), (2, "eu"), (3, "us")):
        table.append(rows(item))
    return table


def call(lake, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The result columns and rows of a CALL."""
    df = lake.spark.sql(statement)
    return df.columns, [tuple(r) for r in df.collect()]


def data_files(table: Any) -> set[str]:
    return {f.file_path for f in table.refresh().scan().plan_files()}


# ---- the procedures -------------------------------------------------------------------------
def test_ancestors_of_lists_the_current_snapshot_and_its_ancestors_newest_first(
    lake, three_appends
) -> None:
    history = three_appends.metadata.ancestors(three_appends.metadata.current_snapshot_id)

    columns, result = call(lake, "CALL lake.system.ancestors_of('db.t')")

    assert columns == ["snapshot_id", "timestamp"]
    assert result == [(s.snapshot_id, s.timestamp_ms) for s in history]
    assert len(result) == 3
    # named arguments, the catalog's name in the table, an older snapshot
    _, older = call(
        lake,
        f"CALL lake.system.ancestors_of(snapshot_id => {history[1].snapshot_id}, "
        "table => 'lake.db.t')",
    )
    assert older == result[1:]


def test_create_tag_tags_the_current_or_the_given_snapshot(lake, three_appends) -> None:
    first = three_appends.metadata.ancestors(three_appends.metadata.current_snapshot_id)[-1]

    columns, current = call(lake, "CALL lake.system.create_tag('db.t', 'release')")
    _, given = call(
        lake, f"CALL lake.system.create_tag(table => 'db.t', tag => 'first', "
        f"snapshot_id => {first.snapshot_id}, max_ref_age_ms => 86400000)",
    )  # fmt: skip

    refs = three_appends.refresh().refs()
    assert columns == ["ref_name", "ref_type", "snapshot_id"]
    head = three_appends.metadata.current_snapshot_id
    assert current == [("release", "tag", head)]
    assert given == [("first", "tag", first.snapshot_id)]
    assert (refs["release"].ref_type, refs["release"].snapshot_id) == ("tag", head)
    assert (refs["first"].snapshot_id, refs["first"].max_ref_age_ms) == (
        first.snapshot_id,
        86400000,
    )


def test_create_branch_keeps_its_retention_settings(lake, three_appends) -> None:
    _, result = call(
        lake,
        "CALL lake.system.create_branch(table => 'db.t', branch => 'audit', "
        "min_snapshots_to_keep => 2, max_snapshot_age_ms => 3600000)",
    )

    ref = three_appends.refresh().refs()["audit"]
    assert result == [("audit", "branch", three_appends.metadata.current_snapshot_id)]
    assert (ref.ref_type, ref.min_snapshots_to_keep, ref.max_snapshot_age_ms) == (
        "branch",
        2,
        3600000,
    )
    # the branch takes writes of its own (checked through the Python API)
    three_appends.append(rows((9, "eu")), branch="audit")
    assert sorted(three_appends.to_arrow(ref="audit").column("id").to_pylist()) == [1, 2, 3, 9]


def test_drop_ref_removes_a_tag_or_branch_and_returns_what_it_was(lake, three_appends) -> None:
    three_appends.create_tag("old", three_appends.snapshots()[0].snapshot_id)

    _, result = call(lake, "CALL lake.system.drop_ref('db.t', 'old')")

    assert result == [("old", "tag", three_appends.snapshots()[0].snapshot_id)]
    assert set(three_appends.refresh().refs()) == {"main"}


def test_register_table_adds_a_table_by_its_metadata_file(lake, three_appends) -> None:
    location = three_appends.metadata_location
    lake.catalog.drop_table("db.t")  # the files stay

    columns, result = call(
        lake, f"CALL lake.system.register_table(table => 'db.back', metadata_file => '{location}')"
    )

    back = lake.catalog.load_table("db.back")
    assert columns == ["current_snapshot_id", "total_records_count", "total_data_files_count"]
    assert result == [(three_appends.metadata.current_snapshot_id, 3, 3)]
    assert back.metadata_location == location
    assert lake.rows("db.back", "id") == [(1,), (2,), (3,)]


def test_rewrite_data_files_compacts_on_spark_and_counts_like_iceberg(lake, three_appends) -> None:
    before = data_files(three_appends)
    bytes_before = sum(f.file_size_in_bytes for f in three_appends.scan().plan_files())

    columns, result = call(
        lake,
        "CALL lake.system.rewrite_data_files(table => 'db.t', "
        "options => map('min-input-files', '1'))",
    )

    after = data_files(three_appends)
    assert columns == [
        "rewritten_data_files_count",
        "added_data_files_count",
        "rewritten_bytes_count",
        "failed_data_files_count",
        "removed_delete_files_count",
    ]
    assert result == [(3, 2, bytes_before, 0, 0)]  # eu: 2 files -> 1, us: 1 -> 1
    assert len(after) == 2 and not after & before
    assert three_appends.current_snapshot().operation == "replace"
    assert lake.rows("db.t", "id", "region") == [(1, "eu"), (2, "eu"), (3, "us")]


def test_rewrite_data_files_where_compacts_only_the_matching_partition(lake, three_appends) -> None:
    three_appends.append(rows((4, "us")))
    us_before = {f for f in data_files(three_appends) if "region=us" in f}

    _, result = call(
        lake, "CALL lake.system.rewrite_data_files('db.t', where => \"region = 'eu'\")"
    )

    after = data_files(three_appends)
    assert result[0][:2] == (2, 1)
    assert us_before <= after  # the us files were not rewritten
    assert lake.rows("db.t", "id") == [(1,), (2,), (3,), (4,)]


def test_show_and_describe_procedures_list_the_system_procedures(lake) -> None:
    shown = lake.sql("SHOW PROCEDURES IN lake.system")
    described = lake.sql("DESCRIBE PROCEDURE lake.system.create_branch")

    assert [r.procedure_name for r in shown] == [
        "ancestors_of",
        "create_branch",
        "create_tag",
        "drop_ref",
        "register_table",
        "rewrite_data_files",
    ]
    assert lake.sql("SHOW PROCEDURES IN lake.db") == []
    assert "create_branch" in described[0].procedure_desc


# ---- bad calls ------------------------------------------------------------------------------
TAG = "CALL lake.system.create_tag"
COMPACT = "CALL lake.system.rewrite_data_files"
BAD_CALLS = [
    ("CALL lake.system.no_such_thing('db.t')", "NoSuchProcedure", "no procedure system.no_such"),
    (f"{TAG}(tabel => 'db.t', tag => 'x')", "UNRECOGNIZED_PARAMETER", "tabel"),
    (f"{TAG}(table => 'db.t')", "REQUIRED_PARAMETER_NOT_FOUND", "`tag`"),
    (f"{TAG}('db.t', 'x', 'abc')", "ValidationError", "snapshot_id takes a bigint, not a string"),
    (f"{TAG}('db.t', 'x', 123456789)", "NoSuchSnapshot", "123456789"),
    (f"{TAG}('db.t', map('a', 'b'))", "ValidationError", "tag takes a string, not a map"),
    ("CALL lake.system.drop_ref('db.t', 'main')", "ValidationError", "main branch"),
    ("CALL lake.system.ancestors_of('nope.t')", "NoSuchTable", "nope.t"),
    (f"{COMPACT}('db.t', options => map('bogus', '1'))", "ValidationError", "bogus"),
    (f"{COMPACT}('db.t', strategy => 'sort')", "UnsupportedByCatalog", "sort"),
]


@pytest.mark.parametrize(("statement", "kind", "names"), BAD_CALLS)
def test_a_bad_call_is_an_analysis_exception_naming_the_problem_and_commits_nothing(
    lake, three_appends, statement: str, kind: str, names: str
) -> None:
    location = three_appends.metadata_location

    with pytest.raises(AnalysisException) as raised:
        lake.spark.sql(statement).collect()

    first_line = str(raised.value).splitlines()[0]
    assert kind in first_line and names in first_line
    assert three_appends.refresh().metadata_location == location


def test_a_failed_procedure_gives_the_typed_lakecat_error_back(lake, three_appends) -> None:
    with pytest.raises(AnalysisException) as raised:
        lake.spark.sql("CALL lake.system.ancestors_of('db.t', 42)").collect()

    error = lakecat_error(raised.value)
    assert isinstance(error, NoSuchSnapshot) and "42" in str(error)
    assert error.__cause__ is raised.value
    with pytest.raises(AnalysisException) as bad_type:
        lake.spark.sql("CALL lake.system.create_tag('db.t', 'x', 'abc')").collect()
    assert isinstance(lakecat_error(bad_type.value), ValidationError)


def test_argument_values_are_checked_and_converted_by_parameter_type() -> None:
    procedure = Procedure(
        "p",
        "",
        (
            Parameter("table", StringType(), required=True),
            Parameter("older_than", TimestampType()),
            Parameter("ids", ArrayType(LongType())),
        ),
        StructType([]),
        lambda ctx, **kwargs: [],
    )

    assert procedure.arguments({"table": "db.t", "older_than": 1_700_000_000_123_456}) == {
        "table": "db.t",
        "older_than": 1_700_000_000_123,  # Spark's microseconds, as milliseconds
        "ids": None,
    }
    with pytest.raises(ValidationError, match="needs a value for table"):
        procedure.arguments({"ids": [1]})
    with pytest.raises(ValidationError, match="ids must be a array<bigint>"):
        procedure.arguments({"table": "t", "ids": "1"})
    with pytest.raises(ValidationError, match="has no parameter nope"):
        procedure.arguments({"table": "t", "nope": 1})
    assert accepts(LongType(), IntegerType()) and not accepts(LongType(), StringType())
    assert accepts(TimestampType(), StringType()) and not accepts(StringType(), LongType())
    assert identifier_parts("lake.`my.db`.`t``x`") == ["lake", "my.db", "t`x"]
    with pytest.raises(ValidationError, match="not a table name"):
        identifier_parts("db..t")
