"""Property: a table changed through delete files reads exactly as one changed copy-on-write.

Random sequences of deletes, updates, upserts, overwrites by filter, appends and compactions
run on three tables at once: copy-on-write (v2), merge-on-read with position delete files
(v2) and merge-on-read with deletion vectors (v3). After every step the three read the same
rows; the v3 table's row ids stay unique, and a row's id changes only when the row is new.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from row_change_steps import KINDS, SCHEMA, apply, rows, steps

from lakecat.catalog import Catalog, Table

STEPS = steps(max_id=39, max_ids=8)


def state(t: Table) -> list[tuple[int, int]]:
    data = t.refresh().to_arrow()
    return sorted(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))


def lineage(t: Table) -> dict[tuple[int, int], int]:
    """(id, v) -> _row_id; ids may repeat in the table (appends), so (id, v) with row id."""
    got = t.scan(columns=["id", "v", "_row_id"]).to_arrow().to_pylist()
    ids = [r["_row_id"] for r in got]
    assert None not in ids and len(set(ids)) == len(ids), "row ids must be unique"
    return {(r["id"], r["_row_id"]): r["v"] for r in got}


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(STEPS, min_size=1, max_size=6))
def test_delete_files_read_as_copy_on_write_does(embedded_lake: Catalog, steps: list[Any]) -> None:
    tables = {}
    for n, (kind, properties) in enumerate(KINDS.items()):
        name = f"db.t{n}_{len(embedded_lake.list_tables('db'))}"
        t = embedded_lake.create_table(name, SCHEMA, properties=properties)
        t.append(rows(list(range(0, 20)), 0))
        t.append(rows(list(range(20, 40)), 0))
        tables[kind] = t
    v3 = tables["mor v3"]
    for step in steps:
        ids_before = {row_id for (_, row_id) in lineage(v3)}
        for t in tables.values():
            apply(t, step)
        expected = state(tables["cow v2"])
        assert state(tables["mor v2"]) == expected, step
        assert state(v3) == expected, step
        after = lineage(v3)
        if step[0] in ("delete", "compact"):  # no row is new: every id was there before
            assert {row_id for (_, row_id) in after} <= ids_before, step
