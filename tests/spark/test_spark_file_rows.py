"""lk.update, lk.merge and a copy-on-write lk.delete read the rows of the files they rewrite
with Spark's own Parquet reader (the rows deletes delete left out, each row's file, position
and, format v3, lineage as the data source gives them; the data source where the statement
names ``_file``) and write the rows back with Spark's Parquet writer where the table
qualifies."""

from __future__ import annotations

import importlib
import logging
import re
from typing import Any

import pyarrow as pa
import pytest

import lakecat.spark_ext.dml.file_rows as file_rows_module
from lakecat.catalog import Catalog, Table
from lakecat.spark_ext import attach_catalog, delete, merge, update

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("score", pa.float64())])
NATIVE = "reading the rows of db.{} with Spark's Parquet reader"
FALLBACK = "reading the rows of db.{} through the data source"
WRITTEN_BY_SPARK = re.compile(r"/data/[0-9a-f]{32}/")
WRITE_FALLBACK = "writing the rows of db.{} through the data source"
LINEAGE = ["id", "part", "score", "_row_id", "_last_updated_sequence_number"]


def make_table(lake: Catalog, name: str, parts: list[str], version: str) -> Table:
    """Ten rows per part, one file each: ids 0-9 in the first part, 10-19 in the second..."""
    table = lake.create_table(
        f"db.{name}",
        SCHEMA,
        partition_by=["part"],
        properties={"format-version": version, "write.delete.mode": "merge-on-read"},
    )
    for i, part in enumerate(parts):
        ids = list(range(10 * i, 10 * i + 10))
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "part": [part] * 10,
                    "score": [float(n) for n in ids],
                },
                schema=SCHEMA,
            )
        )
    return table


