"""Reads through the Spark catalog ``lake`` by Spark's own Parquet reader (``reader=parquet``)
when it reads the rows lakecat reads, and by the Python data source (``reader=lakecat``)
otherwise: either way, the rows are the rows of lakecat's Python API."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import urllib.parse
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.metadata import LongType, StringType
from lakecat.metadata.io import local_path
from lakecat.spark_ext.native.write import session_conf

pytestmark = pytest.mark.spark

UTC = dt.UTC
KINDS = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("value", pa.float64()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def kinds(ids: range) -> pa.Table:
    """Rows of every kind of column, each holding nulls (every 7th row)."""

    def maybe(i: int, value: Any) -> Any:
        return None if i % 7 == 3 else value

    return pa.table(
        {
            "id": list(ids),
            "name": [maybe(i, f"n{i}") for i in ids],
            "value": [maybe(i, i / 4) for i in ids],
            "flag": [maybe(i, i % 2 == 0) for i in ids],
            "day": [maybe(i, dt.date(2024, 1, 1 + i % 5)) for i in ids],
            "amount": [maybe(i, decimal.Decimal(i * 25) / 100) for i in ids],
            "ts": [
                dt.datetime(2024, 1, 1 + i % 5, tzinfo=UTC) + dt.timedelta(minutes=i) for i in ids
            ],
        },
        schema=KINDS,
    )


def spark_dicts(rows: list[Any]) -> list[dict[str, Any]]:
    return sorted((r.asDict(recursive=True) for r in rows), key=lambda d: d["id"])


def lakecat_dicts(lake, table: str, columns: list[str], **scan: Any) -> list[dict[str, Any]]:
    """The rows of lakecat's Python API as dicts (maps as dicts), sorted by id."""
    arrow = lake.catalog.load_table(table).to_arrow(columns=columns, **scan)
    return sorted(arrow.select(columns).to_pylist(maps_as_pydicts="strict"), key=lambda d: d["id"])


def assert_same_rows(lake, query: str, table: str, columns: list[str], **scan: Any) -> None:
    assert spark_dicts(lake.sql(query)) == lakecat_dicts(lake, table, columns, **scan)


COLUMNS = ["id", "name", "value", "flag", "day", "amount"]
SELECT = ", ".join(COLUMNS)


def test_an_unpartitioned_table_is_read_by_sparks_parquet_reader(lake) -> None:
    table = lake.catalog.create_table("db.k", KINDS)
    table.append(kinds(range(0, 50)))
    table.append(kinds(range(50, 80)))

    line = lake.scan_line("SELECT * FROM lake.db.k")

    assert "reader=parquet, files=2]" in line
    assert_same_rows(lake, f"SELECT {SELECT} FROM lake.db.k", "db.k", COLUMNS)
    micros = lake.sql("SELECT id, unix_micros(ts) AS ts FROM lake.db.k")
    expected = lake.catalog.load_table("db.k").to_arrow(columns=["id", "ts"])
    assert sorted((r.id, r.ts) for r in micros) == sorted(
        zip(
            expected.column("id").to_pylist(),
            expected.column("ts").cast(pa.int64()).to_pylist(),
            strict=True,
        )
    )
    assert lake.sql("SELECT count(*) AS n FROM lake.db.k")[0].n == 80
    # Spark's vectorized reader: its batches become rows after the scan
    assert "ColumnarToRow" in lake.spark.sql("EXPLAIN SELECT * FROM lake.db.k").collect()[0][0]


def not_both(value: float | None, id: int) -> bool:
    """SQL's ``NOT (value < 10 AND id % 7 <> 1)`` holds (three-valued logic)."""
    less = None if value is None else value < 10
    return less is False or id % 7 == 1  # the AND is false (else true or null)


@pytest.mark.parametrize(
    ("where", "keep"),
    [
        ("value > 5.5", lambda r: r["value"] is not None and r["value"] > 5.5),
        ("name IN ('n1', 'n12', 'n40')", lambda r: r["name"] in ("n1", "n12", "n40")),
        ("name LIKE 'n1%'", lambda r: r["name"] is not None and r["name"].startswith("n1")),
        ("name IS NULL", lambda r: r["name"] is None),
        ("NOT flag", lambda r: r["flag"] is False),
        (
            "day = DATE '2024-01-03' OR id < 3",
            lambda r: r["day"] == dt.date(2024, 1, 3) or r["id"] < 3,
        ),
        (
            "amount >= 5.25 AND id % 3 = 0",
            lambda r: (
                r["amount"] is not None
                and r["amount"] >= decimal.Decimal("5.25")
                and r["id"] % 3 == 0
            ),
        ),
        (
            "id BETWEEN 10 AND 20 AND value IS NOT NULL",
            lambda r: 10 <= r["id"] <= 20 and r["value"] is not None,
        ),
        # one side of an OR (or of an AND under NOT) has no Parquet form: the other side alone
        # would skip the first file's row group, which holds matching rows
        (
            "id % 7 = 1 OR value > 10",
            lambda r: r["id"] % 7 == 1 or (r["value"] is not None and r["value"] > 10),
        ),
        ("NOT (value < 10 AND id % 7 <> 1)", lambda r: not_both(r["value"], r["id"])),
    ],
)
def test_filters_and_projections_read_natively_give_lakecats_rows(lake, where, keep) -> None:
    table = lake.catalog.create_table("db.k", KINDS)
    table.append(kinds(range(0, 30)))
    table.append(kinds(range(30, 60)))
    query = f"SELECT id, name, value, flag, day, amount FROM lake.db.k WHERE {where}"

    got = spark_dicts(lake.sql(query))

    assert "reader=parquet" in lake.scan_line(query)
    expected = [r for r in lakecat_dicts(lake, "db.k", COLUMNS) if keep(r)]
    assert got == expected and got
    projected = lake.sql(f"SELECT id, name FROM lake.db.k WHERE {where}")
    assert spark_dicts(projected) == [{"id": r["id"], "name": r["name"]} for r in expected]


