"""Random ``MERGE`` statements and Spark's evaluation of them on plain rows, for the
differential tests (``tests/spark/test_spark_random_merges.py``,
``tests/spark_catalog/test_sql_random_races.py``).

A merge joins the target (alias ``t``) with a source (alias ``s``) on ``t.id = s.id`` and maybe
more (``random_on``), and has clauses (``random_clauses``) with the random conditions of
``random_rows.py``: matched rows deleted or updated (moved between partitions too), source rows
inserted (all columns or some), and in SQL target rows without a match deleted or updated.
``merged_rows`` applies a merge to a list of rows by Spark's evaluation of the full outer join.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import functions as F
from random_rows import SCHEMA, SPARK_SCHEMA, random_condition

COLUMNS = SCHEMA.names


@dataclass
class Clauses:
    """One merge's clauses; each a condition (None: always) or absent."""

    delete: str | None = None  # WHEN MATCHED [AND ...] THEN DELETE (first)
    has_delete: bool = False
    update: dict[str, str] | None = None  # WHEN MATCHED [AND ...] THEN UPDATE SET
    update_when: str | None = None
    insert: dict[str, str] | None = None  # WHEN NOT MATCHED [AND ...] THEN INSERT
    insert_when: str | None = None
    by_source: list[tuple[str | None, dict[str, str] | None]] = field(default_factory=list)
    # WHEN NOT MATCHED BY SOURCE [AND cond] THEN DELETE (None) / UPDATE SET (a mapping)


UPDATES = [
    {c: f"s.{c}" for c in COLUMNS},  # UPDATE SET *
    {"name": "concat(coalesce(t.name, ''), coalesce(s.name, '?'))"},
    {"score": "s.score", "d": "date_add(t.d, 1)"},
    {"part": "s.part", "name": "upper(t.name)"},  # moves rows between partitions
]
INSERTS = [
    {c: f"s.{c}" for c in COLUMNS},  # INSERT *
    {"id": "s.id", "part": "s.part", "name": "lower(s.name)"},  # the other columns: NULL
    {"id": "s.id + 1000", "part": "(s.part + 1) % 3", "score": "s.score * 2", "d": "s.d"},
]


def random_clauses(rng: random.Random, sql: bool) -> Clauses:
    both = ("t.", "s.")
    while True:
        c = Clauses()
        if rng.random() < 0.4:
            c.has_delete = True
            c.delete = random_condition(rng, both) if rng.random() < 0.7 else None
        if rng.random() < 0.7 and not (c.has_delete and c.delete is None):  # (else unreachable)
            c.update = rng.choice(UPDATES)
            c.update_when = random_condition(rng, both) if rng.random() < 0.5 else None
        if rng.random() < 0.6:
            c.insert = rng.choice(INSERTS)
            c.insert_when = random_condition(rng, ("s.",)) if rng.random() < 0.5 else None
        if sql and rng.random() < 0.3:
            for _ in range(rng.randrange(1, 3)):
                when = random_condition(rng, ("t.",)) if rng.random() < 0.7 else None
                setting = None if rng.random() < 0.5 else {"name": "concat(t.name, '~')"}
                c.by_source.append((when, setting))
                if when is None:  # only the last clause may omit its condition (Spark's rule)
                    break
        if c.has_delete or c.update is not None or c.insert is not None or c.by_source:
            return c


def random_on(rng: random.Random) -> str:
    extra = rng.choice(
        [
            "",
            " AND t.part = s.part",
            f" AND t.part = {rng.randrange(3)}",
            f" AND ({random_condition(rng, ('t.',))})",
            f" AND ({random_condition(rng, ('t.', 's.'))})",
        ]
    )
    return "t.id = s.id" + extra


def source_ids(rng: random.Random, expected: list[dict[str, Any]], step: int) -> list[int | None]:
    """Unique keys (each target row matches at most one source row): some of the table's,
    some new, and a null or two."""
    present = sorted({r["id"] for r in expected if r["id"] is not None})
    ids: list[int | None] = list(rng.sample(present, min(len(present), rng.randrange(0, 30))))
    new = (1000 * (step + 1) + i for i in range(rng.randrange(0, 10)))
    ids += [i for i in new if i not in present]  # (an insert may have added it: s.id + 1000)
    ids += [None] * rng.randrange(0, 3)
    rng.shuffle(ids)
    return ids


