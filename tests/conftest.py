"""Fixtures shared by the whole suite.

Backends
    ``catalog_url`` is parametrized over ``sqlite`` and ``postgres``: every contract test that
    takes it runs against a fresh SQLite file and against a fresh schema (see ``postgres_url``)
    on a real PostgreSQL server. The ``postgres`` cases carry the ``postgres`` marker, so
    ``pytest -m "not postgres"`` runs SQLite only.

PostgreSQL
    ``postgres_server`` starts a real server once per test session (once per xdist worker) from
    the local binaries (``initdb``, ``pg_ctl``, ``postgres`` on PATH or in
    ``/usr/lib/postgresql/<version>/bin``): a throw-away cluster in a temp folder, trust
    authentication, listening on 127.0.0.1 only, on a free port, with its unix socket inside the
    temp folder. PostgreSQL refuses to run as root, so as root the server runs as the
    ``postgres`` OS user (which Debian's ``postgresql`` package creates; ``.ci/run`` installs it).
    Set ``LAKECAT_TEST_POSTGRES_URL`` (a SQLAlchemy URL to a database in which the user may
    CREATE SCHEMA) to use an existing server instead.

    Without PostgreSQL binaries the postgres cases are skipped, except under ``CI=true``, where
    they fail: CI must run them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

POSTGRES_URL_ENV = "LAKECAT_TEST_POSTGRES_URL"
_POSTGRES_OS_USER = "postgres"
_POSTGRES_SUPERUSER = "postgres"
_POSTGRES_PROGRAMS = ("initdb", "pg_ctl", "postgres")
_START_ATTEMPTS = 3
_TEST_DATABASE = "lakecat_tests"


# -- backends ------------------------------------------------------------------------------


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
        reason = (
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or in "
            f"/usr/lib/postgresql/*/bin; install PostgreSQL or set {POSTGRES_URL_ENV}"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the PostgreSQL tests must run in CI)")
        pytest.skip(reason)
    server = _LocalPostgres(bindir)
    try:
        port = server.start()
        base = f"postgresql+psycopg://{_POSTGRES_SUPERUSER}@127.0.0.1:{port}"
        PostgresServer(url=f"{base}/postgres")._run_admin(f"CREATE DATABASE {_TEST_DATABASE}")
        yield PostgresServer(url=f"{base}/{_TEST_DATABASE}")
    finally:
        server.stop()


def find_postgres_bindir() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres: PATH first, then the newest Debian one."""
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent)
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = [p for p in debian.iterdir() if p.name.isdigit()]
        candidates += [p / "bin" for p in sorted(versions, key=lambda p: -int(p.name))]
    for folder in candidates:
        if all((folder / program).is_file() for program in _POSTGRES_PROGRAMS):
            return folder
    return None


class _LocalPostgres:
    """A throw-away cluster in a temp folder, run as the postgres OS user when we are root."""

    def __init__(self, bindir: Path) -> None:
        self._bindir = bindir
        self._run_as = _os_user_for_postgres()
        self._base = Path(tempfile.mkdtemp(prefix="lakecat-pg-"))
        self._data = self._base / "data"
        self._log = self._base / "server.log"
        self._started = False
        if self._run_as is not None:
            # mkdtemp made the folder 0700 for us; the server's user must own it instead.
            os.chown(self._base, self._run_as.pw_uid, self._run_as.pw_gid)

    def start(self) -> int:
        self._command(
            "initdb",
            *("-D", str(self._data), "-U", _POSTGRES_SUPERUSER, "--auth=trust"),
            *("-E", "UTF8", "--locale=C", "--no-sync"),
        )
        failures: list[str] = []
        for _ in range(_START_ATTEMPTS):  # the free port may be taken before the server binds
            port = _free_port()
            options = " ".join(
                [
                    "-c listen_addresses=127.0.0.1",
                    f"-p {port}",
                    f"-k {self._base}",
                    "-c max_connections=200",
                    # A throw-away cluster: durability is not worth the fsyncs.
                    "-c fsync=off",
                    "-c synchronous_commit=off",
                    "-c full_page_writes=off",
                ]
            )
            result = self._command(
                "pg_ctl",
                *("-D", str(self._data), "-l", str(self._log), "-w", "-t", "60"),
                *("-o", options, "start"),
                check=False,
            )
            if result.returncode == 0:
                self._started = True
                return port
            failures.append(result.stdout + result.stderr + self._server_log())
        pytest.fail("could not start PostgreSQL:\n" + "\n---\n".join(failures))

    def stop(self) -> None:
        try:
            if self._started:
                self._command(
                    "pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop", check=False
                )
        finally:
            shutil.rmtree(self._base, ignore_errors=True)

    def _command(
        self, program: str, *arguments: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        command = [str(self._bindir / program), *arguments]
        if self._run_as is not None:
            command = ["runuser", "-u", self._run_as.pw_name, "--", *command]
        result = subprocess.run(
            command,
            cwd=self._base,  # the server's user may not be allowed into our working directory
            env={**os.environ, "LC_ALL": "C"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and result.returncode != 0:
            pytest.fail(
                f"{' '.join(command)} failed ({result.returncode}):\n"
                f"{result.stdout}{result.stderr}{self._server_log()}"
            )
        return result

    def _server_log(self) -> str:
        try:
            return self._log.read_text(errors="replace")
        except OSError:
            return ""


def _os_user_for_postgres() -> pwd.struct_passwd | None:
    """None when we may run the server ourselves; the postgres user's entry when root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(_POSTGRES_OS_USER)
    except KeyError:
        pytest.fail(
            "running as root, and PostgreSQL refuses to run as root, but there is no "
            f"{_POSTGRES_OS_USER!r} OS user to run it as: install Debian's postgresql package "
            f"(.ci/run does), create the user, or set {POSTGRES_URL_ENV}"
        )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
