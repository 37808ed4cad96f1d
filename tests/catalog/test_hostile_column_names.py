"""Column names with dots, spaces, quotes, backquotes and Unicode, in every path of a table.

A name is one name, whatever characters it holds: ``"a.b"`` is a top-level column, not field
``b`` of a struct ``a``. Partition and sort sources are resolved by field id and the data is
walked by the tuple of names (``Schema.column_path``), never by splitting a dotted name; a
filter names such a column in backquotes (``expressions.quote_name`` prints it so). Iceberg
requires full names to be unique, so a top-level ``"a.b"`` next to a struct ``a`` with a
field ``b`` is refused with a typed error rather than resolved by guessing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo as PyEqualTo
from pyiceberg.table import StaticTable
from pyiceberg.transforms import BucketTransform, TruncateTransform
from pyiceberg.types import StringType as PyStringType

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance.compaction import rewrite_data_files
from lakecat.metadata.errors import InvalidUpdate, UnknownColumn, ValidationError
from lakecat.metadata.expressions.expressions import EqualTo, bind, quote_name
from lakecat.metadata.expressions.parser import parse
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import LongType, NestedField, StringType, StructType

HOSTILE = ["a.b", "with space", 'quote"d', "back`tick", "naïve_ünïcode", "日本", "x.and.y"]
TRANSFORMS = ["identity", "bucket[4]", "truncate[2]"]
VALUES = ["eu-west", "us-east", "eu-west", None, "ap", "日本語", "us-east", ""]


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[Catalog]:
    c = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "warehouse"))
    c.create_namespace("db")
    try:
        yield c
    finally:
        c.close()


def rows(column: str, values: list[str | None], start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + len(values)), pa.int64()),
            column: pa.array(values, pa.string()),
        }
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    names = t.column_names
    return sorted(
        zip(*(t.column(n).to_pylist() for n in names), strict=True),
        key=lambda r: tuple((v is None, str(v)) for v in r),
    )


def expected_partition(transform: str, value: str | None) -> Any:
    """The partition value per pyiceberg's transforms (an independent oracle)."""
    if value is None:
        return None
    if transform == "identity":
        return value
    if transform.startswith("bucket"):
        return BucketTransform(4).transform(PyStringType())(value)
    return TruncateTransform(2).transform(PyStringType())(value)


def check_partitions(table: Table, column: str, transform: str) -> None:
    """Every data file's partition value is the transform of each of its rows' values."""
    files = table.scan().plan_files()
    assert files
    schema = table.schema()
    for f in files:
        values = read_data_file(table.io, f, projected=schema).column(column).to_pylist()
        assert {expected_partition(transform, v) for v in values} == {f.partition[0]}, f


# ---- create, append, partition, sort, read ------------------------------------------------


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("column", HOSTILE)
def test_a_hostile_name_partitions_sorts_appends_and_reads_back(
    lake: Catalog, column: str, transform: str
) -> None:
    data = rows(column, VALUES)
    source = column if transform == "identity" else (column, transform)
    t = lake.create_table("db.t", data.schema, partition_by=[source], sort_by=[column])
    field_id = t.schema().find_field(column).field_id
    assert t.schema().column_path(field_id) == (column,)
    assert t.spec().fields[0].source_id == field_id
    assert t.sort_order().fields[0].source_id == field_id

    t.append(data)
    t.append(rows(column, ["eu-west", "zz"], start=100))

    assert canon(t.to_arrow()) == canon(
        pa.concat_tables([data, rows(column, ["eu-west", "zz"], 100)])
    )
    check_partitions(t, column, transform)


