"""DELETE, UPDATE and MERGE on Spark: copy-on-write, one commit, conflict checks."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import CommitConflict, ValidationError
from lakecat.spark_ext import delete, merge, update

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("note", pa.string())])


def rows(ids: range, region: str, note: str = "") -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "region": pa.array([region] * n, pa.string()),
            "note": pa.array([note] * n, pa.string()),
        }
    )


@pytest.fixture
def regions(lake: Catalog) -> Table:
    """eu: ids 0-9, us: 10-19, ap: 20-29; one file each."""
    table = lake.create_table("db.t", SCHEMA, partition_by=["region"])
    for start, region in ((0, "eu"), (10, "us"), (20, "ap")):
        table.append(rows(range(start, start + 10), region))
    return table


def contents(table: Table) -> dict[int, tuple[str, str]]:
    table.refresh()
    return {r["id"]: (r["region"], r["note"]) for r in table.to_arrow().to_pylist()}


def source(spark: Any, data: list[tuple[int, str, str]]) -> Any:
    return spark.createDataFrame(data, "id long, region string, note string")


def test_delete_drops_whole_files_unread_and_rewrites_partial_ones(
    spark: Any, regions: Table
) -> None:
    whole = delete(spark, "db.t", "region = 'eu'")
    assert (whole.files_removed, whole.files_added, whole.files_read) == (1, 0, 0)
    partial = delete(spark, "db.t", "id = 15 or id = 16")
    assert (partial.files_removed, partial.files_added, partial.files_read) == (1, 1, 1)
    assert sorted(contents(regions)) == [10, 11, 12, 13, 14, 17, 18, 19, *range(20, 30)]
    assert regions.current_snapshot().operation == "overwrite"  # a delete that rewrote


def test_a_condition_only_spark_understands_still_deletes_exactly(
    spark: Any, regions: Table
) -> None:
    result = delete(spark, "db.t", "id % 10 = 3 and length(region) = 2")
    assert result.files_read == 3  # nothing to prune with: every file is read
    assert sorted(contents(regions)) == [i for i in range(30) if i % 10 != 3]
    nothing = delete(spark, "db.t", "id > 1000")
    assert nothing.snapshot_id is None


def test_update_rewrites_only_the_files_with_matching_rows(spark: Any, regions: Table) -> None:
    result = update(spark, "db.t", "id >= 12 and id < 14", {"note": "concat('was ', id)"})
    assert (result.files_removed, result.files_added) == (1, 1)
    after = contents(regions)
    assert after[12] == ("us", "was 12") and after[13] == ("us", "was 13")
    assert after[14] == ("us", "") and after[0] == ("eu", "")
    assert regions.current_snapshot().operation == "overwrite"


def test_merge_on_read_delete_and_update_write_position_deletes_and_keep_the_files(
    spark: Any, regions: Table
) -> None:
    regions.set_properties(
        {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
    )
    files = {f.file_path for f in regions.scan().plan_files()}
    whole = delete(spark, "db.t", "region = 'ap'")  # a whole file: dropped, no delete file
    assert (whole.files_removed, whole.files_added) == (1, 0)
    gone = delete(spark, "db.t", "id % 10 = 3")
    assert (gone.files_removed, gone.files_added) == (0, 2)  # two position delete files
    assert regions.refresh().current_snapshot().operation == "delete"
    changed = update(spark, "db.t", "id >= 12 and id < 15", {"note": "concat('was ', id)"})
    assert (changed.files_removed, changed.files_added) == (0, 2)  # new versions + deletes
    after = contents(regions)
    assert sorted(after) == [i for i in range(20) if i % 10 != 3]
    assert after[12] == ("us", "was 12") and after[14] == ("us", "was 14")
    assert after[11] == ("us", "") and after[0] == ("eu", "")
    live = {f.file_path for f in regions.scan().plan_files()}
    assert files - live == {f for f in files if "region=ap" in f}  # nothing else rewritten
    deletes = {d.file_path for ds in regions.scan().plan().deletes.values() for d in ds}
    assert len(deletes) == 3
    # Spark reads them back through the data source, deletes applied
    ids = sorted(r[0] for r in spark.read.format("lakecat").load("db.t").select("id").collect())
    assert ids == sorted(after)


def test_on_a_v3_table_merge_on_read_writes_deletion_vectors_and_rows_keep_their_ids(
    spark: Any, lake: Catalog
) -> None:
    t = lake.create_table(
        "db.v3",
        SCHEMA,
        partition_by=["region"],
        properties={
            "format-version": "3",
            "write.delete.mode": "merge-on-read",
            "write.update.mode": "merge-on-read",
        },
    )
    for start, region in ((0, "eu"), (10, "us")):
        t.append(rows(range(start, start + 10), region))
    before = {
        r["id"]: r["_row_id"] for r in t.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()
    }
    delete(spark, "db.v3", "id % 10 = 3")
    delete(spark, "db.v3", "id % 10 = 4")  # the same files: each DV replaced by a larger one
    update(spark, "db.v3", "id = 15", {"note": "'changed'"})
    t.refresh()
    dvs = [d for ds in t.scan().plan().deletes.values() for d in ds]
    assert sorted(d.record_count for d in dvs) == [2, 3]  # one DV per data file
    assert {d.file_format for d in dvs} == {"puffin"}
    after = contents(t)
    assert sorted(after) == [i for i in range(20) if i % 10 not in (3, 4)]
    assert after[15] == ("us", "changed")
    lineage = {
        r["id"]: r["_row_id"] for r in t.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()
    }
    assert all(lineage[i] == before[i] for i in lineage)  # the updated row's new version too
    t.set_properties({"write.delete.mode": "copy-on-write"})
    delete(spark, "db.v3", "id = 5")  # copy-on-write: the copied rows keep their lineage
    del after[5]
    assert contents(t.refresh()) == after
    kept = {r["id"]: r["_row_id"] for r in t.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()}
    assert kept == {i: before[i] for i in after}


@pytest.mark.parametrize("version", ["2", "3"])
def test_a_merge_on_read_merge_deletes_by_position_and_writes_only_new_rows(
    spark: Any, regions: Table, version: str
) -> None:
    regions.set_properties({"write.merge.mode": "merge-on-read", "format-version": version})
    files = {f.file_path for f in regions.scan().plan_files()}
    changes = source(spark, [(1, "eu", "changed"), (2, "eu", "gone"), (100, "eu", "new")])
    result = merge(
        spark,
        target="db.t",
        source=changes,
        on="t.id = s.id and t.region = s.region",
        when_matched_update="*",
        when_matched_delete="s.note = 'gone'",
        when_not_matched_insert="*",
    )
    assert result.files_removed == 0
    after = contents(regions)
    assert after[1] == ("eu", "changed") and 2 not in after and after[100] == ("eu", "new")
    assert len(after) == 30
    assert files <= {f.file_path for f in regions.scan().plan_files()}  # nothing rewritten
    [deletes] = list(regions.scan().plan().deletes.values())
    assert [d.record_count for d in deletes] == [2]  # rows 1 and 2 of the eu file
    assert {d.file_format.lower() for d in deletes} == {"puffin" if version == "3" else "parquet"}


def test_merge_upserts_rows_in_the_style_of_delta(spark: Any, regions: Table) -> None:
    updates = source(spark, [(1, "eu", "changed"), (100, "eu", "new"), (21, "ap", "changed")])
    result = merge(
        spark,
        target="db.t",
        source=updates,
        on="t.id = s.id and t.region = s.region",
        when_matched_update="*",
        when_not_matched_insert="*",
    )
    assert result.files_read == 2  # eu and ap: us is pruned by the source's keys
    after = contents(regions)
    assert after[1] == ("eu", "changed") and after[21] == ("ap", "changed")
    assert after[100] == ("eu", "new")
    assert len(after) == 31


@pytest.mark.parametrize("mode", ["hash", None])
def test_merge_spreads_the_rows_it_writes_by_the_merge_distribution_mode(
    spark: Any, regions: Table, mode: str | None
) -> None:
    if mode is not None:
        regions.set_properties({"write.merge.distribution-mode": mode})
    # 600 new rows of the three regions, each region's rows in all six Spark partitions
    new = [(100 + i, ("eu", "us", "ap")[i % 3], "new") for i in range(600)]
    updates = source(spark, new).repartition(6)
    files_before = {f.file_path for f in regions.scan().plan_files()}

    merge(spark, target="db.t", source=updates, on="t.id = s.id", when_not_matched_insert="*")

    added = [f for f in regions.refresh().scan().plan_files() if f.file_path not in files_before]
    assert sum(f.record_count for f in added) == 600 and len(contents(regions)) == 630
    if mode == "hash":
        assert sorted(f.partition[0] for f in added) == ["ap", "eu", "us"]
    else:  # each Spark partition writes a file for each region it holds
        assert len(added) > 3


def test_merge_clauses_delete_update_and_insert_with_conditions(spark: Any, regions: Table) -> None:
    changes = source(
        spark, [(1, "eu", "drop"), (2, "eu", "keep"), (3, "eu", "skip"), (50, "eu", "skip")]
    )
    merge(
        spark,
        target="db.t",
        source=changes,
        on="t.id = s.id",
        when_matched_delete="s.note = 'drop'",
        when_matched_update={"note": "upper(s.note)"},
        when_matched_update_condition="s.note <> 'skip'",
        when_not_matched_insert={"id": "s.id", "region": "s.region", "note": "'inserted'"},
        when_not_matched_insert_condition="s.id < 40",
    )
    after = contents(regions)
    assert 1 not in after
    assert after[2] == ("eu", "KEEP") and after[3] == ("eu", "")
    assert 50 not in after and len(after) == 29


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_a_merge_changes_only_files_with_changed_rows_and_inserts_only_unmatched_rows(
    spark: Any, regions: Table, mode: str
) -> None:
    regions.set_properties({"write.merge.mode": mode})
    # id 2 (eu) matches but its update condition is false; id 12 (us) is updated; id 40 is new
    changes = source(spark, [(2, "eu", "skip"), (12, "us", "changed"), (40, "ap", "new")])
    result = merge(
        spark,
        target="db.t",
        source=changes,
        on="t.id = s.id",
        when_matched_update="*",
        when_matched_update_condition="s.note <> 'skip'",
        when_not_matched_insert="*",
    )
    assert result.files_read == 2  # eu and us; ap's ids lie outside the source's keys
    assert result.files_removed == (1 if mode == "copy-on-write" else 0)
    after = contents(regions)
    assert after[2] == ("eu", "") and after[12] == ("us", "changed") and after[40] == ("ap", "new")
    assert len(after) == 31  # the matched row 2 is not inserted again


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_both_passes_of_a_merge_agree_on_each_row_under_a_random_condition(
    spark: Any, regions: Table, mode: str
) -> None:
    # the second pass takes each row's action from the first pass's cache: a condition that
    # gives another answer each time it is evaluated still updates a row once or not at all
    regions.set_properties({"write.merge.mode": mode})
    every = source(spark, [(i, "", "x") for i in range(30)])
    merge(
        spark,
        target="db.t",
        source=every,
        on="t.id = s.id",
        when_matched_update={"note": "s.note"},
        when_matched_update_condition="rand() < 0.5",
    )
    regions.refresh()
    ids = sorted(r["id"] for r in regions.to_arrow().to_pylist())
    assert ids == list(range(30))  # no row lost, none twice
    assert set(r[1] for r in contents(regions).values()) <= {"", "x"}


def test_merge_refuses_a_target_row_matched_twice(spark: Any, regions: Table) -> None:
    doubled = source(spark, [(1, "eu", "a"), (1, "eu", "b")])
    with pytest.raises(ValidationError, match="more than one source row"):
        merge(spark, target="db.t", source=doubled, on="t.id = s.id", when_matched_update="*")
    regions.refresh()
    assert len(regions.snapshots()) == 3


def merge_held_until(spark: Any, marker: Path, data: list[tuple[int, str, str]]) -> Future[Any]:
    """Start a merge in a thread whose source waits for ``marker``: it loads the table first,
    then waits while another merge commits."""
    path = str(marker)

    @F.udf(StringType(), useArrow=False)
    def wait(region: str) -> str:
        import pathlib
        import time

        deadline = time.monotonic() + 120
        while not pathlib.Path(path).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return region

    held = source(spark, data).repartition(1).withColumn("region", wait("region"))
    pool = ThreadPoolExecutor(1)
    started = threading.Event()

    def run() -> Any:
        started.set()
        return merge(
            spark,
            target="db.t",
            source=held,
            on="t.id = s.id and t.region = s.region",
            when_matched_update="*",
            when_not_matched_insert="*",
        )

    future = pool.submit(run)
    pool.shutdown(wait=False)
    started.wait()
    return future


def test_merges_on_disjoint_partitions_from_two_spark_jobs_both_commit(
    spark: Any, regions: Table, tmp_path: Path
) -> None:
    marker = tmp_path / "other-merge-committed"
    first = merge_held_until(spark, marker, [(1, "eu", "A"), (100, "eu", "A")])
    try:
        second = merge(
            spark,
            target="db.t",
            source=source(spark, [(11, "us", "B"), (200, "us", "B")]),
            on="t.id = s.id and t.region = s.region",
            when_matched_update="*",
            when_not_matched_insert="*",
        )
    finally:
        marker.touch()
    first_result = first.result(timeout=180)
    after = contents(regions)
    assert after[1] == ("eu", "A") and after[100] == ("eu", "A")
    assert after[11] == ("us", "B") and after[200] == ("us", "B")
    history = regions.snapshots()
    assert history[-2].snapshot_id == second.snapshot_id  # the second merge landed first
    assert history[-1].snapshot_id == first_result.snapshot_id


def test_merges_on_the_same_partition_at_once_conflict(
    spark: Any, regions: Table, tmp_path: Path
) -> None:
    marker = tmp_path / "other-merge-committed"
    first = merge_held_until(spark, marker, [(1, "eu", "A")])
    try:
        merge(
            spark,
            target="db.t",
            source=source(spark, [(2, "eu", "B")]),
            on="t.id = s.id and t.region = s.region",
            when_matched_update="*",
        )
    finally:
        marker.touch()
    with pytest.raises(CommitConflict):
        first.result(timeout=180)
    after = contents(regions)
    assert after[2] == ("eu", "B") and after[1] == ("eu", "")


NESTED = pa.schema(
    [
        ("id", pa.int64()),
        ("region", pa.string()),
        ("info", pa.struct([("qty", pa.int32()), ("label", pa.string())])),
        ("tags", pa.list_(pa.string())),
        ("props", pa.map_(pa.string(), pa.int32())),
    ]
)


def nested_row(i: int, region: str) -> dict[str, Any]:
    return {
        "id": i,
        "region": region,
        "info": None if i % 7 == 6 else {"qty": i, "label": f"l{i}"},
        "tags": [f"t{i % 3}", "all"] if i % 5 else None,
        "props": [("k", i), ("m", i % 2)] if i % 4 else [],
    }


def nested_contents(catalog: Catalog, table: Table) -> dict[int, dict[str, Any]]:
    """Rows by id, through lakecat and (checked equal) through pyiceberg, maps as dicts."""

    def plain(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
        return {
            r["id"]: {**r, "props": None if r["props"] is None else dict(r["props"])} for r in rows
        }

    from pyiceberg.catalog.sql import SqlCatalog

    table.refresh()
    ours = plain(table.to_arrow().to_pylist())
    py = SqlCatalog(catalog.name, uri=catalog.uri, warehouse=catalog.warehouse)
    theirs = plain(py.load_table("db.nested").scan().to_arrow().to_pylist())
    assert theirs == ours
    return ours


@pytest.mark.parametrize(("mode", "version"), [("copy-on-write", "2"), ("merge-on-read", "3")])
def test_delete_update_and_merge_carry_struct_list_and_map_columns(
    spark: Any, lake: Catalog, version: str, mode: str
) -> None:
    t = lake.create_table(
        "db.nested",
        NESTED,
        partition_by=["region"],
        properties={
            "format-version": version,
            "write.delete.mode": mode,
            "write.update.mode": mode,
            "write.merge.mode": mode,
        },
    )
    for start, region in ((0, "eu"), (20, "us")):
        t.append(
            pa.Table.from_pylist(
                [nested_row(i, region) for i in range(start, start + 20)], schema=NESTED
            )
        )
    expected = nested_contents(lake, t)

    delete(spark, "db.nested", "info.qty % 5 = 1 or array_contains(tags, 't2')")
    expected = {
        i: r
        for i, r in expected.items()
        if not (
            (r["info"] is not None and r["info"]["qty"] % 5 == 1)
            or (r["tags"] is not None and "t2" in r["tags"])
        )
    }
    assert nested_contents(lake, t) == expected

    update(
        spark,
        "db.nested",
        "props['k'] >= 30 or info is null",
        {
            "info": "named_struct('qty', coalesce(info.qty, 0) + 100, 'label', 'changed')",
            "tags": "array('u')",
            "props": "map('k', -1)",
        },
    )
    for r in expected.values():
        if (r["props"] and r["props"]["k"] >= 30) or r["info"] is None:
            qty = 100 + (r["info"]["qty"] if r["info"] else 0)
            r.update(info={"qty": qty, "label": "changed"}, tags=["u"], props={"k": -1})
    assert nested_contents(lake, t) == expected

    changes = spark.createDataFrame(
        [
            (3, "eu", (-3, "merged"), ["m"], {"z": 3}),
            (8, "eu", None, None, None),
            (99, "us", (99, "new"), [], {}),
        ],
        "id long, region string, info struct<qty int, label string>, "
        "tags array<string>, props map<string, int>",
    )
    merge(
        spark,
        target="db.nested",
        source=changes,
        on="t.id = s.id and t.region = s.region",
        when_matched_update="*",
        when_not_matched_insert="*",
    )
    expected[3] = {
        "id": 3, "region": "eu", "info": {"qty": -3, "label": "merged"},
        "tags": ["m"], "props": {"z": 3},
    }  # fmt: skip
    expected[8] = {"id": 8, "region": "eu", "info": None, "tags": None, "props": None}
    expected[99] = {
        "id": 99, "region": "us", "info": {"qty": 99, "label": "new"}, "tags": [], "props": {},
    }  # fmt: skip
    assert nested_contents(lake, t) == expected
    if mode == "merge-on-read":
        assert t.scan().plan().deletes  # the rows went by position, not by rewrite