def test_an_identity_partition_filter_prunes_files_and_reads_natively(lake) -> None:
    table = lake.catalog.create_table("db.r", KINDS, partition_by=["name"])
    for start in (0, 10, 20):
        rows = kinds(range(start, start + 10))
        table.append(rows.set_column(1, "name", pa.array([f"p{start}"] * 10)))

    line = lake.scan_line("SELECT * FROM lake.db.r WHERE name = 'p10'")

    assert "lakecat-filter=name IS NOT NULL AND name = 'p10', reader=parquet, files=1]" in line
    assert_same_rows(
        lake,
        f"SELECT {SELECT} FROM lake.db.r WHERE name = 'p10'",
        "db.r",
        COLUMNS,
        row_filter="name = 'p10'",
    )
    assert "reader=parquet, files=3]" in lake.scan_line("SELECT * FROM lake.db.r")


def test_bucket_and_day_partitions_prune_and_read_natively(lake) -> None:
    table = lake.catalog.create_table(
        "db.b", KINDS, partition_by=[("ts", "day"), ("id", "bucket[4]")]
    )
    table.append(kinds(range(0, 100)))
    files = len(table.scan().plan_files())
    where = "ts >= TIMESTAMP '2024-01-02 00:00:00' AND ts < TIMESTAMP '2024-01-03 00:00:00'"
    chosen = len(
        table.scan(
            row_filter="ts >= '2024-01-02T00:00:00+00:00' AND ts < '2024-01-03T00:00:00+00:00'"
        ).plan_files()
    )

    line = lake.scan_line(f"SELECT * FROM lake.db.b WHERE {where}")

    assert f"reader=parquet, files={chosen}]" in line and chosen < files
    got = lake.sql(f"SELECT id FROM lake.db.b WHERE {where}")
    assert sorted(r.id for r in got) == [i for i in range(100) if i % 5 == 1]
    bucket = lake.sql("SELECT id, name FROM lake.db.b WHERE id = 42")
    assert [(r.id, r.name) for r in bucket] == [(42, "n42")]
    one_bucket = len(table.scan(row_filter="id = 42").plan_files())
    assert one_bucket < files
    assert f"files={one_bucket}]" in lake.scan_line("SELECT * FROM lake.db.b WHERE id = 42")


NESTED = pa.schema(
    [
        ("id", pa.int64()),
        ("point", pa.struct([("x", pa.float64()), ("label", pa.string())])),
        ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.int64())),
    ]
)


def test_struct_list_and_map_columns_read_natively(lake) -> None:
    table = lake.catalog.create_table("db.n", NESTED)
    table.append(
        pa.table(
            {
                "id": [1, 2, 3, 4],
                "point": [
                    {"x": 1.5, "label": "a"},
                    None,
                    {"x": None, "label": "c"},
                    {"x": 4.0, "label": None},
                ],
                "tags": [["a", "b"], [], None, ["d", None]],
                "attrs": [[("k", 1)], None, [("a", 2), ("b", None)], []],
            },
            schema=NESTED,
        )
    )
    columns = ["id", "point", "tags", "attrs"]

    assert "reader=parquet" in lake.scan_line("SELECT * FROM lake.db.n")
    assert_same_rows(lake, "SELECT * FROM lake.db.n", "db.n", columns)
    labels = lake.sql("SELECT id, point.label AS label FROM lake.db.n WHERE point.x > 1")
    assert sorted((r.id, r.label) for r in labels) == [(1, "a"), (4, None)]
    # with deleted rows: the kept rows' structs, lists and maps, not their neighbours'
    table.refresh().set_properties({"write.delete.mode": "merge-on-read"})
    table.refresh().delete("id IN (1, 3)")
    assert "reader=parquet" in lake.scan_line("SELECT * FROM lake.db.n")
    assert_same_rows(lake, "SELECT * FROM lake.db.n", "db.n", columns)
    labels = lake.sql("SELECT id, point.label AS label, get(tags, 0) AS tag FROM lake.db.n")
    assert sorted((r.id, r.label, r.tag) for r in labels) == [(2, None, None), (4, None, "d")]


