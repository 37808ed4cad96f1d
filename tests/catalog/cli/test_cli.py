"""The ``lakecat`` command, run through its real entry point in a subprocess.

Every process starts with a clean environment (no ``LAKECAT_*`` variables, ``HOME`` and the
working directory in the test's temp folder) so that no user config file can leak in; the
catalog is given through environment variables, flags or a config file, as the test says.
Independent commands run in parallel to keep the file fast. The pure parts (config
resolution, schema parsing, argument values) are tested in-process at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
from rich.console import Console
from table_copies import copy_files

from lakecat.catalog import Catalog
from lakecat.catalog.cli.args import byte_size, timestamp_ms
from lakecat.catalog.cli.config import resolve_settings
from lakecat.catalog.cli.context import Context
from lakecat.catalog.cli.entry import build_parser, main
from lakecat.catalog.cli.schema import parse_partition_by, parse_schema, parse_sort_by
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.manifests import Status, read_manifest, read_manifest_list
from lakecat.metadata.schema.types import (
    DecimalType,
    ListType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestamptzType,
)

UTC = dt.UTC


# ---- running the command ------------------------------------------------------------------


def _entry_point() -> list[str]:
    """The installed console script when there is one, else ``python -m``."""
    beside_python = Path(sys.executable).parent / "lakecat"
    if beside_python.is_file():
        return [str(beside_python)]
    found = shutil.which("lakecat")
    return [found] if found else [sys.executable, "-m", "lakecat.catalog.cli"]


ENTRY_POINT = _entry_point()


@dataclass(frozen=True)
class Run:
    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def json(self) -> object:
        assert self.code == 0, self
        assert self.err == "", self
        return json.loads(self.out)

    def error_line(self) -> str:
        """The one line an error must print (and check that nothing else is printed)."""
        assert self.out == "", self
        assert "Traceback" not in self.err, self
        lines = self.err.splitlines()
        assert len(lines) == 1, self
        assert lines[0].startswith("lakecat: error: "), self
        return lines[0]


@dataclass
class Lake:
    """A catalog folder and the environment that points the command at it."""

    root: Path
    url: str
    warehouse: str

    @property
    def env(self) -> dict[str, str]:
        return {"LAKECAT_CATALOG_URL": self.url, "LAKECAT_WAREHOUSE": self.warehouse}

    def catalog(self) -> Catalog:
        return Catalog(self.url, warehouse=self.warehouse)


def _clean_env(root: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_")}
    env.update({"HOME": str(root / "home"), "COLUMNS": "200", **extra})
    return env


def _popen(root: Path, args: Sequence[str], env: Mapping[str, str], stdin: str | None) -> Run:
    process = subprocess.run(
        [*ENTRY_POINT, *args],
        cwd=root,
        env=_clean_env(root, env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Run(tuple(args), process.returncode, process.stdout, process.stderr)


def lakecat(
    lake: Lake, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> Run:
    return _popen(lake.root, args, lake.env if env is None else env, stdin)


def lakecat_all(
    lake: Lake, *commands: Sequence[str], env: Mapping[str, str] | None = None
) -> list[Run]:
    """Run independent (read-only) commands concurrently; results in the order given."""
    environment = _clean_env(lake.root, lake.env if env is None else env)
    processes = [
        (
            tuple(args),
            subprocess.Popen(
                [*ENTRY_POINT, *args],
                cwd=lake.root,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
        for args in commands
    ]
    runs = []
    for args, process in processes:
        out, err = process.communicate(timeout=120)
        runs.append(Run(args, process.returncode, out, err))
    return runs


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    (tmp_path / "home").mkdir()
    return Lake(tmp_path, f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))


def events(ids: range, region: str, day: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "ts": pa.array(
                [dt.datetime(2024, 1, day, 10, tzinfo=UTC) + dt.timedelta(minutes=i) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "region": pa.array([region] * len(ids), pa.string()),
        }
    )


@pytest.fixture
def filled(lake: Lake) -> Iterator[tuple[Lake, list[int]]]:
    """``db.events`` (partitioned by day and region) with three appends made in Python."""
    with lake.catalog() as catalog:
        catalog.create_namespace("db")
        table = catalog.create_table(
            "db.events", events(range(0), "eu").schema, partition_by=[("ts", "day"), "region"]
        )
        ids = [
            table.append(events(range(0, 3), "eu")).snapshot_id,
            table.append(events(range(3, 5), "us")).snapshot_id,
            table.append(events(range(5, 6), "eu", day=2)).snapshot_id,
        ]
    yield lake, [i for i in ids if i is not None]


@dataclass
class InProcess:
    """``main(argv)`` in this process, with the catalog given as flags: same code path minus
    the interpreter start, for the many variants that need no separate process."""

    flags: tuple[str, ...]
    capsys: pytest.CaptureFixture[str]

    def __call__(self, *args: str) -> Run:
        code = main([*self.flags, *args])
        out, err = self.capsys.readouterr()
        return Run(tuple(args), code, out, err)


@pytest.fixture
def cli(
    lake: Lake, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> InProcess:
    for key in [k for k in os.environ if k.startswith("LAKECAT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(lake.root / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(lake.root)
    return InProcess(("--catalog", lake.url, "--warehouse", lake.warehouse), capsys)


# ---- the process contract ---------------------------------------------------------------------


def test_version_and_usage_errors(lake: Lake, cli: InProcess) -> None:
    version, bad_choice, bad_int = lakecat_all(
        lake, ["--version"], ["frobnicate"], ["show", "db.events", "--limit", "lots"], env={}
    )
    assert version.code == 0 and version.out.startswith("lakecat ")
    for run in (bad_choice, bad_int):
        assert run.code == 2, run
        run.error_line()
    assert "invalid choice: 'frobnicate'" in bad_choice.err
    assert "--limit" in bad_int.err and "lots" in bad_int.err

    help_ = cli("--help")
    assert help_.code == 0 and "expire-snapshots" in help_.out
    for args, expected in [
        ((), "COMMAND"),
        (("tables",), "ACTION"),
        (("tables", "create", "db.t"), "--schema"),
        (("rollback", "db.t"), "--to-snapshot"),
        (("show", "db.t", "--snapshot-id", "1", "--ref", "main"), "not allowed with"),
        (("expire-snapshots", "db.t", "--retain-last", "0"), "at least 1"),
        (("compact", "db.t", "--target-file-size", "big"), "not a size"),
        (("show", "db.t", "--as-of", "someday"), "not a time"),
    ]:
        run = cli(*args)
        assert run.code == 2, run
        assert expected in run.error_line()


def test_errors_are_one_line_with_exit_code_1(
    filled: tuple[Lake, list[int]], cli: InProcess
) -> None:
    lake, _ = filled
    unknown_table, bad_scheme, garbage_url, no_catalog = lakecat_all(
        lake,
        ["--catalog", lake.url, "tables", "describe", "db.nope"],
        ["--catalog", "notaurl://x", "namespaces", "list"],
        ["--catalog", "not a url", "namespaces", "list"],
        ["namespaces", "list"],
        env={"LAKECAT_WAREHOUSE": lake.warehouse},
    )
    assert "table db.nope does not exist" in unknown_table.error_line()
    assert "notaurl" in bad_scheme.error_line()
    assert "URL" in garbage_url.error_line()
    for way in ("--catalog", "LAKECAT_CATALOG_URL", "config file"):
        assert way in no_catalog.error_line()
    assert {r.code for r in (unknown_table, bad_scheme, garbage_url, no_catalog)} == {1}

    for args, expected in [
        (("tables", "list", "nowhere"), "nowhere"),
        (("tables", "describe", "nodots"), "namespace"),
        (("show", "db.events", "--filter", "nosuchcolumn = 1"), "nosuchcolumn"),
        (("show", "db.events", "--filter", "id = = 1"), "id = = 1"),
        (("show", "db.events", "--snapshot-id", "42"), "42"),
        (("show", "db.events", "--columns", "id,nope"), "nope"),
        (("tables", "create", "db.t", "--schema", '{"id": "longg"}'), "longg"),
        (("tables", "create", "db.t", "--schema", "missing.json"), "missing.json"),
        (("tables", "create", "db.events", "--schema", '{"id": "long"}'), "already exists"),
        (("namespaces", "drop", "db"), "db"),
    ]:
        run = cli(*args)
        assert run.code == 1, run
        assert expected in run.error_line(), run


def test_verbose_errors_show_the_traceback(lake: Lake) -> None:
    run = lakecat(lake, "-v", "tables", "describe", "db.nope")
    assert run.code == 1
    assert "Traceback" in run.err
    assert run.err.rstrip().splitlines()[-1].startswith("lakecat: error: ")


# ---- namespaces and tables --------------------------------------------------------------------


def test_namespace_and_table_lifecycle(lake: Lake, cli: InProcess) -> None:
    created = lakecat(lake, "namespaces", "create", "db", "--property", "owner=data-team", "--json")
    assert created.json() == {
        "namespace": "db",
        "created": True,
        "properties": {"owner": "data-team"},
    }
    schema = '{"id": "long", "ts": "timestamptz", "name": "string?", "price": "decimal(9, 2)?"}'
    table = lakecat(
        lake,
        "tables",
        "create",
        "db.items",
        "--schema",
        schema,
        "--partition-by",
        "ts:day,id:bucket[4]",
        "--sort-by",
        "id,ts:desc",
        "--property",
        "write.parquet.compression-codec=snappy",
        "--json",
    ).json()
    assert isinstance(table, dict)
    fields = {f["name"]: (f["type"], f["required"]) for f in table["schema"]["fields"]}
    assert fields == {
        "id": ("long", True),
        "ts": ("timestamptz", True),
        "name": ("string", False),
        "price": ("decimal(9, 2)", False),
    }
    assert [(f["source_column"], f["transform"]) for f in table["partition_spec"]["fields"]] == [
        ("ts", "day"),
        ("id", "bucket[4]"),
    ]
    assert [(f["column"], f["direction"]) for f in table["sort_order"]["fields"]] == [
        ("id", "asc"),
        ("ts", "desc"),
    ]
    assert table["properties"]["write.parquet.compression-codec"] == "snappy"
    assert table["current_snapshot"] is None and table["counts"]["records"] == 0

    like = cli(
        "tables", "create-like", "db.items_copy", "db.items", "--property", "team=web", "--json"
    ).json()
    assert isinstance(like, dict)
    assert like["schema"] == table["schema"]
    assert like["partition_spec"] == table["partition_spec"]
    assert like["sort_order"] == table["sort_order"]
    assert like["properties"]["write.parquet.compression-codec"] == "snappy"
    assert like["properties"]["team"] == "web" and like["current_snapshot"] is None
    missing = cli("tables", "create-like", "db.nothing", "db.no_such_table")
    assert missing.code == 1 and "db.no_such_table does not exist" in missing.err
    assert cli("tables", "drop", "db.items_copy").code == 0

    iceberg_schema = json.dumps(
        {"type": "struct", "fields": [{"id": 1, "name": "k", "type": "string", "required": True}]}
    )
    from_stdin = lakecat(lake, "tables", "create", "db.keys", "--schema", "-", stdin=iceberg_schema)
    assert from_stdin.code == 0, from_stdin
    assert "db.keys" in from_stdin.out
    describe = lakecat(lake, "tables", "describe", "db.items")
    for text in ("db.items", "bucket[4]", "timestamptz", "decimal(9, 2)", "desc", "snappy"):
        assert text in describe.out

    (lake.root / "schema.json").write_text('{"a": "string"}')
    assert cli("tables", "create", "db.from_file", "--schema", "schema.json").code == 0
    assert cli("namespaces", "list", "--json").json() == {"parent": None, "namespaces": ["db"]}
    assert cli("tables", "list", "db", "--json").json() == {
        "namespace": "db",
        "tables": ["db.from_file", "db.items", "db.keys"],
    }
    assert "db.items" in cli("tables", "list", "db").out
    assert cli("namespaces", "create", "db.staging").code == 0
    assert cli("namespaces", "list", "db", "--json").json() == {
        "parent": "db",
        "namespaces": ["db.staging"],
    }
    assert cli("namespaces", "drop", "db.staging").code == 0
    assert cli("namespaces", "describe", "db", "--json").json() == {
        "namespace": "db",
        "properties": {"owner": "data-team"},
        "namespaces": [],
        "tables": ["db.from_file", "db.items", "db.keys"],
        "views": [],
    }
    renamed = cli("tables", "rename", "db.keys", "db.codes", "--json")
    assert renamed.json() == {"table": "db.keys", "renamed_to": "db.codes"}
    for name in ("db.codes", "db.items", "db.from_file"):
        assert cli("tables", "drop", name, "--purge").code == 0
    assert cli("namespaces", "drop", "db").code == 0
    assert cli("namespaces", "list", "--json").json() == {"parent": None, "namespaces": []}


def test_view_lifecycle(lake: Lake, cli: InProcess) -> None:
    assert cli("namespaces", "create", "db").code == 0
    schema = '{"id": "long", "name": "string?"}'
    created = cli(
        "--json",
        "views",
        "create",
        "db.v",
        "--sql",
        "SELECT id, name FROM t",
        "--dialect-sql",
        "trino",
        "SELECT id, name FROM db.t",
        "--schema",
        schema,
        "--property",
        "comment=people",
    ).json()
    assert isinstance(created, dict)
    assert created["queries"] == {
        "spark": "SELECT id, name FROM t",
        "trino": "SELECT id, name FROM db.t",
    }
    assert created["default_namespace"] == "db" and created["properties"] == {"comment": "people"}
    replaced = cli(
        "--json",
        "views",
        "replace",
        "db.v",
        "--sql",
        "SELECT id, name FROM u",
        "--dialect-sql",
        "trino",
        "SELECT id, name FROM db.u",
        "--schema",
        schema,
    ).json()
    assert isinstance(replaced, dict) and replaced["current_version_id"] == 2
    assert cli("views", "rollback", "db.v", "1").code == 0
    listed = cli("--json", "views", "list", "db").json()
    assert listed == {"namespace": "db", "views": ["db.v"]}
    described = cli("--json", "views", "describe", "db.v").json()
    assert isinstance(described, dict)
    assert [v["version_id"] for v in described["versions"] if v["current"]] == [1]
    assert [e["version_id"] for e in described["history"]] == [1, 2, 1]
    namespace = cli("--json", "namespaces", "describe", "db").json()
    assert isinstance(namespace, dict) and namespace["views"] == ["db.v"]
    # bad input: one line, nothing changed
    for args in (
        ("views", "create", "db.w", "--schema", schema),
        ("views", "replace", "db.v", "--sql", "SELECT 1", "--schema", schema),  # drops trino
        ("views", "rollback", "db.v", "9"),
        ("views", "describe", "db.missing"),
        ("views", "create", "db.v", "--sql", "SELECT 1", "--schema", schema),
    ):
        run = cli(*args)
        assert run.code == 1 and run.error_line(), run
    assert cli("--json", "views", "describe", "db.v").json() == described
    assert cli("views", "rename", "db.v", "db.w").code == 0
    assert cli("views", "drop", "db.w").code == 0
    assert cli("--json", "views", "list", "db").json() == {"namespace": "db", "views": []}


def test_tables_add_files_adds_parquet_files_as_they_are(lake: Lake, cli: InProcess) -> None:
    import pyarrow.parquet as pq

    with lake.catalog() as catalog:
        catalog.create_namespace("db")
        catalog.create_table("db.imported", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    paths = []
    for k in range(2):
        path = lake.root / f"part-{k}.parquet"
        pq.write_table(pa.table({"id": [k, k + 10], "name": ["a", "b"]}), path)
        paths.append(str(path))

    added = cli("tables", "add-files", "db.imported", *paths, "--json")
    assert added.code == 0, added
    assert added.json()["added_files"] == 2
    with lake.catalog() as catalog:
        assert sorted(catalog.load_table("db.imported").to_arrow().column("id").to_pylist()) == [
            0,
            1,
            10,
            11,
        ]
    again = cli("tables", "add-files", "db.imported", paths[0])
    assert again.code != 0 and "already a data file" in again.error_line()


# ---- inspection -------------------------------------------------------------------------------


def test_inspection_commands_read_what_python_wrote(
    filled: tuple[Lake, list[int]], cli: InProcess
) -> None:
    lake, (first, second, third) = filled
    show, show_human, history, snapshots, files, refs = lakecat_all(
        lake,
        ["show", "db.events", "--json"],
        ["show", "db.events", "--limit", "3"],
        ["history", "db.events", "--json"],
        ["snapshots", "db.events", "--json"],
        ["files", "db.events", "--json"],
        ["refs", "db.events", "--json"],
    )
    data = show.json()
    assert isinstance(data, dict)
    assert data["snapshot_id"] == third and data["columns"] == ["id", "ts", "region"]
    assert sorted(r["id"] for r in data["rows"]) == list(range(6))
    assert data["row_count"] == 6 and data["truncated"] is False
    assert {r["ts"] for r in data["rows"] if r["id"] == 0} == {"2024-01-01T10:00:00+00:00"}
    assert "region" in show_human.out and "first 3" in show_human.out

    assert [e["snapshot_id"] for e in history.json()["history"]] == [first, second, third]  # type: ignore[index]
    snaps = snapshots.json()["snapshots"]  # type: ignore[index]
    assert [s["snapshot_id"] for s in snaps] == [first, second, third]
    assert [s["parent_snapshot_id"] for s in snaps] == [None, first, second]
    assert [s["is_current"] for s in snaps] == [False, False, True]
    assert snaps[2]["operation"] == "append" and snaps[2]["refs"] == ["main"]

    file_list = files.json()
    assert file_list["file_count"] == 3 and file_list["record_count"] == 6  # type: ignore[index]
    partitions = sorted(
        (f["partition"]["ts_day"], f["partition"]["region"])
        for f in file_list["files"]  # type: ignore[index]
    )
    assert partitions == [("2024-01-01", "eu"), ("2024-01-01", "us"), ("2024-01-02", "eu")]
    assert refs.json() == {
        "table": "db.events",
        "refs": [
            {
                "name": "main",
                "type": "branch",
                "snapshot_id": third,
                "min_snapshots_to_keep": None,
                "max_snapshot_age_ms": None,
                "max_ref_age_ms": None,
            }
        ],
    }

    def shown(*args: str) -> dict[str, object]:
        result = cli("show", "db.events", "--json", *args).json()
        assert isinstance(result, dict)
        return result

    assert sorted(r["id"] for r in shown("--snapshot-id", str(first))["rows"]) == [0, 1, 2]  # type: ignore[attr-defined]
    after_first = snaps[1]["timestamp_ms"] - 1
    assert shown("--as-of", str(after_first))["snapshot_id"] == first
    eu = shown("--filter", "region = 'eu'", "--columns", "id", "--limit", "2")
    assert eu["columns"] == ["id"] and eu["row_count"] == 2 and eu["truncated"] is True
    assert shown("--limit", "0")["rows"] == []
    eu_files = cli(
        "files", "db.events", "--filter", "region = 'eu'", "--snapshot-id", str(second), "--json"
    ).json()
    assert eu_files["snapshot_id"] == second  # type: ignore[index]
    assert [f["partition"]["region"] for f in eu_files["files"]] == ["eu"]  # type: ignore[index]
    for command in ("history", "snapshots", "files", "refs"):
        human = cli(command, "db.events")
        assert human.code == 0 and str(third) in human.out, human
    description = cli("tables", "describe", "db.events", "--json").json()
    assert description["counts"] == {  # type: ignore[index]
        "snapshots": 3,
        "refs": 1,
        "schemas": 1,
        "data_files": 3,
        "records": 6,
        "total_size_bytes": file_list["total_size_bytes"],  # type: ignore[index]
    }


def test_tags_and_branches(filled: tuple[Lake, list[int]], cli: InProcess) -> None:
    lake, (first, second, _third) = filled
    tag = lakecat(lake, "tag", "db.events", "create", "v1", "--snapshot-id", str(first), "--json")
    assert tag.json()["ref_snapshot_id"] == first  # type: ignore[index]
    branch = cli("branch", "db.events", "create", "dev", "--snapshot-id", str(second))
    assert branch.code == 0 and "dev" in branch.out
    assert cli("tag", "db.events", "replace", "v1", "--snapshot-id", str(second)).code == 0
    refs = cli("refs", "db.events", "--json").json()
    by_name = {r["name"]: (r["type"], r["snapshot_id"]) for r in refs["refs"]}  # type: ignore[index]
    assert by_name["v1"] == ("tag", second) and by_name["dev"] == ("branch", second)
    assert cli("show", "db.events", "--ref", "v1", "--json").json()["snapshot_id"] == second  # type: ignore[index]
    duplicate = cli("tag", "db.events", "create", "v1")
    assert duplicate.code == 1 and "v1" in duplicate.error_line()
    assert cli("tag", "db.events", "remove", "v1").code == 0
    gone = cli("show", "db.events", "--ref", "v1")
    assert gone.code == 1 and "v1" in gone.error_line()


# ---- configuration ----------------------------------------------------------------------------


def test_config_file_profiles_and_precedence(
    filled: tuple[Lake, list[int]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lake, _ = filled
    # Relative paths in a config file are relative to the file, not to the working directory.
    (lake.root / "lakecat.toml").write_text(
        '[catalog]\nurl = "sqlite:///catalog.db"\nwarehouse = "warehouse"\n\n'
        '[catalogs.empty]\nurl = "sqlite:///other.db"\nwarehouse = "other"\n'
    )
    elsewhere = lake.root / "configs"
    elsewhere.mkdir()
    (elsewhere / "x.toml").write_text(
        f'[catalog]\nurl = "{lake.url}"\nwarehouse = "{lake.warehouse}"\n'
    )
    default, profile = lakecat_all(
        lake,
        ["tables", "list", "db", "--json"],
        ["--profile", "empty", "namespaces", "list", "--json", "--create"],
        env={},
    )
    assert default.json() == {"namespace": "db", "tables": ["db.events"]}
    assert profile.json() == {"parent": None, "namespaces": []}

    for key in [k for k in os.environ if k.startswith("LAKECAT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(lake.root / "home"))
    monkeypatch.chdir(elsewhere)  # no lakecat.toml here
    cli = InProcess((), capsys)
    expected = {"namespace": "db", "tables": ["db.events"]}
    assert cli("--config", "x.toml", "tables", "list", "db", "--json").json() == expected
    assert cli("tables", "list", "db", "--json", "--config", "x.toml").json() == expected
    flag_wins = cli(
        "--config",
        "x.toml",
        "--catalog",
        f"sqlite:///{lake.root / 'f.db'}",
        "namespaces",
        "list",
        "--json",
        "--create",
    )
    assert flag_wins.json() == {"parent": None, "namespaces": []}
    assert "nope.toml" in cli("--config", "nope.toml", "namespaces", "list").error_line()
    assert "no catalog configured" in cli("namespaces", "list").error_line()
    monkeypatch.setenv("LAKECAT_CONFIG", str(lake.root / "lakecat.toml"))
    assert cli("tables", "list", "db", "--json").json() == expected
    bad_profile = cli("--profile", "prod", "namespaces", "list")
    assert "prod" in bad_profile.error_line() and "empty" in bad_profile.err
    monkeypatch.setenv("LAKECAT_PROFILE", "empty")
    assert cli("namespaces", "list", "--json").json() == {"parent": None, "namespaces": []}


def test_the_command_works_on_every_catalog_backend(catalog_url: str, tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    lake = Lake(tmp_path, catalog_url, str(tmp_path / "warehouse"))
    with lake.catalog() as catalog:
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    shown = lakecat(lake, "show", "db.t", "--json").json()
    assert [r["id"] for r in shown["rows"]] == [1, 2]  # type: ignore[index]


# ---- maintenance ------------------------------------------------------------------------------


def test_compaction_and_expiry_with_and_without_dry_run(
    filled: tuple[Lake, list[int]], cli: InProcess
) -> None:
    lake, (first, second, third) = filled
    with lake.catalog() as catalog:  # a second small file in partition (2024-01-01, eu)
        fourth = catalog.load_table("db.events").append(events(range(6, 8), "eu")).snapshot_id
    plan, expire_plan = lakecat_all(
        lake,
        ["compact", "db.events", "--dry-run", "--json"],
        [
            "expire-snapshots",
            "db.events",
            "--older-than",
            "0s",
            "--retain-last",
            "1",
            "--dry-run",
            "--json",
        ],
    )
    planned = plan.json()
    assert isinstance(planned, dict)
    assert planned["dry_run"] is True and planned["groups_total"] == 1
    (group,) = planned["groups"]
    assert group["partition"] == "ts_day=2024-01-01/region=eu" and group["file_count"] == 2
    would_expire = expire_plan.json()
    assert sorted(would_expire["expired_snapshot_ids"]) == sorted([first, second, third])  # type: ignore[index]
    unchanged = cli("snapshots", "db.events", "--json").json()
    assert len(unchanged["snapshots"]) == 4  # type: ignore[index]
    assert cli("files", "db.events", "--json").json()["file_count"] == 4  # type: ignore[index]

    compacted = lakecat(lake, "compact", "db.events", "--json").json()
    assert isinstance(compacted, dict)
    assert compacted["groups_committed"] == 1 and compacted["groups_failed"] == []
    assert (compacted["files_removed"], compacted["files_added"]) == (2, 1)
    after = cli("files", "db.events", "--json").json()
    assert after["file_count"] == 3 and after["record_count"] == 8  # type: ignore[index]
    assert "0 groups" in cli("compact", "db.events", "--dry-run").out
    sorted_plan = cli(
        "compact",
        "db.events",
        "--dry-run",
        "--sort-by",
        "id:desc",
        "--min-input-files",
        "1",
        "--json",
    ).json()
    assert sorted_plan["groups_total"] == 0  # type: ignore[index]  # lone files come out the same
    every = cli(
        "compact", "db.events", "--dry-run", "--rewrite-all", "--min-input-files", "9", "--json"
    ).json()
    assert every["groups_total"] == 3  # type: ignore[index]  # each partition's one file
    capped = cli(
        "compact", "db.events", "--dry-run", "--rewrite-all", "--max-files-to-rewrite", "2",
        "--json",
    ).json()  # fmt: skip
    assert capped["files_to_rewrite"] == 2  # type: ignore[index]
    bad_ratio = cli("compact", "db.events", "--dry-run", "--delete-ratio-threshold", "1.5")
    assert bad_ratio.code == 2 and "at most 1" in bad_ratio.err
    none_small = cli(
        "compact", "db.events", "--dry-run", "--min-input-files", "1", "--min-file-size", "1",
        "--json",
    ).json()  # fmt: skip
    assert none_small["groups_total"] == 0  # type: ignore[index]
    bad = cli("compact", "db.events", "--dry-run", "--max-file-size", "1")
    assert bad.code == 1 and "below the maximum" in bad.error_line()
    unsorted = cli("compact", "db.events", "--dry-run", "--sort-by", "table")
    assert unsorted.code == 1 and "sort order" in unsorted.error_line()
    assert "compacted" in cli("compact", "db.events", "--filter", "region = 'us'").out

    expired = lakecat(
        lake, "expire-snapshots", "db.events", "--older-than", "0s", "--retain-last", "1"
    )
    assert expired.code == 0 and "expired" in expired.out, expired
    remaining = cli("snapshots", "db.events", "--json").json()["snapshots"]  # type: ignore[index]
    assert [s["operation"] for s in remaining] == ["replace"]
    assert fourth not in {s["snapshot_id"] for s in remaining}
    shown = cli("show", "db.events", "--json").json()
    assert sorted(r["id"] for r in shown["rows"]) == list(range(8))  # type: ignore[index]


def test_compaction_options_for_other_specs_and_the_sequence_number(
    filled: tuple[Lake, list[int]], cli: InProcess
) -> None:
    lake, _ = filled
    with lake.catalog() as catalog:  # the day's files are now of an older spec
        table = catalog.load_table("db.events")
        with table.update_spec() as spec:
            spec.remove_field("region")
        start = table.current_snapshot()
    assert start is not None
    # sized right (none small): only re-partitioning rewrites them, which Iceberg's planner skips
    sized = ["--target-file-size", "1000", "--min-file-size", "1", "--max-file-size", "1000000"]
    kept = cli("compact", "db.events", "--dry-run", "--keep-other-specs", *sized, "--json")
    assert kept.json()["groups_total"] == 0  # type: ignore[index]
    moved = cli("compact", "db.events", "--dry-run", *sized, "--json").json()
    assert moved["files_to_rewrite"] == 3  # type: ignore[index]
    done = cli("compact", "db.events", "--commit-sequence-number", *sized, "--json").json()
    with lake.catalog() as catalog:
        table = catalog.load_table("db.events")
        [snapshot_id] = done["snapshot_ids"]  # type: ignore[index]
        snapshot = table.snapshot(snapshot_id)
        data = [
            e
            for m in read_manifest_list(table.io, snapshot.manifest_list)
            for e in read_manifest(
                table.io, m, specs=table.metadata.specs_by_id(), schema=table.schema()
            )
            if e.status is Status.ADDED
        ]
    # the commit's own sequence number, not the starting snapshot's
    assert data and {e.sequence_number for e in data} == {snapshot.sequence_number}
    assert snapshot.sequence_number > start.sequence_number


def test_orphans_manifests_and_history_editing(
    filled: tuple[Lake, list[int]], cli: InProcess
) -> None:
    lake, (first, second, third) = filled
    stray = Path(lake.warehouse) / "db" / "events" / "data" / "stray.parquet"
    stray.write_bytes(b"not referenced")
    orphans = lakecat(
        lake, "remove-orphans", "db.events", "--older-than", "0s", "--dry-run", "--json"
    )
    assert orphans.json() == {
        "table": "db.events",
        "dry_run": True,
        "orphans": [stray.as_uri()],
        "deleted": False,
        "not_deleted": [],
    }
    assert stray.exists()
    assert "deleted 1 orphan" in cli("remove-orphans", "db.events", "--older-than", "0s").out
    assert not stray.exists()

    # lakecat's own commits leave no delete file dangling (interop tests remove Java's)
    dangling = cli("remove-dangling-deletes", "db.events", "--dry-run", "--json").json()
    assert dangling == {"table": "db.events", "dry_run": True, "removed": [], "snapshot_id": None}
    assert "removed 0 dangling" in cli("remove-dangling-deletes", "db.events").out

    manifests = cli("rewrite-manifests", "db.events", "--json").json()
    assert manifests["manifests_before"] == 3 and manifests["manifests_after"] < 3  # type: ignore[index]

    stats = cli("partition-stats", "db.events", "--snapshot-id", str(second), "--json").json()
    assert stats["snapshot_id"] == second and "partition-stats" in stats["path"]  # type: ignore[index]
    assert "partition statistics in" in cli("partition-stats", "db.events").out

    with lake.catalog() as catalog:
        source = catalog.load_table("db.events").location
    staging = Path(lake.warehouse) / "staging"
    path = cli(
        "rewrite-path",
        "db.events",
        "--source-prefix",
        source,
        "--target-prefix",
        "s3://elsewhere/events",
        "--staging-location",
        staging.as_uri(),
        "--json",
    ).json()
    assert path["file_list_location"] == staging.as_uri() + "/file-list"  # type: ignore[index]
    plan = (staging / "file-list").read_text().splitlines()
    assert sorted(tuple(p) for p in path["copy_plan"]) == sorted(  # type: ignore[index]
        tuple(line.split(",")) for line in plan
    )
    assert all(target.startswith("s3://elsewhere/events/") for _, target in path["copy_plan"])  # type: ignore[index]
    text = cli(
        "rewrite-path", "db.events", "--source-prefix", source, "--target-prefix", "/x",
        "--no-file-list",
    ).out  # fmt: skip
    assert "files to copy" in text and "copy plan is" not in text
    local = cli(
        "rewrite-path", "db.events", "--source-prefix", source, "--target-prefix",
        (Path(lake.warehouse) / "copy").as_uri(), "--json",
    ).json()  # fmt: skip
    copy_files(local["copy_plan"])  # type: ignore[arg-type,index]
    target = (Path(lake.warehouse) / "copy" / "metadata" / local["latest_version"]).as_uri()  # type: ignore[index]
    registered = cli("tables", "register", "db.copy", target, "--json").json()
    assert registered["metadata_location"] == target  # type: ignore[index]
    assert cli("tables", "describe", "db.copy", "--json").json()["location"] == (  # type: ignore[index]
        (Path(lake.warehouse) / "copy").as_uri()
    )
    assert "registered table db.copy" in cli("tables", "register", "db.copy2", target).out

    bad = cli("rewrite-path", "db.events", "--source-prefix", "/nope", "--target-prefix", "/x")
    assert bad.code != 0 and "not under the source prefix" in bad.err

    def current() -> int:
        described = cli("tables", "describe", "db.events", "--json").json()
        return int(described["current_snapshot"]["snapshot_id"])  # type: ignore[index]

    rolled = cli("rollback", "db.events", "--to-snapshot", str(second), "--json").json()
    assert rolled["current_snapshot_id"] == second == current()  # type: ignore[index]
    assert cli("set-current", "db.events", str(third)).code == 0 and current() == third
    timestamp = cli("snapshots", "db.events", "--json").json()["snapshots"][1]["timestamp_ms"]  # type: ignore[index]
    assert cli("rollback", "db.events", "--to-timestamp", str(timestamp)).code == 0
    assert current() == first

    assert cli("branch", "db.events", "create", "dev").code == 0
    with lake.catalog() as catalog:
        table = catalog.load_table("db.events")
        picked = table.append(events(range(10, 12), "us"), branch="dev").snapshot_id
    assert cli("fast-forward", "db.events", "main", "--to", "dev").code == 0
    assert current() == picked
    assert cli("cherry-pick", "db.events", str(picked)).code == 1  # already in main

    changes = cli("changes", "db.events", "--from", str(first), "--json").json()
    assert changes["snapshot_ids"] == [picked]  # type: ignore[index]
    assert sorted(r["id"] for r in changes["added"]["rows"]) == [10, 11]  # type: ignore[index]
    assert changes["removed"]["row_count"] == 0  # type: ignore[index]
    human = cli("changes", "db.events", "--from", str(first))
    assert "2 rows added" in human.out

    # write-audit-publish: a staged write, published by its WAP id
    with lake.catalog() as catalog:
        table = catalog.load_table("db.events")
        table.set_properties({"write.wap.enabled": "true"})
        staged = table.append(events(range(20, 21), "us"), snapshot_properties={"wap.id": "w1"})
    assert current() == picked  # staged: main did not move
    published = cli("publish", "db.events", "w1")
    assert published.code == 0 and f"(snapshot {staged.snapshot_id})" in published.out
    assert current() == staged.snapshot_id
    assert cli("publish", "db.events", "w1").code == 1  # already published


# ---- in-process: the pure parts -----------------------------------------------------------------


def test_simple_schema_mapping_covers_nested_and_optional_columns() -> None:
    schema = parse_schema(
        json.dumps(
            {
                "id": "long",
                "ts": "timestamptz",
                "name": "string?",
                "price": "Decimal(9,2)?",
                "tags": "list<string>?",
                "attrs": "map<string, decimal(4, 1)>",
                "address": {"city": "string?"},
            }
        )
    )
    by_name = {f.name: f for f in schema.fields}
    assert by_name["id"].field_type == LongType() and by_name["id"].required
    assert by_name["ts"].field_type == TimestamptzType()
    assert not by_name["name"].required and by_name["name"].field_type == StringType()
    assert by_name["price"].field_type == DecimalType(9, 2)
    assert isinstance(by_name["tags"].field_type, ListType)
    attrs = by_name["attrs"].field_type
    assert isinstance(attrs, MapType) and attrs.value_type == DecimalType(4, 1)
    assert isinstance(by_name["address"].field_type, StructType)
    assert len(schema.field_ids()) == len(set(schema.field_ids())) == 11


@pytest.mark.parametrize(
    "text",
    ['{"id": "longg"}', "[1]", "{}", "{not json", '{"a": 3}', '{"m": "map<string>"}'],
)
def test_bad_schemas_are_validation_errors(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_schema(text)


def test_partition_and_sort_text() -> None:
    assert parse_partition_by("ts:day, region,id:bucket[16]") == [
        ("ts", "day"),
        "region",
        ("id", "bucket[16]"),
    ]
    assert parse_sort_by("id,ts:DESC") == ["id", ("ts", "desc")]
    assert parse_partition_by(None) == []


def test_argument_values() -> None:
    now = 1_700_000_000_000
    assert timestamp_ms("7d", now_ms=now) == now - 7 * 86_400_000
    assert timestamp_ms("1700000000000") == now
    assert timestamp_ms("2024-01-01") == 1_704_067_200_000
    assert timestamp_ms("2024-01-01T01:00:00+01:00") == 1_704_067_200_000
    assert byte_size("128MB") == byte_size("128MiB") == 128 << 20
    assert byte_size("1.5k") == 1536
    for bad in (lambda: timestamp_ms("yesterday"), lambda: byte_size("lots")):
        with pytest.raises(argparse.ArgumentTypeError):
            bad()


def test_settings_come_from_flags_then_environment_then_file(tmp_path: Path) -> None:
    config = tmp_path / "lakecat.toml"
    config.write_text('[catalog]\nurl = "sqlite:///c.db"\nwarehouse = "wh"\nname = "filecat"\n')
    env = {"LAKECAT_WAREHOUSE": "/env/wh"}
    settings = resolve_settings(
        url="sqlite:////flag.db",
        warehouse=None,
        name=None,
        config=None,
        profile=None,
        env=env,
        cwd=tmp_path,
        home=tmp_path / "home",
    )
    assert settings.url == "sqlite:////flag.db"
    assert settings.warehouse == "/env/wh"
    assert settings.name == "filecat"
    assert settings.config_file == config
    from_file = resolve_settings(
        url=None,
        warehouse=None,
        name=None,
        config=None,
        profile=None,
        env={},
        cwd=tmp_path,
        home=tmp_path / "home",
    )
    assert from_file.url == f"sqlite:///{tmp_path / 'c.db'}"
    assert from_file.warehouse == str(tmp_path / "wh")
    config.write_text('[catalog]\nurl = "sqlite:///c.db"\nwarehous = "typo"\n')
    with pytest.raises(ValidationError, match="warehous"):
        resolve_settings(
            url=None,
            warehouse=None,
            name=None,
            config=None,
            profile=None,
            env={},
            cwd=tmp_path,
            home=tmp_path / "home",
        )


@pytest.mark.parametrize(
    ("raised", "code", "stderr"),
    [(KeyboardInterrupt(), 130, "lakecat: interrupted\n"), (BrokenPipeError(), 1, "")],
)
def test_interrupts_and_closed_pipes_end_quietly(
    raised: BaseException,
    code: int,
    stderr: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(*args: object, **kwargs: object) -> int:
        raise raised

    monkeypatch.setattr("lakecat.catalog.cli.entry.run", interrupted)
    assert main(["--catalog", "sqlite://", "--warehouse", "w", "namespaces", "list"]) == code
    assert capsys.readouterr().err == stderr


def test_progress_bar_draws_on_a_terminal_and_stays_silent_otherwise() -> None:
    args = build_parser().parse_args(["--catalog", "x", "namespaces", "list"])
    terminal = io.StringIO()
    ctx = Context(args, env={}, err=Console(file=terminal, force_terminal=True, width=80))
    with ctx.progress("working") as advance:
        advance(1, 2)
        advance(2, 2)
    assert "working" in terminal.getvalue()
    piped = io.StringIO()
    quiet = Context(args, env={}, err=Console(file=piped, force_terminal=False))
    with quiet.progress("working") as advance:
        advance(1, 2)
    assert piped.getvalue() == ""


def test_rewrite_position_deletes_merges_a_files_delete_files(lake: Lake, cli: InProcess) -> None:
    with lake.catalog() as catalog:
        catalog.create_namespace("db")
        table = catalog.create_table(
            "db.mor",
            events(range(0), "eu").schema,
            properties={"write.delete.mode": "merge-on-read"},
        )
        table.append(events(range(50), "eu"))
        for cond in ("id = 1", "id = 2", "id = 3"):
            table.delete(cond)
    nothing = cli("rewrite-position-deletes", "db.mor", "--min-input-files", "4")
    assert nothing.code == 0 and "no data file has 4 or more" in nothing.out
    merged = cli("rewrite-position-deletes", "db.mor", "--json").json()
    assert merged["data_files"] == 1 and merged["delete_files_removed"] == 3  # type: ignore[index]
    assert merged["delete_files_added"] == 1 and merged["snapshot_id"]  # type: ignore[index]
    with lake.catalog() as catalog:
        assert catalog.load_table("db.mor").scan().count() == 47
