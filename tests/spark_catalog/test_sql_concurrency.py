"""Concurrency through SQL: two Spark sessions in separate processes against one catalog.

Both processes attach the same embedded catalog as ``lake`` (``sql_worker.py``). Two
``INSERT INTO`` at once both land (appends never conflict). A ``DELETE FROM`` that planned
before a concurrent ``INSERT INTO`` into the same partition committed follows the table's
``write.delete.isolation-level``: ``serializable`` refuses it (the insert added rows the delete
should have seen), ``snapshot`` commits it and the inserted rows stay. On merge-on-read tables
(v2 and v3), an UPDATE and a MERGE of different rows of one file both commit, two updates of
the same row do not (a lost update), and a DELETE that loses to Spark's compaction re-targets
its deletes onto the compacted file (v3 by row id, v2 by the compaction's row-moves record).

The workers (``sql_workers.py``, started once per run by ``conftest.py``'s ``workers``) run
their own JVMs, so the fixture first passes the suite's Java check (``spark_java`` in
``tests/conftest.py``: without Java the tests skip with its reason). Each worker's stderr goes
to a file beside the catalog; a worker that dies without answering fails the test with the end
of it. Each test names its own tables.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from sql_workers import Worker

from lakecat.catalog import Catalog

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(worker_catalog: Catalog) -> Catalog:
    return worker_catalog


SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def test_two_sessions_inserting_at_once_both_land(workers, catalog) -> None:
    first, second = workers
    table = catalog.create_table("db.inserts", SCHEMA, partition_by=["region"])

    first.send("INSERT INTO lake.db.inserts SELECT id, 'a' FROM range(0, 50000)")
    second.send("INSERT INTO lake.db.inserts SELECT id, 'b' FROM range(50000, 100000)")

    assert [first.answer(), second.answer()] == [{"ok": True}, {"ok": True}]
    table.refresh()
    assert [s.operation for s in table.snapshots()] == ["append", "append"]
    ids = table.to_arrow(columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == list(range(100000))
    from pyiceberg.catalog.sql import SqlCatalog

    py = SqlCatalog(catalog.name, uri=catalog.uri, warehouse=catalog.warehouse)
    try:
        assert py.load_table("db.inserts").scan().to_arrow().num_rows == 100000
    finally:
        py.engine.dispose()


@pytest.mark.parametrize("level", ["serializable", "snapshot"])
def test_a_delete_racing_an_insert_follows_the_isolation_level(workers, catalog, level) -> None:
    deleter, inserter = workers
    name = f"db.race_{level}"
    table = catalog.create_table(
        name, SCHEMA, partition_by=["region"], properties={"write.delete.isolation-level": level}
    )
    table.append(pa.table({"id": [1, 2, 3, 101], "region": ["eu", "eu", "eu", "us"]}, SCHEMA))

    deleter.send(f"DELETE FROM lake.{name} WHERE region = 'eu'", pause_before_commit=True)
    assert deleter.answer() == {"paused": True}  # planned against the first snapshot
    inserter.send(f"INSERT INTO lake.{name} VALUES (50, 'eu'), (51, 'eu')")
    assert inserter.answer() == {"ok": True}
    deleter.go()
    deleted = deleter.answer()

    table.refresh()
    ids = sorted(table.to_arrow(columns=["id"]).column("id").to_pylist())
    if level == "serializable":
        assert deleted["ok"] is False
        # the conflict is the error's one readable first line (lakecat.spark.LakecatException)
        assert deleted["error"].splitlines()[0].startswith("lakecat ConcurrentAppend: ")
        assert ids == [1, 2, 3, 50, 51, 101]  # the delete left no trace
        assert [s.operation for s in table.snapshots()] == ["append", "append"]
    else:
        assert deleted == {"ok": True}
        assert ids == [50, 51, 101]  # the delete removed what it saw; the insert stays
        assert [s.operation for s in table.snapshots()] == ["append", "append", "delete"]


# ---- UPDATE / MERGE races (copy-on-write through the catalog) --------------------------------
def _three_regions(catalog: Catalog, name: str, properties: dict[str, str]) -> Any:
    table = catalog.create_table(name, SCHEMA, partition_by=["region"], properties=properties)
    table.append(pa.table({"id": [1, 2, 3, 101, 201], "region": ["eu"] * 3 + ["us", "ap"]}, SCHEMA))
    return table


def _ids(table: Any) -> list[int]:
    return sorted(table.refresh().to_arrow(columns=["id"]).column("id").to_pylist())


def test_two_updates_of_the_same_file_one_commits_the_other_gets_a_conflict(
    workers, catalog
) -> None:
    first, second = workers
    table = _three_regions(catalog, "db.update_race", {})

    first.send(
        "UPDATE lake.db.update_race SET id = id + 10 WHERE id % 2 = 1", pause_before_commit=True
    )
    assert first.answer() == {"paused": True}
    second.send("UPDATE lake.db.update_race SET id = id + 1000 WHERE id = 2")
    assert second.answer() == {"ok": True}
    first.go()
    updated = first.answer()

    assert updated["ok"] is False
    assert updated["error"].splitlines()[0].startswith("lakecat Concurrent")
    assert _ids(table) == [1, 3, 101, 201, 1002]  # the second update only
    assert [s.operation for s in table.snapshots()] == ["append", "overwrite"]


def test_updates_of_different_partitions_both_commit(workers, catalog) -> None:
    first, second = workers
    table = _three_regions(catalog, "db.update_disjoint", {})

    first.send(
        "UPDATE lake.db.update_disjoint SET id = id + 10 WHERE region = 'eu'",
        pause_before_commit=True,
    )
    assert first.answer() == {"paused": True}
    second.send("UPDATE lake.db.update_disjoint SET id = id + 1000 WHERE region = 'us'")
    assert second.answer() == {"ok": True}
    first.go()

    assert first.answer() == {"ok": True}
    assert _ids(table) == [11, 12, 13, 201, 1101]


@pytest.mark.parametrize("level", ["serializable", "snapshot"])
def test_a_merge_racing_an_insert_follows_the_isolation_level(workers, catalog, level) -> None:
    merger, inserter = workers
    name = f"db.merge_insert_{level}"
    table = _three_regions(catalog, name, {"write.merge.isolation-level": level})

    merger.send(
        f"MERGE INTO lake.{name} t USING (SELECT 2 AS id, 'eu' AS region) s "
        "ON t.id = s.id AND t.region = 'eu' "
        "WHEN MATCHED THEN UPDATE SET id = 20 WHEN NOT MATCHED THEN INSERT *",
        pause_before_commit=True,
    )
    assert merger.answer() == {"paused": True}
    inserter.send(f"INSERT INTO lake.{name} VALUES (50, 'eu')")
    assert inserter.answer() == {"ok": True}
    merger.go()
    merged = merger.answer()

    if level == "serializable":
        assert merged["ok"] is False
        assert merged["error"].splitlines()[0].startswith("lakecat ConcurrentAppend: ")
        assert _ids(table) == [1, 2, 3, 50, 101, 201]
    else:
        assert merged == {"ok": True}
        assert _ids(table) == [1, 3, 20, 50, 101, 201]


@pytest.mark.parametrize("level", ["serializable", "snapshot"])
def test_a_merge_racing_a_compaction_of_its_files_fails_and_the_compaction_stays(
    workers, catalog, level
) -> None:
    merger, compactor = workers
    name = f"db.merge_compact_{level}"
    table = _three_regions(catalog, name, {"write.merge.isolation-level": level})
    table.append(pa.table({"id": [4], "region": ["eu"]}, SCHEMA))  # a second eu file

    merger.send(
        f"MERGE INTO lake.{name} t USING (SELECT 2 AS id) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET id = 20",
        pause_before_commit=True,
    )
    assert merger.answer() == {"paused": True}
    compactor.send(
        f"CALL lake.system.rewrite_data_files(table => '{name}', "
        "options => map('min-input-files', '2'))"  # Iceberg's default is 5
    )
    assert compactor.answer() == {"ok": True}
    compacted = table.refresh().current_snapshot()
    assert compacted.operation == "replace"
    merger.go()
    merged = merger.answer()

    assert merged["ok"] is False
    assert merged["error"].splitlines()[0].startswith("lakecat Concurrent")
    assert table.refresh().current_snapshot().snapshot_id == compacted.snapshot_id
    assert _ids(table) == [1, 2, 3, 4, 101, 201]


# ---- write-audit-publish branches (spark.wap.branch) -------------------------------------------
def _wap_sessions(*pairs: tuple[Worker, str]) -> None:
    for worker, branch in pairs:
        worker.send(f"SET spark.wap.branch = {branch}" if branch else "RESET spark.wap.branch")
        assert worker.answer() == {"ok": True}


def test_two_sessions_creating_one_wap_branch_both_land_on_it(workers, catalog) -> None:
    """The UPDATE read main (no branch yet) and pauses; the INSERT creates the branch; the
    UPDATE then commits on top of it: both on the branch, main untouched."""
    first, second = workers
    table = _three_regions(catalog, "db.wap_race", {"write.wap.enabled": "true"})
    head = table.current_snapshot().snapshot_id
    _wap_sessions((first, "audit"), (second, "audit"))
    try:
        first.send(
            "UPDATE lake.db.wap_race SET id = id + 10 WHERE region = 'eu'",
            pause_before_commit=True,
        )
        assert first.answer() == {"paused": True}
        second.send("INSERT INTO lake.db.wap_race VALUES (102, 'us')")
        assert second.answer() == {"ok": True}
        first.go()
        assert first.answer() == {"ok": True}
    finally:
        _wap_sessions((first, ""), (second, ""))

    table.refresh()
    assert table.current_snapshot().snapshot_id == head and _ids(table) == [1, 2, 3, 101, 201]
    audit = table.to_arrow(ref="audit", columns=["id"]).column("id").to_pylist()
    assert sorted(audit) == [11, 12, 13, 101, 102, 201]
    lineage = table.metadata.ancestors(table.refs()["audit"].snapshot_id)
    assert [s.operation for s in lineage] == ["overwrite", "append", "append"]
    assert lineage[-1].snapshot_id == head


def test_a_wap_branch_creating_update_is_validated_against_mains_commits(workers, catalog) -> None:
    """Until its branch exists, a WAP-branch write reads main: an INSERT into the partition
    it rewrites, committed to main meanwhile, fails it (serializable), and no branch is left."""
    first, second = workers
    table = _three_regions(
        catalog,
        "db.wap_main_race",
        {"write.wap.enabled": "true", "write.update.isolation-level": "serializable"},
    )
    _wap_sessions((first, "audit"))
    try:
        first.send(
            "UPDATE lake.db.wap_main_race SET id = id + 10 WHERE region = 'eu'",
            pause_before_commit=True,
        )
        assert first.answer() == {"paused": True}
        second.send("INSERT INTO lake.db.wap_main_race VALUES (50, 'eu')")
        assert second.answer() == {"ok": True}
        first.go()
        updated = first.answer()
    finally:
        _wap_sessions((first, ""))

    assert updated["ok"] is False
    assert updated["error"].splitlines()[0].startswith("lakecat ConcurrentAppend: ")
    assert set(table.refresh().refs()) == {"main"}
    assert _ids(table) == [1, 2, 3, 50, 101, 201]


# ---- merge-on-read races: row-level conflicts ------------------------------------------------
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


def _one_file(catalog: Catalog, name: str, version: int) -> Any:
    table = catalog.create_table(name, SCHEMA, properties={**MOR, "format-version": str(version)})
    table.append(pa.table({"id": [1, 2, 3, 4, 5, 6], "region": ["eu"] * 6}, SCHEMA))
    return table


def _data_files(table: Any) -> set[str]:
    return {f.file_path for f in table.refresh().scan().plan_files()}


@pytest.mark.parametrize("version", [2, 3])
def test_merge_on_read_updates_of_different_rows_of_one_file_both_commit(
    workers, catalog, version
) -> None:
    first, second = workers
    name = f"db.mor_disjoint_v{version}"
    table = _one_file(catalog, name, version)
    (original,) = _data_files(table)

    first.send(f"UPDATE lake.{name} SET id = id + 10 WHERE id <= 2", pause_before_commit=True)
    assert first.answer() == {"paused": True}
    second.send(
        f"MERGE INTO lake.{name} t USING (SELECT 5 AS id) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET id = 50"
    )
    assert second.answer() == {"ok": True}
    first.go()

    assert first.answer() == {"ok": True}  # other rows of the same file: no conflict
    assert _ids(table) == [3, 4, 6, 11, 12, 50]
    assert original in _data_files(table)  # no data file rewritten
    assert [s.operation for s in table.snapshots()] == ["append", "overwrite", "overwrite"]


@pytest.mark.parametrize("version", [2, 3])
def test_merge_on_read_updates_of_the_same_row_one_gets_a_conflict(
    workers, catalog, version
) -> None:
    first, second = workers
    name = f"db.mor_same_row_v{version}"
    table = _one_file(catalog, name, version)

    first.send(f"UPDATE lake.{name} SET id = 30 WHERE id = 3", pause_before_commit=True)
    assert first.answer() == {"paused": True}
    second.send(f"UPDATE lake.{name} SET id = 300 WHERE id = 3")
    assert second.answer() == {"ok": True}
    first.go()
    updated = first.answer()

    assert updated["ok"] is False  # a lost update
    assert updated["error"].splitlines()[0].startswith("lakecat Concurrent")
    assert _ids(table) == [1, 2, 4, 5, 6, 300]


@pytest.mark.parametrize("version", [2, 3])
def test_a_merge_on_read_delete_that_loses_to_a_spark_compaction_still_commits(
    workers, catalog, version
) -> None:
    # v3: the delete finds its rows again by _row_id in the compacted file; v2: through the
    # row-moves record Spark's compaction commits (its rows carry their file and position)
    deleter, compactor = workers
    name = f"db.mor_compact_v{version}"
    table = _one_file(catalog, name, version)
    table.append(pa.table({"id": [7, 8], "region": ["eu"] * 2}, SCHEMA))  # a second file

    deleter.send(f"DELETE FROM lake.{name} WHERE id % 2 = 0", pause_before_commit=True)
    assert deleter.answer() == {"paused": True}
    compactor.send(
        f"CALL lake.system.rewrite_data_files(table => '{name}', "
        "options => map('min-input-files', '2'))"  # Iceberg's default is 5
    )
    assert compactor.answer() == {"ok": True}
    compacted = table.refresh().current_snapshot()
    assert compacted.operation == "replace"
    assert ("lakecat.row-moves" in compacted.summary) == (version == 2)
    deleter.go()

    assert deleter.answer() == {"ok": True}
    assert _ids(table) == [1, 3, 5, 7]
    assert table.refresh().current_snapshot().parent_snapshot_id == compacted.snapshot_id
