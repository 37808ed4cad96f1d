"""The table API contract, run against every catalog backend (SQLite and PostgreSQL), each with
a local warehouse and with an S3 one (a real S3 server, SeaweedFS: ``s3_warehouse``)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog import table as table_module
from lakecat.catalog.catalog import build_sort_order
from lakecat.catalog.write import row_ops
from lakecat.metadata.errors import (
    CorruptMetadata,
    InvalidIdentifier,
    LakecatError,
    NoSuchRef,
    NoSuchSnapshot,
    NoSuchTable,
    NullInRequiredColumn,
    SchemaMismatch,
    TableAlreadyExists,
    UnknownColumn,
    ValidationError,
)
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.types import LongType, StringType

UTC = dt.UTC


def rows(ids: range, region: str, day: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "ts": pa.array(
                [dt.datetime(2024, 1, day, 10, tzinfo=UTC) + dt.timedelta(seconds=i) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "region": pa.array([region] * len(ids)),
            "amount": pa.array([i * 0.5 for i in ids]),
        }
    )


SCHEMA = rows(range(1), "eu").schema


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def catalog(request: pytest.FixtureRequest, catalog_url: str, warehouse: str) -> Iterator[Catalog]:
    """A catalog on each backend, with a local warehouse and with an S3 one."""
    if request.param == "s3":
        s3 = request.getfixturevalue("s3_warehouse")
        c = Catalog(catalog_url, warehouse=s3.location, properties=s3.properties)
    else:
        c = Catalog(catalog_url, warehouse=warehouse)
    c.create_namespace("db")
    yield c
    c.close()


def files_under(catalog: Catalog, location: str) -> list[str]:
    return [info.location for info in catalog.io.list_prefix(location)]


@pytest.fixture
def table(catalog: Catalog):
    return catalog.create_table("db.events", SCHEMA, partition_by=[("ts", "day"), "region"])


def ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def metadata_state(catalog: Catalog, name: str) -> str:
    ns, table = name.split(".")
    return catalog.store.get_metadata_location((ns,), table)


# ---- create / load / list -----------------------------------------------------------------
def test_created_table_is_listed_and_loads_with_same_schema(catalog: Catalog, table) -> None:
    assert catalog.list_tables("db") == [(("db",), "events")]
    loaded = catalog.load_table("db.events")
    assert loaded.schema() == table.schema()
    assert [f.transform for f in loaded.spec().fields] == ["day", "identity"]
    assert loaded.current_snapshot() is None
    assert loaded.to_arrow().num_rows == 0


def test_new_tables_write_isolation_and_metadata_pruning_defaults(table) -> None:
    props = table.properties
    assert props["write.delete.isolation-level"] == "snapshot"
    assert props["write.update.isolation-level"] == "snapshot"
    assert props["write.merge.isolation-level"] == "snapshot"
    assert props["write.metadata.delete-after-commit.enabled"] == "true"
    assert props["write.metadata.compression-codec"] == "gzip"


def test_metadata_files_are_gzipped_unless_the_table_says_none(catalog: Catalog, table) -> None:
    table.append(rows(range(3), "eu"))
    assert metadata_state(catalog, "db.events").endswith(".gz.metadata.json")
    plain = catalog.create_table(
        "db.plain", SCHEMA, properties={"write.metadata.compression-codec": "none"}
    )
    plain.append(rows(range(3), "eu"))
    location = metadata_state(catalog, "db.plain")
    assert location.endswith(".metadata.json") and not location.endswith(".gz.metadata.json")
    assert ids(catalog.load_table("db.plain").to_arrow()) == [0, 1, 2]


def test_creating_an_existing_table_fails_and_keeps_the_first(catalog: Catalog, table) -> None:
    before = metadata_state(catalog, "db.events")
    with pytest.raises(TableAlreadyExists):
        catalog.create_table("db.events", SCHEMA)
    assert metadata_state(catalog, "db.events") == before


def test_create_table_like_copies_the_shape_but_no_rows_and_none_of_the_placement(
    catalog: Catalog, table
) -> None:
    table.append(rows(range(3), "eu"))
    source_data = f"{table.location}-data"  # where the source's next files go
    with table.update_schema() as u:
        u.delete_column("amount")  # the source's ids now skip 4
        u.add_column("note", StringType(), doc="free text")
    table.replace_sort_order(build_sort_order(table.schema(), ["region", ("id", "desc")]))
    table.set_properties(
        {
            "team": "ads",
            "write.data.path": source_data,
            "schema.name-mapping.default": '[{"field-id": 1, "names": ["id"]}]',
        }
    )
    before = metadata_state(catalog, "db.events")

    copy = catalog.create_table_like(
        "db.copy", catalog.load_table("db.events"), properties={"team": "web"}
    )

    source = catalog.load_table("db.events")
    assert metadata_state(catalog, "db.events") == before
    schema = copy.schema()
    assert [(f.field_id, f.name, f.doc) for f in schema.fields] == [
        (1, "id", None),
        (2, "ts", None),
        (3, "region", None),
        (4, "note", "free text"),
    ]
    assert [(f.field_type, f.required) for f in schema.fields] == [
        (f.field_type, f.required) for f in source.schema().fields
    ]
    assert [(schema.column_name(f.source_id), f.transform, f.name) for f in copy.spec().fields] == [
        ("ts", "day", "ts_day"),
        ("region", "identity", "region"),
    ]
    assert [(schema.column_name(f.source_id), f.direction) for f in copy.sort_order().fields] == [
        ("region", "asc"),
        ("id", "desc"),
    ]
    assert copy.metadata.format_version == source.metadata.format_version
    assert copy.properties["team"] == "web"
    assert "write.data.path" not in copy.properties
    assert "schema.name-mapping.default" not in copy.properties
    assert copy.current_snapshot() is None and copy.to_arrow().num_rows == 0
    assert copy.location != source.location

    copy.append(
        pa.table(
            {"id": [7], "ts": pa.array([None], pa.timestamp("us", tz="UTC")), "region": ["us"]}
        )
    )
    assert files_under(catalog, source_data) == []
    assert ids(catalog.load_table("db.events").to_arrow()) == [0, 1, 2]


def test_create_table_like_takes_the_format_version_unless_given(catalog: Catalog) -> None:
    v3 = catalog.create_table("db.v3", SCHEMA, properties={"format-version": "3"})

    assert catalog.create_table_like("db.a", v3).metadata.format_version == 3
    downgraded = catalog.create_table_like("db.b", v3, properties={"format-version": "2"})
    assert downgraded.metadata.format_version == 2
    with pytest.raises(TableAlreadyExists):
        catalog.create_table_like("db.a", v3)


@pytest.mark.parametrize("name", ["db.a/b", "db...", "db.a\\b", "db.", ".t", "db..t"])
def test_names_with_path_separators_or_dots_are_refused(catalog: Catalog, name: str) -> None:
    with pytest.raises(InvalidIdentifier):
        catalog.create_table(name, SCHEMA)
    assert catalog.list_tables("db") == []


def test_loading_a_missing_table_raises_no_such_table(catalog: Catalog) -> None:
    with pytest.raises(NoSuchTable):
        catalog.load_table("db.nope")


def test_rename_and_drop(catalog: Catalog, table) -> None:
    table.append(rows(range(5), "eu"))
    catalog.rename_table("db.events", "db.renamed")
    assert catalog.list_tables("db") == [(("db",), "renamed")]
    assert ids(catalog.load_table("db.renamed").to_arrow()) == list(range(5))
    catalog.drop_table("db.renamed")
    assert not catalog.table_exists("db.renamed")


def test_drop_with_purge_deletes_the_files(catalog: Catalog, table) -> None:
    table.append(rows(range(5), "eu"))
    assert files_under(catalog, table.location)
    catalog.drop_table("db.events", purge=True)
    assert files_under(catalog, table.location) == []


def test_drop_without_purge_keeps_files_and_register_brings_the_table_back(
    catalog: Catalog, table
) -> None:
    table.append(rows(range(5), "eu"))
    metadata_location = table.metadata_location
    catalog.drop_table("db.events")
    registered = catalog.register_table("db.again", metadata_location)
    assert ids(registered.to_arrow()) == list(range(5))


def test_corrupt_metadata_file_gives_a_typed_error(catalog: Catalog, table) -> None:
    catalog.io.write(table.metadata_location, b"{not json")
    with pytest.raises(CorruptMetadata):
        catalog.load_table("db.events")


def test_missing_metadata_file_gives_a_typed_error(catalog: Catalog, table) -> None:
    catalog.io.delete(table.metadata_location)
    with pytest.raises(CorruptMetadata):
        catalog.load_table("db.events")


# ---- writes ---------------------------------------------------------------------------------
def test_append_then_read_returns_the_rows(table) -> None:
    table.append(rows(range(10), "eu"))
    table.append(rows(range(10, 15), "us", day=2))
    got = table.to_arrow()
    assert ids(got) == list(range(15))
    summary = table.current_snapshot().summary
    assert summary["total-records"] == "15"
    assert summary["added-records"] == "5"


def test_append_writes_one_file_per_partition(table) -> None:
    data = pa.concat_tables(
        [rows(range(3), "eu"), rows(range(3, 6), "us"), rows(range(6, 9), "us", day=2)]
    )
    table.append(data)
    files = table.scan().plan_files()
    assert len(files) == 3
    assert {f.partition[1] for f in files} == {"eu", "us"}
    assert all("/data/ts_day=2024-01-0" in f.file_path for f in files)


def test_append_of_a_record_batch_reader_streams(table) -> None:
    data = rows(range(100), "eu")
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=10))
    table.append(reader)
    assert table.scan().count() == 100


def test_append_with_wrong_schema_fails_and_changes_nothing(catalog: Catalog, table) -> None:
    before = metadata_state(catalog, "db.events")
    bad = pa.table({"id": pa.array(["x"]), "ts": pa.array([None], pa.timestamp("us", tz="UTC"))})
    with pytest.raises(SchemaMismatch):
        table.append(bad)
    with pytest.raises(SchemaMismatch):
        table.append(rows(range(2), "eu").append_column("extra", pa.array([1, 2])))
    assert metadata_state(catalog, "db.events") == before
    assert files_under(catalog, table.location + "/data") == []


def test_nulls_in_a_required_column_are_refused(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    t = catalog.create_table("db.req", schema)
    with pytest.raises(NullInRequiredColumn):
        t.append(pa.table({"id": pa.array([1, None], pa.int64()), "v": ["a", "b"]}))
    assert t.refresh().current_snapshot() is None


def test_delete_whole_partition_is_metadata_only(table) -> None:
    table.append(pa.concat_tables([rows(range(5), "eu"), rows(range(5, 9), "us")]))
    result = table.delete("region = 'us'")
    snap = result.metadata.current_snapshot
    assert snap.operation == "delete"
    assert "added-data-files" not in snap.summary
    assert ids(table.to_arrow()) == list(range(5))


def test_delete_part_of_a_file_rewrites_it(table) -> None:
    table.append(rows(range(10), "eu"))
    table.delete("id >= 7")
    assert ids(table.to_arrow()) == list(range(7))
    summary = table.current_snapshot().summary
    assert summary["deleted-data-files"] == "1"
    assert summary["added-data-files"] == "1"
    assert summary["total-records"] == "7"


def kept_row_writes(
    monkeypatch: pytest.MonkeyPatch,
    flush_bytes: int,
    planner: str = "plan_delete",
    writer: str = "write_kept",
) -> list[int]:
    """The number of tables of kept rows each write of a rewrite's planning takes (a delete's
    or overwrite's, or with ``planner="plan_update"`` / ``"plan_merge"`` and
    ``writer="write_rewritten"`` an update's or merge's), with ``flush_bytes`` as the bound
    of kept rows held."""
    monkeypatch.setattr(row_ops, "KEPT_ROWS_FLUSH_BYTES", flush_bytes)
    writes: list[int] = []
    plan = getattr(table_module, planner)

    def spied(*args: Any, **kwargs: Any) -> Any:
        write = kwargs[writer]

        def counted(kept: list[pa.Table]) -> list[DataFile]:
            writes.append(len(kept))
            return write(kept)

        return plan(*args, **{**kwargs, writer: counted})

    monkeypatch.setattr(table_module, planner, spied)
    return writes


def test_a_rewrite_of_many_files_writes_kept_rows_as_it_goes(
    table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound of kept rows held, a delete or overwrite writes them out before it reads
    the next partly matching file (a bound of one byte: after each file); below it they are
    written at the end, with an overwrite's new rows. The rows are the same either way."""
    for day in (1, 2, 3):
        table.append(rows(range(day * 10, day * 10 + 10), "eu", day))
    writes = kept_row_writes(monkeypatch, 1)
    table.delete("id IN (10, 20, 30)")
    assert writes == [1, 1, 1]
    assert ids(table.to_arrow()) == [i for i in range(10, 40) if i % 10]
    assert table.current_snapshot().summary["added-data-files"] == "3"

    table.overwrite(rows(range(100, 102), "us"), "id IN (11, 21, 31) OR region = 'us'")
    assert writes == [1, 1, 1] * 2
    assert ids(table.to_arrow()) == [i for i in range(10, 40) if i % 10 > 1] + [100, 101]
    summary = table.current_snapshot().summary
    assert (summary["deleted-data-files"], summary["added-data-files"]) == ("3", "4")

    writes = kept_row_writes(monkeypatch, 1 << 30)
    table.overwrite(rows(range(200, 202), "eu"), "id IN (12, 22, 32)")
    assert writes == []
    assert ids(table.to_arrow()) == [i for i in range(10, 40) if i % 10 > 2] + [100, 101, 200, 201]
    assert table.current_snapshot().summary["added-data-files"] == "4"