@pytest.mark.parametrize("column", HOSTILE)
def test_a_hostile_name_filters_deletes_and_overwrites_with_the_quoted_syntax(
    lake: Catalog, column: str
) -> None:
    t = lake.create_table("db.t", rows(column, []).schema, partition_by=[(column, "truncate[2]")])
    t.append(rows(column, VALUES))
    quoted = quote_name(column)
    assert parse(f"{quoted} = 'eu-west'").term == column

    hits = t.to_arrow(f"{quoted} = 'eu-west'")
    assert sorted(hits.column("id").to_pylist()) == [0, 2]
    assert t.scan(row_filter=f"{quoted} LIKE 'us%'").to_arrow().column("id").to_pylist() == [1, 6]
    assert t.to_arrow(EqualTo(column, "ap")).column("id").to_pylist() == [4]
    # the backquoted form works whatever quote_name chose, double quotes too
    backquoted = "`" + column.replace("`", "``") + "`"
    assert t.to_arrow(f"{backquoted} IS NULL").column("id").to_pylist() == [3]
    if '"' not in column:
        assert t.to_arrow(f"\"{column}\" = ''").column("id").to_pylist() == [7]

    t.delete(f"{quoted} IN ('us-east', 'ap')")
    assert sorted(t.to_arrow().column("id").to_pylist()) == [0, 2, 3, 5, 7]
    t.overwrite(rows(column, ["eu-north"], start=50), f"{quoted} LIKE 'eu%'")
    assert canon(t.to_arrow()) == canon(
        pa.concat_tables(
            [
                rows(column, [None], 3),
                rows(column, ["日本語"], 5),
                rows(column, [""], 7),
                rows(column, ["eu-north"], 50),
            ]
        )
    )
    check_partitions(t, column, "truncate[2]")


def test_a_printed_filter_on_a_hostile_column_parses_back_to_the_same_column() -> None:
    schema = Schema.of(
        *(NestedField(i, name, StringType()) for i, name in enumerate(HOSTILE, start=1)),
        NestedField(100, "s", StructType((NestedField(101, "x.y", StringType()),))),
    )
    for name in [*HOSTILE, "s.x.y"]:
        bound = bind(schema, EqualTo(name, "v"))
        again = bind(schema, parse(str(bound)))
        assert again == bound, name
        assert parse(str(EqualTo(name, "v"))) == EqualTo(name, "v")


def test_update_sets_a_hostile_column(lake: Catalog) -> None:
    column = "a.b"
    t = lake.create_table("db.t", rows(column, []).schema, partition_by=[column])
    t.append(rows(column, ["x", "y"]))
    t.update({column: "z"}, "id = 1")
    assert canon(t.to_arrow()) == [(0, "x"), (1, "z")]
    check_partitions(t, column, "identity")


def test_update_of_a_field_nested_in_a_struct_is_a_typed_error(lake: Catalog) -> None:
    t = lake.create_table("db.t", nested_rows().schema)
    t.append(nested_rows())
    with pytest.raises(ValidationError, match="nested in 's'"):
        t.update({"s.x.y": "z"}, "id = 1")  # used to be a plain KeyError from pyarrow
    t.update({"s.x": "z"}, "id = 1")  # the top-level column of that name
    assert t.to_arrow("id = 1").column("s.x").to_pylist() == ["z"]


def test_spec_evolution_adds_a_hostile_column_as_a_partition_source(lake: Catalog) -> None:
    column = "with.dots and space"
    t = lake.create_table("db.t", rows(column, []).schema)
    t.append(rows(column, VALUES))
    with t.update_spec() as u:
        u.add_field(column, "bucket[4]")
    t.append(rows(column, VALUES, start=100))
    new_files = [f for f in t.scan().plan_files() if f.spec_id == t.spec().spec_id]
    assert new_files and all(len(f.partition) == 1 for f in new_files)
    assert sorted(t.to_arrow(f"{quote_name(column)} = 'ap'").column("id").to_pylist()) == [4, 104]


