"""lakecat reads tables Iceberg Java wrote with merge-on-read deletes exactly as Java does.

Every table of ``java_fixtures.py`` in format version 2 (position deletes, equality deletes,
across partition-spec evolution, a re-inserted key after an equality delete), at every snapshot,
read through lakecat's catalog on Java's JDBC catalog: the rows equal ``expected.json`` (what
Iceberg Java read), with and without a filter and a projection, and ``count()`` agrees; so do the
format version 3 tables, with deletion vectors (including replaced ones and a table upgraded
from v2 with position deletes).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from peers import canonical_rows

from lakecat.catalog import Catalog
from lakecat.catalog.read.incremental import changes

pytestmark = pytest.mark.interop

COLUMNS = ["id", "cat", "note"]
V2_WITH_DELETES = [
    "pos_unpartitioned",
    "pos_identity",
    "pos_bucket",
    "pos_spec_evolution",
    "eq_unpartitioned",
    "eq_identity",
    "eq_global_after_evolution",
    "mapped_import",  # files without field ids, read through the table's name mapping
]
V3_WITH_DELETES = ["dv_unpartitioned", "dv_identity", "dv_upgraded_from_v2"]


@pytest.fixture(scope="module")
def lake(java_lake: Catalog) -> Catalog:
    return java_lake


def _tables(expected: dict[str, Any], version: int) -> list[str]:
    return sorted(n for n, t in expected["tables"].items() if t["format_version"] == version)


def test_the_fixtures_cover_every_kind_of_v2_delete(java_expected: dict[str, Any]) -> None:
    kinds = {
        k for n in _tables(java_expected, 2) for k in java_expected["tables"][n]["delete_kinds"]
    }
    assert {"position", "equality"} <= kinds, kinds


@pytest.mark.parametrize("name", [*V2_WITH_DELETES, "cow_control"])
def test_lakecat_reads_every_snapshot_of_a_java_merge_on_read_table_as_java_does(
    lake: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    table = lake.load_table(f"db.{name}")
    snapshots = java_expected["tables"][name]["snapshots"]
    assert snapshots
    for snap in snapshots:
        scan = table.scan(snapshot_id=snap["snapshot_id"])
        got = canonical_rows(scan.to_arrow(), COLUMNS)
        assert got == snap["rows"], f"{name} at snapshot {snap['snapshot_id']}"
        assert scan.count() == len(snap["rows"])


@pytest.mark.parametrize(
    "name", ["pos_unpartitioned", "pos_identity", "eq_unpartitioned", "eq_identity"]
)
def test_filters_and_projections_apply_after_the_deletes(
    lake: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    table = lake.load_table(f"db.{name}")
    for snap in java_expected["tables"][name]["snapshots"]:
        got = table.scan(
            "(cat IS NULL OR cat <> 'b') AND id >= 40",
            snapshot_id=snap["snapshot_id"],
            columns=["id", "cat"],
        ).to_arrow()
        want = [[r[0], r[1]] for r in snap["rows"] if r[1] != "b" and r[0] >= 40]
        assert canonical_rows(got, ["id", "cat"]) == sorted(
            want, key=lambda r: tuple((v is None, v) for v in r)
        )


@pytest.mark.parametrize("name", V3_WITH_DELETES)
def test_lakecat_reads_deletion_vectors_of_a_v3_table_as_java_does(
    lake: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    table = lake.load_table(f"db.{name}")
    assert table.metadata.format_version == 3
    for snap in java_expected["tables"][name]["snapshots"]:
        scan = table.scan(snapshot_id=snap["snapshot_id"])
        assert canonical_rows(scan.to_arrow(), COLUMNS) == snap["rows"], snap["snapshot_id"]
        assert scan.count() == len(snap["rows"])


@pytest.mark.parametrize("name", [*V2_WITH_DELETES, *V3_WITH_DELETES])
def test_the_change_feed_of_a_java_table_with_deletes_is_the_difference_of_javas_reads(
    lake: Catalog, java_expected: dict[str, Any], name: str
) -> None:
    """``changes`` from each snapshot to each later one: the rows Java reads at the later
    one and not at the earlier are ``added``, the others ``removed`` (deletes of every kind
    are changes that remove rows)."""
    table = lake.load_table(f"db.{name}")
    snaps = java_expected["tables"][name]["snapshots"]
    line = {s.snapshot_id for s in table.metadata.ancestors(snaps[-1]["snapshot_id"])}
    snaps = [s for s in snaps if s["snapshot_id"] in line]
    assert len(snaps) >= 2
    for i, start in enumerate(snaps):
        for end in snaps[i + 1 :]:
            got = changes(
                table, from_snapshot_id=start["snapshot_id"], to_snapshot_id=end["snapshot_id"]
            )
            before = Counter(tuple(r) for r in start["rows"])
            after = Counter(tuple(r) for r in end["rows"])
            where = f"{name}: {start['snapshot_id']} -> {end['snapshot_id']}"
            assert Counter(map(tuple, canonical_rows(got.added, COLUMNS))) == after - before, where
            assert Counter(map(tuple, canonical_rows(got.removed, COLUMNS))) == before - after, (
                where
            )
