"""Iceberg's SQL extensions through lakecat's parser extension (``lk.session`` registers it):
branches and tags (``ALTER TABLE ... CREATE/REPLACE/DROP BRANCH|TAG``, ``t.branch_<name>``,
``t.tag_<name>``) and partition evolution (``ADD/DROP PARTITION FIELD``), checked through
lakecat's Python API."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.metadata.io.fileio import local_path

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])


def rows(ids: list[int]) -> pa.Table:
    when = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    return pa.table({"id": pa.array(ids, pa.int64()), "ts": [when] * len(ids)}, SCHEMA)


@pytest.fixture
def t(lake) -> Any:
    table = lake.catalog.create_table("db.t", SCHEMA)
    table.append(rows([1, 2]))
    table.append(rows([3]))
    return table


def ids(lake, relation: str) -> list[int]:
    return sorted(r.id for r in lake.sql(f"SELECT id FROM {relation}"))


def test_branches_and_tags_are_created_replaced_and_dropped(lake, t) -> None:
    first, second = (s.snapshot_id for s in t.snapshots())

    lake.sql(f"ALTER TABLE lake.db.t CREATE BRANCH dev AS OF VERSION {first} RETAIN 7 DAYS")
    lake.sql("ALTER TABLE lake.db.t CREATE TAG v1 RETAIN 2 HOURS")
    lake.sql("ALTER TABLE lake.db.t CREATE BRANCH IF NOT EXISTS dev")  # kept as it is
    refs = t.refresh().refs()
    assert (refs["dev"].ref_type, refs["dev"].snapshot_id) == ("branch", first)
    assert refs["dev"].max_ref_age_ms == 7 * 86_400_000
    assert (refs["v1"].ref_type, refs["v1"].snapshot_id, refs["v1"].max_ref_age_ms) == (
        "tag",
        second,
        2 * 3_600_000,
    )
    with pytest.raises(Exception, match="dev"):
        lake.sql("ALTER TABLE lake.db.t CREATE BRANCH dev")  # exists already

    lake.sql(f"ALTER TABLE lake.db.t CREATE OR REPLACE BRANCH dev AS OF VERSION {second}")
    lake.sql(f"ALTER TABLE lake.db.t REPLACE TAG v1 AS OF VERSION {first}")
    refs = t.refresh().refs()
    assert refs["dev"].snapshot_id == second and refs["v1"].snapshot_id == first

    with pytest.raises(Exception, match="not a branch"):
        lake.sql("ALTER TABLE lake.db.t DROP BRANCH v1")  # a tag
    lake.sql("ALTER TABLE lake.db.t DROP TAG v1")
    lake.sql("ALTER TABLE lake.db.t DROP BRANCH IF EXISTS nope")
    lake.sql("ALTER TABLE lake.db.t DROP BRANCH dev")
    assert set(t.refresh().refs()) == {"main"}


def test_a_branch_of_a_table_without_a_snapshot_starts_at_an_empty_snapshot(lake, t) -> None:
    # as Iceberg Java: main of a table replaced without a query has no snapshot, a branch
    # created then gets one of its own (found by the random scripts with Iceberg Java)
    lake.sql("REPLACE TABLE lake.db.t (id bigint, ts timestamp) USING iceberg")
    assert t.refresh().current_snapshot() is None
    lake.sql("ALTER TABLE lake.db.t CREATE BRANCH dev RETAIN 7 DAYS")
    ref = t.refresh().refs()["dev"]
    assert ref.max_ref_age_ms == 7 * 86_400_000 and "main" not in t.refs()
    assert t.snapshot(ref.snapshot_id).parent_snapshot_id is None
    lake.sql("INSERT INTO lake.db.t.branch_dev VALUES (7, TIMESTAMP '2024-05-01 00:00:00')")
    assert ids(lake, "lake.db.t.branch_dev") == [7]
    assert ids(lake, "lake.db.t") == []


def test_a_branch_is_read_and_written_as_a_table_and_a_tag_is_read(lake, t) -> None:
    lake.sql("ALTER TABLE lake.db.t CREATE BRANCH dev")
    lake.sql("ALTER TABLE lake.db.t CREATE TAG before")

    lake.sql("INSERT INTO lake.db.t.branch_dev SELECT id + 10, ts FROM lake.db.t")

    assert ids(lake, "lake.db.t.branch_dev") == [1, 2, 3, 11, 12, 13]
    assert ids(lake, "lake.db.t") == [1, 2, 3]  # main did not move
    assert ids(lake, "lake.db.t.tag_before") == [1, 2, 3]
    assert ids(lake, "lake.db.t VERSION AS OF 'dev'") == [1, 2, 3, 11, 12, 13]
    branch_head = t.refresh().refs()["dev"].snapshot_id
    assert t.snapshot(branch_head).parent_snapshot_id == t.current_snapshot().snapshot_id
    with pytest.raises(Exception, match=r"read-only|not support|cannot be written"):
        lake.sql("INSERT INTO lake.db.t.tag_before VALUES (9, current_timestamp())")
    with pytest.raises(Exception, match="NoSuchRef"):
        lake.sql("SELECT * FROM lake.db.t.branch_nope")


def test_partition_fields_are_added_and_dropped(lake, t) -> None:
    lake.sql("ALTER TABLE lake.db.t ADD PARTITION FIELD bucket(4, id) AS shard")
    lake.sql("ALTER TABLE lake.db.t ADD PARTITION FIELD days(ts)")
    spec = t.refresh().spec()
    assert [(f.name, f.transform) for f in spec.fields] == [
        ("shard", "bucket[4]"),
        ("ts_day", "day"),
    ]

    lake.sql("INSERT INTO lake.db.t VALUES (4, timestamp'2024-05-02 00:00:00')")
    lake.sql("ALTER TABLE lake.db.t DROP PARTITION FIELD shard")  # by name
    lake.sql("ALTER TABLE lake.db.t DROP PARTITION FIELD days(ts)")  # by term
    assert t.refresh().spec().is_unpartitioned
    assert ids(lake, "lake.db.t") == [1, 2, 3, 4]
    with pytest.raises(Exception, match="not partitioned by"):
        lake.sql("ALTER TABLE lake.db.t DROP PARTITION FIELD hours(ts)")


def test_a_partition_field_is_replaced_and_identifier_fields_are_set(lake) -> None:
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us", tz="UTC"))]
    )
    table = lake.catalog.create_table("db.keyed", schema, partition_by=[("ts", "day")])
    lake.sql("ALTER TABLE lake.db.keyed REPLACE PARTITION FIELD days(ts) WITH hours(ts) AS hr")
    assert [(f.name, f.transform) for f in table.refresh().spec().fields] == [("hr", "hour")]
    lake.sql("ALTER TABLE lake.db.keyed REPLACE PARTITION FIELD hr WITH bucket(8, id)")
    assert [f.transform for f in table.refresh().spec().fields] == ["bucket[8]"]

    lake.sql("ALTER TABLE lake.db.keyed SET IDENTIFIER FIELDS id")
    current = table.refresh().schema()
    assert [current.find_field(i).name for i in current.identifier_field_ids] == ["id"]
    lake.sql("ALTER TABLE lake.db.keyed DROP IDENTIFIER FIELDS id")
    assert table.refresh().schema().identifier_field_ids == ()
    with pytest.raises(Exception, match="ts"):  # not a required column
        lake.sql("ALTER TABLE lake.db.keyed SET IDENTIFIER FIELDS id, ts")


def test_the_current_catalog_and_namespace_resolve_an_unqualified_table(lake, t, spark) -> None:
    spark.sql("USE lake.db")
    try:
        spark.sql("ALTER TABLE t CREATE TAG here")
    finally:
        spark.sql("USE spark_catalog.default")
    assert t.refresh().refs()["here"].ref_type == "tag"


def test_write_order_and_distribution_are_set(lake, t) -> None:
    lake.sql("ALTER TABLE lake.db.t WRITE ORDERED BY id DESC NULLS FIRST, days(ts)")
    table = t.refresh()
    order = table.sort_order()
    assert [(f.transform, f.direction, f.null_order) for f in order.fields] == [
        ("identity", "desc", "nulls-first"),
        ("day", "asc", "nulls-first"),
    ]
    assert table.properties["write.distribution-mode"] == "range"

    lake.sql("ALTER TABLE lake.db.t WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY id")
    table = t.refresh()
    assert [f.direction for f in table.sort_order().fields] == ["asc"]
    assert table.properties["write.distribution-mode"] == "hash"

    # an INSERT writes each file in the order (Spark's tasks each sort their rows)
    lake.sql(
        "INSERT INTO lake.db.t SELECT id, ts FROM VALUES (9L), (4L), (7L) AS v(id) "
        "CROSS JOIN (SELECT TIMESTAMP'2024-05-02 00:00:00' AS ts)"
    )
    table = t.refresh()
    added = [f for f in table.scan().plan_files() if f.sort_order_id == table.sort_order().order_id]
    assert added and sum(f.record_count for f in added) == 3
    for f in added:
        stored = pq.read_table(local_path(f.file_path)).column("id").to_pylist()
        assert stored == sorted(stored)

    lake.sql("ALTER TABLE lake.db.t WRITE UNORDERED")
    table = t.refresh()
    assert table.sort_order().is_unsorted
    assert table.properties["write.distribution-mode"] == "none"
    assert ids(lake, "lake.db.t") == [1, 2, 3, 4, 7, 9]
