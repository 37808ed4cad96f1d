"""``lakecat delete``, ``update``, ``upsert`` and ``overwrite``: row-level changes from a shell.

Each runs through ``main(argv)`` (the console script's function; one test runs the installed
script itself) on the embedded SQLite default, on a copy-on-write table, a merge-on-read table
and a merge-on-read format v3 table, all created with ``lakecat tables create``. The rows are
checked afterwards with the Python API, and so is the mode: merge-on-read keeps the data files
and adds delete files (v3: deletion vectors). Bad input, a conflict or a missing branch exits
non-zero with one line on stderr and leaves the table, and its folder, as they were.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from other_engines import set_properties_with_pyiceberg

from lakecat.catalog import Catalog, Table
from lakecat.catalog.cli.entry import main
from lakecat.catalog.cli.values import literal
from lakecat.metadata.errors import CommitConflict, ValidationError
from lakecat.metadata.io import local_path
from lakecat.metadata.manifests.datafile import Content
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    NestedField,
    StringType,
    TimestamptzType,
    UUIDType,
)

UTC = dt.UTC
# Optional key columns: a merge-on-read update or merge of a table with a required column fails
# in the Python API (see test_merge_on_read_update_of_a_table_with_required_columns).
SCHEMA = json.dumps(
    {
        "id": "long?",
        "region": "string?",
        "amount": "double?",
        "day": "date?",
        "ts": "timestamptz?",
        "flag": "boolean?",
        "note": "string?",
    }
)
MODES = {
    "copy-on-write": ("--property", "write.delete.mode=copy-on-write"),
    "merge-on-read": tuple(
        arg
        for key in ("delete", "update", "merge")
        for arg in ("--property", f"write.{key}.mode=merge-on-read")
    ),
}
# (mode, format version): v3 merge-on-read writes deletion vectors instead of position deletes
TABLES = [("copy-on-write", 2), ("merge-on-read", 2), ("merge-on-read", 3)]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0 and self.err == "", self
        return json.loads(self.out)

    def error_line(self) -> str:
        """The one line an error prints; nothing on stdout, no traceback."""
        assert self.out == "" and "Traceback" not in self.err, self
        lines = self.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("lakecat: error: "), self
        return lines[0]


Cli = Callable[..., Run]


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Catalog]:
    for key in [k for k in os.environ if k.startswith("LAKECAT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    catalog = Catalog.embedded(tmp_path / "lake")
    catalog.create_namespace("db")
    monkeypatch.setenv("LAKECAT_CATALOG_URL", catalog.uri)
    monkeypatch.setenv("LAKECAT_WAREHOUSE", str(tmp_path / "lake" / "warehouse"))
    yield catalog
    catalog.close()


@pytest.fixture
def cli(lake: Catalog, capsys: pytest.CaptureFixture[str]) -> Cli:
    def run(*args: str) -> Run:
        code = main(list(args))
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return run


def rows(ids: range, region: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "region": pa.array([region] * len(ids)),
            "amount": pa.array([float(i) for i in ids]),
        }
    )


def make_table(lake: Catalog, cli: Cli, mode: str, version: int, *, schema: str = SCHEMA) -> Table:
    """``db.t`` made by ``lakecat tables create`` in ``mode``, partitioned by region, holding
    ids 0-9 (eu) and 10-19 (us), one data file each."""
    created = cli(
        "tables",
        "create",
        "db.t",
        "--schema",
        schema,
        "--partition-by",
        "region",
        *MODES[mode],
        *(("--property", "format-version=3") if version == 3 else ()),
        "--json",
    )
    assert created.json()["format_version"] == version
    table = lake.load_table("db.t")
    table.append(pa.concat_tables([rows(range(0, 10), "eu"), rows(range(10, 20), "us")]))
    return table


def ids(table: Table) -> list[int]:
    return sorted(table.refresh().to_arrow().column("id").to_pylist())


def by_id(table: Table) -> dict[int, dict[str, Any]]:
    return {r["id"]: r for r in table.refresh().to_arrow().to_pylist()}


def live_files(table: Table) -> tuple[list[str], list[str]]:
    """The current snapshot's data files and the delete files that apply to them."""
    plan = table.refresh().scan().plan()
    deletes = {d.file_path for f in plan.files for d in plan.deletes.get(f.file_path, ())}
    return sorted(f.file_path for f in plan.files), sorted(deletes)


