"""Property: planning (:func:`~lakecat.catalog.read.planning.plan_scan`, through no cache, a cold
and a warm manifest cache, whole and block-by-block manifest reads) plans exactly what a
straightforward reference planner does (``planning_oracle.py``: every manifest decoded whole,
every entry filtered on its own, delete files matched to data files by the spec's rules written
out again), at every snapshot of random tables and for random filters: the same data files in
the same order with every stat, the same delete files for each, the same data sequence numbers.

The tables are changed by random appends, deletes and overwrites (copy-on-write v2,
merge-on-read with position delete files v2, merge-on-read with deletion vectors v3),
compactions and manifest rewrites, so plans meet lakecat's partition-ordered manifests, merged
manifests, DELETED entries and delete manifests.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_oracle import lakecat_plans, reference_plan
from row_change_steps import KINDS

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import rewrite_data_files, rewrite_manifests
from lakecat.catalog.read.planning import ScanPlan
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.table.timetravel import schema_for

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.int32()),
        pa.field("name", pa.string()),
    ]
)
PARTS = st.one_of(st.none(), st.integers(0, 4))
IDS = st.lists(st.integers(0, 99), min_size=1, max_size=12, unique=True)
STEPS = st.one_of(
    st.tuples(st.just("append"), IDS, PARTS),
    st.tuples(st.just("delete"), st.integers(0, 99), st.integers(1, 30)),
    st.tuples(st.just("overwrite"), PARTS, IDS),
    st.tuples(st.just("compact")),
    st.tuples(st.just("rewrite manifests")),
)
FILTERS = st.one_of(
    st.none(),
    st.builds("part = {}".format, st.integers(0, 5)),
    st.builds("part != {}".format, st.integers(0, 5)),
    st.builds("part IN ({}, {})".format, st.integers(0, 5), st.integers(0, 5)),
    st.just("part IS NULL"),
    st.just("part IS NOT NULL"),
    st.builds("id < {}".format, st.integers(0, 100)),
    st.builds("id >= {} AND part = {}".format, st.integers(0, 100), st.integers(0, 4)),
    st.builds("id > {} OR part = {}".format, st.integers(0, 100), st.integers(0, 4)),
    st.just("name IS NULL"),
    st.builds("name LIKE '{}%'".format, st.sampled_from(["n1", "n2", "m", "n"])),
)


def rows(ids: list[int], part: int | None) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([part] * len(ids), pa.int32()),
            "name": pa.array([None if i % 5 == 0 else f"n{i}" for i in ids], pa.string()),
        },
        schema=SCHEMA,
    )


def apply(t: Table, step: tuple[Any, ...]) -> None:
    kind = step[0]
    if kind == "append":
        t.append(rows(step[1], step[2]))
    elif kind == "delete":
        t.delete(f"id >= {step[1]} AND id < {step[1] + step[2]}")
    elif kind == "overwrite":
        where = "part IS NULL" if step[1] is None else f"part = {step[1]}"
        t.overwrite(rows(step[2], step[1]), where)
    elif kind == "compact":
        rewrite_data_files(t)
    else:
        rewrite_manifests(t)


def planned(plan: ScanPlan) -> tuple[list[DataFile], dict[str, set[tuple[str, int | None]]]]:
    deletes = {path: {d.key for d in found} for path, found in plan.deletes.items()}
    return list(plan.files), deletes


def check_every_snapshot(t: Table, filters: list[str | None]) -> None:
    cache = ManifestCache()
    for snapshot in t.metadata.snapshots:
        schema = schema_for(t.metadata, snapshot)
        for row_filter in filters:
            expected = reference_plan(t.io, t.metadata, snapshot, schema, row_filter)
            for lineage in ((), ("_row_id",)):  # with data sequence numbers or without
                columns = [*SCHEMA.names, *lineage]
                for plan in lakecat_plans(t, snapshot, schema, row_filter, cache, columns):
                    context = (snapshot.snapshot_id, row_filter, lineage)
                    assert planned(plan) == (expected.files, expected.deletes), context
                    if lineage or plan.deletes:  # planned only then
                        paths = [f.file_path for f in plan.files]
                        wanted = {p: expected.sequence_numbers[p] for p in paths}
                        assert dict(plan.sequence_numbers) == wanted, context


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(STEPS, min_size=1, max_size=5),
    filters=st.lists(FILTERS, min_size=2, max_size=4),
    kind=st.sampled_from(sorted(KINDS)),
)
def test_plans_equal_the_reference_planner_on_random_tables(
    embedded_lake: Catalog, steps: list[Any], filters: list[str | None], kind: str
) -> None:
    name = f"db.t{len(embedded_lake.list_tables('db'))}"
    t = embedded_lake.create_table(name, SCHEMA, partition_by=["part"], properties=KINDS[kind])
    t.append(pa.concat_tables([rows(list(range(p * 20, p * 20 + 20)), p) for p in range(5)]))
    for step in steps:
        apply(t, step)
    check_every_snapshot(t.refresh(), filters)
