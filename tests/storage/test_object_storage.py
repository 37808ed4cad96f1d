"""Object storage configured by catalog properties (pyiceberg's names), against a real S3
server (SeaweedFS on 127.0.0.1, ``s3_warehouse``): typed errors in plain words within a
bounded time, one cached filesystem per bucket, no folder-marker objects left behind,
credentials in no repr or message, maintenance and time travel on S3, and the CLI's
``--property`` and ``lakecat.toml`` properties."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import pickle
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from local_s3 import S3Warehouse

from lakecat.catalog import Catalog
from lakecat.catalog.cli import main
from lakecat.catalog.cli.config import read_config_properties
from lakecat.catalog.maintenance import (
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
)
from lakecat.catalog.write.merge_on_read import write_position_deletes
from lakecat.metadata.errors import (
    NoSuchBucket,
    StorageAccessDenied,
    StorageError,
    StorageUnreachable,
    ValidationError,
)
from lakecat.metadata.io.fileio import ArrowFileIO
from lakecat.metadata.io.position_deletes import FileDeletes, delete_file_threads
from lakecat.metadata.io.storage import s3_arguments

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def rows(ids: range, region: str = "eu") -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "region": [region] * len(ids)})


@pytest.fixture
def s3_catalog(tmp_path: Path, s3_warehouse: S3Warehouse) -> Iterator[Catalog]:
    catalog = Catalog(
        f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=s3_warehouse.location,
        properties=s3_warehouse.properties,
    )
    catalog.create_namespace("db")
    yield catalog
    catalog.close()


# ---- properties --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "properties",
    [
        {"s3.endpiont": "http://127.0.0.1:9000"},  # a typo
        {"s3.path-style-access": "maybe"},
        {"s3.connect-timeout": "-1"},
        {"s3.endpoint": "not a url"},
        {"s3.access-key-id": "key-only"},
        {"s3.path-style-access": "true", "s3.force-virtual-addressing": "true"},
    ],
)
def test_bad_properties_are_refused_before_anything_is_created(
    tmp_path: Path, properties: dict[str, str]
) -> None:
    database = tmp_path / "catalog.db"
    with pytest.raises(ValidationError) as info:
        Catalog(f"sqlite:///{database}", warehouse="s3://bucket/wh", properties=properties)
    assert "key-only" not in str(info.value)
    assert not database.exists()


def test_properties_map_to_pyarrow_as_pyiceberg_maps_them() -> None:
    kwargs = s3_arguments(
        {
            "s3.endpoint": "http://127.0.0.1:9000",
            "s3.access-key-id": "AK",
            "s3.secret-access-key": "SK",
            "s3.session-token": "TOKEN",
            "s3.region": "eu-west-1",
            "s3.path-style-access": "true",
            "s3.connect-timeout": "2.5",
        }
    )
    assert kwargs["endpoint_override"] == "http://127.0.0.1:9000"
    assert (kwargs["access_key"], kwargs["secret_key"], kwargs["session_token"]) == (
        "AK",
        "SK",
        "TOKEN",
    )
    assert kwargs["region"] == "eu-west-1"
    assert kwargs["force_virtual_addressing"] is False
    assert kwargs["connect_timeout"] == 2.5
    assert s3_arguments({"client.region": "us-west-2"})["region"] == "us-west-2"
    assert s3_arguments({"s3.path-style-access": "false"})["force_virtual_addressing"] is True


def test_credentials_appear_in_no_repr_and_pickle_round_trips(
    s3_catalog: Catalog, s3_warehouse: S3Warehouse
) -> None:
    secret = s3_warehouse.properties["s3.secret-access-key"]
    key = s3_warehouse.properties["s3.access-key-id"]
    for shown in (repr(s3_catalog), repr(s3_catalog.io), str(s3_catalog.io)):
        assert secret not in shown and key not in shown
    copy = pickle.loads(pickle.dumps(s3_catalog.io))
    assert isinstance(copy, ArrowFileIO) and dict(copy.properties) == s3_warehouse.properties
    s3_catalog.create_table("db.t", SCHEMA).append(rows(range(3)))
    assert copy.exists(s3_catalog.load_table("db.t").metadata_location)


def test_one_filesystem_per_bucket_is_made_and_kept(s3_warehouse: S3Warehouse) -> None:
    file_io = ArrowFileIO(s3_warehouse.properties)
    first, path = file_io.arrow_filesystem(f"{s3_warehouse.location}/a/b.parquet")
    again, _ = file_io.arrow_filesystem(f"{s3_warehouse.location}/c.parquet")
    other, _ = file_io.arrow_filesystem("s3://another-bucket/c.parquet")
    assert isinstance(first, pafs.S3FileSystem)
    assert first is again and other is not first
    assert path == s3_warehouse.location.removeprefix("s3://") + "/a/b.parquet"


# ---- typed errors, in plain words, in bounded time ----------------------------------------


def _create_fails(
    tmp_path: Path, warehouse: str, properties: dict[str, str], error: type[StorageError]
) -> StorageError:
    database = tmp_path / "catalog.db"
    with Catalog(f"sqlite:///{database}", warehouse=warehouse, properties=properties) as catalog:
        catalog.create_namespace("db")
        with pytest.raises(error) as info:
            catalog.create_table("db.t", SCHEMA)
        assert catalog.list_tables("db") == []  # nothing was created
    message = str(info.value)
    for name in ("s3.secret-access-key", "s3.access-key-id"):
        assert properties[name] not in message
    return info.value


def test_a_closed_port_is_an_unreachable_endpoint(
    tmp_path: Path, s3_warehouse: S3Warehouse
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    properties = {**s3_warehouse.properties, "s3.endpoint": f"http://127.0.0.1:{port}"}
    started = time.monotonic()
    error = _create_fails(tmp_path, s3_warehouse.location, properties, StorageUnreachable)
    assert time.monotonic() - started < 15
    assert f"http://127.0.0.1:{port}" in str(error) and "did not answer" in str(error)


def test_a_server_that_never_answers_fails_within_the_timeouts(
    tmp_path: Path, s3_warehouse: S3Warehouse
) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                accepted.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    properties = {
        **s3_warehouse.properties,
        "s3.endpoint": f"http://127.0.0.1:{server.getsockname()[1]}",
        "s3.connect-timeout": "1",
        "s3.request-timeout": "1",
    }
    started = time.monotonic()
    try:
        _create_fails(tmp_path, s3_warehouse.location, properties, StorageUnreachable)
    finally:
        server.close()
        for connection in accepted:
            connection.close()
    assert time.monotonic() - started < 20


def test_a_wrong_secret_is_refused_credentials(tmp_path: Path, s3_warehouse: S3Warehouse) -> None:
    properties = {**s3_warehouse.properties, "s3.secret-access-key": "not-the-secret"}
    error = _create_fails(tmp_path, s3_warehouse.location, properties, StorageAccessDenied)
    assert "refused access" in str(error) and "credentials" in str(error)


def test_a_missing_bucket_says_so(tmp_path: Path, s3_warehouse: S3Warehouse) -> None:
    error = _create_fails(tmp_path, "s3://no-such-bucket/wh", s3_warehouse.properties, NoSuchBucket)
    assert "bucket 'no-such-bucket' does not exist" in str(error)


# ---- no folder markers ---------------------------------------------------------------------


def test_deleting_the_last_file_of_a_folder_leaves_no_marker(s3_warehouse: S3Warehouse) -> None:
    file_io = ArrowFileIO(s3_warehouse.properties)
    names = [f"{s3_warehouse.location}/a/b/{n}.bin" for n in ("x", "y", "z%2Fw=1")]
    for name in names:
        file_io.write(name, b"data")
    assert len(s3_warehouse.stored_keys()) == 3
    for name in names:
        file_io.delete(name)
        assert not file_io.exists(name)
    file_io.delete(names[0])  # already gone: not an error
    assert s3_warehouse.stored_keys() == []


def test_maintenance_on_s3_commits_and_deletes_without_markers(
    s3_catalog: Catalog, s3_warehouse: S3Warehouse
) -> None:
    table = s3_catalog.create_table("db.t", SCHEMA, partition_by=["region"])
    for start in range(0, 40, 10):
        table.append(rows(range(start, start + 10), "eu" if start < 20 else "us"))
    first = table.snapshots()[0].snapshot_id
    table.delete("region = 'us' AND id >= 35")
    compacted = rewrite_data_files(table)
    assert compacted.snapshot_ids
    # an orphan: a file no snapshot references, older than the cut-off
    s3_catalog.io.write(f"{table.location}/data/orphan.parquet", b"not referenced")
    now_ms = int(time.time() * 1000) + 1000
    assert sorted(table.to_arrow(snapshot_id=first).column("id").to_pylist()) == list(range(10))
    expired = expire_snapshots(table, older_than=now_ms, retain_last=1)
    assert expired.deleted_data_files
    orphans = remove_orphan_files(table, older_than=now_ms)
    assert orphans.orphans == (f"{table.location}/data/orphan.parquet",)
    table.refresh()
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(35))
    assert len(table.snapshots()) == 1
    assert not [key for key in s3_warehouse.stored_keys() if key.endswith("/")]
    s3_catalog.drop_table("db.t", purge=True)
    assert s3_warehouse.stored_keys() == []


@pytest.mark.parametrize("version", [2, 3])
def test_merge_on_read_deletes_of_many_files_on_s3_write_their_delete_files_at_once(
    s3_catalog: Catalog, s3_warehouse: S3Warehouse, version: int
) -> None:
    """On an object store a commit writes its position delete files (v2), and reads the
    deletion vectors its new ones replace (v3), several at once; a failure leaves none."""
    table = s3_catalog.create_table(
        "db.t",
        pa.schema([("id", pa.int64()), ("part", pa.int32())]),
        partition_by=["part"],
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    ids = list(range(120))
    table.append(pa.table({"id": pa.array(ids, pa.int64()), "part": [i % 12 for i in ids]}))
    assert delete_file_threads(table.location) > 1

    table.delete("id < 12")  # a row of each of the 12 files
    table.refresh().delete("id >= 12 AND id < 24")  # again: v3 replaces each file's DV

    kept = list(range(24, 120))
    assert sorted(table.refresh().to_arrow().column("id").to_pylist()) == kept
    plan = table.scan().plan()
    deletes = {d.file_path for ds in plan.deletes.values() for d in ds}
    assert len(plan.files) == 12 and len(deletes) == (24 if version == 2 else 1)
    from pyiceberg.catalog.sql import SqlCatalog

    py = SqlCatalog(
        s3_catalog.name,
        uri=s3_catalog.uri,
        warehouse=s3_catalog.warehouse,
        **s3_warehouse.properties,
    )
    assert sorted(py.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == kept

    before = set(s3_warehouse.stored_keys())
    bad = [FileDeletes(f, pa.array([0], pa.int64())) for f in plan.files]
    bad[7] = FileDeletes(plan.files[7], pa.array([10], pa.int64()))  # past its 10 rows
    with pytest.raises(ValidationError, match="outside"):
        write_position_deletes(table.io, table.metadata, bad)
    assert set(s3_warehouse.stored_keys()) == before  # no file of the other targets either


def test_time_travel_on_s3_by_id_timestamp_and_tag(s3_catalog: Catalog) -> None:
    table = s3_catalog.create_table("db.t", SCHEMA)
    table.append(rows(range(5)))
    first = table.current_snapshot()
    assert first is not None
    table.create_tag("v1")
    time.sleep(0.01)
    table.append(rows(range(5, 8)))
    loaded = s3_catalog.load_table("db.t")
    for kwargs in (
        {"snapshot_id": first.snapshot_id},
        {"as_of": dt.datetime.fromtimestamp(first.timestamp_ms / 1000, tz=dt.UTC)},
        {"ref": "v1"},
    ):
        assert sorted(loaded.to_arrow(**kwargs).column("id").to_pylist()) == list(range(5))
    assert loaded.to_arrow().num_rows == 8


# ---- the command line ------------------------------------------------------------------------


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def test_cli_takes_properties_from_flags_and_from_lakecat_toml(
    tmp_path: Path, s3_warehouse: S3Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = s3_warehouse.properties
    flags = [f"--property={k}={v}" for k, v in p.items()]
    base = ["--catalog", f"sqlite:///{tmp_path / 'a.db'}", "--warehouse", s3_warehouse.location]
    schema = '{"id": "long"}'
    assert _cli([*base, *flags, "namespaces", "create", "db"])[0] == 0
    code, _, err = _cli([*base, *flags, "tables", "create", "db.t", "--schema", schema])
    assert code == 0, err
    assert any(key.endswith(".metadata.json") for key in s3_warehouse.stored_keys())

    # the same from a config file: dotted keys (nested by TOML) and quoted ones
    config = tmp_path / "lakecat.toml"
    config.write_text(
        "[catalog]\n"
        f'url = "sqlite:///{tmp_path / "a.db"}"\n'
        f'warehouse = "{s3_warehouse.location}"\n'
        "[catalog.properties]\n"
        f's3.endpoint = "{p["s3.endpoint"]}"\n'
        f'"s3.access-key-id" = "{p["s3.access-key-id"]}"\n'
        f's3.secret-access-key = "{p["s3.secret-access-key"]}"\n'
        f's3.region = "{p["s3.region"]}"\n'
        "s3.path-style-access = true\n"
    )
    assert read_config_properties(config, None) == p
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(["--json", "tables", "describe", "db.t"])
    assert code == 0, err
    assert p["s3.secret-access-key"] not in out + err

    # a wrong secret from the flag overrides the file's: refused, in one line
    code, _, err = _cli(["--property", "s3.secret-access-key=not-it-4711", "show", "db.t"])
    assert code == 1 and "refused access" in err and "not-it-4711" not in err


def test_cli_refuses_an_unknown_property(tmp_path: Path) -> None:
    database = tmp_path / "a.db"
    flags = ["--catalog", f"sqlite:///{database}", "--warehouse", "s3://b/w"]
    code, _, err = _cli([*flags, "--property", "s3.endpiont=x", "namespaces", "create", "db"])
    assert code == 1 and "unknown catalog property 's3.endpiont'" in err
    assert not database.exists()