def live(table: Table, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    rows = table.refresh().to_arrow(columns=columns)
    return sorted(tuple(r.values()) for r in rows.to_pylist())


def messages(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records)


def change(spark: Any, name: str, *, via_data_source: bool = False) -> None:
    """A copy-on-write update, delete and merge of rows in files that position deletes (v3:
    deletion vectors) already delete from; ``via_data_source``: each statement names ``_file``
    (true of every row), which sends its read to the data source."""
    extra = " AND _file IS NOT NULL" if via_data_source else ""
    table = f"db.{name}"
    update(spark, table, f"id % 10 = 5{extra}", {"score": "-score"})
    delete(spark, table, f"id % 10 = 7{extra}")
    source = spark.createDataFrame(
        [(i, "new", 100.0 + i) for i in (1, 11, 21, 31, 99)], "id long, part string, score double"
    )
    merge(
        spark,
        target=table,
        source=source,
        on=f"t.id = s.id{extra.replace('_file', 't._file')}",
        when_matched_update={"score": "s.score"},
        when_not_matched_insert="*",
    )


@pytest.mark.parametrize("version", ["2", "3"])
def test_rows_of_files_with_deletes_and_escaped_names_are_read_natively(
    spark: Any, lake: Catalog, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    # partition folders hold the values URL-escaped; Spark names the files by URIs
    table = make_table(lake, "t", ["a b", "50%", "x=y/z", "plus+ü"], version)
    delete(spark, "db.t", "id % 10 = 0 OR id = 15")  # merge-on-read: a delete file per file
    table.set_properties(
        {"write.update.mode": "copy-on-write", "write.delete.mode": "copy-on-write"}
    )
    caplog.set_level(logging.DEBUG, logger="lakecat.spark")
    change(spark, "t")
    assert messages(caplog, NATIVE.format("t")) == 4  # the merge reads in two passes
    assert messages(caplog, FALLBACK.format("t")) == 0
    expected = {i: float(i) for i in range(40) if i % 10 not in (0, 7) and i != 15}
    expected.update({i: -float(i) for i in expected if i % 10 == 5})
    expected.update({i: 100.0 + i for i in (1, 11, 21, 31, 99)})
    assert {r[0]: r[2] for r in live(table)} == expected


def test_rewritten_rows_keep_the_lineage_the_data_source_gives_them(
    spark: Any, lake: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    tables = {name: make_table(lake, name, ["a", "b", "c"], "3") for name in ("n", "d")}
    for name, table in tables.items():
        delete(spark, f"db.{name}", "id % 10 = 0")  # deletion vectors
        table.set_properties(
            {"write.update.mode": "copy-on-write", "write.delete.mode": "copy-on-write"}
        )
    caplog.set_level(logging.DEBUG, logger="lakecat.spark")
    change(spark, "n")
    change(spark, "d", via_data_source=True)
    assert messages(caplog, NATIVE.format("n")) == 4  # the merge reads in two passes
    assert messages(caplog, FALLBACK.format("d")) == 4
    native, reference = (live(tables[name], LINEAGE) for name in ("n", "d"))
    # rows that were there keep the same lineage; the inserted ones (ids 31 and 99) get new
    # row ids by their position in the file they land in, which the writer orders
    assert [r for r in native if r[0] < 30] == [r for r in reference if r[0] < 30]
    inserted = [r for r in native if r[0] >= 30]
    assert [r[:3] + r[4:] for r in inserted] == [r[:3] + r[4:] for r in reference if r[0] >= 30]
    assert len({r[3] for r in native}) == len(native)  # each row its own id
    assert all(r[3] is not None and r[4] is not None for r in native)
    kept = [r for r in native if r[0] < 30 and r[0] % 10 not in (1, 5)]
    assert all(r[3] == r[0] for r in kept)  # the ids the appends gave them


def test_a_merge_naming_file_reads_its_rows_through_the_data_source(
    spark: Any, lake: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    table = make_table(lake, "t", ["a", "b"], "2")
    caplog.set_level(logging.DEBUG, logger="lakecat.spark")
    source = spark.createDataFrame([(3, "a", -1.0)], "id long, part string, score double")
    merge(
        spark,
        target="db.t",
        source=source,
        on="t.id = s.id AND t._file LIKE '%part=a%'",
        when_matched_update={"score": "s.score"},
    )
    assert messages(caplog, FALLBACK.format("t")) == 2  # both passes
    assert {r[0]: r[2] for r in live(table)}[3] == -1.0


def test_a_row_spark_names_an_unplanned_file_fails_the_statement_and_changes_nothing(
    spark: Any, lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the per-file join keys (deleted positions, lineage) are predicted on the driver; a row
    # no key names must fail the job, never keep a deleted row or lose its lineage
    table = make_table(lake, "t", ["a", "b"], "3")
    delete(spark, "db.t", "id = 1")
    table.set_properties({"write.update.mode": "copy-on-write"})
    before = live(table, LINEAGE)
    real = file_rows_module.spark_file_keys

    def misnamed(df: Any, paths: Any) -> dict[str, str]:
        return {path: key + ".elsewhere" for path, key in real(df, paths).items()}

    monkeypatch.setattr(file_rows_module, "spark_file_keys", misnamed)
    with pytest.raises(Exception, match="Spark read a file that was not planned"):
        update(spark, "db.t", "id = 2", {"score": "0"})
    assert live(table, LINEAGE) == before


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_the_rows_a_change_writes_are_written_by_sparks_writer(
    spark: Any, lake: Catalog, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    table = make_table(lake, "t", ["a", "b"], "3")
    table.set_properties({f"write.{k}.mode": mode for k in ("delete", "update", "merge")})
    appended = {f.file_path for f in table.scan().plan_files()}
    caplog.set_level(logging.INFO, logger="lakecat.spark")
    change(spark, "t")
    assert messages(caplog, WRITE_FALLBACK.format("t")) == 0
    # copy-on-write: the rewritten files; merge-on-read: the new rows (deletion vectors
    # delete from the appended files)
    files = {f.file_path for f in table.refresh().scan().plan_files()}
    added = files - appended
    assert added and all(WRITTEN_BY_SPARK.search(p) for p in added)
    assert (files & appended) == (appended if mode == "merge-on-read" else set())
    expected = {i: float(i) for i in range(20) if i % 10 != 7}
    expected.update({i: -float(i) for i in (5, 15)})
    expected.update({i: 100.0 + i for i in (1, 11, 21, 31, 99)})
    assert {r[0]: r[2] for r in live(table)} == expected


def test_a_table_spark_cannot_write_gets_its_rows_written_by_the_data_source(
    spark: Any, lake: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    # Spark's writer writes a fixed column as plain binary, not Iceberg's fixed
    schema = pa.schema([("id", pa.int64()), ("code", pa.binary(2))])
    table = lake.create_table("db.l", schema)
    table.append(pa.table({"id": [1, 2, 3], "code": [b"ab", b"cd", None]}, schema=schema))
    caplog.set_level(logging.INFO, logger="lakecat.spark")
    update(spark, "db.l", "id = 2", {"id": "20"})
    assert messages(caplog, WRITE_FALLBACK.format("l")) == 1
    assert not any(
        WRITTEN_BY_SPARK.search(f.file_path) for f in table.refresh().scan().plan_files()
    )
    assert live(table) == [(1, b"ab"), (3, None), (20, b"cd")]


def test_a_table_with_list_and_map_columns_gets_its_rows_written_by_spark(
    spark: Any, lake: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    # the session's lakecat SQL catalog writes the ids of list elements and map keys and values
    attach_catalog(spark, "lake", catalog=lake)
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("tags", pa.list_(pa.string())),
            ("m", pa.map_(pa.string(), pa.int64())),
        ]
    )
    table = lake.create_table("db.l", schema)
    table.append(
        pa.table(
            {"id": [1, 2, 3], "tags": [["a"], [], None], "m": [[("k", 1)], None, []]},
            schema=schema,
        )
    )
    caplog.set_level(logging.INFO, logger="lakecat.spark")
    update(spark, "db.l", "id = 2", {"tags": "array('b', 'c')", "m": "map('x', 2)"})
    assert messages(caplog, WRITE_FALLBACK.format("l")) == 0
    assert all(WRITTEN_BY_SPARK.search(f.file_path) for f in table.refresh().scan().plan_files())
    assert live(table) == [(1, ["a"], [("k", 1)]), (2, ["b", "c"], [("x", 2)]), (3, None, [])]


def test_a_merge_into_files_with_deletes_reads_them_through_the_data_source(
    spark: Any, lake: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    # measured faster there (docs/benchmarks.md): its tasks apply the deletes
    table = make_table(lake, "t", ["a", "b"], "3")
    delete(spark, "db.t", "id IN (2, 12)")  # deletion vectors
    caplog.set_level(logging.INFO, logger="lakecat.spark")
    source = spark.createDataFrame(
        [(3, "a", -1.0), (2, "a", -2.0)], "id long, part string, score double"
    )
    merge(
        spark,
        target="db.t",
        source=source,
        on="t.id = s.id",
        when_matched_update={"score": "s.score"},
    )
    assert messages(caplog, FALLBACK.format("t")) == 2  # both passes
    assert "the candidate files have deletes" in caplog.text
    got = {r[0]: r[2] for r in live(table)}
    assert got[3] == -1.0 and 2 not in got and 12 not in got and len(got) == 18


def test_too_many_deleted_positions_send_the_rows_to_the_data_source(
    spark: Any, lake: Catalog, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the native read ships every deleted position from the driver; past the bound the data
    # source's tasks apply the delete files
    table = make_table(lake, "t", ["a", "b"], "2")
    table.set_properties({"write.update.mode": "copy-on-write"})
    native_read = importlib.import_module("lakecat.spark_ext.native.read")
    caplog.set_level(logging.DEBUG, logger="lakecat.spark")
    monkeypatch.setattr(native_read, "MAX_NATIVE_DELETED_POSITIONS", 3)
    delete(spark, "db.t", "id IN (1, 2, 11)")  # position delete files
    update(spark, "db.t", "id IN (3, 13)", {"score": "-score"})  # 3 positions: native
    assert messages(caplog, NATIVE.format("t")) == 1
    delete(spark, "db.t", "id IN (4, 5, 14)")
    monkeypatch.setattr(native_read, "MAX_NATIVE_DELETED_POSITIONS", 2)
    update(spark, "db.t", "id IN (6, 16)", {"score": "-score"})
    assert messages(caplog, FALLBACK.format("t")) == 1
    assert "more than 2 deleted positions" in caplog.text
    expected = {i: float(i) for i in range(20) if i not in (1, 2, 4, 5, 11, 14)}
    expected.update({i: -float(i) for i in (3, 6, 13, 16)})
    assert {r[0]: r[2] for r in live(table)} == expected


def test_a_merges_first_pass_reads_only_the_columns_its_conditions_use(
    spark: Any, lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the data source gets no column pruning from Spark: the first pass asks for the columns
    table = make_table(lake, "t", ["a", "b"], "3")
    delete(spark, "db.t", "id = 2")  # a deletion vector: the merge reads through the data source
    real = file_rows_module.read_files
    asked: list[Any] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        asked.append((kwargs.get("columns"), kwargs.get("row_lineage")))
        return real(*args, **kwargs)

    monkeypatch.setattr(file_rows_module, "read_files", recording)
    source = spark.createDataFrame(
        [(3, "a", -1.0), (14, "b", 0.0)], "id long, part string, s double"
    )
    merge(
        spark,
        target="db.t",
        source=source,
        on="t.id = s.id",
        when_matched_update={"score": "s.s"},
        when_matched_update_condition="t.score < 10",
    )
    # the first pass: the key and the update condition's column; the second: whole rows
    assert asked == [(["id", "score"], False), (None, True)]
    got = {r[0]: r[2] for r in live(table)}
    assert got[3] == -1.0 and got[14] == 14.0 and 2 not in got and len(got) == 19


def test_a_merge_whose_conditions_name_no_target_column_changes_every_row(
    spark: Any, lake: Catalog
) -> None:
    # every target row matches the one source row: the first pass reads no table column
    plain, deleted = (make_table(lake, name, ["a"], "2") for name in ("p", "d"))
    delete(spark, "db.d", "id = 2")  # a delete file: the data source reads
    source = spark.createDataFrame([(-1.0,)], "s double")
    for name in ("p", "d"):
        merge(
            spark,
            target=f"db.{name}",
            source=source,
            on="s.s < 0",
            when_matched_update={"score": "s.s"},
        )
    assert {r[0]: r[2] for r in live(plain)} == {i: -1.0 for i in range(10)}
    assert {r[0]: r[2] for r in live(deleted)} == {i: -1.0 for i in range(10) if i != 2}
