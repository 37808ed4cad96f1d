"""What a scan reads from one manifest: its live data files, decoding only the blocks needed.

Decoding entries is nearly all the cost of a first plan (fastavro takes about 20 us per entry
of a table with three columns, almost all of it in the per-column stats maps; fastavro's
schema projection does not make skipping those cheaper). A manifest written in partition order
(:mod:`lakecat.metadata.manifests.order`) lets a filtered scan avoid most of it instead: every
Avro block holds a narrow range of partition tuples and the header holds, per block, a
partition summary of the first partition field. A scan checks those like a manifest's partition
summaries and decodes only the blocks that can match.

The entries decoded here are complete (every stat) but a block-read manifest is not: only
:class:`~lakecat.metadata.manifests.cache.ManifestCache` builds these views, keeps them apart
from the complete entry lists that writers read, and hands them only to scans. Manifests not
written in partition order (older lakecat, other engines) are decoded whole.
"""

from __future__ import annotations

import io as _io
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any

import fastavro

from lakecat.metadata.errors import CorruptMetadata, LakecatError
from lakecat.metadata.expressions.evaluators import PartitionSummaries
from lakecat.metadata.manifests.datafile import (
    DataFile,
    ManifestEntry,
    ManifestFile,
    Status,
)
from lakecat.metadata.manifests.manifest import DECODE_ERRORS, EntryDecoder, entry_decoder
from lakecat.metadata.manifests.order import (
    BLOCKS_KEY,
    ORDER_KEY,
    PARTITION_ORDER,
    decode_block_summaries,
)
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema

BlockTest = Callable[[PartitionSummaries], bool]
"""Might a block whose first partition field spans these (one-field) summaries match?"""


@dataclass(frozen=True, slots=True)
class LiveFiles:
    """The data files of live (not DELETED) entries, in manifest order, with the distinct
    partition tuples among them, so that a filter is evaluated once per partition."""

    files: tuple[DataFile, ...]
    partitions: tuple[tuple[Any, ...], ...]
    partition_of: tuple[int, ...]  # per file: its partition's index in ``partitions``

    @staticmethod
    def of(entries: Iterable[ManifestEntry]) -> LiveFiles:
        files = tuple(e.data_file for e in entries if e.status is not Status.DELETED)
        index: dict[tuple[Any, ...], int] = {}
        partition_of = tuple(index.setdefault(f.partition, len(index)) for f in files)
        return LiveFiles(files, tuple(index), partition_of)

    def select(self, keep: Callable[[tuple[Any, ...]], bool]) -> Sequence[DataFile]:
        """The files whose partition passes ``keep`` (called once per distinct partition)."""
        kept = [keep(p) for p in self.partitions]
        if all(kept):
            return self.files
        if not any(kept):
            return ()
        return list(compress(self.files, map(kept.__getitem__, self.partition_of)))


class ManifestBlocks:
    """A partition-ordered manifest's blocks, decoded when a scan first needs them.

    ``size`` is the manifest's entry count (what a cache charges for it). Thread-safe.
    """

    def __init__(
        self,
        blocks: list[Any],
        ranges: list[PartitionSummaries],
        decode: EntryDecoder,
        location: str,
    ) -> None:
        self._blocks = blocks  # fastavro blocks; replaced by LiveFiles once decoded
        self._ranges = ranges  # per block: its first partition field's summary
        self._decode = decode
        self._location = location
        self._lock = threading.Lock()
        self.size = sum(b.num_records for b in blocks)

    def live_files(self, may_hold: BlockTest) -> list[LiveFiles]:
        """Live files of every block that ``may_hold`` cannot rule out."""
        out = []
        for i, summary in enumerate(self._ranges):
            if may_hold(summary):
                out.append(self._block(i))
        return out

    def _block(self, i: int) -> LiveFiles:
        with self._lock:
            block = self._blocks[i]
            if isinstance(block, LiveFiles):
                return block
            try:
                live = LiveFiles.of(self._decode(rec) for rec in block)
            except LakecatError:
                raise
            except DECODE_ERRORS as exc:
                raise CorruptMetadata(f"cannot read manifest {self._location}: {exc!r}") from exc
            self._blocks[i] = live
            return live


def in_partition_order(data: bytes, location: str) -> bool:
    """Whether the manifest file ``data`` (read from ``location``) is in lakecat's
    partition-ordered layout: its header names the order and holds the block summaries.
    Manifests written by other engines, and by lakecat before the layout existed, are not.
    Reads the header only."""
    try:
        header = fastavro.block_reader(_io.BytesIO(data)).metadata
    except DECODE_ERRORS as exc:
        raise CorruptMetadata(f"cannot read manifest {location}: {exc!r}") from exc
    return header.get(ORDER_KEY) == PARTITION_ORDER and BLOCKS_KEY in header


def open_blocks(
    data: bytes,
    manifest: ManifestFile,
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
) -> ManifestBlocks | None:
    """The blocks of a manifest (its file's bytes), each with the summary of its first
    partition field, or None when the manifest has no such summaries (decode it whole then).
    Decodes no entry. None too for a manifest whose data files inherit row ids (v3), which
    must be decoded in order."""
    if manifest.first_row_id is not None:
        return None
    location = manifest.manifest_path
    try:
        reader = fastavro.block_reader(_io.BytesIO(data))
        header = reader.metadata
        if header.get(ORDER_KEY) != PARTITION_ORDER or BLOCKS_KEY not in header:
            return None
        summaries = decode_block_summaries(header[BLOCKS_KEY])
        decode = entry_decoder(manifest, reader.writer_schema, specs=specs, schema=schema)
        blocks = list(reader)
    except LakecatError:
        raise
    except (*DECODE_ERRORS, json.JSONDecodeError) as exc:
        raise CorruptMetadata(f"cannot read manifest {location}: {exc!r}") from exc
    if [n for n, _ in summaries] != [b.num_records for b in blocks]:
        raise CorruptMetadata(f"{location}: block summaries do not match the blocks")
    ranges = [PartitionSummaries((summary,)) for _, summary in summaries]
    return ManifestBlocks(blocks, ranges, decode, location)
