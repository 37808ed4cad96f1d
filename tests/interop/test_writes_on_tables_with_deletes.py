"""lakecat's writes on tables Iceberg Java wrote with delete files keep every delete applied.

Tables Iceberg Java wrote merge-on-read (``java_delete_tables.py``: one Iceberg Java session
for the module, in a temp folder, writable) are opened with lakecat on Java's JDBC catalog;
Iceberg Java reads each result back. The groups of tests:

* **Copy-on-write rewrites apply the deletes** (the recipes' write modes set to copy-on-write):
  delete, overwrite by filter, update, upsert and compaction, from Python, the CLI and Spark,
  read each rewritten file with its deletes, never bring a deleted row back, and drop the
  delete files that applied only to the rewritten files.
* **Merge-on-read DML adds position delete files** next to Java's, and Java applies both.
* **What does not rewrite keeps the deletes**: a blind append, dropping whole partitions or the
  whole table, a manifest rewrite, expiry and orphan removal; the change feed returns the rows
  Java's deletes removed.
* **Races**: a compaction racing a merge-on-read DELETE of another engine carries that delete
  over to its new file instead of bringing the row back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_session import JavaProcess, JavaTables, java_session, lakecat_on
from peers import canonical_rows, local_path

from lakecat.catalog import Catalog, Table
from lakecat.catalog.cli.entry import main as lakecat_main
from lakecat.catalog.engine import FileGroup, FileSelection, has_deletes, plan_file_groups
from lakecat.catalog.maintenance import (
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
    rewrite_manifests,
    table_statistics,
)
from lakecat.catalog.read.incremental import changes
from lakecat.metadata import properties as P
from lakecat.metadata.deletes.puffin import blob_data, read_footer
from lakecat.metadata.errors import ConcurrentDeleteRead, UnsupportedFeature, ValidationError
from lakecat.metadata.manifests import (
    ManifestContent,
    ManifestFile,
    Status,
    read_manifest,
    read_manifest_list,
)
from lakecat.metadata.schema import IntegerType
from lakecat.metadata.statistics import ndvs, parse_theta_sketch

pytestmark = pytest.mark.interop

COLUMNS = ["id", "cat", "note"]
FEATURE = "delete files"
GUARDED = ["pos_guarded", "eq_guarded"]  # never changed: every refusal runs on them


@pytest.fixture(scope="module")
def java(
    java_process: JavaProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JavaTables]:
    yield from java_session(java_process, tmp_path_factory.mktemp("java-delete-tables"))


@pytest.fixture(scope="module")
def lake(java: JavaTables) -> Iterator[Catalog]:
    yield from lakecat_on(java)


# ---- helpers ------------------------------------------------------------------------------------
def row(i: int, note: str | None = None) -> list[Any]:
    """A row as the Java tables hold it: cat by ``id % 4``, note 'n<id>'."""
    return [i, {0: "a", 1: "b", 2: "c", 3: None}[i % 4], note if note is not None else f"n{i}"]


def rows(ids: Iterator[int] | Sequence[int], *extra: list[Any]) -> list[list[Any]]:
    out = [row(i) for i in ids] + list(extra)
    return sorted(out, key=lambda r: tuple((v is None, v) for v in r))


def arrow_rows(table: Table, items: Sequence[tuple[int, str | None, str]]) -> pa.Table:
    """Rows in the table's Arrow schema (``id`` is int in the ``eq_*`` tables)."""
    narrow = isinstance(table.schema().find_field("id").field_type, IntegerType)
    ids = pa.array([i for i, _, _ in items], pa.int32() if narrow else pa.int64())
    return pa.table(
        {
            "id": ids,
            "cat": pa.array([c for _, c, _ in items], pa.string()),
            "note": pa.array([n for _, _, n in items], pa.string()),
        }
    )


@dataclass(frozen=True)
class State:
    """What a refusal must leave as it was: the pointer and every file of the table."""

    metadata_location: str
    files: frozenset[str]


def state(lake: Catalog, name: str) -> State:
    table = lake.load_table(f"db.{name}")
    folder = Path(local_path(table.location))
    files = frozenset(str(p) for p in folder.rglob("*") if p.is_file())
    return State(table.metadata_location, files)


