"""Random row changes for property tests: steps drawn by hypothesis, applied to any table.

A table has columns ``id`` and ``v`` (both int64). :func:`steps` draws deletes, updates,
upserts, overwrites by filter, appends and compactions over ids ``0 .. max_id``;
:func:`apply` runs one on a table, whatever its write modes (copy-on-write or merge-on-read)
and format version. ``KINDS`` are the table properties of the three ways a change can be
stored: copy-on-write (v2), position delete files (v2), deletion vectors (v3).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from lakecat.catalog import Table
from lakecat.catalog.maintenance import rewrite_data_files

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
KINDS: dict[str, dict[str, str]] = {
    "cow v2": {},
    "mor v2": MOR,
    "mor v3": {**MOR, "format-version": "3"},
}


def steps(max_id: int, max_ids: int) -> st.SearchStrategy[tuple[Any, ...]]:
    ids = st.lists(st.integers(0, max_id), min_size=1, max_size=max_ids, unique=True)
    return st.one_of(
        st.tuples(st.just("delete"), ids),
        st.tuples(st.just("update"), ids, st.integers(1, 9)),
        st.tuples(st.just("upsert"), ids, st.integers(1, 9)),
        st.tuples(st.just("overwrite"), st.integers(0, max_id), ids),
        st.tuples(st.just("append"), ids),
        st.tuples(st.just("compact")),
    )


def rows(ids: list[int], v: int) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "v": pa.array([v] * len(ids), pa.int64())},
        schema=SCHEMA,
    )


def _in(ids: list[int]) -> str:
    return f"id IN ({', '.join(map(str, ids))})"


def apply(t: Table, step: tuple[Any, ...]) -> None:
    kind = step[0]
    if kind == "delete":
        t.delete(_in(step[1]))
    elif kind == "update":
        t.update({"v": step[2]}, _in(step[1]))
    elif kind == "upsert":
        t.upsert(rows(step[1], step[2]), on="id")
    elif kind == "overwrite":
        t.overwrite(rows(step[2], 0), f"id >= {step[1]}")
    elif kind == "append":
        t.append(rows(step[1], 0))
    else:
        rewrite_data_files(t)