EVERY_KIND = pa.schema(
    [
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("b", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ts_ntz", pa.timestamp("us")),
        ("small", pa.decimal128(5, 2)),  # Spark keeps it in an int
        ("mid", pa.decimal128(15, 3)),  # ... in a long
        ("big", pa.decimal128(30, 4)),  # ... as bytes
        ("name", pa.string()),  # few values: dictionary-encoded
        ("uniq", pa.string()),
        ("raw", pa.binary()),
        (
            "point",
            pa.struct(
                [
                    ("x", pa.float64()),
                    ("label", pa.string()),
                    ("inner", pa.struct([("k", pa.int32()), ("s", pa.string())])),
                ]
            ),
        ),
        ("tags", pa.list_(pa.string())),
    ]
)
EPOCH = dt.datetime(2024, 1, 1, tzinfo=UTC)


def every_kind_row(i: int) -> dict[str, Any]:
    """Row ``i`` of ``EVERY_KIND``: each column null in another seventh of the rows."""

    def maybe(column: int, value: Any) -> Any:
        return None if (i + column) % 7 == 3 else value

    moment = dt.timedelta(seconds=i, microseconds=i)
    return {
        "id": i,
        "i": maybe(1, i * 3 - 500),
        "f": maybe(2, i / 8),
        "d": maybe(3, i / 4),
        "b": maybe(4, i % 3 == 0),
        "day": maybe(5, dt.date(2024, 1, 1) + dt.timedelta(days=i)),
        "ts": maybe(6, EPOCH + moment),
        "ts_ntz": maybe(0, dt.datetime(2024, 1, 1) + moment),
        "small": maybe(1, decimal.Decimal(i * 7 % 1000 - 500) / 100),
        "mid": maybe(2, decimal.Decimal(i * 1234567) / 1000),
        "big": maybe(3, decimal.Decimal(i) * decimal.Decimal("12345678901234567890.1234")),
        "name": maybe(4, f"n{i % 13}"),
        "uniq": maybe(5, f"u{i}-" + "x" * (i % 5)),
        "raw": maybe(6, bytes([i % 256, i * 7 % 256])),
        "point": maybe(
            0,
            {
                "x": None if i % 6 == 2 else i / 2,
                "label": f"l{i % 4}",
                "inner": None if i % 5 == 1 else {"k": i, "s": f"s{i}"},
            },
        ),
        "tags": maybe(1, [f"t{i}", f"t{i + 1}"][: i % 3]),
    }


@pytest.fixture(
    params=[
        ("on the heap", "moved"),
        ("off the heap", "moved"),
        ("on the heap", "views"),
        ("off the heap", "views"),
    ],
    ids=lambda p: f"{p[1]} {p[0]}",
)
def small_batches(spark, request) -> Any:
    """Spark's vectorized reader reads batches of 64 rows, into column vectors on or off the
    JVM's heap; a batch's kept rows are moved inside those vectors (the default) or read
    through views of them."""
    heap, kept_rows = request.param
    with session_conf(
        spark,
        {
            "spark.sql.parquet.columnarReaderBatchSize": "64",
            "spark.sql.columnVector.offheap.enabled": str(heap == "off the heap").lower(),
            "spark.lakecat.moveKeptRows": str(kept_rows == "moved").lower(),
        },
    ):
        yield


def test_batches_with_deleted_rows_give_the_kept_rows_of_every_column_kind(
    lake, small_batches
) -> None:
    table = lake.catalog.create_table(
        "db.every",
        EVERY_KIND,
        properties={"write.delete.mode": "merge-on-read", "write.parquet.row-group-limit": "100"},
    )
    table.append(pa.Table.from_pylist([every_kind_row(i) for i in range(600)], EVERY_KIND))
    with table.update_schema() as update:  # a column the first file lacks: read as nulls
        update.add_column("note", StringType())
    later = [{**every_kind_row(i), "note": f"note {i}"} for i in range(600, 700)]
    table.append(pa.Table.from_pylist(later, EVERY_KIND.append(pa.field("note", pa.string()))))
    # scattered rows, a whole batch (rows 100-163: a row group's first 64) and both ends of the
    # first file; the second file keeps every row (its batches pass as they are)
    scattered = [i for i in range(600) if i % 11 == 5] + [0, 599]
    table.refresh().delete(f"id IN ({', '.join(map(str, scattered))}) OR (id >= 100 AND id < 164)")
    kept = [i for i in range(700) if i not in scattered and not 100 <= i < 164]

    query = "SELECT * FROM lake.db.every"
    assert "reader=parquet, files=2]" in lake.scan_line(query)
    got = sorted((r.asDict(recursive=True) for r in lake.sql(query)), key=lambda r: r["id"])
    expected = [{**every_kind_row(i), "note": f"note {i}" if i >= 600 else None} for i in kept]
    for row in expected:  # as Spark gives them: timestamps in the session's UTC, without a zone
        row["ts"] = None if row["ts"] is None else row["ts"].replace(tzinfo=None)
        row["raw"] = None if row["raw"] is None else bytearray(row["raw"])
    assert got == expected
    # an aggregate over the same rows, as generated code reads the batches
    totals = lake.sql(
        "SELECT count(*) AS n, sum(i) AS i, sum(small) AS small, sum(big) AS big, "
        "count(name) AS names, sum(length(uniq)) AS chars, count(point.inner.s) AS inner, "
        "count(note) AS notes "
        "FROM lake.db.every"
    )[0]
    assert totals.n == len(kept)
    assert totals.i == sum(r["i"] for r in expected if r["i"] is not None)
    assert totals.small == sum(r["small"] for r in expected if r["small"] is not None)
    with decimal.localcontext(prec=60):  # the sum has more digits than Python's default 28
        assert totals.big == sum(r["big"] for r in expected if r["big"] is not None)
    assert totals.names == sum(r["name"] is not None for r in expected)
    assert totals.chars == sum(len(r["uniq"]) for r in expected if r["uniq"] is not None)
    assert totals.notes == 100
    assert totals.inner == sum(
        r["point"] is not None and r["point"]["inner"] is not None for r in expected
    )


def test_version_as_of_reads_the_snapshot_natively(lake) -> None:
    table = lake.catalog.create_table("db.k", KINDS)
    table.append(kinds(range(0, 10)))
    first = table.current_snapshot().snapshot_id
    table.append(kinds(range(10, 25)))
    table.delete("id < 5")  # copy-on-write: no delete files
    query = f"SELECT {SELECT} FROM lake.db.k VERSION AS OF {first}"

    assert "reader=parquet, files=1]" in lake.scan_line(query)
    assert_same_rows(lake, query, "db.k", COLUMNS, snapshot_id=first)
    assert_same_rows(lake, f"SELECT {SELECT} FROM lake.db.k", "db.k", COLUMNS)
    assert len(lake.sql(f"SELECT id FROM lake.db.k VERSION AS OF {first}")) == 10


def test_a_path_with_spaces_equals_signs_and_percents_is_read_natively(lake) -> None:
    table = lake.catalog.create_table("db.r", KINDS, partition_by=["name"])
    odd = "a b=c%d/e?f"
    table.append(kinds(range(0, 5)).set_column(1, "name", pa.array([odd] * 5)))
    table.append(kinds(range(5, 10)).set_column(1, "name", pa.array(["plain"] * 5)))

    line = lake.scan_line(f"SELECT * FROM lake.db.r WHERE name = '{odd}'")

    assert "reader=parquet, files=1]" in line
    got = lake.sql(f"SELECT id, name FROM lake.db.r WHERE name = '{odd}'")
    assert sorted((r.id, r.name) for r in got) == [(i, odd) for i in range(5)]
    assert_same_rows(lake, f"SELECT {SELECT} FROM lake.db.r", "db.r", COLUMNS)


def test_files_an_older_lakecat_wrote_under_unescaped_names_are_read_by_the_data_source(
    lake,
) -> None:
    # lakecat before 2026-11-21 wrote partition "a/b" to name=a/b while the manifest says
    # name=a%2Fb: its FileIO finds the file, Spark's reader would not
    table = lake.catalog.create_table("db.r", KINDS, partition_by=["name"])
    table.append(kinds(range(0, 5)).set_column(1, "name", pa.array(["a/b"] * 5)))
    table.append(kinds(range(5, 10)).set_column(1, "name", pa.array(["plain"] * 5)))
    (legacy,) = [f for f in table.scan().plan_files() if "%" in f.file_path]
    literal = local_path(legacy.file_path)
    assert literal is not None
    os.makedirs(os.path.dirname(urllib.parse.unquote(literal)))
    os.rename(literal, urllib.parse.unquote(literal))

    assert "reader=lakecat" in lake.scan_line("SELECT * FROM lake.db.r")
    assert_same_rows(lake, f"SELECT {SELECT} FROM lake.db.r", "db.r", COLUMNS)
    assert "reader=parquet, files=1]" in lake.scan_line(
        "SELECT * FROM lake.db.r WHERE name = 'plain'"
    )
    lake.sql("DELETE FROM lake.db.r WHERE id % 2 = 0")
    assert sorted(r.id for r in lake.sql("SELECT id FROM lake.db.r")) == [1, 3, 5, 7, 9]


def test_required_columns_read_natively(lake) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    table = lake.catalog.create_table("db.q", schema)
    table.append(pa.table({"id": [1, 2], "name": ["a", None]}, schema=schema))
    with table.update_schema() as update:
        update.add_column("note", StringType())
    table.append(pa.table({"id": [3], "name": ["c"], "note": ["x"]}))

    assert "reader=parquet" in lake.scan_line("SELECT * FROM lake.db.q")
    got = lake.sql("SELECT * FROM lake.db.q WHERE id IS NOT NULL")
    assert sorted((r.id, r.name, r.note) for r in got) == [
        (1, "a", None),
        (2, None, None),
        (3, "c", "x"),
    ]
    assert lake.spark.table("lake.db.q").schema["id"].nullable is False


# ---- what the Python data source still reads ---------------------------------------------


def kept_positions(lake, table: str) -> list[tuple[int, str, int]]:
    """(id, file, position) of the rows lakecat's Python API reads (deletes applied)."""
    live = set(lake.catalog.load_table(table).to_arrow(columns=["id"]).column("id").to_pylist())
    return file_positions(lake.catalog.load_table(table), lambda i: i in live)


@pytest.fixture(params=["columns", "rows"])
def small_splits(spark, request) -> Any:
    """Spark splits each file into several partitions (a split per row group or so), and
    reads them as column batches (its vectorized reader) or as rows."""
    vectorized = str(request.param == "columns").lower()
    with session_conf(
        spark,
        {
            "spark.sql.files.maxPartitionBytes": "4096",
            "spark.sql.parquet.enableVectorizedReader": vectorized,
        },
    ):
        yield


def test_position_deletes_are_applied_by_sparks_reader(lake, small_splits) -> None:
    table = lake.catalog.create_table(
        "db.k", KINDS, properties={"write.parquet.row-group-limit": "100"}
    )
    table.append(kinds(range(0, 450)))
    table.append(kinds(range(450, 600)))
    table.set_properties({"write.delete.mode": "merge-on-read"})
    table.delete("id IN (0, 3, 4, 150, 151, 299, 300, 449, 455)")
    table.refresh().delete("id IN (5, 598, 599)")  # a second delete file for each data file

    assert "reader=parquet, files=2]" in lake.scan_line("SELECT * FROM lake.db.k")
    assert_same_rows(lake, f"SELECT {SELECT} FROM lake.db.k", "db.k", COLUMNS)
    assert lake.sql("SELECT count(*) AS n FROM lake.db.k")[0].n == 600 - 12
    got = lake.sql("SELECT id, _file, _pos FROM lake.db.k")
    assert sorted((r.id, r._file, r._pos) for r in got) == kept_positions(lake, "db.k")
    # the filter skips row groups; the positions and the deletes still line up
    where = "id >= 290 AND id < 460"
    late = lake.sql(f"SELECT id, name, _pos FROM lake.db.k WHERE {where}")
    expected = [(i, pos) for i, _, pos in kept_positions(lake, "db.k") if 290 <= i < 460]
    assert sorted((r.id, r._pos) for r in late) == expected
    assert all(r.name == (None if r.id % 7 == 3 else f"n{r.id}") for r in late)


def test_too_many_deleted_positions_are_left_to_the_python_data_source(lake, monkeypatch) -> None:
    from lakecat.spark_ext.native import scan

    table = lake.catalog.create_table("db.k", KINDS)
    table.append(kinds(range(0, 20)))
    table.set_properties({"write.delete.mode": "merge-on-read"})
    table.delete("id IN (3, 4, 15)")
    monkeypatch.setattr(scan, "MAX_NATIVE_DELETED_POSITIONS", 2)

    assert "reader=lakecat" in lake.scan_line("SELECT * FROM lake.db.k")
    assert_same_rows(lake, f"SELECT {SELECT} FROM lake.db.k", "db.k", COLUMNS)
    monkeypatch.setattr(scan, "MAX_NATIVE_DELETED_POSITIONS", 3)
    assert "reader=parquet" in lake.scan_line("SELECT * FROM lake.db.k")


def test_deletion_vectors_are_applied_by_sparks_reader(lake, small_splits) -> None:
    table = lake.catalog.create_table(
        "db.k",
        KINDS,
        properties={
            "format-version": "3",
            "write.delete.mode": "merge-on-read",
            "write.parquet.row-group-limit": "50",
        },
    )
    table.append(kinds(range(0, 200)))
    table.delete("id < 4 OR id IN (57, 107, 157)")
    table.refresh().delete("id = 199")  # the file's new DV replaces the first

    assert "reader=parquet" in lake.scan_line("SELECT * FROM lake.db.k")
    assert_same_rows(lake, f"SELECT {SELECT} FROM lake.db.k", "db.k", COLUMNS)
    got = lake.sql("SELECT id, _file, _pos FROM lake.db.k")
    assert sorted((r.id, r._file, r._pos) for r in got) == kept_positions(lake, "db.k")


def test_a_sql_delete_and_merge_on_a_table_with_deletes_read_natively(lake) -> None:
    table = lake.catalog.create_table("db.k", KINDS)
    table.append(kinds(range(0, 30)))
    lake.sql(
        "ALTER TABLE lake.db.k SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', "
        "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"
    )
    lake.sql("DELETE FROM lake.db.k WHERE id % 4 = 1")
    lake.sql("UPDATE lake.db.k SET name = 'u' WHERE id % 4 = 2")  # reads past the deletes
    lake.spark.createDataFrame([(3, "m"), (5, "gone")], "id bigint, name string") \
        .createOrReplaceTempView("src")  # fmt: skip
    lake.sql(
        "MERGE INTO lake.db.k t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name"
    )

    assert "reader=parquet" in lake.scan_line("SELECT id, name FROM lake.db.k")
    got = {r.id: r.name for r in lake.sql("SELECT id, name FROM lake.db.k")}
    expected = {
        i: ("u" if i % 4 == 2 else "m" if i == 3 else None if i % 7 == 3 else f"n{i}")
        for i in range(30)
        if i % 4 != 1
    }
    assert got == expected
    assert sorted(lake.rows("db.k", "id", "name")) == sorted(expected.items())


def test_a_renamed_column_is_read_through_the_python_data_source(lake) -> None:
    table = lake.catalog.create_table("db.k", KINDS)
    table.append(kinds(range(0, 10)))
    with table.update_schema() as update:
        update.rename_column("value", "score")
    table.append(kinds(range(10, 20)).rename_columns([*KINDS.names[:2], "score", *KINDS.names[3:]]))
    columns = ["id", "name", "score"]

    assert "reader=lakecat" in lake.scan_line("SELECT id, name, score FROM lake.db.k")
    assert_same_rows(lake, "SELECT id, name, score FROM lake.db.k", "db.k", columns)
    # the columns a query reads decide: the renamed one is not among these
    assert "reader=parquet" in lake.scan_line("SELECT id, name FROM lake.db.k")
    assert_same_rows(lake, "SELECT id, name FROM lake.db.k", "db.k", ["id", "name"])


def test_a_promoted_column_is_read_through_the_python_data_source(lake) -> None:
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32())])
    table = lake.catalog.create_table("db.p", schema)
    table.append(pa.table({"id": [1, 2], "n": pa.array([10, None], pa.int32())}))
    with table.update_schema() as update:
        update.update_column("n", field_type=LongType())
    table.append(pa.table({"id": [3], "n": pa.array([2**40], pa.int64())}))

    assert "reader=lakecat" in lake.scan_line("SELECT * FROM lake.db.p")
    assert_same_rows(lake, "SELECT * FROM lake.db.p", "db.p", ["id", "n"])


