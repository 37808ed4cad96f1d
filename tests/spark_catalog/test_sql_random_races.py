"""Random races of SQL statements in two Spark sessions (``workers``): every outcome is one the
table's isolation level allows (docs/concurrency.md).

Each round one session plans a statement and stops before its commit (``a``), the other runs a
statement to the end (``b``), then ``a`` commits (``a`` is a ``DELETE`` or an ``UPDATE``: an
``INSERT`` may commit in a Python worker process, which the pause does not reach). ``a``
either lands or fails with a typed ``lakecat Concurrent...`` error; ``b`` always lands. The
statements are random ``DELETE``, ``UPDATE`` and ``INSERT`` on one table (copy-on-write or
merge-on-read, format v2 or v3, partitioned as ``random_rows.random_layout`` draws), with the
random conditions of ``random_rows.py``. After each round the table must hold:

- ``a`` failed: ``b`` applied to the rows before the round (``a`` left no trace);
- ``a`` landed under ``serializable``: ``a`` applied after ``b``, as if one ran after the other;
- ``a`` landed under ``snapshot``: ``a`` applied to the rows ``b`` left as they were, plus the
  rows ``b`` wrote (a statement does not see rows added after it started; it deletes or changes
  the rows it saw, as far as they are still there), and an ``UPDATE`` ``a`` changed none of
  the rows ``b`` changed or deleted (a lost update).

Spark's evaluation of the conditions on a DataFrame of the rows gives each statement's rows.
``LAKECAT_RACE_SEEDS=a:b`` and ``LAKECAT_RACE_ROUNDS`` run more.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from random_rows import (
    SCHEMA,
    SPARK_SCHEMA,
    evolve,
    random_condition,
    random_layout,
    random_rows,
    row_key,
)

from lakecat.catalog import Catalog

pytestmark = pytest.mark.spark


def _seeds() -> list[int]:
    spec = os.environ.get("LAKECAT_RACE_SEEDS")
    if not spec:
        return [1, 2, 3, 4]
    start, _, end = spec.partition(":")
    return list(range(int(start), int(end or int(start) + 1)))


ROUNDS = int(os.environ.get("LAKECAT_RACE_ROUNDS", "4"))
RENAME = "concat(coalesce(name, ''), '!')"

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Statement:
    kind: str  # delete, update, insert
    condition: str = ""  # delete, update
    rows: tuple[dict[str, Any], ...] = ()  # insert

    def sql(self, table: str) -> str:
        if self.kind == "delete":
            return f"DELETE FROM lake.{table} WHERE {self.condition}"
        if self.kind == "update":
            return f"UPDATE lake.{table} SET name = {RENAME} WHERE {self.condition}"
        values = ", ".join(_values(r) for r in self.rows)
        return f"INSERT INTO lake.{table} VALUES {values}"

    def apply(self, spark: Any, rows: Rows) -> Rows:
        """The rows after this statement, by Spark's evaluation of its condition."""
        if self.kind == "insert":
            return rows + list(self.rows)
        matched = _matches(spark, rows, self.condition)
        if self.kind == "delete":
            return [r for r, m in zip(rows, matched, strict=True) if not m]
        return [
            r | {"name": (r["name"] or "") + "!"} if m else r
            for r, m in zip(rows, matched, strict=True)
        ]


def _values(row: dict[str, Any]) -> str:
    def literal(value: Any, sql_type: str) -> str:
        if value is None:
            return f"CAST(NULL AS {sql_type})"
        if sql_type == "double":
            return f"CAST('{value}' AS double)"  # 'nan' too
        if sql_type == "date":
            return f"DATE '{value.isoformat()}'"
        if sql_type == "string":
            return f"'{value}'"
        return str(value)

    types = ["bigint", "bigint", "string", "double", "date"]
    return (
        "(" + ", ".join(literal(row[c], t) for c, t in zip(SCHEMA.names, types, strict=True)) + ")"
    )


def _matches(spark: Any, rows: Rows, condition: str) -> list[bool]:
    if not rows:
        return []
    frame = spark.createDataFrame([tuple(r.values()) for r in rows], SPARK_SCHEMA)
    column = F.coalesce(F.expr(condition), F.lit(False))
    return [bool(r[0]) for r in frame.select(column).collect()]