def folder_listing(table: Table) -> list[str]:
    root = Path(local_path(table.metadata.location) or "")
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def check_mode(table: Table, report: dict[str, Any], mode: str, before: list[str]) -> None:
    """Merge-on-read kept every data file and added delete files (v3: one deletion vector
    file); copy-on-write replaced the files it changed and added none."""
    files, deletes = live_files(table)
    assert report["mode"] == mode
    if mode == "merge-on-read":
        assert set(before) <= set(files)
        assert report["data_files_removed"] == 0
        assert report["delete_files_added"] >= 1 and deletes
        kinds = {d.file_format.upper() for d in _delete_files(table)}
        assert kinds == ({"PUFFIN"} if table.metadata.format_version >= 3 else {"PARQUET"})
    else:
        assert report["delete_files_added"] == 0 and not deletes
        assert report["data_files_removed"] >= 1


def _delete_files(table: Table) -> list[Any]:
    plan = table.scan().plan()
    return [d for f in plan.files for d in plan.deletes.get(f.file_path, ())]


@pytest.mark.parametrize(("mode", "version"), TABLES)
def test_delete_removes_the_rows_a_filter_matches_in_the_tables_mode(
    lake: Catalog, cli: Cli, mode: str, version: int
) -> None:
    table = make_table(lake, cli, mode, version)
    before, _ = live_files(table)
    report = cli("delete", "db.t", "--where", "region = 'eu' AND id < 3", "--json").json()
    assert report["operation"] == "delete" and report["committed"] is True
    assert report["rows_deleted"] == 3
    assert report["snapshot_id"] == table.refresh().metadata.current_snapshot_id
    assert ids(table) == list(range(3, 20))
    check_mode(table, report, mode, before)

    shown = cli("delete", "db.t", "--where", "id = 15")
    assert shown.code == 0 and shown.err == ""
    assert "delete committed snapshot" in shown.out and "1 deleted" in shown.out
    assert mode in shown.out
    assert ids(table) == [i for i in range(3, 20) if i != 15]


@pytest.mark.parametrize(("mode", "version"), TABLES)
def test_update_sets_literals_parsed_by_column_type(
    lake: Catalog, cli: Cli, mode: str, version: int
) -> None:
    table = make_table(lake, cli, mode, version)
    before, _ = live_files(table)
    report = cli(
        "update",
        "db.t",
        "--set",
        "amount=2.5",
        "--set",
        "day=2024-02-01",
        "--set",
        "ts=2024-02-01T10:00:00+01:00",
        "--set",
        "flag=true",
        "--set",
        "note='null'",
        "--where",
        "region = 'eu' AND id >= 5",
        "--json",
    ).json()
    assert report["operation"] == "update" and report["rows_updated"] == 5
    check_mode(table, report, mode, before)
    after = by_id(table)
    assert len(after) == 20
    for i in range(5, 10):
        assert after[i]["amount"] == 2.5 and after[i]["day"] == dt.date(2024, 2, 1)
        assert after[i]["ts"] == dt.datetime(2024, 2, 1, 9, tzinfo=UTC)
        assert after[i]["flag"] is True and after[i]["note"] == "null"
    assert all(after[i]["amount"] == float(i) and after[i]["flag"] is None for i in range(5))

    nulls = cli("update", "db.t", "--set", "amount=null", "--where", "id = 7", "--json").json()
    assert nulls["rows_updated"] == 1 and by_id(table)[7]["amount"] is None


@pytest.mark.parametrize(("mode", "version"), TABLES)
@pytest.mark.parametrize("file_format", ["parquet", "csv", "jsonl"])
def test_upsert_updates_existing_keys_and_inserts_new_ones_from_a_file(
    lake: Catalog, cli: Cli, tmp_path: Path, mode: str, version: int, file_format: str
) -> None:
    table = make_table(lake, cli, mode, version)
    before, _ = live_files(table)
    source = tmp_path / f"changes.{file_format}"
    lines = [(8, "eu", 80.5, "2024-03-01T00:00:00Z"), (9, "eu", 90.5, None), (20, "eu", 1.0, None)]
    if file_format == "parquet":
        pq.write_table(  # int32 ids: cast to the table's long
            pa.table(
                {
                    "id": pa.array([r[0] for r in lines], pa.int32()),
                    "region": [r[1] for r in lines],
                    "amount": [r[2] for r in lines],
                    "ts": pa.array(
                        [None if r[3] is None else dt.datetime(2024, 3, 1) for r in lines],
                        pa.timestamp("us", tz="UTC"),
                    ),
                }
            ),
            source,
        )
    elif file_format == "csv":
        body = "".join(f"{i},{r},{a},{ts or ''}\n" for i, r, a, ts in lines)
        source.write_text("id,region,amount,ts\n" + body)
    else:
        source.write_text(
            "".join(
                json.dumps({"id": i, "region": r, "amount": a, "ts": ts}) + "\n"
                for i, r, a, ts in lines
            )
        )
    report = cli("upsert", "db.t", "--on", "id", "--from", str(source), "--json").json()
    assert report["operation"] == "upsert"
    assert (report["rows_updated"], report["rows_inserted"]) == (2, 1)
    if mode == "merge-on-read":
        check_mode(table, report, mode, before)
    after = by_id(table)
    assert sorted(after) == list(range(21))
    assert (after[8]["amount"], after[9]["amount"], after[20]["amount"]) == (80.5, 90.5, 1.0)
    assert after[8]["ts"] == dt.datetime(2024, 3, 1, tzinfo=UTC)
    assert after[7]["amount"] == 7.0


