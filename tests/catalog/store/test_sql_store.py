"""The pointer store's contract, on SQLite and PostgreSQL, and its failure classification.

Concurrency lives in test_sql_store_concurrency.py and pyiceberg interop in
test_sql_store_interop.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import psycopg.errors
import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from lakecat.catalog.store.db import is_connection_lost, is_retryable, is_unique_violation
from lakecat.catalog.store.store import PropertiesUpdateSummary, SqlCatalogStore, TablePointer
from lakecat.metadata.errors import (
    CatalogUnavailable,
    CommitFailed,
    CommitStateUnknown,
    InvalidIdentifier,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    TableAlreadyExists,
    UnsupportedFeature,
    ValidationError,
    ViewAlreadyExists,
)

V0 = "file:///warehouse/db/events/metadata/00000-a.metadata.json"
V1 = "file:///warehouse/db/events/metadata/00001-b.metadata.json"
V2 = "file:///warehouse/db/events/metadata/00002-c.metadata.json"


@pytest.fixture
def store(catalog_url: str) -> Iterator[SqlCatalogStore]:
    with SqlCatalogStore(catalog_url) as opened:
        yield opened


@pytest.fixture
def events(store: SqlCatalogStore) -> SqlCatalogStore:
    """A store with namespace ``db`` and table ``db.events`` pointing at V0."""
    store.create_namespace("db")
    store.create_table_row("db", "events", V0)
    return store


def raw_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(sa.text(sql))]
    finally:
        engine.dispose()


def raw_execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            for statement in statements:
                connection.execute(sa.text(statement))
    finally:
        engine.dispose()


# -- namespaces ----------------------------------------------------------------------------


def test_created_namespace_exists_and_is_listed(store: SqlCatalogStore) -> None:
    assert not store.namespace_exists("db")
    store.create_namespace("db")
    assert store.namespace_exists("db")
    assert store.namespace_exists(("db",))
    assert store.list_namespaces() == [("db",)]


def test_list_namespaces_returns_direct_children_only(store: SqlCatalogStore) -> None:
    for namespace in ["a", "a.b", "a.b.c", "a.d", "e"]:
        store.create_namespace(namespace)
    assert store.list_namespaces() == [("a",), ("e",)]
    assert store.list_namespaces("a") == [("a", "b"), ("a", "d")]
    assert store.list_namespaces(("a", "b")) == [("a", "b", "c")]
    assert store.list_namespaces("a.b.c") == []


def test_parent_of_a_nested_namespace_exists_implicitly(store: SqlCatalogStore) -> None:
    store.create_namespace("x.y.z")
    assert store.namespace_exists("x")
    assert store.namespace_exists("x.y")
    assert store.list_namespaces() == [("x",)]
    assert store.list_namespaces("x") == [("x", "y")]
    with pytest.raises(NamespaceAlreadyExists):
        store.create_namespace("x")


def test_namespace_with_only_a_table_row_exists(catalog_url: str, store: SqlCatalogStore) -> None:
    store.initialize()
    raw_execute(
        catalog_url,
        "INSERT INTO iceberg_tables VALUES "
        "('lakecat', 'loose.ns', 't', 'file:///m.json', NULL, 'TABLE')",
    )
    assert store.namespace_exists("loose")
    assert store.namespace_exists("loose.ns")
    assert store.list_namespaces("loose") == [("loose", "ns")]
    assert store.list_tables("loose.ns") == ["t"]


def test_like_wildcards_in_names_match_only_themselves(store: SqlCatalogStore) -> None:
    store.create_namespace("a_b.c")
    store.create_namespace("p%")
    assert not store.namespace_exists("axb")
    assert not store.namespace_exists("a")
    assert not store.namespace_exists("pq")
    assert store.list_namespaces("a_b") == [("a_b", "c")]
    store.create_namespace("a!b")
    assert store.list_namespaces("a!b") == []


def test_creating_an_existing_namespace_raises(store: SqlCatalogStore) -> None:
    store.create_namespace("db", {"owner": "a"})
    with pytest.raises(NamespaceAlreadyExists):
        store.create_namespace("db", {"owner": "b"})
    assert store.load_namespace_properties("db") == {"owner": "a"}


def test_namespace_properties_round_trip_without_the_reserved_exists_key(
    catalog_url: str, store: SqlCatalogStore
) -> None:
    store.create_namespace("db", {"owner": "lake", "comment": ""})
    assert store.load_namespace_properties("db") == {"owner": "lake", "comment": ""}
    stored = raw_rows(
        catalog_url,
        "SELECT property_key, property_value FROM iceberg_namespace_properties ORDER BY 1",
    )
    assert stored == [("comment", ""), ("exists", "true"), ("owner", "lake")]


def test_update_namespace_properties_removes_updates_and_reports(store: SqlCatalogStore) -> None:
    store.create_namespace("db", {"a": "1", "b": "2"})
    summary = store.update_namespace_properties(
        "db", removals=["a", "missing"], updates={"b": "20", "c": "3"}
    )
    assert summary == PropertiesUpdateSummary(
        removed=("a",), updated=("b", "c"), missing=("missing",)
    )
    assert store.load_namespace_properties("db") == {"b": "20", "c": "3"}


def test_removing_every_property_keeps_the_namespace(store: SqlCatalogStore) -> None:
    store.create_namespace("db", {"a": "1"})
    store.update_namespace_properties("db", removals=["a"])
    assert store.namespace_exists("db")
    assert store.load_namespace_properties("db") == {}


@pytest.mark.parametrize(
    ("removals", "updates"),
    [
        (["exists"], {}),
        ([], {"exists": "false"}),
        (["k"], {"k": "v"}),
        ([""], {}),
        ([], {"k": "x" * 1001}),
        ([], {"k" * 256: "v"}),
    ],
    ids=["remove-reserved", "set-reserved", "overlap", "empty-key", "long-value", "long-key"],
)
def test_bad_property_updates_are_refused_before_any_write(
    store: SqlCatalogStore, removals: list[str], updates: dict[str, str]
) -> None:
    store.create_namespace("db", {"k": "v0"})
    with pytest.raises(ValidationError):
        store.update_namespace_properties("db", removals=removals, updates=updates)
    assert store.load_namespace_properties("db") == {"k": "v0"}


def test_drop_namespace_removes_it(store: SqlCatalogStore) -> None:
    store.create_namespace("db", {"a": "1"})
    store.drop_namespace("db")
    assert not store.namespace_exists("db")
    assert store.list_namespaces() == []


def test_dropping_a_namespace_with_tables_raises_not_empty(events: SqlCatalogStore) -> None:
    with pytest.raises(NamespaceNotEmpty):
        events.drop_namespace("db")
    assert events.table_exists("db", "events")


def test_dropping_a_namespace_with_children_raises_not_empty(store: SqlCatalogStore) -> None:
    store.create_namespace("a")
    store.create_namespace("a.b")
    with pytest.raises(NamespaceNotEmpty):
        store.drop_namespace("a")
    store.drop_namespace("a.b")
    store.drop_namespace("a")
    assert store.list_namespaces() == []


@pytest.mark.parametrize(
    "operation",
    [
        lambda s: s.drop_namespace("nope"),
        lambda s: s.load_namespace_properties("nope"),
        lambda s: s.update_namespace_properties("nope", updates={"a": "b"}),
        lambda s: s.list_namespaces("nope"),
        lambda s: s.list_tables("nope"),
        lambda s: s.create_table_row("nope", "t", V0),
    ],
    ids=["drop", "load", "update", "list-children", "list-tables", "create-table"],
)
def test_operations_on_a_missing_namespace_raise_no_such_namespace(
    store: SqlCatalogStore, operation: Callable[[SqlCatalogStore], object]
) -> None:
    with pytest.raises(NoSuchNamespace):
        operation(store)
    assert store.list_namespaces() == []


def test_catalog_names_partition_the_rows(catalog_url: str, store: SqlCatalogStore) -> None:
    store.create_namespace("db")
    with SqlCatalogStore(catalog_url, catalog_name="other") as other:
        assert other.list_namespaces() == []
        other.create_namespace("db")
        other.create_table_row("db", "t", V0)
        assert store.list_tables("db") == []


@pytest.mark.parametrize("bad", ["a/b", "..", "a..b", ("a.b",), "a\x00"])
def test_invalid_namespaces_are_refused_before_any_io(store: SqlCatalogStore, bad: Any) -> None:
    with pytest.raises(InvalidIdentifier):
        store.create_namespace(bad)
    assert store.list_namespaces() == []


# -- tables --------------------------------------------------------------------------------


def test_created_table_row_is_listed_and_points_at_its_metadata(events: SqlCatalogStore) -> None:
    assert events.table_exists("db", "events")
    assert events.list_tables("db") == ["events"]
    assert events.get_metadata_location("db", "events") == V0
    assert events.get_table_pointer(("db",), "events") == TablePointer(V0, None)


def test_creating_a_duplicate_table_raises_and_keeps_the_original(events: SqlCatalogStore) -> None:
    with pytest.raises(TableAlreadyExists):
        events.create_table_row("db", "events", V1)
    assert events.get_metadata_location("db", "events") == V0


def test_tables_in_nested_namespaces_are_separate(store: SqlCatalogStore) -> None:
    store.create_namespace("a")
    store.create_namespace("a.b")
    store.create_table_row("a", "t", V0)
    store.create_table_row("a.b", "t", V1)
    assert store.list_tables("a") == ["t"]
    assert store.get_metadata_location("a.b", "t") == V1
    assert store.get_metadata_location("a", "t") == V0


def test_missing_tables_raise_no_such_table(events: SqlCatalogStore) -> None:
    assert not events.table_exists("db", "nope")
    with pytest.raises(NoSuchTable):
        events.get_metadata_location("db", "nope")
    with pytest.raises(NoSuchTable):
        events.drop_table_row("db", "nope")
    with pytest.raises(NoSuchTable):
        events.rename_table("db", "nope", "db", "other")


def test_rename_moves_the_row_within_and_across_namespaces(events: SqlCatalogStore) -> None:
    events.swap_metadata_location("db", "events", expected=V0, new=V1)
    events.rename_table("db", "events", "db", "renamed")
    assert events.list_tables("db") == ["renamed"]
    events.create_namespace("archive")
    events.rename_table("db", "renamed", "archive", "events")
    assert events.list_tables("db") == []
    assert events.get_table_pointer("archive", "events") == TablePointer(V1, V0)


def test_rename_onto_an_existing_table_raises(events: SqlCatalogStore) -> None:
    events.create_table_row("db", "other", V1)
    with pytest.raises(TableAlreadyExists):
        events.rename_table("db", "events", "db", "other")
    assert events.get_metadata_location("db", "events") == V0
    assert events.get_metadata_location("db", "other") == V1


def test_rename_into_a_missing_namespace_raises(events: SqlCatalogStore) -> None:
    with pytest.raises(NoSuchNamespace):
        events.rename_table("db", "events", "nope", "events")
    assert events.list_tables("db") == ["events"]


def test_rename_onto_itself_is_a_no_op(events: SqlCatalogStore) -> None:
    events.rename_table("db", "events", "db", "events")
    assert events.list_tables("db") == ["events"]


def test_drop_table_row_returns_the_last_metadata_location(events: SqlCatalogStore) -> None:
    events.swap_metadata_location("db", "events", expected=V0, new=V1)
    assert events.drop_table_row("db", "events") == V1
    assert not events.table_exists("db", "events")
    events.drop_namespace("db")


def test_view_rows_are_not_tables(catalog_url: str, events: SqlCatalogStore) -> None:
    raw_execute(
        catalog_url,
        "INSERT INTO iceberg_tables VALUES ('lakecat', 'db', 'v', 'file:///v.json', NULL, 'VIEW')",
    )
    assert events.list_tables("db") == ["events"]
    assert not events.table_exists("db", "v")
    with pytest.raises(NoSuchTable):
        events.get_metadata_location("db", "v")
    with pytest.raises(NoSuchTable):
        events.swap_metadata_location("db", "v", expected="file:///v.json", new=V1)
    with pytest.raises(NoSuchTable):
        events.drop_table_row("db", "v")
    with pytest.raises(TableAlreadyExists):
        events.create_table_row("db", "v", V1)
    events.drop_table_row("db", "events")
    with pytest.raises(NamespaceNotEmpty):  # the view still lives there
        events.drop_namespace("db")


# -- views: rows of type VIEW, with the table rows' contract -----------------------------


def test_view_rows_are_created_listed_swapped_renamed_and_dropped(
    catalog_url: str, events: SqlCatalogStore
) -> None:
    events.create_view_row("db", "v", V0)
    assert events.list_views("db") == ["v"] and events.list_tables("db") == ["events"]
    assert events.view_exists("db", "v") and not events.table_exists("db", "v")
    assert events.get_view_location("db", "v") == V0
    events.swap_view_location("db", "v", expected=V0, new=V1)
    with pytest.raises(CommitFailed):
        events.swap_view_location("db", "v", expected=V0, new=V2)
    assert events.get_view_location("db", "v") == V1
    rows = raw_rows(
        catalog_url,
        "SELECT table_name, iceberg_type, previous_metadata_location "
        "FROM iceberg_tables WHERE table_name = 'v'",
    )
    assert rows == [("v", "VIEW", V0)]
    events.create_namespace("other")
    events.rename_view("db", "v", "other", "w")
    assert events.list_views("db") == [] and events.list_views("other") == ["w"]
    assert events.drop_view_row("other", "w") == V1
    assert not events.view_exists("other", "w")


def test_a_view_and_a_table_never_share_a_name(events: SqlCatalogStore) -> None:
    with pytest.raises(ViewAlreadyExists, match=r"table db\.events already exists"):
        events.create_view_row("db", "events", V1)
    events.create_view_row("db", "v", V0)
    with pytest.raises(TableAlreadyExists, match=r"view db\.v already exists"):
        events.create_table_row("db", "v", V1)
    with pytest.raises(TableAlreadyExists, match=r"view db\.v already exists"):
        events.rename_table("db", "events", "db", "v")
    with pytest.raises(ViewAlreadyExists, match=r"table db\.events already exists"):
        events.rename_view("db", "v", "db", "events")
    with pytest.raises(ViewAlreadyExists, match=r"view db\.v already exists"):
        events.create_view_row("db", "v", V1)
    assert events.get_view_location("db", "v") == V0
    assert events.get_metadata_location("db", "events") == V0


def test_table_operations_never_touch_a_view_and_the_other_way_round(
    events: SqlCatalogStore,
) -> None:
    events.create_view_row("db", "v", V0)
    for call in (
        lambda: events.get_view_location("db", "events"),
        lambda: events.swap_view_location("db", "events", expected=V0, new=V1),
        lambda: events.drop_view_row("db", "events"),
        lambda: events.rename_view("db", "events", "db", "x"),
    ):
        with pytest.raises(NoSuchView):
            call()
    with pytest.raises(NoSuchTable):
        events.swap_metadata_location("db", "v", expected=V0, new=V1)
    assert events.get_metadata_location("db", "events") == V0
    assert events.get_view_location("db", "v") == V0
    with pytest.raises(NoSuchNamespace):
        events.create_view_row("missing", "v", V0)
    with pytest.raises(NoSuchNamespace):
        events.list_views("missing")


def test_new_rows_are_typed_as_tables(catalog_url: str, events: SqlCatalogStore) -> None:
    rows = raw_rows(catalog_url, "SELECT table_name, iceberg_type FROM iceberg_tables")
    assert rows == [("events", "TABLE")]


@pytest.mark.parametrize(
    ("location", "error"),
    [("", ValidationError), ("x" * 1001, ValidationError)],
    ids=["empty", "too-long"],
)
def test_bad_metadata_locations_are_refused(
    events: SqlCatalogStore, location: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        events.create_table_row("db", "t", location)
    with pytest.raises(error):
        events.swap_metadata_location("db", "events", expected=V0, new=location)
    assert events.list_tables("db") == ["events"]
    assert events.get_metadata_location("db", "events") == V0


# -- schema --------------------------------------------------------------------------------

JAVA_V0_DDL = (
    "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL,"
    "table_namespace VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,"
    "metadata_location VARCHAR(1000),previous_metadata_location VARCHAR(1000),"
    "PRIMARY KEY (catalog_name, table_namespace, table_name))",
    "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,"
    "namespace VARCHAR(255) NOT NULL,property_key VARCHAR(255),property_value VARCHAR(1000),"
    "PRIMARY KEY (catalog_name, namespace, property_key))",
)


def test_store_works_on_java_v0_tables_without_iceberg_type(catalog_url: str) -> None:
    raw_execute(catalog_url, *JAVA_V0_DDL)
    with SqlCatalogStore(catalog_url) as store:
        store.create_namespace("db")
        store.create_table_row("db", "events", V0)
        store.swap_metadata_location("db", "events", expected=V0, new=V1)
        assert store.list_tables("db") == ["events"]
        assert store.get_table_pointer("db", "events") == TablePointer(V1, V0)
        rows = raw_rows(catalog_url, "SELECT * FROM iceberg_tables")
        assert rows == [("lakecat", "db", "events", V1, V0)]  # no column was added
        store.rename_table("db", "events", "db", "e2")
        assert store.drop_table_row("db", "e2") == V1


def test_a_v0_database_has_no_views_and_refuses_to_create_one(catalog_url: str) -> None:
    raw_execute(catalog_url, *JAVA_V0_DDL)
    with SqlCatalogStore(catalog_url) as store:
        store.create_namespace("db")
        store.create_table_row("db", "events", V0)
        assert store.list_views("db") == [] and not store.view_exists("db", "events")
        with pytest.raises(NoSuchView):
            store.get_view_location("db", "events")
        with pytest.raises(UnsupportedFeature, match=r"jdbc\.schema-version=V1"):
            store.create_view_row("db", "v", V0)
        assert store.list_tables("db") == ["events"]


def test_the_store_creates_the_jdbc_catalog_tables(catalog_url: str) -> None:
    with SqlCatalogStore(catalog_url) as store:
        store.initialize()
        engine = sa.create_engine(catalog_url, poolclass=NullPool)
        try:
            inspector = sa.inspect(engine)
            tables = {c["name"]: c for c in inspector.get_columns("iceberg_tables")}
            props = {c["name"]: c for c in inspector.get_columns("iceberg_namespace_properties")}
            table_pk = inspector.get_pk_constraint("iceberg_tables")["constrained_columns"]
            props_pk = inspector.get_pk_constraint("iceberg_namespace_properties")[
                "constrained_columns"
            ]
        finally:
            engine.dispose()
    assert list(tables) == [
        "catalog_name",
        "table_namespace",
        "table_name",
        "metadata_location",
        "previous_metadata_location",
        "iceberg_type",
    ]
    assert [tables[n]["type"].length for n in tables] == [255, 255, 255, 1000, 1000, 5]
    assert table_pk == ["catalog_name", "table_namespace", "table_name"]
    assert list(props) == ["catalog_name", "namespace", "property_key", "property_value"]
    assert props_pk == ["catalog_name", "namespace", "property_key"]


def test_missing_tables_are_an_error_when_schema_creation_is_off(catalog_url: str) -> None:
    with (
        SqlCatalogStore(catalog_url, create_schema=False) as store,
        pytest.raises(CatalogUnavailable),
    ):
        store.list_namespaces()


def test_constructor_does_no_io_and_first_use_reports_an_unreachable_database(
    tmp_path: Any,
) -> None:
    store = SqlCatalogStore(f"sqlite:///{tmp_path}/missing-dir/catalog.db")
    with pytest.raises(CatalogUnavailable):
        store.list_namespaces()
    assert not (tmp_path / "missing-dir").exists()


def test_bad_urls_and_names_are_validation_errors() -> None:
    with pytest.raises(ValidationError):
        SqlCatalogStore("not a url")
    with pytest.raises(ValidationError):
        SqlCatalogStore("sqlite://", catalog_name="")


def test_repr_and_safe_url_hide_passwords() -> None:
    store = SqlCatalogStore("postgresql+psycopg://u:secret@127.0.0.1:1/db")
    assert "secret" not in repr(store)
    assert "secret" not in store.safe_url


# -- the compare-and-swap ------------------------------------------------------------------


def test_swap_moves_the_pointer_and_records_the_previous_one(events: SqlCatalogStore) -> None:
    events.swap_metadata_location("db", "events", expected=V0, new=V1)
    assert events.get_table_pointer("db", "events") == TablePointer(V1, V0)
    events.swap_metadata_location("db", "events", expected=V1, new=V2)
    assert events.get_table_pointer("db", "events") == TablePointer(V2, V1)


def test_swap_from_a_stale_pointer_fails_and_changes_nothing(events: SqlCatalogStore) -> None:
    events.swap_metadata_location("db", "events", expected=V0, new=V1)
    with pytest.raises(CommitFailed) as failure:
        events.swap_metadata_location("db", "events", expected=V0, new=V2)
    assert V1 in str(failure.value)
    assert events.get_table_pointer("db", "events") == TablePointer(V1, V0)


def test_swap_on_a_missing_table_raises_no_such_table(events: SqlCatalogStore) -> None:
    with pytest.raises(NoSuchTable):
        events.swap_metadata_location("db", "nope", expected=V0, new=V1)
    events.drop_table_row("db", "events")
    with pytest.raises(NoSuchTable):
        events.swap_metadata_location("db", "events", expected=V0, new=V1)


def test_swap_is_scoped_to_one_table(events: SqlCatalogStore) -> None:
    events.create_table_row("db", "other", V0)
    events.swap_metadata_location("db", "events", expected=V0, new=V1)
    assert events.get_metadata_location("db", "other") == V0


# -- failure classification (fault injection) ---------------------------------------------


class InjectedError:
    """Driver-level errors for the backend under test, raised where the real ones would be."""

    def __init__(self, store: SqlCatalogStore) -> None:
        self.dialect = store.engine.dialect
        self.dbapi = self.dialect.loaded_dbapi

    def plain(self) -> Exception:
        error: Exception = self.dbapi.OperationalError("injected failure")
        return error

    def retryable(self) -> Exception:
        if self.dialect.name == "sqlite":
            busy = sqlite3.OperationalError("database is locked")
            busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
            return busy
        return psycopg.errors.SerializationFailure("injected serialization failure")

    def treat_as_disconnect(self, monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
        real = self.dialect.is_disconnect

        def is_disconnect(e: Exception, connection: Any, cursor: Any) -> bool:
            return e is error or bool(real(e, connection, cursor))

        monkeypatch.setattr(self.dialect, "is_disconnect", is_disconnect)


def fail_updates(
    monkeypatch: pytest.MonkeyPatch,
    store: SqlCatalogStore,
    make_error: Callable[[], Exception],
    *,
    times: int = 1_000,
    after_executing: bool = False,
) -> list[int]:
    """Make the next ``times`` UPDATE statements raise; returns a list counting the failures."""
    dialect = store.engine.dialect
    real = dialect.do_execute
    failures: list[int] = []

    def do_execute(cursor: Any, statement: str, parameters: Any, context: Any = None) -> None:
        if statement.lstrip().upper().startswith("UPDATE") and len(failures) < times:
            failures.append(1)
            if after_executing:
                real(cursor, statement, parameters, context)
            raise make_error()
        real(cursor, statement, parameters, context)

    monkeypatch.setattr(dialect, "do_execute", do_execute)
    return failures


def fail_commits(
    monkeypatch: pytest.MonkeyPatch,
    store: SqlCatalogStore,
    make_error: Callable[[], Exception],
    *,
    times: int = 1_000,
    after_committing: bool = False,
) -> list[int]:
    dialect = store.engine.dialect
    real = dialect.do_commit
    failures: list[int] = []

    def do_commit(dbapi_connection: Any) -> None:
        if len(failures) < times:
            failures.append(1)
            if after_committing:
                real(dbapi_connection)
            raise make_error()
        real(dbapi_connection)

    monkeypatch.setattr(dialect, "do_commit", do_commit)
    return failures


def pointer_after(catalog_url: str) -> str:
    with SqlCatalogStore(catalog_url) as fresh:
        return fresh.get_metadata_location("db", "events")


def test_unreachable_database_is_unavailable_not_unknown(tmp_path: Any) -> None:
    store = SqlCatalogStore(f"sqlite:///{tmp_path}/no/such/dir/catalog.db")
    with pytest.raises(CatalogUnavailable):
        store.swap_metadata_location("db", "events", expected=V0, new=V1)


@pytest.mark.postgres
def test_unreachable_postgres_is_unavailable_not_unknown() -> None:
    # Port 1 on loopback: nothing listens there, so the connection is refused at once.
    store = SqlCatalogStore("postgresql+psycopg://postgres@127.0.0.1:1/nowhere")
    with pytest.raises(CatalogUnavailable):
        store.swap_metadata_location("db", "events", expected=V0, new=V1)


def test_failure_to_begin_is_unavailable_not_unknown(
    catalog_url: str, events: SqlCatalogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject = InjectedError(events)

    def do_begin(dbapi_connection: Any) -> None:
        raise inject.plain()

    monkeypatch.setattr(events.engine.dialect, "do_begin", do_begin)
    with pytest.raises(CatalogUnavailable):
        events.swap_metadata_location("db", "events", expected=V0, new=V1)
    monkeypatch.undo()
    assert pointer_after(catalog_url) == V0


def test_update_refused_by_a_live_database_is_unavailable_and_not_committed(
    catalog_url: str, events: SqlCatalogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject = InjectedError(events)
    fail_updates(monkeypatch, events, inject.plain, after_executing=True)
    with pytest.raises(CatalogUnavailable) as raised:
        events.swap_metadata_location("db", "events", expected=V0, new=V1)
    assert not isinstance(raised.value, CommitStateUnknown)
    monkeypatch.undo()
    assert pointer_after(catalog_url) == V0


def test_connection_lost_after_the_update_was_sent_is_unknown(
    catalog_url: str, events: SqlCatalogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject = InjectedError(events)
    error = inject.plain()
    inject.treat_as_disconnect(monkeypatch, error)
    fail_updates(monkeypatch, events, lambda: error, after_executing=True)
    with pytest.raises(CommitStateUnknown):
        events.swap_metadata_location("db", "events", expected=V0, new=V1)
    monkeypatch.undo()
    assert pointer_after(catalog_url) in (V0, V1)


def test_commit_failing_before_it_reached_the_database_is_unknown(
    catalog_url: str, events: SqlCatalogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject = InjectedError(events)
    events.initialize()
    fail_commits(monkeypatch, events, inject.plain)
    with pytest.raises(CommitStateUnknown):
        events.swap_metadata_location("db", "events", expected=V0, new=V1)
    monkeypatch.undo()
    assert pointer_after(catalog_url) == V0


def test_commit_whose_reply_was_lost_is_unknown_although_it_landed(
    catalog_url: str, events: SqlCatalogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject = InjectedError(events)
    events.initialize()
    fail_commits(monkeypatch, events, inject.plain, after_committing=True)
    with pytest.raises(CommitStateUnknown):
        events.swap_metadata_location("db", "events", expected=V0, new=V1)
    monkeypatch.undo()
    assert pointer_after(catalog_url) == V1


def test_table_creation_with_an_unsure_commit_is_unknown(
    catalog_url: str, events: SqlCatalogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject = InjectedError(events)
    fail_commits(monkeypatch, events, inject.plain, after_committing=True)
    with pytest.raises(CommitStateUnknown):
        events.create_table_row("db", "new_table", V0)
    monkeypatch.undo()
    assert events.table_exists("db", "new_table")


def test_retryable_update_failures_are_retried_as_statements(
    catalog_url: str, events: SqlCatalogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject = InjectedError(events)
    failures = fail_updates(monkeypatch, events, inject.retryable, times=3)
    events.swap_metadata_location("db", "events", expected=V0, new=V1)
    assert len(failures) == 3
    assert events.get_table_pointer("db", "events") == TablePointer(V1, V0)


def test_retryable_commit_failures_are_retried_as_statements(
    catalog_url: str, events: SqlCatalogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject = InjectedError(events)
    events.initialize()
    failures = fail_commits(monkeypatch, events, inject.retryable, times=2)
    events.swap_metadata_location("db", "events", expected=V0, new=V1)
    assert len(failures) == 2
    assert events.get_metadata_location("db", "events") == V1


def test_busy_through_every_retry_is_unavailable_and_not_committed(
    catalog_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqlCatalogStore(catalog_url, max_statement_attempts=3) as store:
        store.create_namespace("db")
        store.create_table_row("db", "events", V0)
        failures = fail_updates(monkeypatch, store, InjectedError(store).retryable)
        with pytest.raises(CatalogUnavailable) as raised:
            store.swap_metadata_location("db", "events", expected=V0, new=V1)
        assert not isinstance(raised.value, CommitStateUnknown)
        assert len(failures) == 3
        monkeypatch.undo()
        assert store.get_metadata_location("db", "events") == V0


@pytest.mark.postgres
def test_backend_killed_between_update_and_commit_is_unknown(postgres_url: str) -> None:
    killer = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    killed: list[int] = []

    def kill_backend_before_commit(connection: sa.Connection) -> None:
        pid = connection.connection.dbapi_connection.info.backend_pid  # type: ignore[union-attr]
        with killer.connect() as admin:
            # The 5 s timeout makes pg_terminate_backend wait until the backend is gone.
            terminated = admin.execute(
                sa.text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid}
            ).scalar()
        assert terminated
        killed.append(pid)

    with SqlCatalogStore(postgres_url) as store:
        store.create_namespace("db")
        store.create_table_row("db", "events", V0)
        sa.event.listen(store.engine, "commit", kill_backend_before_commit)
        try:
            with pytest.raises(CommitStateUnknown):
                store.swap_metadata_location("db", "events", expected=V0, new=V1)
        finally:
            sa.event.remove(store.engine, "commit", kill_backend_before_commit)
        assert len(killed) == 1
        # The pointer is the old or the new one, never anything else. Here the COMMIT never
        # reached the server, so it rolled the UPDATE back.
        assert store.get_table_pointer("db", "events") == TablePointer(V0, None)
        # The store recovers: the next swap works on a fresh connection.
        store.swap_metadata_location("db", "events", expected=V0, new=V1)
    killer.dispose()


def sqlite_error(code: int) -> sqlite3.Error:
    error = sqlite3.OperationalError("sqlite error")
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


def classification_cases() -> list[Any]:
    return [
        pytest.param(sqlite_error(sqlite3.SQLITE_BUSY), False, True, id="sqlite-busy"),
        pytest.param(
            sqlite_error(sqlite3.SQLITE_BUSY_SNAPSHOT), False, True, id="sqlite-busy-snap"
        ),
        pytest.param(sqlite_error(sqlite3.SQLITE_LOCKED), False, True, id="sqlite-locked"),
        pytest.param(sqlite_error(sqlite3.SQLITE_IOERR), False, False, id="sqlite-ioerr"),
        pytest.param(sqlite_error(sqlite3.SQLITE_BUSY), True, False, id="sqlite-busy-lost-conn"),
        pytest.param(psycopg.errors.SerializationFailure("x"), False, True, id="pg-40001"),
        pytest.param(psycopg.errors.DeadlockDetected("x"), False, True, id="pg-40P01"),
        pytest.param(psycopg.errors.QueryCanceled("x"), False, False, id="pg-57014"),
        pytest.param(psycopg.errors.AdminShutdown("x"), True, False, id="pg-57P01-lost-conn"),
        pytest.param(psycopg.OperationalError("x"), False, False, id="pg-no-sqlstate"),
    ]


@pytest.mark.parametrize(("driver_error", "connection_lost", "retryable"), classification_cases())
def test_retryable_errors_are_classified_by_type_and_code(
    driver_error: Exception, connection_lost: bool, retryable: bool
) -> None:
    wrapped = sa.exc.OperationalError(
        "UPDATE ...", {}, driver_error, connection_invalidated=connection_lost
    )
    assert is_retryable(wrapped) is retryable
    assert is_connection_lost(wrapped) is connection_lost


def test_unique_violations_are_recognised_by_code() -> None:
    primary_key = sqlite3.IntegrityError("UNIQUE constraint failed")
    primary_key.sqlite_errorcode = sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY  # type: ignore[attr-defined]
    not_null = sqlite3.IntegrityError("NOT NULL constraint failed")
    not_null.sqlite_errorcode = sqlite3.SQLITE_CONSTRAINT_NOTNULL  # type: ignore[attr-defined]
    cases = [
        (primary_key, True),
        (not_null, False),
        (psycopg.errors.UniqueViolation("x"), True),
        (psycopg.errors.NotNullViolation("x"), False),
    ]
    for error, expected in cases:
        assert is_unique_violation(sa.exc.IntegrityError("INSERT", {}, error)) is expected