def test_compaction_sorts_by_a_hostile_column_of_the_table_sort_order(lake: Catalog) -> None:
    column = "a.b"
    t = lake.create_table(
        "db.t",
        rows(column, []).schema,
        partition_by=[(column, "truncate[1]")],
        sort_by=[(column, "desc")],
    )
    t.append(rows(column, ["ea", "eb", "ec"]))
    t.append(rows(column, ["ed", "ee"], start=10))
    result = rewrite_data_files(t, sort_by="table")
    assert (result.files_removed, result.files_added) == (2, 1)
    (only,) = t.scan().plan_files()
    values = read_data_file(t.io, only, projected=t.schema()).column(column).to_pylist()
    assert values == ["ee", "ed", "ec", "eb", "ea"]


# ---- structs ------------------------------------------------------------------------------


def nested_rows(start: int = 0) -> pa.Table:
    """A struct ``s`` with a field ``"x.y"``, next to a top-level ``"s.x"`` (full names
    ``s.x.y`` and ``s.x``: no clash, but splitting ``"s.x.y"`` on dots finds nothing)."""
    inner = pa.struct([pa.field("x.y", pa.string()), pa.field("n", pa.int64())])
    return pa.table(
        {
            "id": pa.array(range(start, start + 4), pa.int64()),
            "s": pa.array(
                [
                    {"x.y": "alpha", "n": 1},
                    {"x.y": "beta", "n": 2},
                    None,
                    {"x.y": "alpha", "n": 4},
                ],
                inner,
            ),
            "s.x": pa.array(["p", "q", "r", "s"], pa.string()),
        }
    )


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_struct_field_with_a_dot_in_its_name_is_a_partition_source(
    lake: Catalog, transform: str
) -> None:
    data = nested_rows()
    source = "s.x.y" if transform == "identity" else ("s.x.y", transform)
    t = lake.create_table("db.t", data.schema, partition_by=[source], sort_by=["s.x.y", "s.x"])
    schema = t.schema()
    source_id = t.spec().fields[0].source_id
    assert schema.column_path(source_id) == ("s", "x.y")
    assert schema.find_path(("s", "x.y")).field_id == source_id
    assert schema.column_path(schema.find_field("s.x").field_id) == ("s.x",)

    t.append(data)
    assert canon(t.to_arrow()) == canon(data)
    for f in t.scan().plan_files():
        read = read_data_file(t.io, f, projected=schema).column("s").to_pylist()
        values = {None if s is None else s["x.y"] for s in read}
        assert {expected_partition(transform, v) for v in values} == {f.partition[0]}
    assert t.to_arrow("s.`x.y` = 'alpha'").column("id").to_pylist() == [0, 3]
    assert t.to_arrow("`s.x.y` = 'beta'").column("id").to_pylist() == [1]
    assert t.to_arrow("`s.x` = 'r'").column("id").to_pylist() == [2]
    t.delete("s.`x.y` = 'alpha'")
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


def test_a_nested_hostile_column_can_be_added_by_its_path(lake: Catalog) -> None:
    t = lake.create_table("db.t", nested_rows().schema)
    with t.update_schema() as u:
        u.add_column(("s", "new.field"), StringType())
        u.add_column(("top.level",), LongType())
    schema = t.schema()
    assert schema.column_path(schema.find_field("s.new.field").field_id) == ("s", "new.field")
    assert schema.column_path(schema.find_field("top.level").field_id) == ("top.level",)
    with pytest.raises(UnknownColumn, match="tuple"), t.update_schema() as u:
        u.add_column("nope.child", StringType())


# ---- ambiguity ----------------------------------------------------------------------------


AMBIGUOUS = pa.schema(
    [
        pa.field("a.b", pa.string()),
        pa.field("a", pa.struct([pa.field("b", pa.string())])),
    ]
)


def test_a_schema_where_two_fields_share_a_full_name_is_refused_at_create(lake: Catalog) -> None:
    with pytest.raises(InvalidUpdate, match=r"'a\.b' would name several fields"):
        lake.create_table("db.t", AMBIGUOUS)
    assert not lake.table_exists("db.t")


