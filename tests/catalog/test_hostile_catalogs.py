"""Catalogs used as operators use them, and misuse them: a table name handed on by a drop or
a rename, a read-only catalog, ``file:`` SQLite URLs. Each either works or fails at once with
a typed error that names the cause, and changes nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from lakecat.catalog import Catalog
from lakecat.catalog.commit.coordination.file_lock import FileLock
from lakecat.catalog.commit.coordination.lock import commit_lock_for, sqlite_database_file
from lakecat.metadata.errors import CatalogReadOnly, RequirementFailed

SCHEMA = pa.schema([("id", pa.int64())])


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())}, schema=SCHEMA)


def ids(catalog: Catalog, name: str = "db.t") -> list[int]:
    return sorted(catalog.load_table(name).to_arrow().column("id").to_pylist())


def files(folder: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs}


# ---- a name handed on -------------------------------------------------------------------


def _old_table_with_history(catalog: Catalog, lock: str) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"commit.lock.enabled": lock})
    table.append(rows(1, 2, 3))
    table.overwrite(rows(4, 5), "id >= 0")
    table.delete("id = 4")
    table.append(rows(6))


@pytest.mark.parametrize("dropped_by", ["lakecat", "another engine"])
@pytest.mark.parametrize("lock", ["true", "false"])
def test_a_table_created_under_a_dropped_tables_name_never_sees_its_history(
    catalog: Catalog, lock: str, dropped_by: str
) -> None:
    _old_table_with_history(catalog, lock)
    stale = catalog.load_table("db.t")
    if dropped_by == "lakecat":
        catalog.drop_table("db.t")
    else:  # a row deleted by Iceberg Java or pyiceberg: lakecat's lock is not told
        catalog.store.drop_table_row(("db",), "t")
    new = catalog.create_table("db.t", SCHEMA, properties={"commit.lock.enabled": lock})
    # the first commits are not appends: they validate against their base's history
    new.overwrite(rows(10, 11, 12), "id >= 0")
    new.delete("id = 10")
    new.append(rows(13))
    assert ids(catalog) == [11, 12, 13]
    assert len(catalog.load_table("db.t").snapshots()) == 3
    # a handle on the dropped table cannot write into the new one
    with pytest.raises(RequirementFailed, match="table uuid"):
        stale.append(rows(99))
    with pytest.raises(RequirementFailed, match="table uuid"):
        stale.set_properties({"owner": "stale"})
    assert ids(catalog) == [11, 12, 13]
    assert "owner" not in catalog.load_table("db.t").metadata.properties


@pytest.mark.parametrize("lock", ["true", "false"])
def test_a_table_created_under_a_renamed_tables_name_is_a_table_of_its_own(
    catalog: Catalog, lock: str
) -> None:
    _old_table_with_history(catalog, lock)
    catalog.rename_table("db.t", "db.moved")
    new = catalog.create_table("db.t", SCHEMA, properties={"commit.lock.enabled": lock})
    new.overwrite(rows(20), "id >= 0")
    new.delete("id = 20")
    new.append(rows(21))
    moved = catalog.load_table("db.moved")
    moved.overwrite(rows(30), "id = 5")
    assert ids(catalog) == [21]
    assert ids(catalog, "db.moved") == [6, 30]


# ---- a catalog that takes no writes -------------------------------------------------------


def _read_only_url(catalog_url: str) -> str:
    url = make_url(catalog_url)
    if url.get_backend_name() == "sqlite":
        return f"sqlite:///file:{url.database}?mode=ro&uri=true"
    options = url.query.get("options", "")
    assert isinstance(options, str)
    return url.update_query_dict(
        {"options": f"{options} -cdefault_transaction_read_only=on".strip()}
    ).render_as_string(hide_password=False)


def test_a_read_only_catalog_fails_a_commit_at_once_naming_the_cause_and_changes_nothing(
    catalog: Catalog, catalog_url: str, warehouse: str
) -> None:
    catalog.create_table("db.t", SCHEMA).append(rows(1))
    before = files(warehouse)
    read_only = Catalog(_read_only_url(catalog_url), warehouse=warehouse)
    table = read_only.load_table("db.t")  # reads work
    assert table.to_arrow().num_rows == 1
    started = time.monotonic()
    with pytest.raises(CatalogReadOnly, match=r"(?i)read.?only") as info:
        table.append(rows(2))  # a blind append: it used to retry for 30 minutes
    assert time.monotonic() - started < 10
    assert "commit table db.t" in str(info.value)
    with pytest.raises(CatalogReadOnly):
        table.set_properties({"owner": "x"})
    with pytest.raises(CatalogReadOnly):
        read_only.create_namespace("other")
    assert files(warehouse) == before  # every file the attempts wrote is gone
    assert ids(catalog) == [1]
    read_only.close()


# ---- SQLite URLs of the file: form ----------------------------------------------------------


def test_a_file_uri_catalog_keeps_its_lock_beside_the_database_not_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    db = lake / "catalog.db"
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    plain = Catalog(f"sqlite:///{db}", warehouse=str(lake / "wh"))
    plain.create_namespace("db")
    plain.create_table("db.t", SCHEMA).append(rows(1))
    by_uri = Catalog(f"sqlite:///file:{db}?uri=true", warehouse=str(lake / "wh"))
    by_uri.load_table("db.t").append(rows(2))
    read_only = Catalog(f"sqlite:///file:{db}?mode=ro&uri=true", warehouse=str(lake / "wh"))
    assert ids(read_only) == [1, 2]
    assert list(elsewhere.iterdir()) == []  # nothing under the working directory
    locks = {c.commit_lock.folder for c in (plain, by_uri, read_only)}  # type: ignore[attr-defined]
    assert locks == {f"{db}.locks"}  # one lock for one database, however it is spelled
    for c in (plain, by_uri, read_only):
        c.close()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:////lake/c.db", "/lake/c.db"),
        ("sqlite:///file:/lake/c.db?uri=true", "/lake/c.db"),
        ("sqlite:///file:///lake/c.db?uri=true&mode=ro", "/lake/c.db"),
        ("sqlite:///file://localhost/lake/c.db?uri=true", "/lake/c.db"),
        ("sqlite:///file:/lake/my%20lake.db?uri=true", "/lake/my lake.db"),
        ("sqlite:///file:c.db?uri=true", "{cwd}/c.db"),
        ("sqlite:///c.db", "{cwd}/c.db"),
        ("sqlite:///file:/lake/c.db", "{cwd}/file:/lake/c.db"),  # no uri=true: a plain name
        ("sqlite://", None),
        ("sqlite:///:memory:", None),
        ("sqlite:///file:mem?mode=memory&uri=true", None),
        ("sqlite:///file::memory:?uri=true", None),
    ],
)
def test_a_sqlite_url_names_its_database_file_as_sqlite_opens_it(
    url: str, expected: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cwd = os.path.realpath(tmp_path)
    want = None if expected is None else expected.format(cwd=cwd)
    assert sqlite_database_file(make_url(url)) == want


def test_two_spellings_through_a_symbolic_link_share_one_lock(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    a = commit_lock_for(sa.create_engine(f"sqlite:///{tmp_path / 'real' / 'c.db'}"))
    b = commit_lock_for(sa.create_engine(f"sqlite:///file:{tmp_path / 'link' / 'c.db'}?uri=true"))
    assert isinstance(a, FileLock) and isinstance(b, FileLock)
    assert a.folder == b.folder