def file_positions(table: Any, where: Any = None) -> list[tuple[int, str, int]]:
    """(id, file path, row position in the file) of every row of the table's files, read
    from the files themselves with pyarrow, kept where ``where(id)`` holds."""
    out = []
    for task in table.scan().plan_files():
        path = task.file_path
        ids = pq.read_table(path.removeprefix("file://"), columns=["id"]).column("id")
        rows = enumerate(ids.to_pylist())
        out += [(i, path, pos) for pos, i in rows if where is None or where(i)]
    return sorted(out)


def test_row_ids_are_read_natively_as_each_rows_file_and_position(lake) -> None:
    table = lake.catalog.create_table(
        "db.k", KINDS, properties={"write.parquet.row-group-limit": "100"}
    )
    table.append(kinds(range(0, 450)))
    table.append(kinds(range(450, 600)))
    table = lake.catalog.load_table("db.k")
    assert "reader=parquet" in lake.scan_line("SELECT id, _file, _pos FROM lake.db.k")

    both = lake.sql("SELECT id, _file, _pos FROM lake.db.k")
    assert sorted((r.id, r._file, r._pos) for r in both) == file_positions(table)
    # each alone, in another order, with the file's columns between them
    reordered = lake.sql("SELECT _pos, name, _file, id FROM lake.db.k")
    assert sorted((r.id, r._file, r._pos) for r in reordered) == file_positions(table)
    only_pos = lake.sql("SELECT id, _pos FROM lake.db.k")
    assert sorted((r.id, r._pos) for r in only_pos) == [
        (i, pos) for i, _, pos in file_positions(table)
    ]
    only_file = lake.sql("SELECT id, _file FROM lake.db.k")
    assert sorted((r.id, r._file) for r in only_file) == [
        (i, path) for i, path, _ in file_positions(table)
    ]
    # row groups the filter skips still count: positions are the file's
    late = lake.sql("SELECT id, _file, _pos FROM lake.db.k WHERE id >= 320 AND id < 470")
    assert sorted((r.id, r._file, r._pos) for r in late) == file_positions(
        table, lambda i: 320 <= i < 470
    )
    by_row_id = lake.sql("SELECT id FROM lake.db.k WHERE _pos = 7")
    assert sorted(r.id for r in by_row_id) == [7, 457]


