"""The README's tour runs as written, so it cannot drift from the code.

Which blocks run: the ```python blocks of the section "## A short tour" (today one block:
create a table on the embedded catalog, write, read, time travel, row-level changes,
idempotent commits, schema and partition evolution), in order, in one namespace, in a fresh
working folder (the tour's ``Catalog.embedded("lake")`` lands in it). The tour defines its own
inputs (``arrow_table``, ``new_rows``, ``day_rows``, ``source``, ``rows``, ``batch``); nothing
is set up for it.

Which do not: blocks that use Spark (they import ``lakecat.spark_ext`` or use ``spark``:
today those under "## Spark" and "### Spark SQL catalog") need a JVM and a SparkSession, and
``bash`` blocks are not Python. Every other ```python block of the README must be a tour
block, so a new runnable example is either added to the tour (and run) or noticed here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from lakecat.catalog.commit.conflicts import APP_ID_KEY
from lakecat.catalog.table import Table

README = Path(__file__).resolve().parent.parent / "README.md"
TOUR = "## A short tour"


@dataclass(frozen=True)
class Block:
    section: str  # the nearest "## " heading above the block
    line: int  # the README line of the block's first code line
    code: str

    @property
    def uses_spark(self) -> bool:
        return re.search(r"\blakecat\.spark_ext\b|\bspark\b", self.code) is not None


def python_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    section = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line.strip()
        elif line.strip() == "```python":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append(Block(section, i + 2, "\n".join(lines[i + 1 : end]) + "\n"))
            i = end
        i += 1
    return blocks


def tour_blocks() -> list[Block]:
    return [b for b in python_blocks(README.read_text()) if b.section == TOUR]


def test_the_readme_has_a_tour_without_spark() -> None:
    blocks = tour_blocks()
    assert blocks, f"no ```python block under {TOUR!r} in README.md"
    assert not [b.line for b in blocks if b.uses_spark], "the tour must run without Spark"


def test_every_python_block_outside_the_tour_uses_spark() -> None:
    others = [b for b in python_blocks(README.read_text()) if b.section != TOUR]
    assert [b.line for b in others if not b.uses_spark] == []


def test_the_readme_tour_runs_top_to_bottom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme_tour"}
    try:
        for block in tour_blocks():
            # padded so that a traceback names the README's own line numbers
            source = "\n" * (block.line - 1) + block.code
            exec(compile(source, str(README), "exec"), namespace)
        check_what_the_tour_says(namespace)
    finally:
        catalog = namespace.get("catalog")
        close = getattr(catalog, "close", None)
        if close is not None:
            close()
    assert (tmp_path / "lake" / "catalog.db").is_file()


def check_what_the_tour_says(namespace: dict[str, object]) -> None:
    """A few of the tour's comments, checked on the table it leaves."""
    table = namespace["table"]
    assert isinstance(table, Table)
    # the re-run batch was skipped: one commit for ("nightly-load", 42)
    loads = [s for s in table.snapshots() if s.summary.get(APP_ID_KEY) == "nightly-load"]
    assert len(loads) == 1
    # the evolved schema reads every row, older files included, under the new names
    current = table.to_arrow()
    assert current.num_rows == table.scan().count() > 0
    assert "total" in current.column_names and "amount" not in current.column_names
