"""The peer engines the interop tests start listen on loopback only (the suite talks to no
other address): Iceberg Java's Spark session binds where ``SPARK_LOCAL_IP`` says, which the
suite's ``spark_on_loopback`` fixture sets for every process it starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from java_session import JavaProcess, JavaTables
from listening import descendants, is_loopback, listening_addresses

pytestmark = [pytest.mark.interop, pytest.mark.spark]


def test_iceberg_javas_spark_session_listens_on_loopback_only(
    java_process: JavaProcess, tmp_path: Path
) -> None:
    JavaTables(java_process, tmp_path / "java", create=False)  # its Spark session is up
    pid = java_process.pid
    assert pid is not None
    listening = listening_addresses(descendants(pid) | {pid})
    if listening is None:
        pytest.skip("no /proc to list the process's sockets")
    assert listening, "Iceberg Java's Spark listens on no TCP socket: the check found none"
    assert [a for a in listening if not is_loopback(a)] == []