def amount_by_id(t: pa.Table) -> dict[int, float]:
    got = t.to_pydict()
    return dict(zip(got["id"], got["amount"], strict=True))


def test_an_update_or_merge_of_many_files_writes_rewritten_rows_as_it_goes(
    catalog: Catalog, table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound, an update or merge writes what it holds before it reads the next file:
    copy-on-write each rewritten file's rows, merge-on-read the changed rows' new versions;
    below it, at the end."""
    for day in (1, 2, 3):
        table.append(rows(range(day * 10, day * 10 + 10), "eu", day))
    writes = kept_row_writes(monkeypatch, 1, "plan_update", "write_rewritten")
    table.update({"amount": -1.0}, "id IN (10, 20, 30)")
    assert writes == [1, 1, 1]
    amounts = amount_by_id(table.to_arrow())
    assert sorted(i for i, a in amounts.items() if a == -1.0) == [10, 20, 30]
    assert len(amounts) == 30 and amounts[11] == 5.5

    writes = kept_row_writes(monkeypatch, 1, "plan_merge", "write_rewritten")
    source = rows(range(11, 32, 10), "eu", 1).set_column(3, "amount", pa.array([-2.0] * 3))
    table.merge(source.drop_columns(["ts"]), "id", when_matched_update=True)
    assert writes == [1, 1, 1]
    amounts = amount_by_id(table.to_arrow())
    assert sorted(amounts) == list(range(10, 40))
    assert sorted(i for i, a in amounts.items() if a == -2.0) == [11, 21, 31]
    assert table.current_snapshot().summary["added-data-files"] == "3"

    table.set_properties(
        {"write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read"}
    )
    writes = kept_row_writes(monkeypatch, 1, "plan_update", "write_rewritten")
    table.update({"amount": -3.0}, "id IN (12, 22, 32)")
    writes_of_merge = kept_row_writes(monkeypatch, 1, "plan_merge", "write_rewritten")
    table.merge(source.drop_columns(["ts"]).slice(0, 2), "id", when_matched_update=True)
    assert (writes, writes_of_merge) == ([1, 1, 1], [1, 1])
    writes = kept_row_writes(monkeypatch, 1 << 30, "plan_update", "write_rewritten")
    table.update({"amount": -4.0}, "id IN (13, 23)")
    assert writes == []
    amounts = amount_by_id(table.to_arrow())
    assert len(amounts) == 30
    assert (amounts[12], amounts[22], amounts[13], amounts[33]) == (-3.0, -3.0, -4.0, 16.5)
    assert (amounts[11], amounts[31], amounts[14]) == (-2.0, -2.0, 7.0)
    assert table.current_snapshot().summary["added-delete-files"] == "2"


REWRITES = {
    "delete": ("plan_delete", "write_kept", lambda t: t.delete("id IN (10, 20, 30)")),
    "update": (
        "plan_update",
        "write_rewritten",
        lambda t: t.update({"amount": 0.0}, "id IN (10, 20, 30)"),
    ),
    "merge": (
        "plan_merge",
        "write_rewritten",
        lambda t: t.merge(rows(range(10, 40, 10), "eu"), "id", when_matched_update=True),
    ),
}


@pytest.mark.parametrize("rewrite", list(REWRITES))
def test_a_rewrite_that_fails_after_writing_kept_rows_leaves_no_file_behind(
    catalog: Catalog, table, monkeypatch: pytest.MonkeyPatch, rewrite: str
) -> None:
    """A copy-on-write delete, update or merge whose third file cannot be read, after the
    first two files' rows were written out: the error, and neither a commit nor a file."""
    for day in (1, 2, 3):
        table.append(rows(range(day * 10, day * 10 + 10), "eu", day))
    planned = [f.file_path for f in table.scan().plan_files()]
    before = metadata_state(catalog, "db.events")
    files_before = set(files_under(catalog, table.location))
    table.io.delete(planned[-1])  # read last: after the other two files' rows are written
    planner, writer, change = REWRITES[rewrite]
    writes = kept_row_writes(monkeypatch, 1, planner, writer)
    with pytest.raises(LakecatError):
        change(table)
    assert writes == [1, 1]
    assert metadata_state(catalog, "db.events") == before
    assert set(files_under(catalog, table.location)) == files_before - {planned[-1]}


WRITES_WITH_OPTIONS = {
    "append": lambda t, **o: t.append(rows(range(50, 52), "eu"), **o),
    "overwrite": lambda t, **o: t.overwrite(rows(range(50, 52), "eu"), "id = 1", **o),
    "dynamic overwrite": lambda t, **o: t.dynamic_partition_overwrite(rows([7], "eu"), **o),
    "delete": lambda t, **o: t.delete("id = 1", **o),
    "update": lambda t, **o: t.update({"amount": 0.0}, "id = 1", **o),
    "merge": lambda t, **o: t.merge(rows([1, 60], "eu"), "id", when_matched_update=True, **o),
    "upsert": lambda t, **o: t.upsert(rows([1, 61], "eu"), "id", **o),
}


@pytest.mark.parametrize("write", list(WRITES_WITH_OPTIONS))
@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"snapshot_propertes": {"a": "b"}}, ValidationError),  # a typo
        ({"app_id": "job"}, ValidationError),
        ({"app_version": 3}, ValidationError),
        ({"branch": "nope"}, NoSuchRef),
    ],
    ids=["unknown option", "app_id alone", "app_version alone", "unknown branch"],
)
def test_a_write_with_bad_options_fails_before_it_writes_a_file(
    catalog: Catalog, table, write: str, options: dict[str, Any], error: type[Exception]
) -> None:
    """Every write checks its commit options and branch first: bad ones raise a typed error
    and leave the table and its storage as they were, not even an orphan data file."""
    table.append(rows(range(10), "eu"))
    before = metadata_state(catalog, "db.events")
    files_before = set(files_under(catalog, table.location))
    with pytest.raises(error):
        WRITES_WITH_OPTIONS[write](table, **options)
    assert metadata_state(catalog, "db.events") == before
    assert set(files_under(catalog, table.location)) == files_before


