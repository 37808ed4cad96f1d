"""Write-audit-publish: on a table with ``write.wap.enabled``, a write whose snapshot summary
carries a ``wap.id`` is staged (its snapshot is added, no branch moves) until
``publish_changes`` cherry-picks it onto ``main``, as in Iceberg."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import cherry_pick, publish_changes
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def rows(ids: list[int], region: str = "eu") -> pa.Table:
    return pa.table({"id": ids, "region": [region] * len(ids)}, schema=SCHEMA)


def ids(t: Table, **scan: object) -> list[int]:
    return sorted(t.to_arrow(**scan).column("id").to_pylist())  # type: ignore[arg-type]


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table(
        "db.audited", SCHEMA, partition_by=["region"], properties={"write.wap.enabled": "true"}
    )
    t.append(rows([1, 2]))
    return t


def test_a_write_with_a_wap_id_is_staged_and_publishing_makes_it_current(table: Table) -> None:
    head = table.metadata.current_snapshot_id
    staged = table.append(rows([3]), snapshot_properties={"wap.id": "job-7"}).snapshot_id

    assert table.metadata.current_snapshot_id == head  # main did not move
    assert ids(table) == [1, 2]
    assert ids(table, snapshot_id=staged) == [1, 2, 3]  # the audit reads the staged snapshot
    snapshot = table.snapshot(staged)
    assert snapshot.parent_snapshot_id == head and snapshot.summary["wap.id"] == "job-7"

    source, result = publish_changes(table, "job-7")
    assert source == staged and ids(table.refresh()) == [1, 2, 3]
    assert table.metadata.current_snapshot_id == staged == result.snapshot_id  # fast-forward
    with pytest.raises(ValidationError, match="already"):
        publish_changes(table, "job-7")


def test_a_staged_append_published_after_other_commits_is_cherry_picked(table: Table) -> None:
    table.append(rows([3]), snapshot_properties={"wap.id": "late"})
    table.append(rows([4]))  # main moves on
    source, result = publish_changes(table, "late")
    published = table.refresh().snapshot(result.snapshot_id)
    assert published.summary["published-wap-id"] == "late"
    assert published.summary["source-snapshot-id"] == str(source)
    assert ids(table) == [1, 2, 3, 4]
    with pytest.raises(ValidationError, match="already cherry-picked"):
        publish_changes(table, "late")
    # another snapshot staged with a WAP id that main already published
    again = table.append(rows([5]), snapshot_properties={"wap.id": "late"}).snapshot_id
    with pytest.raises(ValidationError, match="WAP id 'late' was already published"):
        cherry_pick(table, again)
    assert ids(table.refresh()) == [1, 2, 3, 4]


def test_a_row_level_change_with_a_wap_id_is_staged_too(table: Table) -> None:
    staged = table.delete("id = 1", snapshot_properties={"wap.id": "cleanup"})
    assert staged is not None
    assert ids(table.refresh()) == [1, 2]
    assert ids(table, snapshot_id=staged.snapshot_id) == [2]
    publish_changes(table, "cleanup")  # its parent is current: a fast-forward
    assert ids(table.refresh()) == [2]


def test_without_write_wap_enabled_a_wap_id_is_only_a_summary_entry(catalog: Catalog) -> None:
    t = catalog.create_table("db.plain", SCHEMA)
    result = t.append(rows([1]), snapshot_properties={"wap.id": "x"})
    assert t.metadata.current_snapshot_id == result.snapshot_id


def test_unknown_and_ambiguous_wap_ids_are_refused_and_change_nothing(table: Table) -> None:
    table.append(rows([3]), snapshot_properties={"wap.id": "twice"})
    table.append(rows([4]), snapshot_properties={"wap.id": "twice"})
    before = table.refresh().metadata_location
    with pytest.raises(NoSuchSnapshot, match="nope"):
        publish_changes(table, "nope")
    with pytest.raises(ValidationError, match="several snapshots"):
        publish_changes(table, "twice")
    assert table.refresh().metadata_location == before


def test_concurrent_commits_never_see_a_staged_snapshot_as_a_conflict(table: Table) -> None:
    """A staged snapshot is not on main: a rewrite planned before it commits on top."""
    stale = table.refresh()
    table.append(rows([3]), snapshot_properties={"wap.id": "side"})
    stale.delete("id = 2")
    assert ids(table.refresh()) == [1]