def test_row_ids_are_read_natively_from_partitioned_files_with_special_paths(lake) -> None:
    table = lake.catalog.create_table("db.p", pa.schema([("id", pa.int64()), ("n", pa.string())]))
    lake.sql("ALTER TABLE lake.db.p ADD PARTITION FIELD n")
    rows = pa.table({"id": list(range(12)), "n": ["a b=c%d", "x"] * 6})
    lake.catalog.load_table("db.p").append(rows)
    table = lake.catalog.load_table("db.p")
    assert "reader=parquet" in lake.scan_line("SELECT id, _file, _pos FROM lake.db.p")

    got = lake.sql("SELECT id, _file, _pos FROM lake.db.p")

    assert sorted((r.id, r._file, r._pos) for r in got) == file_positions(table)
    assert any("a b=c%d" in path or "a+b" in path for _, path, _ in file_positions(table))


LINEAGE = ["id", "_row_id", "_last_updated_sequence_number"]


def lineage_rows(lake, table: str) -> list[tuple[int, int, int]]:
    """(id, _row_id, _last_updated_sequence_number) of every row, by lakecat's Python API."""
    arrow = lake.catalog.load_table(table).to_arrow(columns=LINEAGE)
    return sorted(zip(*(arrow.column(c).to_pylist() for c in LINEAGE), strict=True))


