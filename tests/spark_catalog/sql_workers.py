"""The test side of ``sql_worker.py``: a Spark SQL session in a process of its own, driven line
by line (``Worker``), for the tests of concurrent statements. The ``workers`` fixture
(``conftest.py``) starts two, once per run, attached to one embedded catalog.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("sql_worker.py")
STDERR_TAIL_CHARS = 4000


class Worker:
    def __init__(self, root: Path, stderr: Path) -> None:
        self.stderr = stderr
        self._stderr = stderr.open("wb")  # a file, not a pipe: Spark's logging cannot block it
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )

    def send(self, sql: str, *, pause_before_commit: bool = False) -> None:
        assert self.process.stdin is not None
        command = {"sql": sql, "pause_before_commit": pause_before_commit}
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("@@"):
                message: dict[str, Any] = json.loads(line[2:])
                return message
        code = self.process.wait()
        self._stderr.flush()
        tail = self.stderr.read_text(errors="replace")[-STDERR_TAIL_CHARS:]
        raise AssertionError(
            f"the worker exited ({code}) without answering; the end of its stderr "
            f"({self.stderr}):\n{tail}"
        )

    def close(self) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.close()
            self.process.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):  # OSError: it died, the pipe is broken
            self.process.kill()
            self.process.wait()
        finally:
            self._stderr.close()
