"""Random races of SQL statements in two Spark sessions (``workers``): every outcome is one the
table's isolation level allows (docs/concurrency.md).

Each round one session plans a statement and stops before its commit (``a``), the other runs a
statement to the end (``b``), then ``a`` commits (``a`` is not an ``INSERT``: that may commit
in a Python worker process, which the pause does not reach). ``a`` either lands or fails with
a typed ``lakecat Concurrent...`` error; ``b`` always lands. The statements are random
``DELETE``, ``UPDATE``, ``MERGE`` (``random_merges.py``, from an inline ``VALUES`` source),
``INSERT`` and compactions (``rewrite_data_files``: bin-pack, sort or Z-order, of the whole
table or the files a ``where`` picks; ``rewrite_position_delete_files``), which change no row,
on one table (copy-on-write or merge-on-read, format v2 or v3, partitioned as
``random_rows.random_layout`` draws), with the random conditions of ``random_rows.py``. After
each round the table must hold:

- ``a`` committed before ``b`` started (a ``MERGE`` that only inserts, which Spark runs as an
  ``INSERT``, into a layout Spark's writer does not take) or changed no row: ``b`` after ``a``;
- ``a`` failed: ``b`` applied to the rows before the round (``a`` left no trace);
- ``a`` landed under ``serializable``: ``a`` applied after ``b``, as if one ran after the other;
- ``a`` landed under ``snapshot``: ``b``'s rows with ``a``'s changes to the rows it saw (rows
  removed, where ``b`` left them as they were; rows written), as a statement does not see rows
  added after it started; and an ``UPDATE`` or ``MERGE`` ``a`` changed or deleted none of the
  rows ``b`` changed or deleted (a lost update).

Spark's evaluation of the conditions on a DataFrame of the rows gives each statement's rows.
``LAKECAT_RACE_SEEDS=a:b`` and ``LAKECAT_RACE_ROUNDS`` run more.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql import functions as F
from random_merges import Clauses, merge_sql, merged_rows, random_clauses, random_on
from random_rows import (
    SCHEMA,
    SPARK_SCHEMA,
    random_condition,
    random_rows,
    random_table,
    row_key,
    seeds,
    sql_row,
)

from lakecat.catalog import Catalog

pytestmark = pytest.mark.spark


SEEDS = seeds("LAKECAT_RACE_SEEDS", [1, 2, 3, 4])
ROUNDS = int(os.environ.get("LAKECAT_RACE_ROUNDS", "4"))
RENAME = "concat(coalesce(name, ''), '!')"

Rows = list[dict[str, Any]]


# the compactions' arguments after the table's (Iceberg's rewrite_data_files; a table's few
# small files are all taken)
COMPACTIONS = [
    "options => map('min-input-files', '1')",
    "options => map('min-input-files', '1'), where => 'id < 500'",
    "options => map('min-input-files', '1'), strategy => 'sort', sort_order => 'score DESC'",
    "options => map('min-input-files', '1'), strategy => 'sort', sort_order => 'zorder(id, d)'",
]


@dataclass(frozen=True)
class Statement:
    kind: str  # delete, update, insert, merge; compact, rewrite_deletes (no row changes)
    condition: str = ""  # delete, update; compact: the procedure's other arguments
    rows: tuple[dict[str, Any], ...] = ()  # insert; merge: the source's
    on: str = ""  # merge
    clauses: Clauses | None = None  # merge

    def sql(self, table: str) -> str:
        if self.kind == "compact":
            return f"CALL lake.system.rewrite_data_files(table => '{table}', {self.condition})"
        if self.kind == "rewrite_deletes":
            return f"CALL lake.system.rewrite_position_delete_files(table => '{table}')"
        if self.kind == "delete":
            return f"DELETE FROM lake.{table} WHERE {self.condition}"
        if self.kind == "update":
            return f"UPDATE lake.{table} SET name = {RENAME} WHERE {self.condition}"
        values = ", ".join(sql_row(r) for r in self.rows)
        if self.kind == "insert":
            return f"INSERT INTO lake.{table} VALUES {values}"
        assert self.clauses is not None
        columns = ", ".join(SCHEMA.names)
        if self.rows:
            source = f"(SELECT * FROM VALUES {values} AS v({columns}))"
        else:  # an empty source (the table had no ids to match, and no new id was drawn)
            nulls = sql_row(dict.fromkeys(SCHEMA.names))
            source = f"(SELECT * FROM VALUES {nulls} AS v({columns}) WHERE false)"
        return merge_sql(f"lake.{table}", source, self.on, self.clauses)

    def apply(self, spark: Any, rows: Rows) -> Rows:
        """The rows after this statement, by Spark's evaluation of its condition."""
        if self.kind in ("compact", "rewrite_deletes"):
            return rows
        if self.kind == "insert":
            return rows + list(self.rows)
        if self.kind == "merge":
            assert self.clauses is not None
            source = spark.createDataFrame([tuple(r.values()) for r in self.rows], SPARK_SCHEMA)
            return merged_rows(spark, rows, source, self.on, self.clauses)
        matched = _matches(spark, rows, self.condition)
        if self.kind == "delete":
            return [r for r, m in zip(rows, matched, strict=True) if not m]
        return [
            r | {"name": (r["name"] or "") + "!"} if m else r
            for r, m in zip(rows, matched, strict=True)
        ]