@pytest.mark.parametrize(
    "options",
    [
        {"snapshot_properties": {"operation": "x"}},
        {"snapshot_properties": {"total-records": "1"}},
        {"snapshot_properties": {"lakecat.app-version": "9"}},
        {"snapshot_properties": {"partitions.region=eu": "1"}},
        {"snapshot_properties": [("source", "job")]},
        {"snapshot_properties": {"source": 7}},
        {"app_id": "job", "app_version": "7"},
        {"app_id": "job", "app_version": True},
        {"app_id": 7, "app_version": 1},
        {"create_branch": "no"},
        {"app_id": "job", "app_version": 1, "skip_if_committed": "false"},
    ],
    ids=[
        "the operation",
        "a count",
        "a lakecat key",
        "a partition summary",
        "not a mapping",
        "a value not a string",
        "app_version a string",
        "app_version a bool",
        "app_id not a string",
        "create_branch a string",
        "skip_if_committed a string",
    ],
)
def test_a_write_with_a_bad_option_value_fails_before_it_writes_a_file(
    catalog: Catalog, table, options: dict[str, Any]
) -> None:
    """A snapshot property a writer computes would mislead readers (an operation that other
    engines do not know makes the table unreadable to them); an ``app_version`` that is not
    an integer breaks the next idempotent commit; a flag given as text (``"false"``, ``"no"``)
    would count as true. Each is a ``ValidationError`` first."""
    table.append(rows(range(10), "eu"))
    before = metadata_state(catalog, "db.events")
    files_before = set(files_under(catalog, table.location))
    for write in ("append", "delete", "merge"):
        with pytest.raises(ValidationError):
            WRITES_WITH_OPTIONS[write](table, **options)
    assert metadata_state(catalog, "db.events") == before
    assert set(files_under(catalog, table.location)) == files_before