def test_row_lineage_columns_are_read_natively_and_assigned_as_the_spec_says(
    lake, small_splits
) -> None:
    table = lake.catalog.create_table(
        "db.v3",
        KINDS,
        properties={"format-version": "3", "write.parquet.row-group-limit": "40"},
    )
    table.append(kinds(range(0, 100)))
    table.append(kinds(range(100, 150)))
    # a copy-on-write update: the rewritten file stores both columns (null for changed rows)
    lake.sql("UPDATE lake.db.v3 SET name = 'u' WHERE id % 10 = 3 AND id < 100")
    # a merge-on-read delete: a deletion vector on the second file
    lake.sql("ALTER TABLE lake.db.v3 SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")
    lake.sql("DELETE FROM lake.db.v3 WHERE id IN (101, 120, 149)")
    query = "SELECT id, _row_id, _last_updated_sequence_number FROM lake.db.v3"

    assert "reader=parquet" in lake.scan_line(query)
    got = sorted((r[0], r[1], r[2]) for r in lake.sql(query))
    assert got == lineage_rows(lake, "db.v3")
    assert len({r[1] for r in got}) == len(got) == 147  # row ids stay unique
    updated = {r[0]: r[2] for r in got if r[0] % 10 == 3 and r[0] < 100}
    assert len(set(updated.values())) == 1  # the update's sequence number
    # each alone, with _pos, with _file
    only_ids = lake.sql("SELECT id, _pos, _row_id FROM lake.db.v3")
    assert sorted((r.id, r._row_id) for r in only_ids) == [(i, r) for i, r, _ in got]
    sequences = lake.sql("SELECT _file, id, _last_updated_sequence_number AS s FROM lake.db.v3")
    assert sorted((r.id, r.s) for r in sequences) == [(i, s) for i, _, s in got]
    # filters on lineage columns: assigned values (null or absent in the file) still match
    for i, row_id, sequence in (got[0], got[40], got[-1]):
        found = lake.sql(f"SELECT id FROM lake.db.v3 WHERE _row_id = {row_id}")
        assert [r.id for r in found] == [i]
        found = lake.sql(
            f"SELECT id FROM lake.db.v3 WHERE _last_updated_sequence_number = {sequence} "
            f"AND id = {i}"
        )
        assert [r.id for r in found] == [i]
    # a row-level statement on the v3 table reads its rows (with their lineage) natively too
    plan = lake.spark.sql("EXPLAIN UPDATE lake.db.v3 SET name = 'x' WHERE id = 5").collect()
    assert "reader=parquet" in plan[0][0] and "reader=lakecat" not in plan[0][0]