@pytest.mark.parametrize(("mode", "version"), TABLES)
def test_overwrite_replaces_the_rows_a_filter_matches(
    lake: Catalog, cli: Cli, tmp_path: Path, mode: str, version: int
) -> None:
    table = make_table(lake, cli, mode, version)
    source = tmp_path / "us.parquet"
    pq.write_table(rows(range(100, 103), "us"), source)
    report = cli(
        "overwrite", "db.t", "--where", "region = 'us'", "--from", str(source), "--json"
    ).json()
    assert (report["rows_deleted"], report["rows_inserted"]) == (10, 3)
    assert ids(table) == [*range(10), 100, 101, 102]


def test_delete_all_needs_all_and_an_unmatched_filter_commits_nothing(
    lake: Catalog, cli: Cli
) -> None:
    table = make_table(lake, cli, "copy-on-write", 2)
    snapshots = len(table.snapshots())
    missing = cli("delete", "db.t")
    assert missing.code == 2 and "--where" in missing.error_line()
    for blank in ("", "   "):
        empty = cli("delete", "db.t", "--where", blank)
        assert empty.code == 2 and "--all" in empty.error_line()
    both = cli("delete", "db.t", "--where", "id = 1", "--all")
    assert both.code == 2 and "not allowed with" in both.error_line()

    nothing = cli("delete", "db.t", "--where", "id > 1000", "--json").json()
    assert nothing["committed"] is False and nothing["snapshot_id"] is None
    assert nothing["rows_deleted"] == 0
    assert "no row matched; nothing committed" in cli("delete", "db.t", "--where", "id < 0").out
    assert len(table.refresh().snapshots()) == snapshots

    everything = cli("delete", "db.t", "--all", "--json").json()
    assert everything["rows_deleted"] == 20 and ids(table) == []


def test_changes_go_to_the_branch_named(lake: Catalog, cli: Cli) -> None:
    table = make_table(lake, cli, "merge-on-read", 2)
    table.create_branch("audit", table.metadata.current_snapshot_id)
    report = cli(
        "update", "db.t", "--set", "note=checked", "--all", "--branch", "audit", "--json"
    ).json()
    assert report["branch"] == "audit" and report["rows_updated"] == 20
    assert cli("delete", "db.t", "--where", "id < 5", "--branch", "audit").code == 0
    table.refresh()
    assert all(r["note"] is None for r in table.to_arrow().to_pylist())
    on_branch = table.to_arrow(ref="audit").to_pylist()
    assert len(on_branch) == 15 and {r["note"] for r in on_branch} == {"checked"}

    unknown = cli("delete", "db.t", "--where", "id = 1", "--branch", "nope")
    assert unknown.code == 1 and "nope" in unknown.error_line()