def test_a_snapshot_property_of_the_users_own_lands_in_the_summary(table) -> None:
    table.append(rows(range(3), "eu"), snapshot_properties={"source": "job-7", "wap.id": "w1"})
    summary = table.current_snapshot().summary
    assert (summary["source"], summary["wap.id"], summary["added-records"]) == ("job-7", "w1", "3")


def test_delete_read_bytes_counts_the_files_a_delete_would_read(table) -> None:
    """Files holding matching rows and others are read; files inside the filter are dropped
    unread, files outside it not touched; a branch is planned at its own head."""
    assert table.delete_read_bytes("id = 1") == 0  # no snapshot yet
    table.append(pa.concat_tables([rows(range(5), "eu"), rows(range(5, 9), "us")]))
    sizes = {f.partition[1]: f.file_size_in_bytes for f in table.scan().plan_files()}

    assert table.delete_read_bytes("region = 'us'") == 0
    assert table.delete_read_bytes("id = 1") == sizes["eu"]
    assert table.delete_read_bytes("id >= 3") == sizes["eu"]  # us holds 5-8: all match
    assert table.delete_read_bytes("id = 1 OR id = 6") == sizes["eu"] + sizes["us"]
    assert table.delete_read_bytes("id > 100") == 0
    table.create_branch("audit")
    table.delete("region = 'eu'")
    assert table.delete_read_bytes("id = 1") == 0
    assert table.delete_read_bytes("id = 1", branch="audit") == sizes["eu"]
    assert table.current_snapshot().snapshot_id == table.refresh().current_snapshot().snapshot_id