def test_a_filter_on_an_assigned_row_id_finds_its_row(lake) -> None:
    """A copy-on-write MERGE writes copied rows (their stored row ids) and inserted rows
    (null: assigned on read) into one file: the file's statistics of ``_row_id`` cover only
    the stored ids, so they must not prune a filter on an assigned one."""
    table = lake.catalog.create_table("db.v3", KINDS, properties={"format-version": "3"})
    table.append(kinds(range(0, 10)))
    lake.spark.createDataFrame([(3, "m"), (100, "new"), (101, "new")], "id bigint, name string") \
        .createOrReplaceTempView("src")  # fmt: skip
    lake.sql(
        "MERGE INTO lake.db.v3 t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name "
        "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)"
    )
    rows = lineage_rows(lake, "db.v3")
    assert len(rows) == 12 and len({r for _, r, _ in rows}) == 12

    for i, row_id, sequence in rows:
        found = lake.sql(f"SELECT id FROM lake.db.v3 WHERE _row_id = {row_id}")
        assert [r.id for r in found] == [i], (i, row_id)
        found = lake.sql(
            f"SELECT id FROM lake.db.v3 WHERE _last_updated_sequence_number = {sequence}"
        )
        assert i in [r.id for r in found], (i, sequence)


def test_a_v2_table_has_row_ids_but_no_lineage_columns(lake) -> None:
    from pyspark.errors import AnalysisException

    table = lake.catalog.create_table("db.v2", KINDS)
    table.append(kinds(range(0, 5)))

    got = lake.sql("SELECT id, _pos FROM lake.db.v2")
    assert sorted((r.id, r._pos) for r in got) == [(i, i) for i in range(5)]
    with pytest.raises(AnalysisException):
        lake.sql("SELECT id, _row_id FROM lake.db.v2")


def test_an_empty_table_reads_natively_with_no_rows(lake) -> None:
    lake.catalog.create_table("db.e", KINDS)

    assert "reader=parquet, files=0]" in lake.scan_line("SELECT * FROM lake.db.e")
    assert lake.sql("SELECT * FROM lake.db.e") == []


def test_a_query_mixing_both_readers_and_a_reused_dataframe_see_every_row(lake) -> None:
    table = lake.catalog.create_table("db.r", KINDS, partition_by=["name"])
    for start in (0, 10, 20):
        rows = kinds(range(start, start + 10))
        table.append(rows.set_column(1, "name", pa.array([f"p{start}"] * 10)))
    table.set_properties({"write.delete.mode": "merge-on-read"})
    table.delete("id IN (1, 2)")  # a position delete file for partition p0 only
    lake.sql("ALTER TABLE lake.db.r RENAME COLUMN flag TO flagged")  # Spark would miss it
    df = lake.spark.table("lake.db.r")

    assert "reader=parquet" in lake.scan_line("SELECT id FROM lake.db.r WHERE name = 'p10'")
    assert "reader=lakecat" in lake.scan_line("SELECT * FROM lake.db.r")
    assert df.where("name = 'p10'").count() == 10
    assert df.count() == 28
    joined = df.where("name = 'p10'").alias("a").join(df.alias("b"), "id")
    assert joined.count() == 10
    assert df.where("name = 'p10'").alias("a").crossJoin(df.alias("b")).count() == 10 * 28
    assert sorted(r.id for r in df.where("name = 'p0'").collect()) == [0, *range(3, 10)]


