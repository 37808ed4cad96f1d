"""Parsed metadata files by location, for the tables of one catalog instance.

A metadata file is written once and never changes (exclusive create, a new uuid per file),
so a location always means the same metadata: a ``load_table`` or commit refresh that finds
the pointer at a file this process already parsed, or wrote and committed itself, reuses it
instead of reading and parsing it again. Bounded: the least recently used files go first.

It also remembers the newest metadata it was given per table, which a parse of that table's
next version uses to reuse unchanged snapshot objects (``TableMetadata.from_json(previous=)``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from lakecat.metadata.table.table_metadata import TableMetadata

DEFAULT_MAX_FILES = 16


class MetadataFileCache:
    def __init__(self, max_files: int = DEFAULT_MAX_FILES) -> None:
        self.max_files = max_files
        self._files: OrderedDict[str, TableMetadata] = OrderedDict()
        self._latest: OrderedDict[str, TableMetadata] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, location: str) -> TableMetadata | None:
        with self._lock:
            found = self._files.get(location)
            if found is not None:
                self._files.move_to_end(location)
            return found

    def put(self, location: str, metadata: TableMetadata, *, table: str) -> None:
        if self.max_files <= 0:
            return
        with self._lock:
            for key, cache in ((location, self._files), (table, self._latest)):
                cache[key] = metadata
                cache.move_to_end(key)
                while len(cache) > self.max_files:
                    cache.popitem(last=False)

    def forget_table(self, table: str) -> None:
        """Drop what is remembered under ``table``'s name (dropped or renamed: the next table
        of that name is another one)."""
        with self._lock:
            self._latest.pop(table, None)

    def latest(self, table: str) -> TableMetadata | None:
        """The metadata last put for ``table`` (any version), if still remembered."""
        with self._lock:
            return self._latest.get(table)

    def __len__(self) -> int:
        return len(self._files)