def test_delete_that_matches_nothing_makes_no_commit(table) -> None:
    table.append(rows(range(3), "eu"))
    before = table.current_snapshot().snapshot_id
    assert table.delete("id > 100") is None
    assert table.refresh().current_snapshot().snapshot_id == before


def test_delete_keeps_rows_where_the_filter_is_null(catalog: Catalog) -> None:
    t = catalog.create_table("db.nulls", pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    t.append(pa.table({"id": [1, 2, 3], "v": [1, None, 5]}))
    t.delete("v > 2")
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


def test_delete_with_unknown_column_is_a_typed_error(catalog: Catalog, table) -> None:
    table.append(rows(range(3), "eu"))
    before = metadata_state(catalog, "db.events")
    with pytest.raises(UnknownColumn):
        table.delete("nope = 1")
    assert metadata_state(catalog, "db.events") == before


def test_overwrite_whole_table(table) -> None:
    table.append(rows(range(10), "eu"))
    table.overwrite(rows(range(100, 103), "us"))
    assert ids(table.to_arrow()) == [100, 101, 102]
    assert table.current_snapshot().operation == "overwrite"


def test_overwrite_by_filter_replaces_only_matching_rows(table) -> None:
    table.append(pa.concat_tables([rows(range(5), "eu"), rows(range(5, 10), "us")]))
    table.overwrite(rows(range(50, 52), "eu"), "region = 'eu'")
    assert ids(table.to_arrow()) == [5, 6, 7, 8, 9, 50, 51]


def test_dynamic_partition_overwrite_replaces_touched_partitions(table) -> None:
    table.append(pa.concat_tables([rows(range(5), "eu"), rows(range(5, 10), "us")]))
    table.dynamic_partition_overwrite(rows(range(20, 22), "eu"))
    assert ids(table.to_arrow()) == [5, 6, 7, 8, 9, 20, 21]


# ---- reads ----------------------------------------------------------------------------------
def test_filter_prunes_files_by_partition_and_bounds(table) -> None:
    table.append(rows(range(0, 10), "eu"))
    table.append(rows(range(10, 20), "us"))
    table.append(rows(range(20, 30), "eu", day=3))
    assert len(table.scan("region = 'us'").plan_files()) == 1
    assert len(table.scan("id >= 25").plan_files()) == 1
    assert len(table.scan("ts >= '2024-01-03T00:00:00+00:00'").plan_files()) == 1
    assert ids(table.to_arrow("id >= 25")) == list(range(25, 30))


def test_projection_returns_only_the_columns_asked_for(table) -> None:
    table.append(rows(range(5), "eu"))
    got = table.to_arrow("amount > 1", columns=["id"])
    assert got.column_names == ["id"]
    assert ids(got) == [3, 4]


def test_projection_of_unknown_column_is_a_typed_error(table) -> None:
    with pytest.raises(UnknownColumn):
        table.to_arrow(columns=["nope"])


# ---- time travel ----------------------------------------------------------------------------
def test_time_travel_by_id_timestamp_tag_and_branch(table) -> None:
    first = table.append(rows(range(3), "eu"))
    time.sleep(0.005)
    second = table.append(rows(range(3, 6), "eu"))
    time.sleep(0.005)
    table.delete("id < 2")
    assert ids(table.to_arrow(snapshot_id=first.snapshot_id)) == [0, 1, 2]
    ts = second.metadata.current_snapshot.timestamp_ms
    assert ids(table.to_arrow(as_of=ts)) == list(range(6))
    assert ids(table.to_arrow(as_of=dt.datetime.fromtimestamp(ts / 1000, tz=UTC))) == list(range(6))
    table.create_tag("v1", first.snapshot_id)
    assert ids(table.to_arrow(ref="v1")) == [0, 1, 2]
    table.create_branch("dev", second.snapshot_id)
    assert ids(table.to_arrow(ref="dev")) == list(range(6))


def test_unknown_snapshot_and_early_timestamp_are_typed_errors(table) -> None:
    table.append(rows(range(3), "eu"))
    with pytest.raises(NoSuchSnapshot):
        table.to_arrow(snapshot_id=12345)
    with pytest.raises(NoSuchSnapshot):
        table.to_arrow(as_of="2000-01-01T00:00:00+00:00")
    with pytest.raises(NoSuchRef):
        table.to_arrow(ref="nope")


def test_branch_writes_do_not_move_main(table) -> None:
    table.append(rows(range(3), "eu"))
    table.create_branch("audit")
    table.append(rows(range(3, 5), "eu"), branch="audit")
    assert ids(table.to_arrow()) == [0, 1, 2]
    assert ids(table.to_arrow(ref="audit")) == [0, 1, 2, 3, 4]


def test_a_branch_of_a_table_without_a_snapshot_starts_at_an_empty_snapshot(table) -> None:
    # as Iceberg's ManageSnapshots.createBranch: main stays without a snapshot
    table.create_branch("audit", max_ref_age_ms=86_400_000, min_snapshots_to_keep=2)
    ref = table.refs()["audit"]
    assert table.current_snapshot() is None and "main" not in table.refs()
    assert (ref.ref_type, ref.max_ref_age_ms, ref.min_snapshots_to_keep) == (
        "branch",
        86_400_000,
        2,
    )
    empty = table.snapshot(ref.snapshot_id)
    assert (empty.operation, empty.parent_snapshot_id) == ("append", None)
    assert empty.summary_count("total-records") == 0
    table.append(rows(range(2), "eu"), branch="audit")
    assert ids(table.to_arrow(ref="audit")) == [0, 1]
    assert table.to_arrow().num_rows == 0
    with pytest.raises(ValidationError):
        table.create_branch("audit")  # exists
    with pytest.raises(ValidationError):
        table.create_tag("v1")  # a tag needs a snapshot: main has none


def test_tags_can_be_replaced_and_removed(table) -> None:
    a = table.append(rows(range(1), "eu"))
    b = table.append(rows(range(1, 2), "eu"))
    table.create_tag("t", a.snapshot_id)
    table.replace_tag("t", b.snapshot_id)
    assert table.refs()["t"].snapshot_id == b.snapshot_id
    table.remove_ref("t")
    assert "t" not in table.refs()
    with pytest.raises(ValidationError):
        table.remove_ref("main")


# ---- evolution ------------------------------------------------------------------------------
def test_schema_evolution_reads_old_files_by_field_id(table) -> None:
    table.append(rows(range(3), "eu"))
    with table.update_schema() as u:
        u.add_column("channel", StringType())
        u.rename_column("amount", "total")
    table.append(
        rows(range(3, 4), "us")
        .rename_columns(["id", "ts", "region", "total"])
        .append_column("channel", pa.array(["web"]))
    )
    got = table.to_arrow().sort_by("id")
    assert got.column_names == ["id", "ts", "region", "total", "channel"]
    assert got.column("channel").to_pylist() == [None, None, None, "web"]
    assert got.column("total").to_pylist() == [0.0, 0.5, 1.0, 1.5]


def test_schema_evolution_type_widening(catalog: Catalog) -> None:
    t = catalog.create_table("db.narrow", pa.schema([("n", pa.int32())]))
    t.append(pa.table({"n": pa.array([1, 2], pa.int32())}))
    with t.update_schema() as u:
        u.update_column("n", field_type=LongType())
    got = t.to_arrow()
    assert got.schema.field("n").type == pa.int64()
    assert got.column("n").to_pylist() == [1, 2]


def test_partition_spec_evolution_keeps_old_files_readable(table) -> None:
    table.append(rows(range(3), "eu"))
    with table.update_spec() as u:
        u.add_field("id", "bucket[4]")
    table.append(rows(range(3, 6), "us"))
    assert ids(table.to_arrow()) == list(range(6))
    assert ids(table.to_arrow("region = 'eu'")) == [0, 1, 2]
    assert {f.spec_id for f in table.scan().plan_files()} == {0, 1}


def test_set_and_remove_properties(table) -> None:
    table.set_properties({"owner": "data-eng"})
    assert table.refresh().properties["owner"] == "data-eng"
    table.remove_properties("owner")
    assert "owner" not in table.refresh().properties
    with pytest.raises(ValidationError):
        table.set_properties({"write.delete.isolation-level": "nope"})


def test_set_location_moves_where_new_files_go(catalog: Catalog, table) -> None:
    table.append(rows(range(3), "eu"))
    new_location = table.location + "-moved"
    table.set_location(new_location + "/")  # a trailing slash is dropped, as in Java
    table.append(rows(range(3, 5), "eu"))

    assert table.refresh().location == new_location
    assert table.metadata_location.startswith(new_location + "/metadata/")
    paths = [f.file_path for f in table.scan().plan_files()]
    assert sum(p.startswith(new_location + "/data/") for p in paths) == 1
    assert ids(table.to_arrow()) == [0, 1, 2, 3, 4]
    before = table.metadata_location
    with pytest.raises(ValidationError):
        table.set_location("  ")
    assert table.refresh().metadata_location == before


def test_a_create_that_loses_the_race_is_a_protocol_change(catalog: Catalog, monkeypatch) -> None:
    """Two writers create the same table at once: the later insert gets ConcurrentCreate."""
    from lakecat.metadata.errors import ConcurrentCreate, ProtocolChanged

    real_exists = catalog.store.table_exists
    # the existence check ran before the other writer's insert
    monkeypatch.setattr(catalog.store, "table_exists", lambda ns, name: False)
    other = Catalog(catalog.uri, warehouse=catalog.warehouse, properties=catalog.properties)
    other.create_table("db.race", SCHEMA)
    with pytest.raises(ConcurrentCreate) as info:
        catalog.create_table("db.race", SCHEMA)
    assert isinstance(info.value, ProtocolChanged) and isinstance(info.value, TableAlreadyExists)
    monkeypatch.setattr(catalog.store, "table_exists", real_exists)
    metadata_dir = catalog.load_table("db.race").location + "/metadata"
    assert len(files_under(catalog, metadata_dir)) == 1  # the loser's metadata file was removed
    other.close()


def test_a_table_created_with_rows_has_them_in_its_first_metadata_version(
    catalog: Catalog,
) -> None:
    table = catalog.create_table(
        "db.seeded", SCHEMA, partition_by=["region"], data=rows(range(6), "eu")
    )
    (snapshot,) = table.snapshots()
    assert snapshot.operation == "append" and snapshot.parent_snapshot_id is None
    assert table.metadata.metadata_log == ()  # one version: never seen empty
    metadata_files = [p for p in files_under(catalog, table.location + "/metadata")]
    assert len([p for p in metadata_files if p.endswith(".metadata.json")]) == 1
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(6))
    from pyiceberg.catalog.sql import SqlCatalog

    py = SqlCatalog(
        catalog.name, uri=catalog.uri, warehouse=catalog.warehouse, **catalog.properties
    )
    try:
        assert py.load_table("db.seeded").scan().to_arrow().num_rows == 6
    finally:
        py.engine.dispose()


