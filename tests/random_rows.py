"""Random tables, rows and Spark SQL conditions for the differential tests of row-level changes
(``tests/spark/test_spark_random_conditions.py``, ``test_spark_random_merges.py``,
``tests/spark_catalog/test_sql_random_races.py``).

The rows' values are drawn from a few each (names, scores with NaN and null, dates with null),
so that files' bounds and null and NaN counts differ; the conditions nest AND/OR/NOT over
comparisons, ``%``, ``BETWEEN``, ``LIKE``, ``IN``, ``length()``, ``isnan`` and null checks of
every column.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
from typing import Any

import pyarrow as pa

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


def random_rows(rng: random.Random, ids: list[int | None] | range) -> list[dict[str, Any]]:
    """Rows with these ids (one append's): each draws its names and scores from a few of the
    values, so that files' bounds (and NaN and null counts) differ."""
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


def predicate(rng: random.Random, prefix: str = "") -> str:
    """One comparison of a column (named ``prefix + column``: ``t.id``)."""
    n = rng.randrange(-5, 130)
    part, id_, name, score, d = (prefix + c for c in ("part", "id", "name", "score", "d"))
    choices = [
        lambda: f"{part} = {rng.randrange(3)}",
        lambda: f"{part} != {rng.randrange(3)}",
        lambda: f"{part} IN ({rng.randrange(3)}, {rng.randrange(3)})",
        lambda: f"{id_} > {n}",
        lambda: f"{id_} <= {n}",
        lambda: f"{id_} BETWEEN {n} AND {n + rng.randrange(40)}",
        lambda: f"{id_} % {rng.randrange(2, 6)} = {rng.randrange(2)}",
        lambda: f"{name} = '{rng.choice(['ab', 'b', 'zz'])}'",
        lambda: f"{name} IS NULL",
        lambda: f"{name} IS NOT NULL",
        lambda: f"{name} LIKE '{rng.choice(['a', 'b', 'ab'])}%'",
        lambda: f"length({name}) = {rng.randrange(1, 4)}",
        lambda: f"{name} IN ('ab', '{rng.choice(['b', 'ba', 'c'])}')",
        lambda: f"{score} > {rng.choice([-2, 0, 2.5, 5])}",
        lambda: f"{score} < {rng.choice([-2, 0, 2.5, 5])}",
        lambda: f"{score} = {rng.choice([0, 2.5, 7])}",
        lambda: f"isnan({score})",
        lambda: f"{score} IS NULL",
        lambda: f"{d} < '2024-01-{rng.randrange(1, 21):02d}'",
        lambda: f"{d} = DATE '2024-01-{rng.randrange(1, 21):02d}'",
        lambda: f"{d} IS NULL",
    ]
    return rng.choice(choices)()


def random_condition(rng: random.Random, prefixes: tuple[str, ...] = ("",), depth: int = 0) -> str:
    """A random condition over the columns; each comparison names one of ``prefixes``."""
    shape = rng.random()
    if depth >= 2 or shape < 0.3:
        return predicate(rng, rng.choice(prefixes))
    if shape < 0.7:
        terms = [random_condition(rng, prefixes, depth + 1) for _ in range(rng.randrange(2, 4))]
        return " AND ".join(f"({t})" for t in terms)
    if shape < 0.9:
        left, right = (random_condition(rng, prefixes, depth + 1) for _ in range(2))
        return f"({left}) OR ({right})"
    return f"NOT ({random_condition(rng, prefixes, depth + 1)})"


# Partition layouts: (column, transform) fields, every transform the columns take; a layout is
# drawn from its own random stream (``random.Random(f"layout-{seed}")``), so that a seed's rows
# and conditions stay the same whichever layout it gets.
LAYOUTS: list[list[tuple[str, str]]] = [
    [("part", "identity")],
    [("part", "identity")],
    [],
    [("name", "truncate[1]")],
    [("id", "bucket[3]")],
    [("d", "day")],
    [("d", "month"), ("part", "identity")],
    [("id", "truncate[25]")],
    [("name", "bucket[2]"), ("id", "truncate[50]")],
]
# Spec changes between appends: a field added, or the first one removed (None).
EVOLUTIONS: list[tuple[str, str] | None] = [
    ("id", "bucket[4]"),
    ("name", "truncate[2]"),
    ("d", "day"),
    ("part", "identity"),
    None,
]


def random_layout(
    seed: int,
) -> tuple[list[tuple[str, str]], int | None, tuple[str, str] | None]:
    """A seed's partition layout: the table's first spec, after which of its three appends
    the spec changes (None: never), and how (``EVOLUTIONS``)."""
    rng = random.Random(f"layout-{seed}")
    layout = rng.choice(LAYOUTS)
    when = rng.choice([None, None, 0, 1])
    columns = {column for column, _ in layout}  # (day and month of d: a redundant spec)
    change = rng.choice([e for e in EVOLUTIONS if e is None or e[0] not in columns])
    if change is None and not layout:
        change = EVOLUTIONS[0]
    return layout, when, change


def evolve(table: Any, change: tuple[str, str] | None) -> None:
    """Apply a spec change of ``random_layout`` to a lakecat table."""
    with table.update_spec() as spec:
        if change is None:
            spec.remove_field(table.spec().fields[0].name)
        else:
            spec.add_field(*change)


def seeds(variable: str, default: list[int]) -> list[int]:
    """The seeds to run: ``default``, or those from ``a`` to ``b`` inclusive (``a:b``; ``a``:
    that one seed) that the environment variable ``variable`` gives."""
    spec = os.environ.get(variable)
    if not spec:
        return default
    start, _, end = spec.partition(":")
    return list(range(int(start), int(end or start) + 1))


def random_table(
    catalog: Any, name: str, rng: random.Random, seed: int, properties: dict[str, str]
) -> tuple[Any, list[dict[str, Any]], str]:
    """A new table of ``SCHEMA`` in ``seed``'s layout (``random_layout``) with three appends
    of random rows (files with overlapping and apart bounds), its spec changed after one of
    them if the layout says so: the table, its rows and the layout in words."""
    layout, evolve_after, change = random_layout(seed)
    table = catalog.create_table(name, SCHEMA, partition_by=layout, properties=properties)
    rows: list[dict[str, Any]] = []
    for i, start in enumerate((0, 40, 80)):
        appended = random_rows(rng, range(start, start + 40 + rng.randrange(20)))
        table.append(pa.Table.from_pylist(appended, schema=SCHEMA))
        rows += appended
        if i == evolve_after:
            evolve(table, change)
    described = f"partitioned by {layout}, then {change} after append {evolve_after}"
    return table, rows, described


def sql_row(row: dict[str, Any]) -> str:
    """A row as a Spark SQL ``VALUES`` tuple: ``(1, 0, 'ab', CAST('nan' AS double), DATE ...)``."""

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


def row_key(row: dict[str, Any]) -> str:
    """A row as text that tells NaN, None and every value apart, for sorting."""
    score = row["score"]
    score = "NaN" if isinstance(score, float) and math.isnan(score) else score
    return repr((row["id"], row["part"], row["name"], score, row["d"]))