def test_create_branch_starts_a_missing_branch_at_main_in_the_changes_commit(
    lake: Catalog, cli: Cli
) -> None:
    table = make_table(lake, cli, "copy-on-write", 2)
    main = table.metadata.current_snapshot_id
    report = cli(
        "update", "db.t", "--set", "note=checked", "--where", "id < 5",
        "--branch", "audit", "--create-branch", "--json",
    ).json()  # fmt: skip
    assert report["branch"] == "audit" and report["rows_updated"] == 5
    deleted = cli("delete", "db.t", "--where", "id >= 15", "--branch", "audit", "--create-branch")
    assert deleted.code == 0  # the branch exists now: the option changes nothing
    table.refresh()
    assert table.metadata.current_snapshot_id == main
    on_branch = table.to_arrow(ref="audit").to_pylist()
    assert len(on_branch) == 15 and sum(r["note"] == "checked" for r in on_branch) == 5
    lineage = table.metadata.ancestors(table.refs()["audit"].snapshot_id)
    assert [s.operation for s in lineage[:2]] == ["overwrite", "overwrite"]
    assert lineage[2].snapshot_id == main  # the first change started the branch at main


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("update", "db.t", "--set", "nope=1", "--all"), "nope"),
        (("update", "db.t", "--set", "amount=lots", "--all"), "'lots' is not a valid double"),
        (("update", "db.t", "--set", "id=1.5", "--all"), "--set id=1.5"),
        (("update", "db.t", "--set", "day=2024-13-01", "--all"), "date"),
        (("update", "db.t", "--set", "flag=yes", "--all"), "boolean"),
        (("update", "db.t", "--set", "amount=1", "--set", "amount=2", "--all"), "twice"),
        (("update", "db.t", "--set", "amount=1", "--where", "nope > 1"), "nope"),
        (("delete", "db.t", "--where", "id = = 1"), "id = = 1"),
        (("delete", "db.t", "--where", "nosuchcolumn = 1"), "nosuchcolumn"),
        (("delete", "db.nope", "--where", "id = 1"), "db.nope does not exist"),
        (("upsert", "db.t", "--on", "id", "--from", "missing.parquet"), "no such file"),
        (("upsert", "db.t", "--on", "id", "--from", "rows.txt"), "--format"),
        (("upsert", "db.t", "--on", "id", "--from", "extra.csv"), "colour"),
        (("upsert", "db.t", "--on", "id", "--from", "bad.csv"), "not readable as csv"),
        (("upsert", "db.t", "--on", "nope", "--from", "extra.csv"), "nope"),
        (("upsert", "db.t", "--from", "extra.csv"), "identifier fields"),
        (("overwrite", "db.t", "--where", "id < 3", "--from", "bad.csv"), "not readable"),
    ],
)
def test_bad_input_exits_1_and_changes_nothing(
    lake: Catalog, cli: Cli, tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    table = make_table(lake, cli, "merge-on-read", 2)
    (tmp_path / "rows.txt").write_text("id\n1\n")
    (tmp_path / "extra.csv").write_text("id,region,colour\n1,eu,red\n")
    (tmp_path / "bad.csv").write_text("id,region\nnot-a-number,eu\n")
    location, listing = table.metadata_location, folder_listing(table)
    run = cli(*args)
    assert run.code == 1, run
    assert expected in run.error_line()
    assert table.refresh().metadata_location == location
    assert folder_listing(table) == listing


def test_null_for_a_required_column_is_refused_before_anything_is_written(
    lake: Catalog, cli: Cli
) -> None:
    required = json.dumps({**json.loads(SCHEMA), "id": "long"})
    table = make_table(lake, cli, "copy-on-write", 2, schema=required)
    location = table.metadata_location
    run = cli("update", "db.t", "--set", "id=null", "--where", "id = 1")
    assert run.code == 1 and "id is a required column" in run.error_line()
    assert table.refresh().metadata_location == location


@pytest.mark.parametrize("version", [2, 3])
def test_merge_on_read_update_of_a_table_with_required_columns(
    lake: Catalog, cli: Cli, version: int
) -> None:
    required = json.dumps({**json.loads(SCHEMA), "id": "long", "region": "string"})
    table = make_table(lake, cli, "merge-on-read", version, schema=required)
    try:
        run = cli("update", "db.t", "--set", "amount=0", "--where", "id < 3")
    except Exception as exc:  # the pyarrow error escapes the CLI's error handling
        raise AssertionError(f"lakecat update raised {type(exc).__name__}") from exc
    assert run.code == 0, run
    assert [r["amount"] for r in table.refresh().to_arrow("id < 3").to_pylist()] == [0.0] * 3


def test_a_bad_write_mode_property_is_refused_before_anything_is_written(
    lake: Catalog, cli: Cli
) -> None:
    """Set by another engine (lakecat refuses to set it: test_property_values.py)."""
    table = make_table(lake, cli, "copy-on-write", 2)
    set_properties_with_pyiceberg(lake, "db.t", {"write.delete.mode": "merge-on-wednesdays"})
    location, listing = table.refresh().metadata_location, folder_listing(table)
    run = cli("delete", "db.t", "--where", "id = 1")
    assert run.code == 1 and "write.delete.mode" in run.error_line()
    assert table.refresh().metadata_location == location and folder_listing(table) == listing


def test_a_conflicting_concurrent_change_exits_1_and_the_update_lands_nothing(
    lake: Catalog, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy-on-write delete lands between the moment ``lakecat update`` loaded the table and
    its commit: the update would rewrite a file that is gone, so it is refused as a conflict."""
    table = make_table(lake, cli, "copy-on-write", 2)
    real_update = Table.update

    raised: list[Exception] = []

    def update_after_a_concurrent_delete(self: Table, *args: Any, **kwargs: Any) -> Any:
        lake.load_table("db.t").delete("id = 1")  # another writer, on its own handle
        try:
            return real_update(self, *args, **kwargs)
        except Exception as exc:
            raised.append(exc)
            raise

    monkeypatch.setattr(Table, "update", update_after_a_concurrent_delete)
    run = cli("update", "db.t", "--set", "amount=0", "--where", "region = 'eu'")
    assert run.code == 1
    (conflict,) = raised
    assert isinstance(conflict, CommitConflict)  # both remove the eu file: ConcurrentDeleteDelete
    assert str(conflict).splitlines()[0] in run.error_line()
    table.refresh()
    assert ids(table) == [i for i in range(20) if i != 1]
    assert all(r["amount"] == float(r["id"]) for r in table.to_arrow().to_pylist())
    data_files, _ = live_files(table)
    on_disk = {p for p in folder_listing(table) if p.startswith("data/")}
    root = Path(local_path(table.metadata.location) or "")
    live = {str(Path(local_path(f) or "").relative_to(root)) for f in data_files}
    removed = {  # the file the concurrent delete rewrote stays until snapshots expire
        str(Path(local_path(e.file_path) or "").relative_to(root))
        for e in lake.load_table("db.t")
        .scan(snapshot_id=table.snapshots()[-2].snapshot_id)
        .plan()
        .files
    }
    assert on_disk <= live | removed  # none of the update's files were left behind


def test_the_installed_command_runs_a_delete(lake: Catalog, cli: Cli, tmp_path: Path) -> None:
    table = make_table(lake, cli, "merge-on-read", 3)
    script = Path(sys.executable).parent / "lakecat"
    command = [str(script)] if script.is_file() else [shutil.which("lakecat") or "lakecat"]
    done = subprocess.run(
        [*command, "delete", "db.t", "--where", "id IN (1, 2, 3)", "--json"],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done
    report = json.loads(done.stdout)
    assert report["rows_deleted"] == 3 and report["delete_files_added"] == 1
    assert ids(table) == [i for i in range(20) if i not in (1, 2, 3)]
    (dv,) = _delete_files(table)
    assert dv.content is Content.POSITION_DELETES and dv.file_format.upper() == "PUFFIN"


@pytest.mark.parametrize(
    ("field_type", "text", "value"),
    [
        (IntegerType(), " 42 ", 42),
        (DoubleType(), "-1e3", -1000.0),
        (DecimalType(9, 2), "14.20", decimal.Decimal("14.20")),
        (BooleanType(), "FALSE", False),
        (DateType(), "2024-02-29", dt.date(2024, 2, 29)),
        (TimestamptzType(), "2024-01-01T10:00:00", dt.datetime(2024, 1, 1, 10, tzinfo=UTC)),
        (StringType(), "  padded ", "  padded "),
        (StringType(), "'NULL'", "NULL"),
        (StringType(), "Null", None),
        (BinaryType(), "cafe", b"\xca\xfe"),
        (
            UUIDType(),
            "12345678-1234-5678-1234-567812345678",
            bytes.fromhex("12345678123456781234567812345678"),
        ),
    ],
)
def test_set_literals_parse_as_their_columns_type(field_type: Any, text: str, value: Any) -> None:
    field = NestedField(1, "c", field_type, required=False)
    assert literal(field, text) == value


@pytest.mark.parametrize(
    ("field_type", "text"),
    [
        (IntegerType(), "3000000000"),
        (DecimalType(9, 2), "1.234"),
        (BinaryType(), "xyz"),
        (DateType(), "yesterday"),
    ],
)
def test_set_literals_that_do_not_fit_are_refused(field_type: Any, text: str) -> None:
    with pytest.raises(ValidationError, match="--set c="):
        literal(NestedField(1, "c", field_type, required=False), text)
