"""A bounded in-memory cache of decoded manifest lists and manifests.

Manifest lists and manifests are written once and never rewritten (every commit writes new
files under new names), so what is decoded from them can be kept and reused by every scan,
commit validation and manifest merge of the same process (Iceberg Java offers the same with
``io.manifest.cache-enabled``). The cache belongs to one catalog instance; it is bounded by
the number of rows it holds (manifest entries and manifest-list rows alike) and evicts the
least recently used file. It keeps four kinds of values, under keys that cannot collide:

* a manifest list's rows, with each manifest's partition summaries decoded on first use
  (:meth:`ManifestCache.manifest_list`), keyed by the list's path (a list read for the first
  time reuses the objects of rows it shares with lists read before: a table's successive
  lists repeat most rows; and lists this process writes are put in as written);
* a manifest's complete entries (:meth:`ManifestCache.read`), for writers and scans alike,
  keyed by the manifest's path and what inheritance and partition decoding depend on;
* a partition-ordered manifest read block by block for a filtered scan
  (:mod:`lakecat.metadata.manifests.blocks`). Only :meth:`ManifestCache.live_files` and
  :meth:`ManifestCache.scan_view` return these, never :meth:`ManifestCache.read`, so a writer
  cannot get a manifest that is missing the entries of blocks no scan needed;
* a manifest decoded whole for scans, as records that a scan filters before building entries
  (:mod:`lakecat.metadata.manifests.scan_entries`; :meth:`ManifestCache.scan_view`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from lakecat.metadata.expressions.evaluators import PartitionSummaries
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.avro_decoder import SplitRecords
from lakecat.metadata.manifests.blocks import BlockTest, LiveFiles, ManifestBlocks, open_blocks
from lakecat.metadata.manifests.datafile import ManifestEntry, ManifestFile
from lakecat.metadata.manifests.manifest import (
    UNASSIGNED_SEQ,
    KnownRows,
    ManifestRecords,
    decode_manifest,
    decode_manifest_entries,
    decode_manifest_records,
    inherited_first_row_ids,
    read_manifest_list,
    split_manifest_records,
)
from lakecat.metadata.manifests.scan_entries import ManifestEntries
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema

DEFAULT_MAX_ENTRIES = 200_000

_ManifestKey = tuple[str, int, int, int, int, int | None]


class ManifestList:
    """A snapshot's manifest list: its rows, and each row's partition summaries (None for a
    row without them) to evaluate filters on without decoding the bounds again. The
    summaries are made on first use: a commit that writes a list and never scans it does
    not pay for them."""

    __slots__ = ("_summaries", "manifests")

    def __init__(self, manifests: tuple[ManifestFile, ...]) -> None:
        self.manifests = manifests
        self._summaries: tuple[PartitionSummaries | None, ...] | None = None

    @staticmethod
    def of(manifests: Sequence[ManifestFile]) -> ManifestList:
        return ManifestList(tuple(manifests))

    @property
    def summaries(self) -> tuple[PartitionSummaries | None, ...]:
        if self._summaries is None:  # pure: a race between threads only makes them twice
            self._summaries = tuple(
                None if m.partitions is None else PartitionSummaries(m.partitions)
                for m in self.manifests
            )
        return self._summaries


class _Complete:
    """A manifest's complete entries, and (made on first use) what scans read of them."""

    __slots__ = ("_live", "entries")

    def __init__(self, entries: tuple[ManifestEntry, ...]) -> None:
        self.entries = entries
        self._live: LiveFiles | None = None

    def live(self) -> LiveFiles:
        if self._live is None:
            self._live = LiveFiles.of(self.entries)  # pure: a race only computes it twice
        return self._live