def test_a_create_with_rows_that_loses_the_race_leaves_none_of_its_files(
    catalog: Catalog, monkeypatch
) -> None:
    from lakecat.metadata.errors import ConcurrentCreate

    monkeypatch.setattr(catalog.store, "table_exists", lambda ns, name: False)
    other = Catalog(catalog.uri, warehouse=catalog.warehouse, properties=catalog.properties)
    winner = other.create_table("db.race", SCHEMA)
    before = set(files_under(catalog, winner.location))
    with pytest.raises(ConcurrentCreate):
        catalog.create_table("db.race", SCHEMA, data=rows(range(3), "eu"))
    # its data file, manifest, manifest list and metadata file are gone
    assert set(files_under(catalog, winner.location)) == before
    other.close()


def test_scan_with_a_limit_stops_reading_early(table) -> None:
    for day in range(1, 9):
        table.append(rows(range(day * 10, day * 10 + 10), "eu", day=day))
    read: list[str] = []
    scan = table.scan()
    original = scan._read_one

    def counting(f, *args):  # type: ignore[no-untyped-def]
        read.append(f.file_path)
        return original(f, *args)

    scan._read_one = counting  # type: ignore[method-assign]
    got = scan.to_arrow(limit=15)
    assert got.num_rows == 15
    assert len(read) < 8  # not every file was read


def test_replacing_a_ref_keeps_its_retention(table) -> None:
    a = table.append(rows(range(1), "eu"))
    b = table.append(rows(range(1, 2), "eu"))
    table.create_tag("keep", a.snapshot_id, max_ref_age_ms=86_400_000)
    table.replace_tag("keep", b.snapshot_id)
    assert table.refs()["keep"].max_ref_age_ms == 86_400_000
    table.create_branch("b", a.snapshot_id, min_snapshots_to_keep=3)
    table.replace_branch("b", b.snapshot_id)
    assert table.refs()["b"].min_snapshots_to_keep == 3
