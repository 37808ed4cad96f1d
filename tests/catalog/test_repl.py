"""What a notebook shows: short reprs of commits, tables, snapshots and catalogs, and
``Table.to_arrow`` taking what ``table.scan(...).to_arrow()`` takes."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.table import Table
from lakecat.metadata.errors import ValidationError

SHORT = 300  # characters: one line in a notebook


def rows(ids: range, region: str = "eu") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "region": pa.array([region] * len(ids)),
            "amount": pa.array([i * 0.5 for i in ids]),
        }
    )


@pytest.fixture
def table(catalog: Catalog) -> Table:
    return catalog.create_table("db.events", rows(range(1)).schema, partition_by=["region"])


def test_commit_result_repr_stays_short_after_50_commits_and_names_its_snapshot(
    table: Table,
) -> None:
    first = table.append(rows(range(2)))
    for i in range(1, 50):
        result = table.append(rows(range(i * 10, i * 10 + 5)))
    text = repr(result)
    assert len(text) < SHORT
    assert len(text) <= len(repr(first)) + 5  # does not grow with the table's history
    assert text == (
        f"CommitResult(table='db.events', snapshot_id={result.snapshot_id}, "
        "operation='append', attempts=1, "
        "added_files=1, added_records=5, warnings=0)"
    )
    assert "TableMetadata" not in text
    assert str(result) == text


def test_table_repr_stays_short_after_50_commits_and_names_table_and_snapshot(
    table: Table,
) -> None:
    assert repr(table) == "Table('db.events', snapshot_id=None)"
    for i in range(50):
        table.append(rows(range(i * 10, i * 10 + 2)))
    text = repr(table)
    assert len(text) < SHORT
    assert text == (
        f"Table('db.events', snapshot_id={table.metadata.current_snapshot_id}, "
        "operation='append', total_records=100, total_files=50)"
    )


def test_snapshot_repr_is_one_short_line_without_the_summary_or_manifest_list(
    table: Table,
) -> None:
    for i in range(50):
        table.append(rows(range(i * 10, i * 10 + 2)))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    text = repr(snapshot)
    assert len(text) < SHORT
    assert snapshot.manifest_list not in text
    assert "summary" not in text
    assert text == (
        f"Snapshot(snapshot_id={snapshot.snapshot_id}, "
        f"parent_snapshot_id={snapshot.parent_snapshot_id}, sequence_number=50, "
        f"timestamp_ms={snapshot.timestamp_ms}, operation='append', added_files=1, "
        "added_records=2, total_records=100)"
    )
    assert all(len(repr(s)) < SHORT for s in table.snapshots())


def test_commit_result_repr_names_the_operation_the_caller_ran_and_what_it_removed(
    table: Table,
) -> None:
    table.append(rows(range(10)))
    merged = table.merge(rows(range(5, 15)), on="id", when_matched_update=True)
    assert merged is not None
    text = repr(merged)
    assert "operation='merge'" in text  # not the snapshot's Iceberg operation, "overwrite"
    assert "added_records=10, deleted_files=1, deleted_records=10" in text
    deleted = table.delete("id < 3")
    assert deleted is not None
    assert "operation='delete'" in repr(deleted)
    assert "deleted_records=10" in repr(deleted)


def test_skipped_commit_repr_says_skipped_and_not_the_earlier_commits_counts(
    table: Table,
) -> None:
    landed = table.append(rows(range(3)), app_id="load", app_version=1, skip_if_committed=True)
    again = table.append(rows(range(3)), app_id="load", app_version=1, skip_if_committed=True)
    assert again.skipped
    assert again.snapshot_id == landed.snapshot_id
    assert repr(again) == (
        f"CommitResult(table='db.events', snapshot_id={landed.snapshot_id}, "
        "operation='append', attempts=1, "
        "skipped=True, warnings=0)"
    )


def test_metadata_only_commit_repr_shows_no_snapshot(table: Table) -> None:
    table.append(rows(range(3)))
    result = table.set_properties(owner="me")
    assert (
        repr(result) == "CommitResult(table='db.events', snapshot_id=None, attempts=1, warnings=0)"
    )


def test_commit_results_still_compare_by_every_field(table: Table) -> None:
    result = table.append(rows(range(3)))
    assert result == dataclasses.replace(result)
    assert result != dataclasses.replace(result, attempts=2)
    assert result != dataclasses.replace(result, warnings=("lock fault",))
    # the repr leaves the metadata out; equality does not
    later = table.set_properties(owner="me").metadata
    other = dataclasses.replace(result, metadata=later)
    assert repr(other) == repr(result)
    assert other != result


def test_catalog_repr_is_one_line_that_does_not_grow_with_its_tables(
    catalog: Catalog, table: Table
) -> None:
    before = repr(catalog)
    for i in range(5):
        catalog.create_table(f"db.t{i}", rows(range(1)).schema).append(rows(range(2)))
    assert repr(catalog) == before
    assert "\n" not in before
    assert re.fullmatch(r"Catalog\('lakecat', uri='.*', warehouse='.*'\)", before)


# ---- to_arrow takes what scan().to_arrow() takes ------------------------------------------


@pytest.fixture
def filled(table: Table) -> Table:
    for i in range(6):  # one data file per append: a limit stops reading early
        table.append(rows(range(i * 10, i * 10 + 10), "eu" if i % 2 else "us"))
    return table


def test_to_arrow_with_limit_equals_scan_to_arrow_with_limit(filled: Table) -> None:
    for limit in (0, 1, 3, 10, 25, 1000):
        got = filled.to_arrow(limit=limit)
        assert got.equals(filled.scan().to_arrow(limit=limit))
        assert got.num_rows == min(limit, 60)


def test_a_limit_that_is_not_a_row_count_is_refused(filled: Table) -> None:
    for limit in (-1, 2.5, True, "3"):
        with pytest.raises(ValidationError, match="limit"):
            filled.to_arrow(limit=limit)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="limit"):
            filled.scan().to_arrow(limit=limit)  # type: ignore[arg-type]


def test_to_arrow_with_filter_columns_time_travel_and_limit_equals_the_scan(
    filled: Table,
) -> None:
    first = filled.snapshots()[0]
    cases = [
        ({"row_filter": "region = 'eu'", "columns": ["id"]}, 7),
        ({"row_filter": "amount > 3"}, 12),
        ({"snapshot_id": first.snapshot_id}, 4),
        ({"as_of": first.timestamp_ms, "columns": ["amount", "id"]}, 20),
        ({"row_filter": "ID < 5", "case_sensitive": False}, 2),
    ]
    filled.create_tag("t")
    cases.append(({"ref": "t"}, 5))
    for kwargs, limit in cases:
        got = filled.to_arrow(**kwargs, limit=limit)
        assert got.equals(filled.scan(**kwargs).to_arrow(limit=limit)), kwargs
        assert got.num_rows <= limit
    assert filled.to_arrow("region = 'eu'").equals(filled.scan("region = 'eu'").to_arrow())


def test_to_arrow_accepts_every_argument_of_scan_and_limit() -> None:
    scan = inspect.signature(Table.scan).parameters
    to_arrow = inspect.signature(Table.to_arrow).parameters
    for name, parameter in scan.items():
        assert name in to_arrow, name
        assert to_arrow[name].kind == parameter.kind, name
        assert to_arrow[name].default == parameter.default, name
    assert set(to_arrow) - set(scan) == {"limit"}


def test_to_arrow_still_refuses_an_unknown_argument(filled: Table) -> None:
    with pytest.raises(TypeError):
        filled.to_arrow(limt=3)  # type: ignore[call-arg]