def assert_refused(
    lake: Catalog, name: str, action: Callable[[], object], *, typed: bool = True
) -> str:
    """Run ``action`` on table ``name``; it must raise UnsupportedFeature about delete files
    and change nothing. ``typed=False``: the error comes wrapped by Spark (its text names the
    type). Returns the message."""
    before = state(lake, name)
    if typed:
        with pytest.raises(UnsupportedFeature) as raised:
            action()
        assert raised.value.feature == FEATURE
        message = str(raised.value)
    else:
        with pytest.raises(Exception) as caught:
            action()
        message = str(caught.value)
        assert "UnsupportedFeature" in message, message[-2000:]
    assert FEATURE in message, message[-2000:]
    after = state(lake, name)
    assert after.metadata_location == before.metadata_location
    assert sorted(after.files - before.files) == []
    assert sorted(before.files - after.files) == []
    return message


def delete_manifests(table: Table) -> list[ManifestFile]:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    listed = read_manifest_list(table.io, snapshot.manifest_list)
    return [m for m in listed if m.content is ManifestContent.DELETES]


def delete_file_paths(table: Table) -> set[str]:
    out = set()
    for m in delete_manifests(table):
        for e in read_manifest(
            table.io, m, specs=table.metadata.specs_by_id(), schema=table.schema()
        ):
            if e.status is not Status.DELETED:
                out.add(local_path(e.data_file.file_path))
    return out


def guarded_ids(name: str) -> list[int]:
    if name == "pos_guarded":
        return [i for i in range(1, 51) if i % 5 or i > 40]
    return [i for i in range(1, 41) if i not in (3, 4)]


# ---- the tables are what the tests think they are -----------------------------------------------
def test_java_reads_the_guarded_tables_with_their_deletes_applied(
    java: JavaTables, lake: Catalog
) -> None:
    for name in GUARDED:
        assert java.rows(name) == rows(guarded_ids(name))
        table = lake.load_table(f"db.{name}")
        assert has_deletes(table.io, table.current_snapshot())


# ---- rewrites apply the deletes: the Python API --------------------------------------------------
# Each test works on its own copy of a recipe (``java.make``): ``pos`` is pos_guarded (identity on
# cat, position deletes), ``eq`` is eq_guarded (unpartitioned, a global equality delete).
RECIPES = {"pos": "pos_guarded", "eq": "eq_guarded"}
# live ids of the same partition (cat NULL: id % 4 = 3) in two data files / one deleted id
TARGETS = {"pos": ([7, 27], 10), "eq": ([7, 27], 3)}


MERGE_ON_READ = {
    P.DELETE_MODE: P.MERGE_ON_READ,
    P.UPDATE_MODE: P.MERGE_ON_READ,
    P.MERGE_MODE: P.MERGE_ON_READ,
}


COPY_ON_WRITE = {
    P.DELETE_MODE: P.COPY_ON_WRITE,
    P.UPDATE_MODE: P.COPY_ON_WRITE,
    P.MERGE_MODE: P.COPY_ON_WRITE,
}


def fresh(
    java: JavaTables, lake: Catalog, kind: str, name: str, *, mode: Mapping[str, str] | None = None
) -> Table:
    """A new copy of the recipe, its write modes set to ``mode`` (default: copy-on-write; Java
    made the recipes merge-on-read to write its deletes)."""
    java.make(name, RECIPES[kind])
    table = lake.load_table(f"db.{name}")
    assert has_deletes(table.io, table.current_snapshot())
    table.set_properties(dict(mode or COPY_ON_WRITE))
    return table


def live(
    kind: str, *, without: Sequence[int] = (), extra: Sequence[list[Any]] = ()
) -> list[list[Any]]:
    return rows([i for i in guarded_ids(RECIPES[kind]) if i not in without], *extra)


def lakecat_rows(table: Table) -> list[list[Any]]:
    return canonical_rows(table.refresh().to_arrow(), COLUMNS)


def live_entries(table: Table, content: ManifestContent) -> list[Any]:
    """The live manifest entries of the current snapshot's data or delete manifests."""
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None
    specs, schema = table.metadata.specs_by_id(), table.schema()
    return [
        e
        for m in read_manifest_list(table.io, snapshot.manifest_list)
        if m.content is content
        for e in read_manifest(table.io, m, specs=specs, schema=schema)
        if e.status is not Status.DELETED
    ]


def data_entries(table: Table) -> list[tuple[Status, int | None]]:
    return [(e.status, e.sequence_number) for e in live_entries(table, ManifestContent.DATA)]


def live_delete_files(table: Table) -> list[Any]:
    return [e.data_file for e in live_entries(table, ManifestContent.DELETES)]