def _statement(rng: random.Random, next_id: list[int], *, inserts: bool = True) -> Statement:
    kind = rng.choices(["delete", "update", "insert"], weights=[2, 2, 1 if inserts else 0])[0]
    if kind == "insert":
        ids = range(next_id[0], next_id[0] + rng.randrange(1, 6))
        next_id[0] += 100
        return Statement("insert", rows=tuple(random_rows(rng, ids)))
    return Statement(kind, condition=random_condition(rng))


def _multiset(rows: Rows) -> Counter[str]:
    return Counter(map(row_key, rows))


def _rows_of(keys: Counter[str], rows: Rows) -> Rows:
    """The rows of ``rows`` whose keys are in ``keys`` (as many times as there)."""
    left = Counter(keys)
    out = []
    for r in rows:
        if left[row_key(r)] > 0:
            left[row_key(r)] -= 1
            out.append(r)
    return out


@pytest.mark.parametrize("seed", _seeds())
def test_random_races_end_as_the_isolation_level_allows(
    workers: Any, worker_catalog: Catalog, spark: Any, seed: int
) -> None:
    rng = random.Random(seed)
    mode = rng.choice(["copy-on-write", "merge-on-read"])
    version = rng.choice(["2", "3"])
    level = rng.choice(["serializable", "snapshot"])
    name = f"db.race_{seed}_{rng.randrange(10**9)}"
    layout, evolve_after, change = random_layout(seed)
    table = worker_catalog.create_table(
        name,
        SCHEMA,
        partition_by=layout,
        properties={
            "format-version": version,
            **{f"write.{op}.mode": mode for op in ("delete", "update")},
            **{f"write.{op}.isolation-level": level for op in ("delete", "update")},
        },
    )
    rows: Rows = []
    for i, start in enumerate((0, 40, 80)):  # files with overlapping and apart bounds
        appended = random_rows(rng, range(start, start + 40 + rng.randrange(20)))
        table.append(pa.Table.from_pylist(appended, schema=SCHEMA))
        rows += appended
        if i == evolve_after:
            evolve(table, change)
    next_id = [1000]
    for round_ in range(ROUNDS):
        # an INSERT the Python data source writes (into a bucket layout, which Spark's writer
        # does not take) commits in a Python worker process, where sql_worker's pause before
        # the commit does not reach: INSERTs race as b only
        a, b = _statement(rng, next_id, inserts=False), _statement(rng, next_id)
        first, second = rng.sample(list(workers), 2)
        title = (
            f"seed {seed} ({mode}, v{version}, {level}, partitioned by {layout}, then "
            f"{change} after append {evolve_after}), round {round_}:\n"
            f"a: {a.sql(name)}\nb: {b.sql(name)}"
        )
        after_b = b.apply(spark, rows)

        first.send(a.sql(name), pause_before_commit=True)
        answer = first.answer()
        if answer == {"ok": True}:  # a changed no row: it had nothing to commit
            assert _multiset(a.apply(spark, rows)) == _multiset(rows), title
            second.send(b.sql(name))
            assert second.answer() == {"ok": True}, title
            expected = after_b
        else:
            assert answer == {"paused": True}, f"{title}\n{answer}"
            second.send(b.sql(name))
            assert second.answer() == {"ok": True}, title
            first.go()
            answer = first.answer()
            if not answer["ok"]:
                error = answer["error"].splitlines()[0]
                assert error.startswith("lakecat Concurrent"), f"{title}\n{answer['error']}"
                expected = after_b
            elif level == "serializable":
                expected = a.apply(spark, after_b)
            else:
                kept = _multiset(after_b) & _multiset(rows)  # the rows b left as they were
                written = _rows_of(_multiset(after_b) - kept, after_b)
                changed_by_b = _multiset(rows) - kept
                if a.kind == "update":  # a lost update: a committed over b's change
                    changed_by_a = _multiset(rows) - _multiset(a.apply(spark, rows))
                    assert not changed_by_a & changed_by_b, f"{title}\nlost update"
                expected = a.apply(spark, _rows_of(kept, after_b)) + written
        actual = table.refresh().to_arrow().to_pylist()
        missing = sorted((_multiset(expected) - _multiset(actual)).elements())
        extra = sorted((_multiset(actual) - _multiset(expected)).elements())
        assert not missing and not extra, f"{title}\nmissing: {missing}\nextra: {extra}"
        rows = actual
