"""The README's quickstart (``examples/quickstart.py``) runs as written and shows what it says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "quickstart.py"


def test_the_quickstart_runs_and_every_concurrent_append_lands(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(QUICKSTART), str(tmp_path / "lake")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert "4 processes appended at once: 20 appends, all landed (200 rows" in out
    assert "none rewritten" in out
    assert "rows unchanged: True" in out
    assert "1 snapshot left, 339 rows" in out
    assert "history of shop.events" in out