def deletes_by_partition(table: Table) -> dict[str, tuple[Any, ...]]:
    """The live delete files of the current snapshot (OS paths) and their partitions."""
    out = {}
    for m in delete_manifests(table):
        for e in read_manifest(
            table.io, m, specs=table.metadata.specs_by_id(), schema=table.schema()
        ):
            if e.status is not Status.DELETED:
                out[local_path(e.data_file.file_path)] = e.data_file.partition
    return out


def assert_dangling_removed(table: Table, before: dict[str, tuple[Any, ...]], kind: str) -> None:
    """The delete files that applied only to the rewritten files are gone, the others stay:
    for ``pos``, the position deletes of partition cat=NULL (both of its older files were
    rewritten); for ``eq``, the global equality delete (the only older data file was)."""
    after = deletes_by_partition(table.refresh())
    gone = {p for p, partition in before.items() if kind == "eq" or partition == (None,)}
    assert gone and after == {p: v for p, v in before.items() if p not in gone}
    summary = table.current_snapshot().summary  # type: ignore[union-attr]
    assert summary["removed-delete-files"] == str(len(gone))
    assert all(Path(p).exists() for p in gone)  # removed from the table, not deleted: expiry's


@pytest.mark.parametrize("kind", ["pos", "eq"])
def test_a_copy_on_write_delete_rewrites_files_with_their_deletes_applied(
    java: JavaTables, lake: Catalog, kind: str
) -> None:
    table = fresh(java, lake, kind, f"cow_delete_{kind}")
    before = deletes_by_partition(table)
    ids, _ = TARGETS[kind]
    assert table.delete(" OR ".join(f"id = {i}" for i in ids)) is not None
    want = live(kind, without=ids)
    assert java.rows(f"cow_delete_{kind}") == want
    assert lakecat_rows(table) == want
    assert_dangling_removed(table, before, kind)


@pytest.mark.parametrize("kind", ["pos", "eq"])
def test_an_overwrite_by_filter_rewrites_files_with_their_deletes_applied(
    java: JavaTables, lake: Catalog, kind: str
) -> None:
    table = fresh(java, lake, kind, f"cow_overwrite_{kind}")
    ids, _ = TARGETS[kind]
    table.overwrite(arrow_rows(table, [(ids[0], None, "replaced")]), f"id = {ids[0]}")
    want = live(kind, without=[ids[0]], extra=[[ids[0], None, "replaced"]])
    assert java.rows(f"cow_overwrite_{kind}") == want
    assert lakecat_rows(table) == want


@pytest.mark.parametrize("kind", ["pos", "eq"])
def test_an_update_changes_live_rows_only_and_never_brings_a_deleted_one_back(
    java: JavaTables, lake: Catalog, kind: str
) -> None:
    table = fresh(java, lake, kind, f"cow_update_{kind}")
    before = deletes_by_partition(table)
    ids, deleted = TARGETS[kind]
    where = " OR ".join(f"id = {i}" for i in [*ids, deleted])
    assert table.update({"note": "x"}, where) is not None
    want = live(kind, without=ids, extra=[row(i, "x") for i in ids])
    assert java.rows(f"cow_update_{kind}") == want
    assert lakecat_rows(table) == want
    assert_dangling_removed(table, before, kind)


@pytest.mark.parametrize("kind", ["pos", "eq"])
def test_an_upsert_matches_live_rows_and_inserts_a_deleted_key_as_new(
    java: JavaTables, lake: Catalog, kind: str
) -> None:
    table = fresh(java, lake, kind, f"cow_upsert_{kind}")
    ids, deleted = TARGETS[kind]
    source = arrow_rows(
        table, [(ids[0], None, "merged"), (deleted, "b", "back"), (1000, "a", "new")]
    )
    result = table.upsert(source, on="id")
    assert result is not None
    want = live(
        kind,
        without=[ids[0]],
        extra=[[ids[0], None, "merged"], [deleted, "b", "back"], [1000, "a", "new"]],
    )
    assert java.rows(f"cow_upsert_{kind}") == want
    assert lakecat_rows(table) == want


