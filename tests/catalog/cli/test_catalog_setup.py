"""Where the ``lakecat`` command finds its catalog, in the situations of a first hour with it:

* a command that changes the catalog creates a SQLite catalog's folder (SQLite creates only
  the file);
* a command that only reads refuses a SQLite catalog file that does not exist (a mistyped path
  used to open a new, empty catalog and list nothing, exit code 0), unless ``--create``;
* reading needs no warehouse: table locations are absolute; only ``tables create`` without
  ``--location`` does.

The first test runs the installed command as a user would; the others call ``main`` in this
process (the same code, without an interpreter start per command).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.cli.commands import COMMANDS, READ_ONLY_COMMANDS, writes
from lakecat.catalog.cli.entry import build_parser, main
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io import LocalFileIO, RoutingFileIO
from lakecat.metadata.io.fileio import ArrowFileIO


def _clean_env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_")}
    return {**env, "HOME": str(home), "COLUMNS": "200", **extra}


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``cli(*args) -> (code, out, err)`` in an empty working folder, no LAKECAT_* variables."""
    for key in [k for k in os.environ if k.startswith("LAKECAT_")]:
        monkeypatch.delenv(key)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def one_error_line(code: int, out: str, err: str) -> str:
    assert code == 1, (out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lakecat: error: "), err
    return lines[0]


def test_a_new_user_starts_a_catalog_in_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    env = _clean_env(tmp_path / "home", {"LAKECAT_CATALOG_URL": "sqlite:///lake/catalog.db"})

    def lakecat(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "lakecat.catalog.cli", *args]
        return subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )

    listed_too_early = lakecat("namespaces", "list")
    created = lakecat("namespaces", "create", "db")
    listed = lakecat("namespaces", "list", "--json")

    assert listed_too_early.returncode == 1
    assert "lake/catalog.db does not exist" in listed_too_early.stderr
    assert created.returncode == 0, created.stderr
    assert (tmp_path / "lake" / "catalog.db").is_file()
    assert json.loads(listed.stdout) == {"parent": None, "namespaces": ["db"]}


def test_a_command_that_changes_the_catalog_creates_the_sqlite_folders(cli) -> None:
    url = "sqlite:///deep/er/catalog.db"
    assert cli("--catalog", url, "namespaces", "create", "db")[0] == 0
    assert Path("deep/er/catalog.db").is_file()
    listed = json.loads(cli("--catalog", url, "namespaces", "list", "--json")[1])
    assert listed == {"parent": None, "namespaces": ["db"]}


@pytest.mark.parametrize(
    "command",
    [
        ("namespaces", "list"),
        ("namespaces", "describe", "db"),
        ("tables", "list", "db"),
        ("tables", "describe", "db.t"),
        ("show", "db.t"),
        ("history", "db.t"),
        ("files", "db.t"),
        ("expire-snapshots", "db.t", "--dry-run"),
        ("compact", "db.t", "--dry-run"),
        ("remove-orphans", "db.t", "--dry-run"),
    ],
)
def test_a_read_only_command_refuses_a_catalog_file_that_does_not_exist(
    cli, tmp_path: Path, command: tuple[str, ...]
) -> None:
    Catalog.embedded(tmp_path / "lake").close()  # the catalog the user meant
    mistyped = "sqlite:///lake/catlog.db"
    line = one_error_line(*cli("--catalog", mistyped, *command))
    assert f"catalog database {tmp_path / 'lake' / 'catlog.db'} does not exist" in line
    assert "(from --catalog)" in line and "--create" in line
    assert not (tmp_path / "lake" / "catlog.db").exists()  # and no stray empty catalog


