"""Long lists in the reports of ``lakecat`` commands show their first items and the count;
``-v`` shows them all, and ``--json`` always holds them all.

(Before, ``expire-snapshots`` printed all 299 ids of the snapshots it expired, 76 lines.)
Listing commands (``history``, ``files``, ...) list every row: the list is what they are for.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.cli.entry import main
from lakecat.catalog.cli.render import PREVIEW_ITEMS
from lakecat.metadata.io import local_path

MANY = PREVIEW_ITEMS + 15


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    for key in [k for k in os.environ if k.startswith("LAKECAT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "120")
    catalog = Catalog.embedded(tmp_path / "lake")
    catalog.create_namespace("db")
    monkeypatch.setenv("LAKECAT_CATALOG_URL", catalog.uri)
    monkeypatch.setenv("LAKECAT_WAREHOUSE", str(tmp_path / "lake" / "warehouse"))
    return catalog


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    def run(*args: str) -> str:
        code = main(list(args))
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    return run


def appended(catalog: Catalog, commits: int, *, partitions: int = 1) -> Table:
    """``db.t``, partitioned by ``part``, after ``commits`` appends of one row per partition."""
    table = catalog.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("part", pa.int64())]), partition_by=["part"]
    )
    for i in range(commits):
        parts = list(range(partitions))
        table.append(pa.table({"id": [i] * partitions, "part": parts}))
    return table


def test_expire_snapshots_shows_the_first_ids_and_the_count(lake: Catalog, cli) -> None:
    table = appended(lake, MANY + 1)
    expiring = [s.snapshot_id for s in table.snapshots()[:-1]]
    args = ("expire-snapshots", "db.t", "--older-than", "0s", "--retain-last", "1", "--dry-run")

    short = cli(*args)
    assert f"would expire {MANY} snapshots" in short
    assert f"({MANY} in all; -v shows all)" in short
    assert sum(str(i) in short for i in expiring) == PREVIEW_ITEMS
    assert len(short.splitlines()) < 15

    assert all(str(i) in cli("-v", *args) for i in expiring)
    document = json.loads(cli(*args, "--json"))
    assert sorted(document["expired_snapshot_ids"]) == sorted(expiring)


def test_remove_orphans_shows_the_first_paths_and_the_count(lake: Catalog, cli) -> None:
    table = appended(lake, 1)
    data = Path(local_path(table.metadata.location) or "") / "data"
    old = (dt.datetime.now() - dt.timedelta(days=5)).timestamp()
    for i in range(MANY):
        stray = data / f"stray-{i:02}.parquet"
        stray.write_bytes(b"x")
        os.utime(stray, (old, old))

    short = cli("remove-orphans", "db.t", "--dry-run")
    assert f"{MANY} orphan files" in short
    assert short.count("stray-") == PREVIEW_ITEMS
    assert f"first {PREVIEW_ITEMS} of {MANY}; -v shows all" in short
    assert cli("remove-orphans", "db.t", "--dry-run", "-v").count("stray-") == MANY
    assert len(json.loads(cli("remove-orphans", "db.t", "--dry-run", "--json"))["orphans"]) == MANY


def test_compaction_plans_and_results_show_the_first_groups(lake: Catalog, cli) -> None:
    appended(lake, 2, partitions=MANY)  # two small files in each partition: one group each

    plan = cli("compact", "db.t", "--dry-run")
    assert f"first {PREVIEW_ITEMS} of {MANY}; -v shows all" in plan
    assert f"{MANY} groups" in plan
    assert len(json.loads(cli("compact", "db.t", "--dry-run", "--json"))["groups"]) == MANY

    done = cli("compact", "db.t", "--max-commits", str(MANY))  # a snapshot per group
    assert f"{MANY} of {MANY}" in done  # groups committed
    assert f"({MANY} in all; -v shows all)" in done


def test_namespaces_describe_and_changes_summarise_their_lists(lake: Catalog, cli) -> None:
    table = appended(lake, MANY)
    for i in range(MANY):
        lake.create_table(f"db.other{i:02}", pa.schema([("id", pa.int64())]))
    described = cli("namespaces", "describe", "db")
    assert f"({MANY + 1} in all; -v shows all)" in described
    assert cli("-v", "namespaces", "describe", "db").count("db.other") == MANY
    assert len(json.loads(cli("namespaces", "describe", "db", "--json"))["tables"]) == MANY + 1

    first = table.snapshots()[0].snapshot_id
    changes = cli("changes", "db.t", "--from", str(first))
    assert f"({MANY - 1} in all; -v shows all)" in changes


def test_listing_commands_list_every_row(lake: Catalog, cli) -> None:
    table = appended(lake, MANY)
    history = cli("history", "db.t")
    assert all(str(s.snapshot_id) in history for s in table.snapshots())
