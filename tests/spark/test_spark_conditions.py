"""The part of a Spark SQL condition lakecat prunes by (``lk.delete`` / ``lk.update``)."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.metadata.expressions import AlwaysTrue, bind, parse
from lakecat.metadata.schema import (
    DoubleType,
    FloatType,
    LongType,
    NestedField,
    Schema,
    StringType,
    UUIDType,
)
from lakecat.spark_ext import delete, update
from lakecat.spark_ext.dml.conditions import (
    condition_filter,
    joined_columns,
    spark_columns,
    spark_conjuncts,
)

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(
    NestedField(1, "id", LongType()),
    NestedField(2, "part", LongType()),
    NestedField(3, "name", StringType()),
)


def test_a_condition_lakecat_reads_whole_is_exact(spark: Any) -> None:
    found = condition_filter(spark, "part = 5 AND name = 'a'", SCHEMA)
    assert found.exact == bind(SCHEMA, parse("part = 5 AND name = 'a'"))
    assert found.implied == found.exact


def test_the_conjuncts_lakecat_reads_are_implied_and_the_rest_dropped(spark: Any) -> None:
    found = condition_filter(spark, "PART = 5 and id % 800 = 5 AND (name = 'a' OR id > 3)", SCHEMA)
    assert found.exact is None
    # bound to the table's columns, case-insensitively, as Spark resolves them
    assert str(found.implied) == "part = 5 AND (name = 'a' OR id > 3)"


def test_nothing_lakecat_reads_implies_nothing(spark: Any) -> None:
    for condition in ("id % 2 = 0", "length(name) = 2 AND id % 3 = 1", "not a condition ((("):
        found = condition_filter(spark, condition, SCHEMA)
        assert found.exact is None and found.implied == AlwaysTrue()


def test_each_conjunct_is_text_spark_reads_as_that_conjunct(spark: Any) -> None:
    # BETWEEN's recorded span leaves out its column: the span is not used, Spark's rendering is
    assert spark_conjuncts(spark, "id BETWEEN 1 AND 5 AND (part = 3)") == [
        "between(id, 1, 5)",
        "part = 3",
    ]
    assert spark_conjuncts(spark, "a = 1 and (b = 2 and `c d` = 'x''y')") == [
        "a = 1",
        "b = 2",
        "`c d` = 'x''y'",
    ]
    assert spark_conjuncts(spark, "a = 1 OR b = 2") == ["a = 1 OR b = 2"]


def rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "part": pa.array([i % 4 for i in ids], pa.int64()),
            "name": pa.array([f"n{i}" for i in ids], pa.string()),
        }
    )


@pytest.fixture
def parts(lake: Catalog) -> Table:
    """ids 0-399 over four partitions (part = id % 4), two files each."""
    table = lake.create_table("db.parts", SCHEMA, partition_by=["part"])
    table.append(rows(range(200)))
    table.append(rows(range(200, 400)))
    return table


def ids(table: Table) -> list[int]:
    return sorted(table.refresh().to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_a_delete_reads_only_the_partition_its_condition_names(
    spark: Any, parts: Table, mode: str
) -> None:
    parts.set_properties({"write.delete.mode": mode})
    result = delete(spark, "db.parts", "part = 1 AND id % 3 = 0")
    assert result.files_read == 2  # partition 1's two files, not all eight
    assert ids(parts) == [i for i in range(400) if not (i % 4 == 1 and i % 3 == 0)]
    # a partition that matches the pruning conjunct in every row is not dropped whole
    result = delete(spark, "db.parts", "part = 2 AND id % 100 = 2")
    assert (result.files_read, result.files_removed) == (2, 2 if mode == "copy-on-write" else 0)
    assert sorted(set(range(400)) - set(ids(parts))) == sorted(
        [i for i in range(400) if i % 4 == 1 and i % 3 == 0] + [2, 102, 202, 302]
    )


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_an_update_reads_only_the_partition_its_condition_names_and_checks_conflicts_there(
    spark: Any, parts: Table, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts.set_properties({"write.update.mode": mode})
    intents = []
    commit_intent = Table.commit_intent

    def recorded(self: Table, intent: Any, *args: Any, **kwargs: Any) -> Any:
        intents.append(intent)
        return commit_intent(self, intent, *args, **kwargs)

    monkeypatch.setattr(Table, "commit_intent", recorded)
    result = update(spark, "db.parts", "part = 3 AND id % 10 = 3", {"name": "'changed'"})
    assert result.files_read == 2
    # the read filter of the conflict checks: the partition, so commits elsewhere do not conflict
    [intent] = intents
    assert str(intent.read_filter) == str(parse("part = 3"))
    changed = {r["id"] for r in parts.refresh().to_arrow().to_pylist() if r["name"] == "changed"}
    assert changed == {i for i in range(400) if i % 4 == 3 and i % 10 == 3}


def test_the_columns_a_condition_uses_are_told_when_they_can_be(spark: Any) -> None:
    columns = ["id", "part", "Name", "tags"]
    assert spark_columns(spark, "part = 5 AND id % 800 = 5", columns) == ["id", "part"]
    assert spark_columns(spark, "length(NAME) > 3", columns) == ["Name"]
    assert spark_columns(spark, "exists(tags, x -> x = 'a')", columns) == ["tags"]  # x: lambda
    assert spark_columns(spark, "true", columns) == []
    for unknown in ("id IN (SELECT id FROM other)", "nosuch = 1", "not a condition (((", "*"):
        assert spark_columns(spark, unknown, columns) is None


def test_the_table_columns_a_merges_conditions_use_are_told_when_they_can_be(
    spark: Any,
) -> None:
    columns = ["id", "part", "Name", "tags"]

    def used(*texts: str) -> list[str] | None:
        return joined_columns(spark, texts, columns, "t", "s")

    assert used("t.id = s.id AND t.part = s.part") == ["id", "part"]
    # a bare name that is a table column is read (it may be the source's: only extra)
    assert used("T.ID = s.id", "length(name) > 3") == ["id", "Name"]
    assert used("t.id = s.id", "s.part = 1 AND s.other > 2") == ["id"]
    assert used("t.id = s.id", "exists(t.tags, x -> x = s.tag)") == ["id", "tags"]
    assert used("t.id = s.id AND t._file LIKE '%a%'") == ["id"]  # metadata columns always come
    for unknown in ("t.id IN (SELECT id FROM other)", "*", "not a condition ((("):
        assert used("t.id = s.id", unknown) is None


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
@pytest.mark.parametrize(
    "condition",
    ["true", "id % 7 = 0", "length(name) = 3 AND part = 1", "exists(array(id), x -> x < 20)"],
)
def test_a_change_that_reads_only_the_columns_of_its_condition_changes_the_right_rows(
    spark: Any, parts: Table, mode: str, condition: str
) -> None:
    parts.set_properties({"write.delete.mode": mode, "write.update.mode": mode})
    expected = {
        "true": lambda i: True,
        "id % 7 = 0": lambda i: i % 7 == 0,
        "length(name) = 3 AND part = 1": lambda i: len(f"n{i}") == 3 and i % 4 == 1,
        "exists(array(id), x -> x < 20)": lambda i: i < 20,
    }[condition]
    update(spark, "db.parts", f"NOT ({condition}) AND id % 2 = 0", {"name": "concat(name, '!')"})
    delete(spark, "db.parts", "id % 5 = 4")  # merge-on-read: the next change reads through it
    delete(spark, "db.parts", condition)
    after = {r["id"]: r["name"] for r in parts.refresh().to_arrow().to_pylist()}
    kept = [i for i in range(400) if not expected(i) and i % 5 != 4]
    assert after == {i: f"n{i}!" if i % 2 == 0 else f"n{i}" for i in kept}


def test_the_data_source_reads_only_the_chosen_columns_and_the_metadata_columns(
    spark: Any, parts: Table, lake: Catalog
) -> None:
    from lakecat.spark_ext.source.staging import open_target, read_files

    with open_target(spark, "db.parts", lake, "lakecat") as target:
        files = list(target.table.scan().plan_files())
        assert read_files(spark, target, files, columns=["part"]).columns == [
            "part",
            "_file",
            "_pos",
        ]
        only = read_files(spark, target, files, columns=[])
        assert only.columns == ["_file", "_pos"]
        assert only.count() == 400
        assert only.select("_file").distinct().count() == len(files) == 8


def test_double_comparisons_are_read_in_sparks_nan_order(spark: Any) -> None:
    """Spark orders NaN above every number: ``score > 5`` holds for NaN, in lakecat's terms
    ``score > 5 OR score IS NAN``; NOT flips to the opposite comparison in that order."""
    schema = Schema.of(NestedField(1, "id", LongType()), NestedField(2, "score", DoubleType()))

    def exact(condition: str) -> str:
        found = condition_filter(spark, condition, schema)
        assert found.exact is not None and found.implied == found.exact
        return str(found.exact)

    assert exact("score > 5") == "score > 5.0 OR score IS NAN"
    assert exact("NOT (score < 5)") == "score >= 5.0 OR score IS NAN"
    assert exact("score <= 5 OR id = 1") == "score <= 5.0 OR id = 1"
    assert exact("score = 1.5") == "score = 1.5"
    assert exact("score IN (1.5, 2)") == "score IN (1.5, 2.0)"
    assert exact("score <> 1.5") == "score != 1.5"
    assert exact("score IS NULL") == "score IS NULL"


def test_comparisons_of_floats_and_uuids_are_left_to_spark(spark: Any) -> None:
    schema = Schema.of(
        NestedField(1, "id", LongType()),
        NestedField(2, "f", FloatType()),
        NestedField(3, "u", UUIDType()),
    )
    # f = 0.1: Spark widens f to double (no float equals the double 0.1), lakecat would round
    # the literal to 32 bits
    for condition in ("f > 5", "f = 0.1", "u = '00000000-0000-0000-0000-000000000001'"):
        found = condition_filter(spark, condition, schema)
        assert found.exact is None and found.implied == AlwaysTrue()
    found = condition_filter(spark, "id > 3 AND f > 5", schema)
    assert found.exact is None and str(found.implied) == "id > 3"
    assert str(condition_filter(spark, "f IS NULL", schema).exact) == "f IS NULL"


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_nan_counts_as_above_every_number_as_in_spark(spark: Any, lake: Catalog, mode: str) -> None:
    # a file's bounds leave NaN out: pruning "score > 5" by them skipped the NaN rows
    table = lake.create_table(
        "db.scores",
        pa.schema([("id", pa.int64()), ("score", pa.float64())]),
        properties={"write.delete.mode": mode, "write.update.mode": mode},
    )
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "score": [0.0, math.nan]}))
    table.append(pa.table({"id": pa.array([3, 4], pa.int64()), "score": [math.nan, math.nan]}))
    update(spark, "db.scores", "score > 5", {"score": "-1"})
    assert sorted(r["score"] for r in table.refresh().to_arrow().to_pylist()) == [-1, -1, -1, 0]
    table.append(pa.table({"id": pa.array([5], pa.int64()), "score": [math.nan]}))
    delete(spark, "db.scores", "score > 5")
    assert sorted(r["id"] for r in table.refresh().to_arrow().to_pylist()) == [1, 2, 3, 4]
