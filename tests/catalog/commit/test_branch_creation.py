"""A write that creates its branch (``create_branch=True``, Iceberg's write to a branch not yet
made; Spark's ``spark.wap.branch``).

The write reads main's head and its one commit adds the snapshot and creates the branch on
top of main's head at commit time; main does not move. Its validation window is main's
commits since it read, so it conflicts as a write on main would; a branch that a concurrent
commit created first is committed on. Without the option a missing branch is ``NoSuchRef``
and nothing changes. On SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import ConcurrentDeleteDelete, NoSuchRef, ValidationError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(values: list[int]) -> pa.Table:
    return pa.table(
        {"id": pa.array(values, pa.int64()), "v": pa.array([f"v{i}" for i in values])}, SCHEMA
    )


def ids(table: Table, ref: str = "main") -> list[int]:
    return sorted(table.to_arrow(ref=ref)["id"].to_pylist())


# each write on a branch "audit" that does not exist, and what the branch then holds over
# main's rows 1, 2, 3
WRITES: dict[str, tuple[Callable[..., Any], list[int]]] = {
    "append": (lambda t, **o: t.append(rows([9]), **o), [1, 2, 3, 9]),
    "delete": (lambda t, **o: t.delete("id = 2", **o), [1, 3]),
    "overwrite": (lambda t, **o: t.overwrite(rows([7]), "id = 1", **o), [2, 3, 7]),
    "update": (lambda t, **o: t.update({"id": 8}, "id = 3", **o), [1, 2, 8]),
    "merge": (
        lambda t, **o: t.merge(
            rows([3, 4]), "id", when_matched_delete=True, when_not_matched_insert=True, **o
        ),
        [1, 2, 4],
    ),
    "add_files": (None, [1, 2, 3, 5]),  # see the test
}


def main_table(catalog: Catalog, properties: dict[str, str] | None = None) -> Table:
    table = catalog.create_table("db.t", SCHEMA, properties=properties or {})
    table.append(rows([1, 2, 3]))
    return table


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_a_write_with_create_branch_starts_the_branch_at_main_in_its_one_commit(
    catalog: Catalog, write: str, mode: str, tmp_path: Any
) -> None:
    table = main_table(
        catalog, {f"write.{kind}.mode": mode for kind in ("delete", "update", "merge")}
    )
    main_head = table.current_snapshot()
    assert main_head is not None
    before = len(table.snapshots())
    run, expected = WRITES[write]
    if run is None:  # add_files: a Parquet file written elsewhere
        import pyarrow.parquet as pq

        path = tmp_path / "extra.parquet"
        pq.write_table(rows([5]), path)
        table.add_files([str(path)], branch="audit", create_branch=True)
    else:
        run(table, branch="audit", create_branch=True)

    after = catalog.load_table("db.t")
    assert ids(after, "audit") == expected
    assert ids(after) == [1, 2, 3]  # main did not move
    assert after.current_snapshot() == main_head
    audit = after.refs()["audit"]
    assert audit.ref_type == "branch"
    snapshot = after.snapshot(audit.snapshot_id)
    assert snapshot.parent_snapshot_id == main_head.snapshot_id
    assert len(after.snapshots()) == before + 1  # one commit: no empty branch snapshot


@pytest.mark.parametrize("write", ["append", "delete", "update"])
def test_a_write_to_a_missing_branch_without_create_branch_is_no_such_ref(
    catalog: Catalog, write: str
) -> None:
    table = main_table(catalog)
    location = table.metadata_location
    run, _ = WRITES[write]

    with pytest.raises(NoSuchRef, match="audit"):
        run(table, branch="audit")

    after = catalog.load_table("db.t")
    assert after.metadata_location == location
    assert set(after.refs()) == {"main"}


def test_create_branch_on_an_existing_branch_writes_on_that_branch(catalog: Catalog) -> None:
    table = main_table(catalog)
    table.append(rows([4]), branch="audit", create_branch=True)
    table.append(rows([10]))  # main moves on; the branch keeps its own history

    catalog.load_table("db.t").append(rows([5]), branch="audit", create_branch=True)

    after = catalog.load_table("db.t")
    assert ids(after, "audit") == [1, 2, 3, 4, 5]
    assert ids(after) == [1, 2, 3, 10]


def test_a_branch_created_by_a_blind_append_holds_mains_commits_since_it_read(
    catalog: Catalog,
) -> None:
    main_table(catalog)
    late = catalog.load_table("db.t")
    catalog.load_table("db.t").append(rows([4]))  # main moves after the late write read

    late.append(rows([9]), branch="audit", create_branch=True)

    after = catalog.load_table("db.t")
    assert ids(after, "audit") == [1, 2, 3, 4, 9]  # built on main's head at commit time
    assert ids(after) == [1, 2, 3, 4]
    audit = after.snapshot(after.refs()["audit"].snapshot_id)
    assert audit.parent_snapshot_id == after.current_snapshot().snapshot_id


def test_a_delete_creating_a_branch_conflicts_with_mains_concurrent_delete_of_its_rows(
    catalog: Catalog,
) -> None:
    table = main_table(catalog)
    late = catalog.load_table("db.t")
    table.delete("id = 2")  # main rewrites the file the late delete also rewrites
    location = catalog.load_table("db.t").metadata_location

    with pytest.raises(ConcurrentDeleteDelete):
        late.delete("id = 2", branch="audit", create_branch=True)

    after = catalog.load_table("db.t")
    assert after.metadata_location == location
    assert set(after.refs()) == {"main"}


def test_two_writers_creating_one_branch_both_land_on_it(catalog: Catalog) -> None:
    main_table(catalog)
    first = catalog.load_table("db.t")
    second = catalog.load_table("db.t")

    first.append(rows([4]), branch="audit", create_branch=True)
    second.delete("id = 1", branch="audit", create_branch=True)  # read main, commits on audit

    after = catalog.load_table("db.t")
    assert ids(after, "audit") == [2, 3, 4]
    assert ids(after) == [1, 2, 3]


def test_a_branch_created_on_an_empty_table_is_its_first_snapshot(catalog: Catalog) -> None:
    catalog.create_table("db.t", SCHEMA)

    catalog.load_table("db.t").append(rows([1]), branch="audit", create_branch=True)

    after = catalog.load_table("db.t")
    assert ids(after, "audit") == [1]
    assert after.current_snapshot() is None
    assert after.snapshot(after.refs()["audit"].snapshot_id).parent_snapshot_id is None


@pytest.mark.parametrize("write", ["append", "delete", "update"])
@pytest.mark.parametrize("create", [False, True])
def test_a_write_to_a_tag_is_refused_before_anything_is_written(
    catalog: Catalog, write: str, create: bool
) -> None:
    table = main_table(catalog)
    table.create_tag("v1")
    location = table.metadata_location
    run, _ = WRITES[write]

    with pytest.raises(ValidationError, match=r"'v1' is a tag of db\.t"):
        run(table, branch="v1", create_branch=create)

    after = catalog.load_table("db.t")
    assert after.metadata_location == location
    assert after.refs()["v1"].ref_type == "tag"