def _matches(spark: Any, rows: Rows, condition: str) -> list[bool]:
    if not rows:
        return []
    frame = spark.createDataFrame([tuple(r.values()) for r in rows], SPARK_SCHEMA)
    column = F.coalesce(F.expr(condition), F.lit(False))
    return [bool(r[0]) for r in frame.select(column).collect()]


def _statement(
    rng: random.Random, rows: Rows, next_id: list[int], *, inserts: bool = True
) -> Statement:
    kind = rng.choices(
        ["delete", "update", "merge", "insert", "compact", "rewrite_deletes"],
        weights=[2, 2, 2, 1 if inserts else 0, 1, 0.5],
    )[0]
    if kind == "compact":
        return Statement(kind, condition=rng.choice(COMPACTIONS))
    if kind == "rewrite_deletes":
        return Statement(kind)
    new = range(next_id[0], next_id[0] + rng.randrange(0 if kind == "merge" else 1, 6))
    next_id[0] += 100
    if kind == "insert":
        return Statement("insert", rows=tuple(random_rows(rng, new)))
    if kind == "merge":  # unique keys: a target row matches at most one source row
        present = sorted({r["id"] for r in rows if r["id"] is not None})
        keys: list[int | None] = rng.sample(present, min(len(present), rng.randrange(1, 15)))
        keys += [i for i in new if i not in present]  # (a merge may have inserted s.id + 1000)
        keys += [None] * rng.randrange(0, 2)
        source = tuple(random_rows(rng, keys))
        return Statement("merge", rows=source, on=random_on(rng), clauses=random_clauses(rng, True))
    return Statement(kind, condition=random_condition(rng))


def _multiset(rows: Rows) -> Counter[str]:
    return Counter(map(row_key, rows))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_races_end_as_the_isolation_level_allows(
    workers: Any, worker_catalog: Catalog, spark: Any, seed: int
) -> None:
    rng = random.Random(seed)
    mode = rng.choice(["copy-on-write", "merge-on-read"])
    version = rng.choice(["2", "3"])
    level = rng.choice(["serializable", "snapshot"])
    name = f"db.race_{seed}_{rng.randrange(10**9)}"
    table, rows, layout = random_table(
        worker_catalog,
        name,
        rng,
        seed,
        {
            "format-version": version,
            **{f"write.{op}.mode": mode for op in ("delete", "update", "merge")},
            **{f"write.{op}.isolation-level": level for op in ("delete", "update", "merge")},
        },
    )
    next_id = [1000]
    for round_ in range(ROUNDS):
        # an INSERT the Python data source writes (into a bucket layout, which Spark's writer
        # does not take) commits in a Python worker process, where sql_worker's pause before
        # the commit does not reach: INSERTs race as b only (a MERGE that only inserts, which
        # Spark runs as an INSERT, may still commit at once: then a runs before b)
        a, b = _statement(rng, rows, next_id, inserts=False), _statement(rng, rows, next_id)
        first, second = rng.sample(list(workers), 2)
        title = (
            f"seed {seed} ({mode}, v{version}, {level}, {layout}), round {round_}:\n"
            f"a: {a.sql(name)}\nb: {b.sql(name)}"
        )
        before, after_b = _multiset(rows), b.apply(spark, rows)

        first.send(a.sql(name), pause_before_commit=True)
        answer = first.answer()
        if answer == {"ok": True}:  # a changed no row, or committed without the pause
            second.send(b.sql(name))  # (an insert-only MERGE runs as an INSERT: see above)
            assert second.answer() == {"ok": True}, title
            expected = _multiset(b.apply(spark, a.apply(spark, rows)))  # a, then b
        else:
            assert answer == {"paused": True}, f"{title}\n{answer}"
            second.send(b.sql(name))
            assert second.answer() == {"ok": True}, title
            first.go()
            answer = first.answer()
            if not answer["ok"]:
                error = answer["error"].splitlines()[0]
                assert error.startswith("lakecat Concurrent"), f"{title}\n{answer['error']}"
                expected = _multiset(after_b)
            elif level == "serializable":
                expected = _multiset(a.apply(spark, after_b))
            else:  # a's changes to the rows it saw, on the rows b left as they were
                kept = _multiset(after_b) & before
                after_a = _multiset(a.apply(spark, rows))
                removed_by_a, added_by_a = before - after_a, after_a - before
                if a.kind != "delete":  # a lost update: a committed over b's change
                    assert not removed_by_a & (before - kept), f"{title}\nlost update"
                expected = _multiset(after_b) - (removed_by_a & kept) + added_by_a
        actual = table.refresh().to_arrow().to_pylist()
        missing = sorted((expected - _multiset(actual)).elements())
        extra = sorted((_multiset(actual) - expected).elements())
        assert not missing and not extra, f"{title}\nmissing: {missing}\nextra: {extra}"
        rows = actual
