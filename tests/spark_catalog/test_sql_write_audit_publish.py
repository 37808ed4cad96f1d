"""Write-audit-publish through the SQL catalog: on a table with ``write.wap.enabled``, every
write of a session with ``spark.wap.id`` set is staged (its snapshot carries the id in
``wap.id``; main does not move) until ``CALL lake.system.publish_changes`` publishes it; in a
session with ``spark.wap.branch`` set every write goes to that branch (the first creates it at
main's head) and the session reads it. tests/interop/test_sql_parity_with_iceberg_java.py
compares the same flows with Iceberg Java.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sql_lake import Lake

from lakecat.spark_ext import lakecat_error, register
from lakecat.spark_ext.native.write import session_conf

pytestmark = pytest.mark.spark


def wap_id(spark: Any, value: str) -> Any:
    return session_conf(spark, {"spark.wap.id": value})


def wap_branch(spark: Any, value: str) -> Any:
    return session_conf(spark, {"spark.wap.branch": value})


def ids(lake: Lake, table: str = "lake.db.t") -> list[int]:
    return [r.id for r in lake.sql(f"SELECT id FROM {table} ORDER BY id")]


def staged_snapshot(lake: Lake, wap: str) -> int:
    [(snapshot_id,)] = lake.sql(
        f"SELECT snapshot_id FROM lake.db.t.snapshots WHERE summary['wap.id'] = '{wap}'"
    )
    return int(snapshot_id)


def stream_into_t(lake: Lake, tmp_path: Path, values: list[int]) -> None:
    """A streaming query writing ``values`` (cat 's') into lake.db.t, run to its end."""
    source = tmp_path / "source"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array(values, pa.int64())}), source / "part-0.parquet")
    query = (
        lake.spark.readStream.schema("id long")
        .parquet(str(source))
        .selectExpr("id", "'s' AS cat")
        .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .toTable("lake.db.t")
    )
    query.awaitTermination(120)
    assert query.exception() is None


@pytest.fixture
def audited(lake: Lake) -> Lake:
    lake.sql(
        "CREATE TABLE lake.db.t (id bigint, cat string) PARTITIONED BY (cat) "
        "TBLPROPERTIES ('write.wap.enabled' = 'true', 'write.delete.mode' = 'merge-on-read')"
    )
    lake.sql("INSERT INTO lake.db.t VALUES (1, 'a'), (2, 'b'), (3, 'b')")
    return lake


def test_every_kind_of_write_is_staged_until_published(audited: Lake) -> None:
    lake = audited
    head = lake.catalog.load_table("db.t").metadata.current_snapshot_id
    writes = {
        "insert": "INSERT INTO lake.db.t VALUES (4, 'a')",
        "whole-file delete": "DELETE FROM lake.db.t WHERE cat = 'a'",  # lakecat's delete
        "merge-on-read delete": "DELETE FROM lake.db.t WHERE id % 3 = 0",
        "copy-on-write update": "UPDATE lake.db.t SET cat = 'c' WHERE id = 2",
    }
    for wap, statement in writes.items():
        with wap_id(lake.spark, wap):
            lake.sql(statement)
    with wap_id(lake.spark, "dataframe"):
        lake.spark.createDataFrame([(5, "a")], "id bigint, cat string").writeTo(
            "lake.db.t"
        ).append()

    table = lake.catalog.load_table("db.t")
    assert table.metadata.current_snapshot_id == head and ids(lake) == [1, 2, 3]
    staged = {wap: staged_snapshot(lake, wap) for wap in [*writes, "dataframe"]}
    assert all(table.snapshot(s).parent_snapshot_id == head for s in staged.values())
    assert ids(lake, f"lake.db.t VERSION AS OF {staged['whole-file delete']}") == [2, 3]

    [row] = lake.sql("CALL lake.system.publish_changes(table => 'db.t', wap_id => 'insert')")
    assert tuple(row) == (staged["insert"], staged["insert"])  # a fast-forward
    lake.sql("CALL lake.system.publish_changes('db.t', 'dataframe')")  # an append: re-applied
    assert ids(lake) == [1, 2, 3, 4, 5]
    with pytest.raises(Exception, match="cannot cherry-pick"):  # a delete on an older main
        lake.sql("CALL lake.system.publish_changes('db.t', 'merge-on-read delete')")
    assert ids(lake) == [1, 2, 3, 4, 5]


def test_without_write_wap_enabled_the_session_wap_id_changes_nothing(lake: Lake) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint, cat string)")
    with wap_id(lake.spark, "ignored"):
        lake.sql("INSERT INTO lake.db.t VALUES (1, 'a')")
    assert ids(lake) == [1]
    assert lake.sql("SELECT summary['wap.id'] FROM lake.db.t.snapshots")[0][0] is None


def test_an_explicit_snapshot_property_wins_over_the_session(audited: Lake) -> None:
    lake = audited
    frame = lake.spark.createDataFrame([(9, "a")], "id bigint, cat string")
    with wap_id(lake.spark, "session"):
        frame.writeTo("lake.db.t").option("snapshot-property.wap.id", "own").append()
    assert staged_snapshot(lake, "own") and ids(lake) == [1, 2, 3]


def test_the_data_source_stages_by_its_options_as_it_cannot_see_the_session(
    audited: Lake,
) -> None:
    # df.write.format("lakecat") runs in a Python worker without the session's configuration:
    # the write options say what spark.wap.id and spark.wap.branch say to the SQL catalog
    lake = audited
    register(lake.spark, catalog=lake.catalog, format_name="lakecat_wap")
    frame = lake.spark.createDataFrame([(9, "a")], "id bigint, cat string")

    with wap_id(lake.spark, "unseen"):
        frame.write.format("lakecat_wap").mode("append").option(
            "snapshot-property.wap.id", "ds"
        ).save("db.t")
    frame.write.format("lakecat_wap").mode("append").option("branch", "audit").option(
        "create-branch", "true"
    ).save("db.t")

    assert ids(lake) == [1, 2, 3]
    assert staged_snapshot(lake, "ds")
    assert ids(lake, "lake.db.t.branch_audit") == [1, 2, 3, 9]
    lake.sql("CALL lake.system.publish_changes('db.t', 'ds')")
    assert ids(lake) == [1, 2, 3, 9]


def test_an_overwrite_and_a_stream_are_staged_too(audited: Lake, tmp_path: Path) -> None:
    lake = audited
    with wap_id(lake.spark, "overwrite"):
        lake.sql("INSERT OVERWRITE lake.db.t SELECT 7, 'z'")
    with wap_id(lake.spark, "stream"):
        stream_into_t(lake, tmp_path, [8, 9])
    assert ids(lake) == [1, 2, 3]
    at = "lake.db.t VERSION AS OF {}".format
    assert ids(lake, at(staged_snapshot(lake, "overwrite"))) == [7]
    assert ids(lake, at(staged_snapshot(lake, "stream"))) == [1, 2, 3, 8, 9]


# each kind of write, as the first write of a session with spark.wap.branch, and the rows the
# branch then holds (main: 1, 2, 3)
BRANCH_WRITES = {
    "insert": ("INSERT INTO lake.db.t VALUES (4, 'a')", [1, 2, 3, 4]),
    "whole-file delete": ("DELETE FROM lake.db.t WHERE cat = 'a'", [2, 3]),
    "merge-on-read delete": ("DELETE FROM lake.db.t WHERE id % 3 = 0", [1, 2]),
    "copy-on-write update": ("UPDATE lake.db.t SET id = 8 WHERE id = 2", [1, 3, 8]),
    "merge": (
        "MERGE INTO lake.db.t t USING (SELECT 3 AS id, 'b' AS cat UNION ALL SELECT 5, 'c') s "
        "ON t.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *",
        [1, 2, 5],
    ),
    "dynamic overwrite": ("INSERT OVERWRITE lake.db.t SELECT 7, 'b'", [1, 7]),
    "dataframe": (None, [1, 2, 3, 6]),
}


@pytest.mark.parametrize("write", list(BRANCH_WRITES))
def test_the_first_write_in_a_session_wap_branch_creates_it_at_main_in_its_one_commit(
    audited: Lake, write: str
) -> None:
    lake = audited
    table = lake.catalog.load_table("db.t")
    head, count = table.metadata.current_snapshot_id, len(table.snapshots())
    statement, expected = BRANCH_WRITES[write]
    dynamic = session_conf(lake.spark, {"spark.sql.sources.partitionOverwriteMode": "dynamic"})
    with dynamic, wap_branch(lake.spark, "audit"):
        if statement is None:
            frame = lake.spark.createDataFrame([(6, "a")], "id bigint, cat string")
            frame.writeTo("lake.db.t").append()
        else:
            lake.sql(statement)
        assert ids(lake) == expected  # the session reads its branch once it exists

    table = lake.catalog.load_table("db.t")
    assert table.metadata.current_snapshot_id == head and ids(lake) == [1, 2, 3]
    assert ids(lake, "lake.db.t.branch_audit") == expected
    audit = table.snapshot(table.refs()["audit"].snapshot_id)
    assert audit.parent_snapshot_id == head
    assert len(table.snapshots()) == count + 1  # the branch came with the write


def test_a_session_wap_branch_takes_every_later_write_until_fast_forwarded(
    audited: Lake, tmp_path: Path
) -> None:
    lake = audited
    with wap_branch(lake.spark, "audit"):
        assert ids(lake) == [1, 2, 3]  # no branch yet: the session reads main
        lake.sql("INSERT INTO lake.db.t VALUES (4, 'a')")
        lake.sql("INSERT INTO lake.db.t VALUES (5, 'c')")
        lake.sql("DELETE FROM lake.db.t WHERE id % 3 = 0")
        lake.sql("UPDATE lake.db.t SET id = 20 WHERE id = 2")
        stream_into_t(lake, tmp_path, [8])
        assert ids(lake) == [1, 4, 5, 8, 20]
    assert ids(lake) == [1, 2, 3]  # main did not move
    assert ids(lake, "lake.db.t.branch_audit") == [1, 4, 5, 8, 20]

    lake.sql("CALL lake.system.fast_forward('db.t', 'main', 'audit')")  # publish the branch
    assert ids(lake) == [1, 4, 5, 8, 20]


def test_conflicting_wap_settings_are_refused_before_anything_is_written(audited: Lake) -> None:
    """As Iceberg's SparkWriteConf: not both spark.wap.id and spark.wap.branch, and not a
    write to another branch's table in a session with a WAP branch; reads still work."""
    lake = audited
    lake.sql("ALTER TABLE lake.db.t CREATE BRANCH dev")
    lake.sql("ALTER TABLE lake.db.t CREATE TAG checked")
    snapshots = {s.snapshot_id for s in lake.catalog.load_table("db.t").snapshots()}
    with wap_branch(lake.spark, "audit"):
        with wap_id(lake.spark, "w1"):
            for statement in (
                "INSERT INTO lake.db.t VALUES (4, 'a')",
                "DELETE FROM lake.db.t WHERE cat = 'a'",
                "DELETE FROM lake.db.t WHERE id % 3 = 0",
                "UPDATE lake.db.t SET cat = 'c' WHERE id = 2",
            ):
                with pytest.raises(Exception, match="Cannot set both WAP ID and branch") as raised:
                    lake.sql(statement)
            assert type(lakecat_error(raised.value)).__name__ == "ValidationError"
            assert ids(lake) == [1, 2, 3]
        with pytest.raises(Exception, match="Cannot write to both branch and WAP branch"):
            lake.sql("INSERT INTO lake.db.t.branch_dev VALUES (4, 'a')")
    with wap_branch(lake.spark, "checked"), pytest.raises(Exception, match="names a tag"):
        lake.sql("INSERT INTO lake.db.t VALUES (4, 'a')")
    table = lake.catalog.load_table("db.t")
    assert {s.snapshot_id for s in table.snapshots()} == snapshots
    assert set(table.refs()) == {"main", "dev", "checked"}


def test_without_write_wap_enabled_the_session_wap_branch_changes_nothing(lake: Lake) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint, cat string)")
    with wap_branch(lake.spark, "audit"):
        lake.sql("INSERT INTO lake.db.t VALUES (1, 'a')")
    assert ids(lake) == [1]
    assert set(lake.catalog.load_table("db.t").refs()) == {"main"}