def test_the_error_says_where_the_url_came_from(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKECAT_CATALOG_URL", "sqlite:///nowhere.db")
    assert "(from LAKECAT_CATALOG_URL)" in one_error_line(*cli("namespaces", "list"))
    monkeypatch.delenv("LAKECAT_CATALOG_URL")
    (tmp_path / "lakecat.toml").write_text('[catalog]\nurl = "sqlite:///nowhere.db"\n')
    line = one_error_line(*cli("namespaces", "list"))
    assert f"(from config file {tmp_path / 'lakecat.toml'})" in line


def test_create_lets_a_read_only_command_start_an_empty_catalog(cli, tmp_path: Path) -> None:
    code, out, _ = cli("--catalog", "sqlite:///new/catalog.db", "--create", "namespaces", "list")
    assert (code, out.strip()) == (0, "(none)")
    assert (tmp_path / "new" / "catalog.db").is_file()
    code, out, _ = cli("namespaces", "list", "--catalog", "sqlite:///new/catalog.db", "--json")
    assert (code, json.loads(out)) == (0, {"parent": None, "namespaces": []})


def test_other_databases_and_in_memory_sqlite_are_not_checked(cli) -> None:
    assert cli("--catalog", "sqlite://", "namespaces", "list")[0] == 0
    assert cli("--catalog", "sqlite:///:memory:", "namespaces", "list")[0] == 0


@pytest.fixture
def lake_url(tmp_path: Path) -> str:
    """A catalog with ``db.events`` holding two rows; its URL."""
    with Catalog.embedded(tmp_path / "lake") as catalog:
        catalog.create_namespace("db")
        table = catalog.create_table("db.events", pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
        return catalog.uri


def test_listings_and_inspection_need_no_warehouse(cli, lake_url) -> None:
    url = lake_url

    def ok(*args: str) -> object:
        code, out, err = cli("--catalog", url, *args, "--json")
        assert (code, err) == (0, ""), err
        return json.loads(out)

    assert ok("namespaces", "list")["namespaces"] == ["db"]  # type: ignore[index]
    assert ok("tables", "list", "db")["tables"] == ["db.events"]  # type: ignore[index]
    assert ok("tables", "describe", "db.events")["counts"]["records"] == 2  # type: ignore[index]
    assert [r["id"] for r in ok("show", "db.events")["rows"]] == [1, 2]  # type: ignore[index]
    assert len(ok("history", "db.events")["history"]) == 1  # type: ignore[index]
    assert len(ok("snapshots", "db.events")["snapshots"]) == 1  # type: ignore[index]
    assert ok("files", "db.events")["record_count"] == 2  # type: ignore[index]
    assert ok("tag", "db.events", "create", "v1")["ref"] == "v1"  # type: ignore[index]


def test_creating_a_table_needs_a_warehouse_or_a_location(cli, tmp_path: Path, lake_url) -> None:
    url = lake_url
    schema = '{"id": "long"}'
    line = one_error_line(*cli("--catalog", url, "tables", "create", "db.t", "--schema", schema))
    assert "no warehouse configured" in line and "--location" in line
    location = (tmp_path / "elsewhere" / "t").as_uri()
    code, _, err = cli(
        "--catalog", url, "tables", "create", "db.t", "--schema", schema, "--location", location
    )
    assert code == 0, err
    with_warehouse = ("--catalog", url, "--warehouse", str(tmp_path / "wh"))
    assert cli(*with_warehouse, "tables", "create", "db.u", "--schema", schema)[0] == 0


def test_a_catalog_without_a_warehouse_reads_and_creates_only_at_a_location(
    lake_url, tmp_path: Path
) -> None:
    with Catalog(lake_url, warehouse=None) as catalog:
        assert catalog.load_table("db.events").to_arrow().num_rows == 2
        with pytest.raises(ValidationError, match="has no warehouse"):
            catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
        at = catalog.create_table(
            "db.t", pa.schema([("id", pa.int64())]), location=str(tmp_path / "t")
        )
        at.append(pa.table({"id": pa.array([7], pa.int64())}))
        assert catalog.load_table("db.t").to_arrow().column("id").to_pylist() == [7]
    with pytest.raises(ValidationError, match="empty"):
        Catalog(lake_url, warehouse="")


def test_routing_file_io_serves_each_location_with_its_own_file_io(tmp_path: Path) -> None:
    io = RoutingFileIO()
    assert isinstance(io._for(str(tmp_path / "f")), LocalFileIO)
    assert isinstance(io._for((tmp_path / "f").as_uri()), LocalFileIO)
    assert isinstance(io._for("s3://bucket/key"), ArrowFileIO)
    io.write((tmp_path / "f").as_uri(), b"data", exclusive=True)
    assert io.read(str(tmp_path / "f")) == b"data"


def test_read_only_commands_are_commands_and_dry_runs_do_not_write() -> None:
    assert READ_ONLY_COMMANDS.issubset(COMMANDS)
    parser = build_parser()
    assert not writes(parser.parse_args(["namespaces", "list"]))
    assert not writes(parser.parse_args(["expire-snapshots", "db.t", "--dry-run"]))
    assert writes(parser.parse_args(["expire-snapshots", "db.t"]))
    assert writes(parser.parse_args(["namespaces", "create", "db"]))
