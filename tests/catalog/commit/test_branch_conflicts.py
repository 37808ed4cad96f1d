"""A write to a branch that a concurrent commit removed.

Two handles load the table while branch ``dev`` exists; one removes the branch, then the other
commits to it. Committing would create ``dev`` anew from nothing, holding only the late
writer's files (the rows the branch had would be gone from it), so every kind of write, a
blind append included, fails with :class:`BranchRemoved` and changes nothing. On SQLite and
PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import BranchRemoved, CommitConflict
from lakecat.metadata.io.fileio import local_path

SCHEMA = pa.schema([("id", pa.int64())])


def ids(values: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())}, SCHEMA)


WRITES: dict[str, Callable[[Table], Any]] = {
    "append": lambda t: t.append(ids([9]), branch="dev"),
    "delete": lambda t: t.delete("id = 2", branch="dev"),
    "overwrite": lambda t: t.overwrite(ids([7]), "id = 1", branch="dev"),
}


def data_files(table: Table) -> set[str]:
    root = local_path(table.location)
    assert root is not None
    return {str(p) for p in Path(root, "data").rglob("*.parquet")}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_to_a_branch_removed_meanwhile_fails_and_changes_nothing(
    catalog: Catalog, write: str
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(ids([1, 2, 3]))
    table.create_branch("dev")
    late = catalog.load_table("db.t")
    catalog.load_table("db.t").remove_ref("dev")
    before = catalog.load_table("db.t")
    files = data_files(before)

    with pytest.raises(BranchRemoved) as raised:
        WRITES[write](late)

    assert isinstance(raised.value, CommitConflict)
    assert "'dev'" in str(raised.value) and "removed" in str(raised.value)
    after = catalog.load_table("db.t")
    assert after.metadata_location == before.metadata_location
    assert set(after.refs()) == {"main"}
    assert data_files(after) == files  # the late writer's files were deleted


def test_a_write_to_a_branch_that_still_exists_commits_on_it(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(ids([1, 2, 3]))
    table.create_branch("dev")
    late = catalog.load_table("db.t")
    catalog.load_table("db.t").append(ids([4]), branch="dev")  # the branch moved meanwhile

    late.append(ids([9]), branch="dev")

    rows = catalog.load_table("db.t").to_arrow(ref="dev")["id"].to_pylist()
    assert sorted(rows) == [1, 2, 3, 4, 9]
