"""Random merges through ``lk.merge`` and through SQL ``MERGE INTO`` on the catalog, against
Spark's own evaluation of the same join and clauses on plain DataFrames.

lakecat prunes the target's files by the source's join keys and by the ``ON`` condition's
target side, drops files without a changed row, and (merge-on-read) deletes positions; Spark
evaluates the clauses on the rows. Whatever lakecat prunes, the table afterwards must hold
exactly what the clauses give on the full outer join of the expected rows and the source:
each seed merges a few random sources (keys that match, that do not, and null keys; NULLs and
NaNs in every other column) into one table (copy-on-write or merge-on-read, format v2 or v3,
partitioned as ``random_rows.random_layout`` draws) with random ``ON`` conditions and clauses,
checking after each step. The SQL seeds also draw
``WHEN NOT MATCHED BY SOURCE`` clauses, which ``lk.merge`` does not have.

``LAKECAT_MERGE_SEEDS=a:b`` and ``LAKECAT_MERGE_STEPS`` run more.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from typing import Any

import pytest
from random_merges import merge_sql, merged_rows, random_clauses, random_on, source_ids
from random_rows import SCHEMA, SPARK_SCHEMA, random_rows, random_table, row_key, seeds, sql_row

from lakecat.catalog import Catalog
from lakecat.spark_ext import merge

pytestmark = pytest.mark.spark

COLUMNS = ", ".join(SCHEMA.names)


SEEDS = seeds("LAKECAT_MERGE_SEEDS", [1, 2, 3, 4])
STEPS = int(os.environ.get("LAKECAT_MERGE_STEPS", "3"))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_merges_leave_exactly_the_rows_spark_computes(
    spark: Any, lake: Catalog, seed: int, engine: str
) -> None:
    sql = engine == "sql"
    rng = random.Random(seed)
    mode = rng.choice(["copy-on-write", "merge-on-read"])
    version = rng.choice(["2", "3"])
    table, expected, layout = random_table(
        lake, "db.t", rng, seed, {"format-version": version, "write.merge.mode": mode}
    )
    for step in range(STEPS):
        on = random_on(rng)
        clauses = random_clauses(rng, sql)
        source_rows = random_rows(rng, source_ids(rng, expected, step))
        source = spark.createDataFrame(
            [tuple(r.values()) for r in source_rows], SPARK_SCHEMA
        ).cache()
        want = merged_rows(spark, expected, source, on, clauses)
        # odd seeds: a temp view of the DataFrame; even seeds: the rows inline, whose size
        # Spark knows (a small source gets dynamic partition pruning of the target)
        inline = f"(SELECT * FROM VALUES {', '.join(map(sql_row, source_rows))} AS v({COLUMNS}))"
        from_view = seed % 2 == 1 or not source_rows
        statement = merge_sql("lake.db.t", "src" if from_view else inline, on, clauses)
        title = f"seed {seed} ({engine}, {mode}, v{version}, {layout}), step {step}:\n{statement}"
        if sql:
            source.createOrReplaceTempView("src")
            spark.sql(statement)
        else:
            merge(
                spark,
                target="db.t",
                source=source,
                on=on,
                when_matched_delete=(clauses.delete or True) if clauses.has_delete else False,
                when_matched_update=clauses.update,
                when_matched_update_condition=clauses.update_when,
                when_not_matched_insert=clauses.insert,
                when_not_matched_insert_condition=clauses.insert_when,
                catalog=lake,
            )
        source.unpersist()
        actual = Counter(map(row_key, table.refresh().to_arrow().to_pylist()))
        wanted = Counter(map(row_key, want))
        missing, extra = sorted((wanted - actual).elements()), sorted((actual - wanted).elements())
        assert not missing and not extra, f"{title}\nmissing: {missing}\nextra: {extra}"
        expected = want
