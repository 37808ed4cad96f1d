"""Copying a table's files by the plan ``rewrite_table_path`` makes: (source, target) pairs,
as ``RewritePathResult.copy_plan`` holds them or as its file list (``source,target`` lines)
writes them. Local paths and ``file:`` URIs only."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from lakecat.metadata.io import local_path


def _local(location: str) -> Path:
    path = local_path(location)
    assert path is not None, f"not a local location: {location}"
    return Path(path)


def planned_copies(file_list: str) -> list[tuple[str, str]]:
    """The (source, target) pairs of a copy plan's file list."""
    pairs = []
    for line in _local(file_list).read_text().splitlines():
        source, target = line.split(",")
        pairs.append((source, target))
    return pairs


def copy_files(plan: Iterable[tuple[str, str]]) -> int:
    """Copy each source to its target (folders made as needed); how many files were copied."""
    count = 0
    for source, target in plan:
        destination = _local(target)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_local(source), destination)
        count += 1
    return count
