"""The part of a Spark SQL condition lakecat prunes by (``lk.delete`` / ``lk.update``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.metadata.expressions import AlwaysTrue, parse
from lakecat.metadata.schema import LongType, NestedField, Schema, StringType
from lakecat.spark_ext import delete, update
from lakecat.spark_ext.dml.conditions import condition_filter, spark_conjuncts

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(
    NestedField(1, "id", LongType()),
    NestedField(2, "part", LongType()),
    NestedField(3, "name", StringType()),
)


def test_a_condition_lakecat_reads_whole_is_exact(spark: Any) -> None:
    found = condition_filter(spark, "part = 5 AND name = 'a'", SCHEMA)
    assert found.exact == parse("part = 5 AND name = 'a'")
    assert found.implied == found.exact


def test_the_conjuncts_lakecat_reads_are_implied_and_the_rest_dropped(spark: Any) -> None:
    found = condition_filter(spark, "PART = 5 and id % 800 = 5 AND (name = 'a' OR id > 3)", SCHEMA)
    assert found.exact is None
    assert str(found.implied) == str(parse("PART = 5 AND (name = 'a' OR id > 3)"))


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