class ManifestCache:
    """Decoded manifest lists and manifests, keyed by path (plus, for manifests, what
    inheritance and partition decoding depend on)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._values: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        # manifest-list rows met before (single dict operations: safe between threads)
        self.rows = KnownRows(max_rows=max(0, max_entries // 4))
        self.hits = 0
        self.misses = 0

    @property
    def size(self) -> int:
        """Rows held: manifest entries and manifest-list rows."""
        return self._size

    def manifest_list(self, io: FileIO, location: str) -> ManifestList:
        """The rows of the manifest list at ``location``."""
        key = ("list", location)
        found = self._get(key)
        if found is None:
            found = ManifestList.of(read_manifest_list(io, location, known=self.rows))
            self._put(key, found, len(found.manifests))
        assert isinstance(found, ManifestList)
        return found

    def put_manifest_list(self, location: str, manifests: Sequence[ManifestFile]) -> None:
        """Remember the rows of a manifest list this process has just written (as
        :func:`~lakecat.metadata.manifests.manifest.as_listed` gives them): the next commit on top
        of it then reads nothing."""
        if self.max_entries > 0:
            self._put(("list", location), ManifestList.of(manifests), len(manifests))

    def read(
        self,
        io: FileIO,
        manifest: ManifestFile,
        *,
        specs: Mapping[int, PartitionSpec],
        schema: Schema,
    ) -> tuple[ManifestEntry, ...]:
        """Every entry of the manifest, as
        :func:`~lakecat.metadata.manifests.manifest.read_manifest` returns them."""
        return self._complete(io, manifest, specs, schema, None).entries

    def live_files(
        self,
        io: FileIO,
        manifest: ManifestFile,
        *,
        specs: Mapping[int, PartitionSpec],
        schema: Schema,
        may_hold: BlockTest | None = None,
    ) -> list[LiveFiles]:
        """For scans: the live files of the manifest, or with ``may_hold``, at least those of
        them in partitions that ``may_hold`` cannot rule out (see
        :mod:`~lakecat.metadata.manifests.blocks`)."""
        key = self._key(manifest, schema)
        if key is not None:
            complete = self._get(("entries", *key))
            if complete is not None:
                assert isinstance(complete, _Complete)
                return [complete.live()]
        if may_hold is None:
            return [self._complete(io, manifest, specs, schema, None).live()]
        blocks = None if key is None else self._get(("blocks", *key))
        if blocks is None:
            data = io.read(manifest.manifest_path)
            blocks = open_blocks(data, manifest, specs=specs, schema=schema)
            if blocks is None:  # not in partition order: decode it whole
                return [self._complete(io, manifest, specs, schema, data).live()]
            if key is not None:
                self._put(("blocks", *key), blocks, blocks.size)
        assert isinstance(blocks, ManifestBlocks)
        return blocks.live_files(may_hold)

    def scan_view(
        self,
        io: FileIO,
        manifest: ManifestFile,
        *,
        specs: Mapping[int, PartitionSpec],
        schema: Schema,
        may_hold: BlockTest | None = None,
        by_partition: bool = False,
    ) -> ManifestEntries | list[LiveFiles]:
        """For scans: with ``may_hold``, the live files of the blocks of a partition-ordered
        manifest that ``may_hold`` cannot rule out (as :meth:`live_files`); otherwise (no
        ``may_hold``, or a manifest not in that layout) every live entry, to filter with
        :meth:`ManifestEntries.select`. ``by_partition``: the scan filters on partitions, so
        a manifest read for the first time is only split into records, each decoded when a
        scan first keeps its partition (not for manifests whose files inherit v3 row ids)."""
        key = self._key(manifest, schema)
        if key is not None:
            found = self._get(("scan", *key))
            if found is not None:
                assert isinstance(found, ManifestEntries)
                return found
        data = None
        if may_hold is not None and manifest.first_row_id is None:
            blocks = None if key is None else self._get(("blocks", *key))
            if blocks is None:
                data = io.read(manifest.manifest_path)
                blocks = open_blocks(data, manifest, specs=specs, schema=schema)
                if blocks is not None and key is not None:
                    self._put(("blocks", *key), blocks, blocks.size)
            if blocks is not None:
                assert isinstance(blocks, ManifestBlocks)
                return blocks.live_files(may_hold)
        if data is None:
            data = io.read(manifest.manifest_path)
        decoded: SplitRecords | list[ManifestEntry] | ManifestRecords | None = None
        if by_partition and inherited_first_row_ids(manifest, ()) is None:
            decoded = split_manifest_records(data)
        if decoded is None:
            decoded = decode_manifest_entries(data, manifest, specs=specs, schema=schema)
        if decoded is None:
            decoded = decode_manifest_records(data, manifest.manifest_path)
        entries = ManifestEntries(manifest, decoded, specs=specs, schema=schema)
        if key is not None:
            self._put(("scan", *key), entries, entries.size)
        return entries

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self.rows = KnownRows(self.rows.max_rows)
            self._size = 0

    # ---- internals ------------------------------------------------------------------------
    def _key(self, manifest: ManifestFile, schema: Schema) -> _ManifestKey | None:
        if manifest.sequence_number == UNASSIGNED_SEQ or self.max_entries <= 0:
            # not yet in a manifest list: inherited values are still open, do not keep
            return None
        return (
            manifest.manifest_path,
            manifest.sequence_number,
            manifest.added_snapshot_id,
            manifest.partition_spec_id,
            schema.schema_id,
            manifest.first_row_id,
        )

    def _complete(
        self,
        io: FileIO,
        manifest: ManifestFile,
        specs: Mapping[int, PartitionSpec],
        schema: Schema,
        data: bytes | None,
    ) -> _Complete:
        key = self._key(manifest, schema)
        found = None if key is None else self._get(("entries", *key))
        if found is not None:
            assert isinstance(found, _Complete)
            return found
        if data is None:
            data = io.read(manifest.manifest_path)
        complete = _Complete(tuple(decode_manifest(data, manifest, specs=specs, schema=schema)))
        if key is not None:
            self._put(("entries", *key), complete, len(complete.entries))
        return complete

    def _get(self, key: tuple[Any, ...]) -> Any:
        if self.max_entries <= 0:
            return None
        with self._lock:
            found = self._values.get(key)
            if found is None:
                self.misses += 1
                return None
            self._values.move_to_end(key)
            self.hits += 1
            return found[0]

    def _put(self, key: tuple[Any, ...], value: Any, size: int) -> None:
        size = max(size, 1)  # an empty file still takes a slot
        if size > self.max_entries:
            return
        with self._lock:
            if key in self._values:
                return
            self._values[key] = (value, size)
            self._size += size
            while self._size > self.max_entries:
                _, (_, evicted) = self._values.popitem(last=False)
                self._size -= evicted


class NoCache(ManifestCache):
    """Reads every time (for callers without a catalog)."""

    def __init__(self) -> None:
        super().__init__(max_entries=0)