def test_a_column_that_would_make_a_full_name_ambiguous_cannot_be_added(lake: Catalog) -> None:
    t = lake.create_table(
        "db.t", pa.schema([pa.field("a", pa.struct([pa.field("b", pa.int64())]))])
    )
    with pytest.raises(InvalidUpdate), t.update_schema() as u:
        u.add_column(("a.b",), StringType())
    with t.update_schema() as u:
        u.add_column(("a.c",), StringType())  # no clash: fine
    with pytest.raises(InvalidUpdate, match="several fields"), t.update_schema() as u:
        u.rename_column("a.c", "a.b")
    assert t.schema().column_path(t.schema().find_field("a.c").field_id) == ("a.c",)


def test_an_ambiguous_name_in_a_foreign_schema_is_a_typed_error_not_a_guess() -> None:
    schema = Schema.of(
        NestedField(1, "a.b", StringType()),
        NestedField(2, "a", StructType((NestedField(3, "b", StringType()),))),
        NestedField(4, "Id", LongType()),
        NestedField(5, "ID", LongType()),
    )
    assert schema.ambiguous_names() == {"a.b": (1, 3)}
    with pytest.raises(UnknownColumn, match="ambiguous"):
        schema.find_field("a.b")
    assert not schema.has_field("a.b")
    with pytest.raises(UnknownColumn, match="ambiguous"):
        bind(schema, parse("`a.b` = 'x'"))
    # paths and ids stay exact
    assert schema.find_path(("a.b",)).field_id == 1
    assert schema.find_path(("a", "b")).field_id == 3
    assert schema.column_path(3) == ("a", "b")
    # case-insensitively an exact match wins; otherwise two matches are ambiguous
    assert schema.find_field("Id", case_sensitive=False).field_id == 4
    with pytest.raises(UnknownColumn, match="ambiguous"):
        schema.find_field("id", case_sensitive=False)
    with pytest.raises(ValidationError):
        schema.find_path(("id",), case_sensitive=False)


def test_a_partition_source_inside_a_list_is_refused_with_a_typed_error(lake: Catalog) -> None:
    schema = pa.schema([pa.field("l", pa.list_(pa.struct([pa.field("x.y", pa.int64())])))])
    with pytest.raises(ValidationError):
        lake.create_table("db.t", schema, partition_by=["l.element.x.y"])


# ---- pyiceberg ----------------------------------------------------------------------------


def test_pyiceberg_reads_a_table_partitioned_by_hostile_columns_identically(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    lake = Catalog(url, warehouse=str(tmp_path / "warehouse"))
    lake.create_namespace("db")
    py = SqlCatalog("lakecat", uri=url, warehouse=lake.warehouse)
    try:
        data = nested_rows().append_column("a.b", pa.array(["x", "y", "x", None]))
        data = data.append_column('quote"d `b`', pa.array(["m", "n", "m", "n"]))
        t = lake.create_table(
            "db.t",
            data.schema,
            partition_by=["a.b", ("s.x.y", "bucket[4]"), ('quote"d `b`', "truncate[1]")],
            sort_by=["a.b"],
        )
        t.append(data)
        t.append(
            nested_rows(start=10)
            .append_column("a.b", pa.array(["z"] * 4))
            .append_column('quote"d `b`', pa.array(["o"] * 4))
        )
        t.delete("`a.b` = 'y'")
        want = canon(t.to_arrow())
        static = StaticTable.from_metadata(t.metadata_location)
        assert canon(static.scan().to_arrow()) == want
        loaded = py.load_table("db.t")
        assert canon(loaded.scan().to_arrow()) == want
        # (pyiceberg 0.12 splits a dotted name when it filters the Parquet rows: "a.b" is
        # not a name its row filter can use, the other hostile one is)
        filtered = loaded.scan(row_filter=PyEqualTo('quote"d `b`', "m")).to_arrow()
        assert canon(filtered) == canon(t.to_arrow("`quote\"d ``b``` = 'm'"))
        assert len(filtered) == 2
        assert [f.source_id for f in loaded.spec().fields] == [f.source_id for f in t.spec().fields]
    finally:
        lake.close()
        py.engine.dispose()
