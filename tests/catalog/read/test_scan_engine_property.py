"""Property: the scan engine returns exactly the rows, in the order, of a reader that reads
each planned file alone.

The engine (``catalog/read/reader.py``) reads small files in runs, concatenates the raw columns
of files with one physical schema and resolves, casts and filters them once, streams large
files batch by batch and reads files with deletes through ``DeleteReader``. The reference,
``Scan._read_one``, is the per-file path the engine replaced: each file read, resolved and
filtered alone. Random histories mix appends (with nulls and nested values), schema
evolution (rename, add, drop, type promotion, including inside a struct), partition
evolution, merge-on-read and copy-on-write deletes on v2 and v3 tables; random filters use
every kind of predicate, on top-level and nested columns, combined with and/or/not; batch
sizes from one row up cut files and runs at every boundary.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecat.catalog import Catalog, Table
from lakecat.catalog.read.scan import Scan
from lakecat.metadata.expressions.evaluators import to_arrow_filter
from lakecat.metadata.expressions.expressions import (
    AlwaysTrue,
    And,
    Expression,
    Not,
    Operation,
    Or,
    predicate,
)
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.types import DoubleType, LongType, StringType

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("n", pa.int32()),
        pa.field("f", pa.float32()),
        pa.field("s", pa.string()),
        pa.field("st", pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.string())])),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
    ]
)
WORDS = ["a", "ab", "abc", "b", "ba", "", "zz"]


def rows(start: int, count: int, seed: int) -> pa.Table:
    rnd = random.Random(seed)

    def maybe(value: Any) -> Any:
        return None if rnd.random() < 0.25 else value

    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": ids,
            "n": [maybe(rnd.randint(-5, 5)) for _ in ids],
            "f": [maybe(rnd.choice([0.5, -1.5, 2.0, float("nan")])) for _ in ids],
            "s": [maybe(rnd.choice(WORDS)) for _ in ids],
            "st": [
                maybe({"x": maybe(rnd.randint(0, 3)), "y": maybe(rnd.choice(WORDS))}) for _ in ids
            ],
            "l": [maybe([rnd.randint(0, 9) for _ in range(rnd.randint(0, 3))]) for _ in ids],
            "m": [maybe([("k", rnd.randint(0, 9))] if rnd.random() < 0.5 else []) for _ in ids],
        },
        schema=SCHEMA,
    )


def ids_of(t: Table) -> dict[str, int]:
    """Field ids by the original names (``st.x``, ``st.y`` for the struct's fields)."""
    schema = t.schema()
    out = {f.name: f.field_id for f in schema.fields}
    for child in schema.find_field(out["st"]).field_type.fields:
        out[f"st.{child.name}"] = child.field_id
    return out


def positional(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` as ``target``, struct fields matched by position (renamed fields keep theirs)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_struct(target):
        children = [
            positional(arr.field(i), target.field(i).type) for i in range(target.num_fields)
        ]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    return arr.cast(target)


def conform(t: Table, data: pa.Table, ids: dict[str, int]) -> pa.Table:
    """``data`` (in the first schema's form) in the table's current schema: columns found by
    field id; dropped ones go, added ones are null."""
    schema = t.schema()
    names = {v: k for k, v in ids.items() if "." not in k}
    target = schema_to_arrow(schema)
    out = {}
    for f in schema.fields:
        arrow_type = target.field(f.name).type
        source = names.get(f.field_id)
        if source is None:
            out[f.name] = pa.nulls(data.num_rows, arrow_type)
        else:
            out[f.name] = positional(data.column(source), arrow_type)
    return pa.table(out)


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 12), st.integers(0, 9999)),
        st.tuples(st.just("append"), st.integers(0, 12), st.integers(0, 9999)),
        st.tuples(st.just("rename"), st.sampled_from(["s", "n", "st.y"])),
        st.tuples(st.just("add"), st.just(0)),
        st.tuples(st.just("drop"), st.sampled_from(["f", "l"])),
        st.tuples(st.just("promote"), st.sampled_from(["n", "f", "st.x"])),
        st.tuples(st.just("partition"), st.sampled_from(["s", "id", "n"])),
        st.tuples(st.just("delete"), st.integers(0, 40), st.integers(1, 4)),
    ),
    min_size=1,
    max_size=7,
)
PROMOTED = {"n": LongType(), "f": DoubleType(), "st.x": LongType()}


def apply(t: Table, step: tuple[Any, ...], next_id: int, ids: dict[str, int]) -> int:
    kind = step[0]
    schema = t.schema()
    if kind == "append":
        t.append(conform(t, rows(next_id, step[1], step[2]), ids))
        return next_id + step[1]
    if kind == "delete":
        t.delete(f"id >= {step[1]} AND id < {step[1] + step[2]}")
        return next_id
    if kind == "add":
        if not any(f.name == "extra" for f in schema.fields):
            with t.update_schema() as u:
                u.add_column("extra", LongType())
        return next_id
    fid = ids[step[1]]
    if not schema.has_field(fid):
        return next_id
    name = schema.column_name(fid)
    if kind == "rename":
        with t.update_schema() as u:
            u.rename_column(name, name.split(".")[-1] + "_r")
    elif kind == "drop" and not partitioned_by(t, fid):
        with t.update_schema() as u:
            u.delete_column(name)
    elif kind == "promote" and schema.find_field(fid).field_type != PROMOTED[step[1]]:
        with t.update_schema() as u:
            u.update_column(name, field_type=PROMOTED[step[1]])
    elif kind == "partition" and not partitioned_by(t, fid):
        with t.update_spec() as u:
            u.add_field(name, "bucket[3]" if step[1] == "id" else "identity")
    return next_id


def partitioned_by(t: Table, source_id: int) -> bool:
    return any(
        pf.source_id == source_id
        for spec in t.metadata.specs_by_id().values()
        for pf in spec.fields
    )


# ---- filters: every kind, on columns found by field id at filter time ----------------------

LEAVES = st.sampled_from(
    [
        (Operation.EQ, "id", 3),
        (Operation.NOT_EQ, "n", 1),
        (Operation.LT, "id", 7),
        (Operation.LT_EQ, "n", 0),
        (Operation.GT, "n", -2),
        (Operation.GT_EQ, "id", 10),
        (Operation.IN, "n", frozenset({1, 2, -3})),
        (Operation.NOT_IN, "id", frozenset({1, 4, 9})),
        (Operation.IS_NULL, "s", None),
        (Operation.NOT_NULL, "n", None),
        (Operation.IS_NAN, "f", None),
        (Operation.NOT_NAN, "f", None),
        (Operation.STARTS_WITH, "s", "a"),
        (Operation.NOT_STARTS_WITH, "s", "ab"),
        (Operation.EQ, "st.x", 2),
        (Operation.IS_NULL, "st.y", None),
        (Operation.GT, "f", 0.0),
        (Operation.IS_NULL, "extra", None),
    ]
)
FILTERS = st.recursive(
    st.one_of(st.just(None), LEAVES),
    lambda inner: st.one_of(
        st.tuples(st.just("and"), inner, inner),
        st.tuples(st.just("or"), inner, inner),
        st.tuples(st.just("not"), inner),
    ),
    max_leaves=4,
)


def build_filter(t: Table, spec: Any, ids: dict[str, int]) -> Expression:
    """The filter ``spec`` names, on the columns' current names; a predicate on a column that
    is not there (dropped, or not added yet) becomes true."""
    if spec is None:
        return AlwaysTrue()
    if spec[0] in ("and", "or", "not"):
        parts = [build_filter(t, s, ids) for s in spec[1:]]
        if spec[0] == "not":
            return Not(parts[0])
        return And(parts[0], parts[1]) if spec[0] == "and" else Or(parts[0], parts[1])
    op, role, value = spec
    schema = t.schema()
    if role == "extra":
        found = [f for f in schema.fields if f.name == "extra"]
        name = found[0].name if found else None
    else:
        name = schema.column_name(ids[role]) if schema.has_field(ids[role]) else None
    if name is None:
        return AlwaysTrue()
    return predicate(op, name, value)


def reference(scan: Scan) -> pa.Table:
    """Each planned file read alone, in planning order: a file with deletes (or when row
    lineage is read) through the per-file path (``Scan._read_one``), any other read whole and
    unfiltered, then filtered by pyarrow and projected here, so that the engine's filtering of
    concatenated runs is checked against filtering that shares none of its code."""
    plan = scan.plan()
    read_schema = scan._read_schema()
    arrow_filter = None if isinstance(scan.expression, AlwaysTrue) else to_arrow_filter(scan.bound)
    target = schema_to_arrow(scan.projected)
    reader = scan._delete_reader()
    tables = []
    for f in plan.files:
        deletes = plan.deletes.get(f.file_path, ())
        if deletes or scan.lineage:
            sequence_number = plan.sequence_numbers.get(f.file_path)
            alone = scan._read_one(f, read_schema, arrow_filter, deletes, reader, sequence_number)
            tables.append(alone)
            continue
        spec = scan.metadata.specs_by_id().get(f.spec_id)
        rows = read_data_file(scan.io, f, projected=read_schema, spec=spec)
        if arrow_filter is not None:
            rows = rows.filter(arrow_filter)
        tables.append(rows.select(target.names))
    return pa.Table.from_batches(
        [b for t in tables for b in t.cast(target).to_batches()], schema=target
    )


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    # NaN != NaN: compare floats by their text
    return [{k: repr(v) for k, v in r.items()} for r in table.to_pylist()]


@pytest.mark.slow
@settings(
    max_examples=int(os.environ.get("LAKECAT_ENGINE_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    version=st.sampled_from([2, 3]),
    mode=st.sampled_from(["merge-on-read", "copy-on-write"]),
    steps=STEPS,
    filters=st.lists(FILTERS, min_size=1, max_size=3),
    batch_size=st.sampled_from([1, 3, 7, 64, None]),
    with_lineage=st.booleans(),
)
def test_the_engine_reads_what_the_per_file_reader_reads(
    tmp_path_factory: pytest.TempPathFactory,
    version: int,
    mode: str,
    steps: list[tuple[Any, ...]],
    filters: list[Any],
    batch_size: int | None,
    with_lineage: bool,
) -> None:
    root: Path = tmp_path_factory.mktemp("lake")
    lake = Catalog.embedded(root)
    lake.create_namespace("db")
    t = lake.create_table(
        "db.t",
        SCHEMA,
        properties={"format-version": str(version), "write.delete.mode": mode},
    )
    ids = ids_of(t)
    t.append(rows(0, 6, 1))
    next_id = 6
    for step in steps:
        next_id = apply(t, step, next_id, ids)
        t = t.refresh()
    for spec in filters:
        expression = build_filter(t, spec, ids)
        columns = None
        if with_lineage and version == 3:
            columns = [f.name for f in t.schema().fields] + ["_row_id"]
        scan = t.scan(expression, columns=columns)
        expected = reference(scan)
        got = pa.Table.from_batches(
            list(scan.to_batches(batch_size=batch_size)), schema=expected.schema
        )
        assert _rows(got) == _rows(expected), (steps, str(expression), batch_size)
        assert _rows(scan.to_arrow()) == _rows(got)
    lake.close()


def test_a_column_dropped_and_added_again_under_its_name_is_null_in_the_older_files(
    tmp_path: Path,
) -> None:
    """Files whose schemas differ only in a field id (a column dropped, then one of the same
    name and type added: a new field id) resolve apart: the older files lack the new column.
    pyarrow's schema equality ignores the field ids, so one layout used to serve both."""
    lake = Catalog.embedded(tmp_path)
    lake.create_namespace("db")
    t = lake.create_table(
        "db.t", pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    )
    t.append(pa.table({"id": [1, 2], "s": ["old", "older"]}))
    with t.refresh().update_schema() as u:
        u.delete_column("s")
    with t.refresh().update_schema() as u:
        u.add_column("s", StringType())
    t = t.refresh()
    t.append(pa.table({"id": [3], "s": ["new"]}))
    t = t.refresh()
    for batch_size in (None, 1):
        scan = t.scan()
        got = pa.Table.from_batches(list(scan.to_batches(batch_size=batch_size)))
        assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "s": None},
            {"id": 2, "s": None},
            {"id": 3, "s": "new"},
        ]
        assert _rows(got) == _rows(reference(scan))
    lake.close()
