"""A bounded in-memory cache of decoded manifests.

Manifests are written once and never change, so their decoded entries can be kept and reused
by every scan, commit validation and manifest merge of the same process (Iceberg Java offers
the same with ``io.manifest.cache-enabled``). The cache belongs to one catalog instance; it is
bounded by the number of entries it holds and evicts the least recently used manifest.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from lakecat.metadata.datafile import ManifestEntry, ManifestFile
from lakecat.metadata.fileio import FileIO
from lakecat.metadata.manifest import UNASSIGNED_SEQ, read_manifest
from lakecat.metadata.partitioning import PartitionSpec
from lakecat.metadata.schema import Schema

DEFAULT_MAX_ENTRIES = 200_000

_Key = tuple[str, int, int, int, int]


class ManifestCache:
    """Decoded manifest entries keyed by manifest path (plus what inheritance depends on)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[_Key, tuple[ManifestEntry, ...]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def read(
        self,
        io: FileIO,
        manifest: ManifestFile,
        *,
        specs: Mapping[int, PartitionSpec],
        schema: Schema,
    ) -> tuple[ManifestEntry, ...]:
        """The manifest's entries, as :func:`read_manifest` returns them."""
        if manifest.sequence_number == UNASSIGNED_SEQ or self.max_entries <= 0:
            # not yet in a manifest list: inherited values are still open, do not keep
            return tuple(read_manifest(io, manifest, specs=specs, schema=schema))
        key = (
            manifest.manifest_path,
            manifest.sequence_number,
            manifest.added_snapshot_id,
            manifest.partition_spec_id,
            schema.schema_id,
        )
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
        entries = tuple(read_manifest(io, manifest, specs=specs, schema=schema))
        with self._lock:
            self.misses += 1
            if key not in self._entries and len(entries) <= self.max_entries:
                self._entries[key] = entries
                self._size += len(entries)
                while self._size > self.max_entries:
                    _, evicted = self._entries.popitem(last=False)
                    self._size -= len(evicted)
        return entries

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._size = 0


class NoCache(ManifestCache):
    """Reads every time (for callers without a catalog)."""

    def __init__(self) -> None:
        super().__init__(max_entries=0)
