"""A throw-away PostgreSQL server for the tests and the benchmarks.

A cluster in a temp folder made by the local binaries (``initdb``, ``pg_ctl``, ``postgres``
on PATH or in ``/usr/lib/postgresql/<version>/bin``): trust authentication, listening on
127.0.0.1 only on a free port, its unix socket inside the temp folder, no fsync (durability
is not worth it for a server that is deleted afterwards). PostgreSQL refuses to run as root,
so as root the server runs as the ``postgres`` OS user (which Debian's ``postgresql`` package
creates; ``.ci/run`` installs it). ``tests/conftest.py`` and ``benchmarks/common.py`` use it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

OS_USER = "postgres"
SUPERUSER = "postgres"
_PROGRAMS = ("initdb", "pg_ctl", "postgres")
_START_ATTEMPTS = 3


class LocalPostgresError(RuntimeError):
    """The server could not be set up; the message says why and what to install."""


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
        if all((folder / program).is_file() for program in _PROGRAMS):
            return folder
    return None


class LocalPostgres:
    """Use as a context manager: started on enter, stopped and deleted on exit."""

    def __init__(self, bindir: Path | None = None, *, prefix: str = "lakecat-pg-") -> None:
        found = bindir or find_postgres_bindir()
        if found is None:
            raise LocalPostgresError(
                "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or in "
                "/usr/lib/postgresql/*/bin"
            )
        self._bindir = found
        self._run_as = _os_user_for_postgres()
        self._base = Path(tempfile.mkdtemp(prefix=prefix))
        self._data = self._base / "data"
        self._log = self._base / "server.log"
        self._started = False
        self.port = 0
        if self._run_as is not None:
            # mkdtemp made the folder 0700 for us; the server's user must own it instead.
            os.chown(self._base, self._run_as.pw_uid, self._run_as.pw_gid)

    def __enter__(self) -> LocalPostgres:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The server's SQLAlchemy URL without a database."""
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}"

    def start(self) -> int:
        self._command(
            "initdb",
            *("-D", str(self._data), "-U", SUPERUSER, "--auth=trust"),
            *("-E", "UTF8", "--locale=C", "--no-sync"),
        )
        failures: list[str] = []
        for _ in range(_START_ATTEMPTS):  # the free port may be taken before the server binds
            port = free_port()
            options = " ".join(
                [
                    "-c listen_addresses=127.0.0.1",
                    f"-p {port}",
                    f"-k {self._base}",
                    "-c max_connections=200",
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
                self.port = port
                return port
            failures.append(result.stdout + result.stderr + self._server_log())
        raise LocalPostgresError("could not start PostgreSQL:\n" + "\n---\n".join(failures))

    def stop(self) -> None:
        try:
            if self._started:
                self._command(
                    "pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop", check=False
                )
        finally:
            shutil.rmtree(self._base, ignore_errors=True)

    def create_database(self, name: str) -> str:
        """Create database ``name`` and return its SQLAlchemy URL."""
        engine = sa.create_engine(
            f"{self.base_url}/postgres", isolation_level="AUTOCOMMIT", poolclass=NullPool
        )
        try:
            with engine.connect() as connection:
                connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        finally:
            engine.dispose()
        return f"{self.base_url}/{name}"

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
            raise LocalPostgresError(
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
        return pwd.getpwnam(OS_USER)
    except KeyError:
        raise LocalPostgresError(
            "running as root, and PostgreSQL refuses to run as root, but there is no "
            f"{OS_USER!r} OS user to run it as: install Debian's postgresql package "
            "(.ci/run does) or create the user"
        ) from None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