def test_an_incremental_read_reads_natively_and_the_filter_option_does_not(lake) -> None:
    table = lake.catalog.create_table("db.k", KINDS)
    table.append(kinds(range(0, 5)))
    start = table.current_snapshot().snapshot_id
    table.append(kinds(range(5, 8)))
    table.append(kinds(range(8, 10)))

    def batch_scan(df: Any) -> str:
        plan = str(df._jdf.queryExecution().executedPlan().toString())
        return next(line for line in plan.splitlines() if "BatchScan" in line)

    appended = lake.spark.read.option("start-snapshot-id", str(start)).table("lake.db.k")
    filtered = lake.spark.read.option("filter", "id > 6").table("lake.db.k")

    assert "reader=parquet, files=2]" in batch_scan(appended)
    assert sorted(r.id for r in appended.collect()) == list(range(5, 10))
    assert "reader=lakecat" in batch_scan(filtered)
    assert sorted(r.id for r in filtered.collect()) == [7, 8, 9]


def test_a_join_prunes_the_partitions_at_run_time(lake) -> None:
    # dynamic partition pruning: the partition values the other side of the join holds reach
    # the scan at run time, which plans its files again with them
    table = lake.catalog.create_table(
        "db.fact", pa.schema([("id", pa.int64()), ("part", pa.int64())]), partition_by=["part"]
    )
    for part in range(4):
        ids = range(part * 10, part * 10 + 10)
        table.append(pa.table({"id": list(ids), "part": [part] * 10}))
    dim = lake.spark.createDataFrame([(1, "x"), (2, "y"), (3, "x")], "part long, label string")
    dim.createOrReplaceTempView("dim")
    query = (  # dim broadcast: its values feed the pruning (Spark's default: reuse only)
        "SELECT /*+ BROADCAST(d) */ f.id FROM lake.db.fact f JOIN dim d ON f.part = d.part "
        "WHERE d.label = 'x'"
    )
    df = lake.spark.sql(query)
    assert sorted(r.id for r in df.collect()) == [*range(10, 20), *range(30, 40)]
    executed = df._jdf.queryExecution().executedPlan().toString()
    scan = next(line for line in executed.splitlines() if "BatchScan lake.db.fact" in line)
    assert "dynamicpruningexpression" in scan.lower()
    assert "files=2]" in scan  # of the table's 4: planned again with part IN (1, 3)


def test_repeated_queries_share_the_readers_broadcast_configuration(lake) -> None:
    # Spark's Parquet reader takes the Hadoop configuration as a broadcast, which costs about
    # a quarter of the JVM's planning of a small query; scans whose configurations hold the
    # same entries share one, and any change of them (a setting, the columns read) makes another
    table = lake.catalog.create_table("db.k", KINDS)
    table.append(kinds(range(0, 20)))
    sc = lake.spark.sparkContext

    def broadcasts_made(query: str) -> int:
        """The broadcasts planning ``query`` made (ids are given out in order)."""
        before = sc.broadcast(0)
        lake.spark.sql(query)._jdf.queryExecution().executedPlan()
        after = sc.broadcast(0)
        made = after._jbroadcast.id() - before._jbroadcast.id() - 1
        before.destroy()
        after.destroy()
        return int(made)

    query = "SELECT id, name FROM lake.db.k WHERE id > 3"
    assert "reader=parquet" in lake.scan_line(query)
    broadcasts_made(query)  # the first planning of these columns with this session's settings
    assert broadcasts_made(query) == 0
    assert broadcasts_made("SELECT id, name FROM lake.db.k WHERE id < 5") == 0
    assert broadcasts_made("SELECT id, value FROM lake.db.k") == 1  # another read schema
    assert broadcasts_made("SELECT id, value FROM lake.db.k") == 0
    lake.spark.conf.set("spark.lakecat.test.probe", "1")  # a session setting: in the reader's
    try:
        assert broadcasts_made(query) == 1
        assert broadcasts_made(query) == 0
        rows = lake.sql(query)
    finally:
        lake.spark.conf.unset("spark.lakecat.test.probe")
    assert sorted(r.id for r in rows) == list(range(4, 20))


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_float_comparisons_keep_the_nan_rows_spark_matches(lake, mode: str) -> None:
    # A file's Parquet statistics leave NaN out (max 0.0 for [0.0, NaN]) and Spark orders NaN
    # above every number: pruning row groups by "score > 5" skipped the NaN row.
    table = lake.catalog.create_table(
        "db.nan",
        pa.schema([("id", pa.int64()), ("score", pa.float64())]),
        properties={"write.delete.mode": mode, "write.update.mode": mode},
    )
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "score": [0.0, float("nan")]}))
    table.append(pa.table({"id": pa.array([3], pa.int64()), "score": [float("nan")]}))
    query = "SELECT id FROM lake.db.nan WHERE score > 5"
    assert "reader=parquet" in lake.scan_line(query)
    assert sorted(r[0] for r in lake.spark.sql(query).collect()) == [2, 3]
    assert lake.spark.sql("SELECT count(*) FROM lake.db.nan WHERE score <> 0").first()[0] == 2
    lake.spark.sql("UPDATE lake.db.nan SET score = -1 WHERE score > 5")
    assert sorted(r["score"] for r in table.refresh().to_arrow().to_pylist()) == [-1, -1, 0]
    table.append(pa.table({"id": pa.array([4], pa.int64()), "score": [float("nan")]}))
    lake.spark.sql("DELETE FROM lake.db.nan WHERE score = 'NaN'")
    assert sorted(r["id"] for r in table.refresh().to_arrow().to_pylist()) == [1, 2, 3]
