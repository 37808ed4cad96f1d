"""SQL ``UPDATE``, ``MERGE INTO`` and ``DELETE`` on a branch (``t.branch_<name>``).

Each statement reads the branch's head and commits one snapshot to the branch, by
copy-on-write or by merge-on-read as the table's ``write.*.mode`` says; the main branch and
other branches do not move. Rows are checked through lakecat's Python API and pyiceberg.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
MODES = ("copy-on-write", "merge-on-read")


def rows(*items: tuple[int, str, float]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in items], SCHEMA)


def make_sales(lake: Any, mode: str, format_version: int = 2) -> Any:
    """db.sales partitioned by region (eu 1-3, us 4-5, ap 6), with a branch ``dev`` at its
    first snapshot, and main one append ahead (id 7)."""
    properties = {
        "format-version": str(format_version),
        "write.delete.mode": mode,
        "write.update.mode": mode,
        "write.merge.mode": mode,
    }
    table = lake.catalog.create_table(
        "db.sales", SCHEMA, partition_by=["region"], properties=properties
    )
    table.append(
        rows(
            (1, "eu", 1.0),
            (2, "eu", 2.0),
            (3, "eu", 3.0),
            (4, "us", 4.0),
            (5, "us", 5.0),
            (6, "ap", 6.0),
        )
    )
    lake.sql("ALTER TABLE lake.db.sales CREATE BRANCH dev")
    table.append(rows((7, "eu", 7.0)))
    return table.refresh()


def branch_rows(lake: Any, ref: str) -> list[tuple[Any, ...]]:
    ours = lake.rows("db.sales", "id", "region", "amount", ref=ref)
    py = lake.pyiceberg()
    try:
        table = py.load_table("db.sales")
        snapshot = table.snapshot_by_name(ref)
        assert snapshot is not None
        theirs = table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
    finally:
        py.engine.dispose()
    columns = (theirs.column(c).to_pylist() for c in ("id", "region", "amount"))
    assert sorted(zip(*columns, strict=True)) == ours
    return ours


MAIN = [
    (1, "eu", 1.0), (2, "eu", 2.0), (3, "eu", 3.0), (4, "us", 4.0),
    (5, "us", 5.0), (6, "ap", 6.0), (7, "eu", 7.0),
]  # fmt: skip


def heads(table: Any) -> dict[str, int]:
    return {name: ref.snapshot_id for name, ref in table.refresh().refs().items()}


@pytest.mark.parametrize("mode", MODES)
def test_update_on_a_branch_commits_to_the_branch_only(lake, mode) -> None:
    sales = make_sales(lake, mode)
    before = heads(sales)

    lake.sql("UPDATE lake.db.sales.branch_dev SET amount = amount * 10 WHERE id % 2 = 0")

    after = heads(sales)
    assert after["main"] == before["main"]
    head = sales.snapshot(after["dev"])
    assert head.parent_snapshot_id == before["dev"]
    assert head.operation == "overwrite"
    if mode == "merge-on-read":
        assert int(head.summary["added-position-delete-files"]) >= 1
    assert branch_rows(lake, "dev") == [
        (1, "eu", 1.0), (2, "eu", 20.0), (3, "eu", 3.0),
        (4, "us", 40.0), (5, "us", 5.0), (6, "ap", 60.0),
    ]  # fmt: skip
    assert branch_rows(lake, "main") == MAIN


@pytest.mark.parametrize("mode", MODES)
def test_merge_and_delete_on_a_branch_leave_main_alone(lake, spark, mode) -> None:
    sales = make_sales(lake, mode)
    main_head = heads(sales)["main"]
    spark.createDataFrame(
        [(2, "eu", 0.5), (8, "us", 8.0)], "id bigint, region string, amount double"
    ).createOrReplaceTempView("src")

    lake.sql(
        "MERGE INTO lake.db.sales.branch_dev t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET amount = s.amount "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    lake.sql("DELETE FROM lake.db.sales.branch_dev WHERE id % 3 = 0")  # row-level: 3 and 6
    lake.sql("DELETE FROM lake.db.sales.branch_dev WHERE region = 'us'")  # whole files

    assert branch_rows(lake, "dev") == [(1, "eu", 1.0), (2, "eu", 0.5)]
    assert heads(sales)["main"] == main_head
    assert branch_rows(lake, "main") == MAIN
    # the branch's history is its own: three commits on top of the branch point
    dev = sales.refresh().refs()["dev"].snapshot_id
    chain = []
    snapshot = sales.snapshot(dev)
    while snapshot.parent_snapshot_id is not None and len(chain) < 3:
        chain.append(snapshot.operation)
        snapshot = sales.snapshot(snapshot.parent_snapshot_id)
    assert len(chain) == 3 and snapshot.parent_snapshot_id is None


def test_row_level_dml_on_a_v3_branch_keeps_row_lineage(lake) -> None:
    sales = make_sales(lake, "merge-on-read", format_version=3)

    lake.sql("UPDATE lake.db.sales.branch_dev SET amount = -1 WHERE id = 4")

    table = sales.refresh()
    dev = table.to_arrow(ref="dev", columns=["id", "amount", "_row_id"])
    by_id = dict(zip(dev["id"].to_pylist(), dev["_row_id"].to_pylist(), strict=True))
    main = table.to_arrow(ref="main", columns=["id", "_row_id"])
    main_ids = dict(zip(main["id"].to_pylist(), main["_row_id"].to_pylist(), strict=True))
    assert by_id[4] == main_ids[4]  # the updated row keeps its id
    assert sorted(dev["amount"].to_pylist()) == [-1.0, 1.0, 2.0, 3.0, 5.0, 6.0]


def test_dml_on_a_branch_that_does_not_exist_changes_nothing(lake) -> None:
    sales = make_sales(lake, "copy-on-write")
    before = heads(sales)
    for statement in (
        "UPDATE lake.db.sales.branch_nope SET amount = 0",
        "DELETE FROM lake.db.sales.branch_nope WHERE id % 2 = 0",
        "DELETE FROM lake.db.sales.branch_nope WHERE region = 'eu'",
    ):
        with pytest.raises(Exception, match="NoSuchRef"):
            lake.sql(statement)
    lake.sql("ALTER TABLE lake.db.sales CREATE TAG v1")
    before = heads(sales)
    with pytest.raises(Exception, match=r"read-only|not support|cannot be written"):
        lake.sql("DELETE FROM lake.db.sales.tag_v1 WHERE id % 2 = 0")
    assert heads(sales) == before