def _when(condition: str | None) -> str:
    return f" AND ({condition})" if condition else ""


def _set(mapping: dict[str, str]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in mapping.items())


def merge_sql(table: str, source: str, on: str, c: Clauses) -> str:
    """The SQL ``MERGE INTO`` of ``c`` into ``table`` (alias t) from ``source`` (alias s)."""
    parts = [f"MERGE INTO {table} t USING {source} s ON {on}"]
    if c.has_delete:
        parts.append(f"WHEN MATCHED{_when(c.delete)} THEN DELETE")
    if c.update is not None:
        parts.append(f"WHEN MATCHED{_when(c.update_when)} THEN UPDATE SET {_set(c.update)}")
    if c.insert is not None:
        columns, values = ", ".join(c.insert), ", ".join(c.insert.values())
        parts.append(
            f"WHEN NOT MATCHED{_when(c.insert_when)} THEN INSERT ({columns}) VALUES ({values})"
        )
    for when, setting in c.by_source:
        action = "DELETE" if setting is None else f"UPDATE SET {_set(setting)}"
        parts.append(f"WHEN NOT MATCHED BY SOURCE{_when(when)} THEN {action}")
    return "\n".join(parts)


def merged_rows(
    spark: Any, rows: list[dict[str, Any]], source: Any, on: str, c: Clauses
) -> list[dict[str, Any]]:
    """The clauses applied by Spark to the full outer join of ``rows`` and ``source``: Spark
    evaluates every condition and value; the first clause that applies wins."""
    target = spark.createDataFrame([tuple(r.values()) for r in rows], SPARK_SCHEMA)
    target = target.withColumn("_t", F.lit(True))
    joined = target.alias("t").join(
        source.withColumn("_s", F.lit(True)).alias("s"), F.expr(on), "full_outer"
    )

    def holds(condition: str | None) -> Any:
        return F.coalesce(F.expr(condition), F.lit(False)) if condition else F.lit(True)

    def values(prefix: str, mapping: dict[str, str] | None) -> list[Any]:
        return [F.expr(v).alias(f"{prefix}{k}") for k, v in (mapping or {}).items()]

    by_source = [(holds(w), values(f"b{i}_", s)) for i, (w, s) in enumerate(c.by_source)]
    evaluated = joined.select(
        F.coalesce(F.col("t._t"), F.lit(False)).alias("_t"),
        F.coalesce(F.col("s._s"), F.lit(False)).alias("_s"),
        *[F.col(f"t.{k}").alias(f"t_{k}") for k in COLUMNS],
        holds(c.delete).alias("_delete"),
        holds(c.update_when).alias("_update"),
        holds(c.insert_when).alias("_insert"),
        *values("u_", c.update),
        *values("i_", c.insert),
        *[w.alias(f"_b{i}") for i, (w, _) in enumerate(by_source)],
        *[v for _, vs in by_source for v in vs],
    )
    out: list[dict[str, Any]] = []
    for r in evaluated.collect():
        row = r.asDict()
        old = {k: row[f"t_{k}"] for k in COLUMNS}
        if row["_t"] and row["_s"]:  # matched
            if c.has_delete and row["_delete"]:
                continue
            if c.update is not None and row["_update"]:
                out.append(old | {k: row[f"u_{k}"] for k in c.update})
            else:
                out.append(old)
        elif row["_t"]:  # not matched by source
            for i, (_, setting) in enumerate(c.by_source):
                if row[f"_b{i}"]:
                    if setting is not None:
                        out.append(old | {k: row[f"b{i}_{k}"] for k in setting})
                    break
            else:
                out.append(old)
        elif c.insert is not None and row["_insert"]:  # not matched
            out.append({k: row.get(f"i_{k}") for k in COLUMNS})
    return out