# ---- merge-on-read by lakecat on tables Iceberg Java wrote with deletes --------------------------
@pytest.mark.parametrize("kind", ["pos", "eq"])
def test_merge_on_read_dml_adds_position_deletes_that_java_applies_with_its_own(
    java: JavaTables, lake: Catalog, kind: str
) -> None:
    name = f"mor_dml_{kind}"
    table = fresh(java, lake, kind, name, mode=MERGE_ON_READ)
    data_before = {f.file_path for f in table.scan().plan_files()}
    deletes_before = deletes_by_partition(table)
    ids, deleted = TARGETS[kind]
    assert table.delete(f"id = {ids[0]} OR id = {deleted}") is not None
    assert table.current_snapshot().operation == "delete"  # type: ignore[union-attr]
    assert table.update({"note": "x"}, f"id = {ids[1]}") is not None
    source = arrow_rows(table, [(1, "a", "merged"), (deleted, "b", "back"), (1000, "a", "new")])
    assert table.upsert(source, on="id") is not None
    want = live(
        kind,
        without=[ids[0], ids[1], 1],
        extra=[row(ids[1], "x"), [1, "a", "merged"], [deleted, "b", "back"], [1000, "a", "new"]],
    )
    assert java.rows(name) == want
    assert lakecat_rows(table) == want
    # no data file rewritten; Java's delete files stay and lakecat's are added next to them
    assert data_before <= {f.file_path for f in table.refresh().scan().plan_files()}
    after = deletes_by_partition(table)
    assert set(deletes_before) < set(after)
    # a snapshot before lakecat's deletes still reads as Java wrote it
    first_mor = table.snapshots()[-3].snapshot_id
    parent = table.snapshot(first_mor).parent_snapshot_id
    assert java.rows(name, **{"snapshot-id": parent}) == live(kind)


@pytest.mark.parametrize("kind", ["pos", "eq"])
def test_compaction_applies_the_deletes_and_leaves_no_delete_file(
    java: JavaTables, lake: Catalog, kind: str
) -> None:
    table = fresh(java, lake, kind, f"compact_{kind}")
    result = rewrite_data_files(table, min_input_files=1)
    assert result.groups_failed == () and result.groups_committed == result.groups_total > 0
    assert java.rows(f"compact_{kind}") == live(kind)
    assert lakecat_rows(table) == live(kind)
    assert deletes_by_partition(table) == {}
    assert not has_deletes(table.io, table.current_snapshot())
    files = table.scan().plan().files
    assert sum(f.record_count for f in files) == len(live(kind))


def test_compaction_rewrites_files_with_enough_delete_files_whatever_else(
    java: JavaTables, lake: Catalog
) -> None:
    table = fresh(java, lake, "eq", "compact_threshold")  # small files, one delete for all
    data_files = table.scan().plan().files

    def plan(**options: Any) -> list[FileGroup]:
        selection = FileSelection(**options)
        return plan_file_groups(table.io, table.metadata, selection, target_file_size_bytes=1 << 20)

    assert plan(min_input_files=10) == []  # too few files to compact
    groups = plan(min_input_files=10, delete_file_threshold=1)
    assert [len(g.files) for g in groups] == [len(data_files)]
    assert [len(d) for d in groups[0].deletes.values()] == [1] * len(data_files)
    assert plan(min_input_files=10, delete_file_threshold=2) == []
    result = rewrite_data_files(table, min_input_files=10, delete_file_threshold=1)
    assert result.files_removed == len(data_files)
    assert java.rows("compact_threshold") == live("eq")
    assert deletes_by_partition(table.refresh()) == {}
    with pytest.raises(ValidationError):
        rewrite_data_files(table, delete_file_threshold=0)


@pytest.mark.parametrize(
    ("starting", "merged"),
    [(True, False), (True, True), (False, False)],
    ids=["starting-seq", "starting-seq-merged-manifests", "commit-seq"],
)
def test_an_equality_delete_committed_during_a_compaction_applies_to_its_new_files(
    java: JavaTables, lake: Catalog, starting: bool, merged: bool
) -> None:
    name = f"compact_eq_race_{'starting' if starting else 'commit'}{'_merged' if merged else ''}"
    table = fresh(java, lake, "eq", name)
    if merged:  # the new manifest is merged with the others in the commit
        table.set_properties({P.MANIFEST_MIN_MERGE_COUNT: "2"})
    start = table.current_snapshot()
    assert start is not None

    def java_deletes_meanwhile(done: int, total: int) -> None:
        if done == 0:  # planned, nothing rewritten yet
            java.call({"op": "eq_delete", "table": name, "ids": [10, 11]})

    result = rewrite_data_files(
        table,
        rewrite_all=True,
        use_starting_sequence_number=starting,
        progress=java_deletes_meanwhile,
    )

    expected = live("eq", without=[10, 11])
    assert java.rows(name) == expected
    assert lakecat_rows(table) == expected
    if starting:  # the new files are as old as the snapshot the compaction read
        assert result.groups_failed == () and result.groups_committed == result.groups_total
        entries = data_entries(table)
        assert {seq for status, seq in entries} == {start.sequence_number}
        # the delete applies to the new files: it stays (the older one, applied, went)
        assert [d.record_count for d in live_delete_files(table)] == [2]
    else:  # the new files would be newer than the delete: the group fails
        assert result.groups_committed == 0
        assert {type(e) for _, e in result.groups_failed} == {ConcurrentDeleteRead}


def test_the_change_feed_returns_the_rows_java_deleted_as_removed(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.pos_guarded")
    first, second, with_deletes, last = java.snapshots("pos_guarded")
    got = changes(table, from_snapshot_id=first, to_snapshot_id=with_deletes)
    # the delete (id % 5 = 0) removed 5..20 and the same rows of 21..40 the range added
    assert canonical_rows(got.added, COLUMNS) == rows([i for i in range(21, 41) if i % 5])
    assert canonical_rows(got.removed, COLUMNS) == rows(range(5, 21, 5))
    got = changes(table, from_snapshot_id=first)
    assert canonical_rows(got.added, COLUMNS) == rows([i for i in range(21, 51) if i > 40 or i % 5])
    assert canonical_rows(got.removed, COLUMNS) == rows(range(5, 21, 5))
    assert got.snapshot_ids == (second, with_deletes, last)


def test_the_cli_compacts_with_the_deletes_applied_and_reads_the_change_feed(
    java: JavaTables, lake: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--catalog", lake.uri, "--warehouse", str(java.root / "warehouse"), "--name", "peers"]
    first, _, with_deletes, _ = java.snapshots("pos_guarded")
    before = state(lake, "pos_guarded")
    feed = ["changes", "db.pos_guarded", "--from", str(first), "--to", str(with_deletes)]
    assert lakecat_main([*flags, "--json", *feed]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(r["id"] for r in out["removed"]["rows"]) == [5, 10, 15, 20]
    assert out["added"]["row_count"] == 16
    assert state(lake, "pos_guarded") == before
    table = fresh(java, lake, "pos", "cli_compact")
    assert lakecat_main([*flags, "compact", "db.cli_compact", "--dry-run"]) == 0
    assert state(lake, "cli_compact").metadata_location == table.metadata_location
    compact = ["compact", "db.cli_compact", "--min-input-files", "10"]
    assert lakecat_main([*flags, *compact, "--delete-file-threshold", "1"]) == 0
    assert java.rows("cli_compact") == live("pos")
    assert deletes_by_partition(table.refresh()) == {}


def test_the_cli_lists_the_delete_files_that_apply_to_each_data_file(
    java: JavaTables, lake: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--catalog", lake.uri, "--warehouse", str(java.root / "warehouse"), "--name", "peers"]
    table = lake.load_table("db.pos_guarded")
    assert lakecat_main([*flags, "--json", "files", "db.pos_guarded"]) == 0
    listed = json.loads(capsys.readouterr().out)
    expected = deletes_by_partition(table)
    assert {local_path(d["path"]) for d in listed["delete_files"]} == set(expected)
    assert listed["delete_file_count"] == len(expected)
    assert {d["content"] for d in listed["delete_files"]} == {"position_deletes"}
    assert sum(d["record_count"] for d in listed["delete_files"]) == 8  # id % 5 = 0, 1..40
    with_deletes = [f for f in listed["files"] if f["delete_files"]]
    assert with_deletes and all(f["partition"] for f in with_deletes)
    assert lakecat_main([*flags, "files", "db.pos_guarded"]) == 0
    out = capsys.readouterr().out
    assert "delete files that apply to them" in out and "position_deletes" in out


# ---- the branch being written decides ----------------------------------------------------------
def test_a_rewrite_on_a_branch_applies_the_deletes_of_that_branch(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.branches")
    # the branch `dirty` has a position delete (id 3); main has none
    assert table.update({"note": "x"}, "id = 7 OR id = 3", branch="dirty") is not None
    assert table.update({"note": "y"}, "id = 7") is not None  # main
    assert java.rows("branches") == rows([i for i in range(1, 21) if i != 7], row(7, "y"))
    assert java.rows("branches", branch="dirty") == rows(
        [i for i in range(1, 21) if i not in (3, 7)], row(7, "x")
    )


# ---- allowed: whole files dropped, appends, manifest rewrite, expiry ----------------------------
def test_replacing_whole_partitions_keeps_the_other_deletes_applied(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.pos_whole")  # identity(cat); ids 1..40 but id % 5 = 0
    assert table.overwrite(arrow_rows(table, [(201, "b", "new201")]), "cat = 'b'") is not None
    table.dynamic_partition_overwrite(arrow_rows(table, [(302, "c", "new302")]))
    kept = [i for i in range(1, 41) if i % 5 and i % 4 in (0, 3)]  # partitions 'a' and NULL
    assert java.rows("pos_whole") == rows(kept, [201, "b", "new201"], [302, "c", "new302"])


def test_a_delete_of_whole_partitions_keeps_the_other_deletes_applied(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.pos_whole")  # after the test above
    before = java.rows("pos_whole")
    assert table.delete("cat = 'a'") is not None
    assert java.rows("pos_whole") == [r for r in before if r[1] != "a"]


def test_an_overwrite_of_the_whole_table_leaves_no_old_delete_applying(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.eq_whole")  # ids 1..20, an equality delete of id 5
    table.overwrite(arrow_rows(table, [(5, "b", "again5"), (6, "c", "n6")]))
    assert java.rows("eq_whole") == [[5, "b", "again5"], [6, "c", "n6"]]


@pytest.mark.parametrize(
    ("name", "before"),
    [
        ("pos_append", [i for i in range(1, 21) if i % 3]),
        ("eq_append", [i for i in range(1, 21) if i not in (2, 7)]),
    ],
)
def test_an_append_keeps_the_delete_manifests_as_they_were(
    java: JavaTables, lake: Catalog, name: str, before: list[int]
) -> None:
    table = lake.load_table(f"db.{name}")
    manifests = delete_manifests(table)
    assert manifests
    # id 2 again: an older equality delete of id 2 must not apply to the newer row
    table.append(arrow_rows(table, [(2, "c", "again2"), (100, "a", "n100")]))
    assert delete_manifests(table.refresh()) == manifests
    assert java.rows(name) == rows(before, [2, "c", "again2"], row(100))


def test_an_append_with_manifest_merging_keeps_the_delete_manifests(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.pos_merge_on_commit")
    table.set_properties({P.MANIFEST_MIN_MERGE_COUNT: "2"})
    manifests = delete_manifests(table)
    table.append(arrow_rows(table, [(100, "a", "n100")]))
    assert delete_manifests(table.refresh()) == manifests
    assert java.rows("pos_merge_on_commit") == rows([i for i in range(1, 31) if i % 4], row(100))


def test_a_manifest_rewrite_leaves_the_delete_manifests_alone(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.pos_manifests")
    expected = java.rows("pos_manifests")
    assert expected == rows([i for i in range(1, 31) if i % 4 and i != 5])
    manifests = delete_manifests(table)
    assert len(manifests) == 2
    result = rewrite_manifests(table)
    assert result.snapshot_id is not None
    table.refresh()
    assert delete_manifests(table) == manifests
    assert result.manifests_after - 2 < result.manifests_before - 2  # data manifests merged
    assert java.rows("pos_manifests") == expected


def test_expiry_and_orphan_removal_keep_the_delete_files_still_referenced(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.pos_expire")
    expected = java.rows("pos_expire")
    assert expected == rows([i for i in range(1, 31) if (i > 20 or i % 2) and i != 21])
    deletes = delete_file_paths(table)
    assert len(deletes) >= 2
    time.sleep(0.01)
    result = expire_snapshots(table, older_than=int(time.time() * 1000), retain_last=1)
    assert len(result.expired_snapshot_ids) == 3
    assert result.deleted_manifest_lists
    assert not deletes & {local_path(p) for p in result.deleted_data_files}
    assert all(Path(p).exists() for p in deletes)
    orphans = remove_orphan_files(table, older_than=int(time.time() * 1000) + 60_000)
    assert orphans.deleted
    assert not deletes & {local_path(p) for p in orphans.orphans}
    assert all(Path(p).exists() for p in deletes)
    table.refresh()
    assert delete_file_paths(table) == deletes
    assert java.rows("pos_expire") == expected


def test_orphan_removal_and_purge_keep_or_take_the_puffin_statistics_java_wrote(
    java: JavaTables, lake: Catalog
) -> None:
    fresh(java, lake, "pos", "stats")
    java.sql("CALL peers.system.compute_table_stats(table => 'db.stats')")
    table = lake.load_table("db.stats")
    stats = [s["statistics-path"] for s in table.metadata.statistics]
    assert stats and all(p.endswith(".stats") for p in stats)
    # lakecat reads what Java registered and wrote: the ndv of each column, its zstd sketches
    registered = table_statistics(table)
    footer = read_footer(Path(local_path(stats[0])).read_bytes())
    assert registered is not None and registered.ndvs == ndvs(footer.blobs) and registered.ndvs
    for blob in footer.blobs:
        sketch = blob_data(Path(local_path(stats[0])).read_bytes(), blob)
        assert parse_theta_sketch(sketch).ndv == int(blob.properties["ndv"])
    orphans = remove_orphan_files(table, older_than=int(time.time() * 1000) + 60_000)
    assert not {local_path(p) for p in stats} & {local_path(p) for p in orphans.orphans}
    assert all(Path(local_path(p)).exists() for p in stats)
    assert java.rows("stats") == live("pos")
    lake.drop_table("db.stats", purge=True)
    assert not any(Path(local_path(p)).exists() for p in stats)


def test_lakecat_reads_row_lineage_of_a_v3_table_as_java_does(
    java: JavaTables, lake: Catalog
) -> None:
    """``_row_id`` / ``_last_updated_sequence_number``: inherited (first_row_id of the file
    from its manifest, + position; the file's data sequence number) or stored in the file
    (rows an UPDATE or a compaction copied), at every snapshot."""
    java.make("lineage", "v3_lineage")
    table = lake.load_table("db.lineage")
    lineage = ["id", "_row_id", "_last_updated_sequence_number"]
    for snapshot_id in java.snapshots("lineage"):
        want = java.call(
            {"op": "lineage", "table": "lineage", "options": {"snapshot-id": snapshot_id}}
        )
        got = table.scan(snapshot_id=snapshot_id, columns=lineage).to_arrow()
        assert got.column_names == lineage
        assert sorted(map(list, zip(*got.to_pydict().values(), strict=True))) == want["rows"]
        assert all(r[1] is not None and r[2] is not None for r in want["rows"])
    filtered = table.scan("id > 20", columns=["_row_id", "note"]).to_arrow()
    assert filtered.column_names == ["note", "_row_id"]  # table columns first, as projected
    assert filtered.num_rows == len([r for r in java.rows("lineage") if r[0] > 20])


def test_lakecat_changes_a_java_v3_table_and_java_reads_its_rows_and_lineage(
    java: JavaTables, lake: Catalog
) -> None:
    """Merge-on-read changes of a table Iceberg Java wrote with deletion vectors (a DV per
    file, holding Java's deletes too), then a copy-on-write change and a compaction: after
    each, Java reads lakecat's rows and every row's ``_row_id`` /
    ``_last_updated_sequence_number``."""
    java.make("lineage_rw", "v3_lineage")
    table = lake.load_table("db.lineage_rw")
    assert table.metadata.format_version == 3
    lineage = ["id", "_row_id", "_last_updated_sequence_number"]

    def same_as_java() -> None:
        got = canonical_rows(table.refresh().to_arrow(), COLUMNS)
        assert java.rows("lineage_rw") == got
        want = java.call({"op": "lineage", "table": "lineage_rw", "options": {}})["rows"]
        mine = table.scan(columns=lineage).to_arrow()
        assert sorted(map(list, zip(*mine.to_pydict().values(), strict=True))) == want

    table.set_properties(dict(MERGE_ON_READ))
    table.delete("id IN (2, 9, 33)")
    table.update({"note": "lakecat"}, "id IN (4, 22)")
    same_as_java()
    per_file = [d.referenced_data_file for ds in table.scan().plan().deletes.values() for d in ds]
    assert per_file and len(per_file) == len(set(per_file))  # one DV per data file
    table.set_properties(dict(COPY_ON_WRITE))
    table.update({"note": "rewritten"}, "id = 6")
    same_as_java()
    rewrite_data_files(table, delete_file_threshold=1)
    same_as_java()


def test_a_compaction_racing_a_merge_on_read_delete_carries_it_over_instead_of_losing(
    java: JavaTables, lake: Catalog
) -> None:
    table = lake.load_table("db.race")  # two small files, no delete files yet
    raced: list[bool] = []

    def progress(done: int, total: int) -> None:
        if not raced:  # planned, nothing rewritten yet: another engine deletes id 5
            raced.append(True)
            java.sql("DELETE FROM peers.db.race WHERE id = 5")

    result = rewrite_data_files(table, progress=progress)
    assert raced
    assert java.rows("race") == rows([i for i in range(1, 21) if i != 5])
    # the compaction landed all the same: Java's delete carried over to the new file
    assert result.groups_failed == () and result.groups_committed == 1
    carried = [p for p in deletes_by_partition(table.refresh()) if "carried" in p]
    assert len(carried) == 1 and len(table.scan().plan().files) == 1


# ---- Spark --------------------------------------------------------------------------------------
@pytest.fixture
def registered(spark: Any, lake: Catalog) -> Catalog:
    from lakecat.spark_ext import register

    register(spark, catalog=lake, filter_pushdown=True)
    return lake


@pytest.mark.spark
def test_spark_reads_a_snapshot_before_the_deletes_and_appended_rows_as_java_does(
    spark: Any, registered: Catalog, java: JavaTables
) -> None:
    import lakecat.spark_ext as lk

    first, _, _, last = java.snapshots("pos_guarded")
    old = lk.read(spark, "db.pos_guarded", **{"snapshot-id": first}).collect()
    assert sorted(r["id"] for r in old) == list(range(1, 21))
    # appended rows as appended: Iceberg's incremental append scan applies no delete files
    options = {"start-snapshot-id": first, "end-snapshot-id": last}
    appended = java.rows("pos_guarded", **options)
    assert appended == rows(range(21, 51))  # 25, 30, ... too: deleted after they were appended
    got = spark.read.format("lakecat").options(**options).load("db.pos_guarded").collect()
    assert canonical_rows(pa.Table.from_pylist([r.asDict() for r in got]), COLUMNS) == appended


@pytest.mark.spark
def test_spark_row_level_operations_and_compaction_apply_the_deletes(
    spark: Any, registered: Catalog, java: JavaTables
) -> None:
    import lakecat.spark_ext as lk

    deleted = fresh(java, registered, "pos", "spark_delete")
    before = deletes_by_partition(deleted)
    lk.delete(spark, "db.spark_delete", "id = 7 OR id = 27")
    assert java.rows("spark_delete") == live("pos", without=[7, 27])
    assert_dangling_removed(deleted, before, "pos")

    fresh(java, registered, "pos", "spark_update")
    lk.update(spark, "db.spark_update", "id = 7 OR id = 10", {"note": "'x'"})
    assert java.rows("spark_update") == live("pos", without=[7], extra=[row(7, "x")])

    fresh(java, registered, "eq", "spark_merge")
    source = spark.createDataFrame(
        [(7, None, "merged"), (3, "b", "back")], "id int, cat string, note string"
    )
    lk.merge(
        spark,
        target="db.spark_merge",
        source=source,
        on="t.id = s.id",
        when_matched_update="*",
        when_not_matched_insert="*",
    )
    assert java.rows("spark_merge") == live(
        "eq", without=[7], extra=[[7, None, "merged"], [3, "b", "back"]]
    )

    compacted = fresh(java, registered, "pos", "spark_compact")
    result = lk.compact(spark, "db.spark_compact", min_input_files=1)
    assert result.groups_committed == result.groups_total > 0
    assert java.rows("spark_compact") == live("pos")
    assert deletes_by_partition(compacted.refresh()) == {}


@pytest.mark.spark
def test_spark_overwrites_by_filter_apply_the_deletes(
    spark: Any, registered: Catalog, java: JavaTables
) -> None:
    import lakecat.spark_ext as lk

    fresh(java, registered, "pos", "spark_overwrite")
    df = spark.createDataFrame([(7, None, "x")], "id long, cat string, note string")
    lk.write(df, "db.spark_overwrite", mode="overwrite", **{"overwrite-filter": "id = 7"})
    want = live("pos", without=[7], extra=[[7, None, "x"]])
    assert java.rows("spark_overwrite") == want
    again = spark.createDataFrame([(27, None, "y")], "id long, cat string, note string")
    (
        again.write.format("lakecat")
        .mode("overwrite")
        .option("overwrite-filter", "id = 27")
        .save("db.spark_overwrite")
    )
    want = live("pos", without=[7, 27], extra=[[7, None, "x"], [27, None, "y"]])
    assert java.rows("spark_overwrite") == want


@pytest.mark.spark
def test_a_spark_sql_delete_applies_the_deletes(
    spark: Any, lake: Catalog, java: JavaTables
) -> None:
    from lakecat.spark_ext import SparkCatalogError, attach_catalog

    try:
        attach_catalog(spark, "rewrites", catalog=lake)
    except SparkCatalogError as exc:
        pytest.skip(f"the Spark catalog plugin is not available: {exc}")
    fresh(java, lake, "eq", "sql_delete")
    spark.sql("DELETE FROM rewrites.db.sql_delete WHERE id = 7").collect()
    assert java.rows("sql_delete") == live("eq", without=[7])
    got = spark.sql("SELECT * FROM rewrites.db.sql_delete").toArrow()
    assert canonical_rows(got, COLUMNS) == live("eq", without=[7])
